/* v1-memory-mount.c: memory stores attached to /v1 sessions (see v1-memory.h): the resources
 * resolved at session create, the system prompt's section, the stores written into the
 * session's sandbox (/workspace/.memory/<slug>, seen at /mnt/memory/<slug>) and read back after
 * each tool call. Reading back goes through the workspace jail (sbx-workspace.h): a link or a
 * special file the agent planted is never followed nor read on the host, only reported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sha256.h"
#include "spill.h"
#include "ss.h"
#include "v1-memory.h"

#define MOUNT_ROOT "/mnt/memory/"
#define WS_ROOT ".memory/"

/* ---- at session create ---- */

/* The slug of a name: lowercase letters and digits, other runs one "-" (e.g. "user-preferences"). */
static void slug_of(const char *name, char *out, size_t size) {
        size_t n = 0;
        bool dash = false;
        for (const char *p = name; *p && n + 2 < size; p++) {
                char c = *p;
                if (c >= 'A' && c <= 'Z')
                        c = (char) (c - 'A' + 'a');
                if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
                        if (dash && n > 0)
                                out[n++] = '-';
                        out[n++] = c;
                        dash = false;
                } else
                        dash = true;
        }
        out[n] = '\0';
        if (n == 0)
                snprintf(out, size, "store");
}

/* The mount path for name, unique among the paths in taken (an array of the resources so far). */
static void mount_path_of(const char *name, const json_t *taken, char *out, size_t size) {
        char slug[72];
        slug_of(name, slug, 64);
        for (unsigned k = 1;; k++) {
                if (k == 1)
                        snprintf(out, size, MOUNT_ROOT "%s", slug);
                else
                        snprintf(out, size, MOUNT_ROOT "%s-%u", slug, k);
                bool clash = false;
                size_t i;
                json_t *r;
                json_array_foreach((json_t *) taken, i, r) {
                        const char *mp = json_string_value(json_object_get(r, "mount_path"));
                        clash |= mp && strcmp(mp, out) == 0;
                }
                if (!clash)
                        return;
        }
}

int v1_memory_resources_resolve(store *s, json_t *session, v1_err *e) {
        json_t *res = json_object_get(session, "resources");
        size_t i, n = 0;
        json_t *r;
        json_array_foreach(res, i, r) {
                if (strcmp(json_string_value(json_object_get(r, "type")) ?: "", "memory_store") != 0)
                        continue;
                if (++n > MEMORY_STORES_PER_SESSION_MAX)
                        return v1_fail(e, 400, NULL, "resources: more than %u memory stores in one session",
                                       MEMORY_STORES_PER_SESSION_MAX);
                const char *id = json_string_value(json_object_get(r, "memory_store_id"));
                json_auto_t *st = NULL;
                int rr = v1_memory_store_get(s, id, &st, e);
                if (rr < 0)
                        return rr;
                if (json_is_string(json_object_get(st, "archived_at")))
                        return v1_fail(e, 400, "memory_store_archived",
                                       "resources[%zu]: memory store %.64s is archived: it cannot be attached", i, id);
                const char *acc = json_string_value(json_object_get(r, "access"));
                const char *ins = json_string_value(json_object_get(r, "instructions"));
                const char *name = json_string_value(json_object_get(st, "name"));
                char mp[128];
                mount_path_of(name ? name : "", res, mp, sizeof(mp));
                json_t *echo = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:O, s:s}", "type", "memory_store",
                                         "memory_store_id", id, "access", acc ? acc : "read_write", "instructions",
                                         ins && ins[0] ? ins : NULL, "name", name ? name : "", "description",
                                         json_object_get(st, "description"), "mount_path", mp);
                if (!echo)
                        return -ENOMEM;
                if (!json_object_get(echo, "instructions"))
                        json_object_set_new(echo, "instructions", json_null());
                json_array_set_new(res, i, echo);
        }
        return 0;
}

char *v1_memory_prompt(const json_t *session) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (!f)
                return NULL;
        size_t i, n = 0;
        json_t *r;
        json_array_foreach(json_object_get(session, "resources"), i, r) {
                if (strcmp(json_string_value(json_object_get(r, "type")) ?: "", "memory_store") != 0)
                        continue;
                if (n++ == 0)
                        fputs("# Memory\n\nMemory stores are mounted as directories; what you write there is "
                              "kept after this session (each file is a memory, its path the memory's path). Read "
                              "them before you start, keep them short and current.\n",
                              f);
                const char *desc = json_string_value(json_object_get(r, "description"));
                const char *ins = json_string_value(json_object_get(r, "instructions"));
                bool ro = strcmp(json_string_value(json_object_get(r, "access")) ?: "", "read_only") == 0;
                fprintf(f, "\n- %s (%s): \"%s\"%s%s%s%s\n", json_string_value(json_object_get(r, "mount_path")),
                        ro ? "read-only: changes are refused" : "read-write",
                        json_string_value(json_object_get(r, "name")) ?: "", desc && desc[0] ? ". " : "",
                        desc ? desc : "", ins && ins[0] ? "\n  Instructions: " : "", ins ? ins : "");
        }
        if (fclose(f) != 0 || n == 0) {
                free(out);
                return NULL;
        }
        return out;
}

/* ---- mounted in the sandbox ---- */

typedef struct mount {
        char store_id[STORE_ID_MAX];
        char dir[96];    /* in the workspace: .memory/<slug> */
        char shown[128]; /* in the sandbox: /mnt/memory/<slug> */
        bool read_only;
        json_t *seen; /* memory path → the content_sha256 the session has */
} mount;

struct v1_memory_mounts {
        store *st;
        char session_id[STORE_ID_MAX];
        mount m[MEMORY_STORES_PER_SESSION_MAX];
        size_t n;
};

void v1_memory_mounts_free(v1_memory_mounts *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                json_decref(m->m[i].seen);
        free(m);
}

/* Write every memory of mt's store into its directory. */
static int mount_one(v1_memory_mounts *mm, mount *mt, ss_manager *ss, ss_session *box, hull_error *e) {
        json_auto_t *none = json_object();
        if (!none || (mt->seen = json_object()) == NULL)
                return hull_err(e, -ENOMEM, "memory: out of memory");
        char p[WS_PATH_MAX + 1];
        snprintf(p, sizeof(p), "%s/.keep", mt->dir); /* the directory, also when the store is empty */
        int r = ss_write(ss, box, p, "", 0, false, NULL, e);
        if (r < 0)
                return r;
        char from[STORE_MEMORY_PATH_MAX + 1] = "/";
        for (bool inclusive = true;;) {
                json_auto_t *rows = NULL;
                if ((r = store_memory_scan(mm->st, mt->store_id, from, inclusive, NULL, 200, &rows, e)) < 0)
                        return r;
                size_t i;
                json_t *m;
                json_array_foreach(rows, i, m) {
                        const char *path = json_string_value(json_object_get(m, "path"));
                        json_t *c = json_object_get(m, "content");
                        snprintf(from, sizeof(from), "%s", path);
                        inclusive = false;
                        if ((size_t) snprintf(p, sizeof(p), "%s%s", mt->dir, path) >= sizeof(p))
                                continue; /* too long for the workspace: left out */
                        r = ss_write(ss, box, p, json_string_value(c), json_string_length(c), false, NULL, e);
                        if (r == -EPIPE || r == -ESHUTDOWN)
                                return r;
                        /* one the workspace cannot hold ("/a" beside "/a/b", too deep) is left out,
                         * and never taken for deleted: only what was written is seen */
                        if (r >= 0)
                                json_object_set(mt->seen, path, json_object_get(m, "content_sha256"));
                }
                if (json_array_size(rows) < 200)
                        break;
        }
        if (mt->read_only) { /* the tools' writes fail; what gets through is undone after the call */
                char cmd[256];
                snprintf(cmd, sizeof(cmd), "chmod -R a-w '/workspace/%s'", mt->dir);
                ss_exec_args a = {.command = cmd, .timeout_ms = 10000, .output_bytes = 4096, .cancel_fd = -1};
                ss_output o = {0};
                r = ss_exec(ss, box, &a, &o, e);
                ss_output_done(&o);
                if (r < 0)
                        return r;
        }
        return 0;
}

int v1_memory_mount(store *st, ss_manager *ss, ss_session *box, const json_t *session, v1_memory_mounts **ret,
                    hull_error *e) {
        *ret = NULL;
        _cleanup_free_ v1_memory_mounts *mm = calloc(1, sizeof(*mm));
        if (!mm)
                return hull_err(e, -ENOMEM, "memory: out of memory");
        mm->st = st;
        snprintf(mm->session_id, sizeof(mm->session_id), "%s", json_string_value(json_object_get(session, "id")) ?: "");
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(session, "resources"), i, r) {
                const char *mp = json_string_value(json_object_get(r, "mount_path"));
                if (strcmp(json_string_value(json_object_get(r, "type")) ?: "", "memory_store") != 0 || !mp ||
                    strncmp(mp, MOUNT_ROOT, strlen(MOUNT_ROOT)) != 0 || mm->n >= MEMORY_STORES_PER_SESSION_MAX)
                        continue;
                mount *mt = &mm->m[mm->n++];
                snprintf(mt->store_id, sizeof(mt->store_id), "%s",
                         json_string_value(json_object_get(r, "memory_store_id")) ?: "");
                snprintf(mt->dir, sizeof(mt->dir), WS_ROOT "%.80s", mp + strlen(MOUNT_ROOT));
                snprintf(mt->shown, sizeof(mt->shown), "%s", mp);
                mt->read_only = strcmp(json_string_value(json_object_get(r, "access")) ?: "", "read_only") == 0;
        }
        if (mm->n == 0)
                return 0;
        int rc = ss_call_begin(ss, box, -1, e);
        if (rc < 0)
                return rc;
        for (size_t k = 0; k < mm->n && rc >= 0; k++)
                rc = mount_one(mm, &mm->m[k], ss, box, e);
        ss_call_end(ss, box);
        if (rc < 0) {
                for (size_t k = 0; k < mm->n; k++)
                        json_decref(mm->m[k].seen);
                return rc;
        }
        *ret = TAKE_PTR(mm);
        return 0;
}

/* ---- read back after a tool call ---- */

typedef struct syncer {
        v1_memory_mounts *mm;
        mount *mt;
        ss_manager *ss;
        ss_session *box;
        FILE *notes;
        json_t *found;   /* memory path → the file's sha256 (null: there, but not readable) */
        json_t *restore; /* memory paths whose file must become the store's version again */
} syncer;

/* Put the store's version of path back in the file (or remove the file when it has none). */
static void restore_file(syncer *y, const char *path, json_t *rm) {
        json_auto_t *m = NULL;
        hull_error e = {0};
        char p[WS_PATH_MAX + 1];
        snprintf(p, sizeof(p), "%s%s", y->mt->dir, path);
        if (store_memory_get(y->mm->st, y->mt->store_id, NULL, path, &m, &e) == 0) {
                json_t *c = json_object_get(m, "content");
                if (ss_write(y->ss, y->box, p, json_string_value(c), json_string_length(c), false, NULL, &e) == 0)
                        json_object_set(y->mt->seen, path, json_object_get(m, "content_sha256"));
        } else {
                json_array_append_new(rm, json_string(p));
                json_object_del(y->mt->seen, path);
        }
}

/* Run a shell command in the box for the restore (its output dropped). */
static void box_sh(syncer *y, const char *cmd) {
        ss_exec_args a = {.command = cmd, .timeout_ms = 10000, .output_bytes = 4096, .cancel_fd = -1};
        ss_output o = {0};
        hull_error e = {0};
        (void) ss_exec(y->ss, y->box, &a, &o, &e);
        ss_output_done(&o);
}

/* Append 'p' (single-quoted for sh) to f. */
static void sh_quote(FILE *f, const char *p) {
        fputc('\'', f);
        for (; *p; p++)
                if (*p == '\'')
                        fputs("'\\''", f);
                else
                        fputc(*p, f);
        fputc('\'', f);
}

static void restore_all(syncer *y) {
        if (json_object_size(y->restore) == 0)
                return;
        char cmd[256];
        if (y->mt->read_only) {
                snprintf(cmd, sizeof(cmd), "chmod -R u+w '/workspace/%s'", y->mt->dir);
                box_sh(y, cmd);
        }
        json_auto_t *rm = json_array();
        const char *path;
        json_t *v;
        json_object_foreach(y->restore, path, v) restore_file(y, path, rm);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
                fputs("cd /workspace && rm -rf --", f);
                size_t i;
                json_array_foreach(rm, i, v) {
                        fputc(' ', f);
                        sh_quote(f, json_string_value(v));
                }
                if (y->mt->read_only)
                        fprintf(f, "; chmod -R a-w '/workspace/%s'", y->mt->dir);
                if (fclose(f) == 0 && (json_array_size(rm) > 0 || y->mt->read_only))
                        box_sh(y, buf);
        }
        free(buf);
}

/* Write one changed (content non-NULL) or deleted file back as a new version of its memory. */
static void save(syncer *y, const char *path, const char *content, size_t len) {
        const char *shown = y->mt->shown;
        const char *seen = json_string_value(json_object_get(y->mt->seen, path));
        if (y->mt->read_only) {
                fprintf(y->notes,
                        "\n[memory] not saved: %s%s: this memory store is attached read-only (the file is as "
                        "it was)",
                        shown, path);
                json_object_set_new(y->restore, path, json_true());
                return;
        }
        json_auto_t *cur = NULL, *after = NULL;
        hull_error he = {0};
        v1_err err = {0};
        bool exists = store_memory_get(y->mm->st, y->mt->store_id, NULL, path, &cur, &he) == 0;
        v1_memory_req q = {.store_id = y->mt->store_id,
                           .memory_id = exists ? json_string_value(json_object_get(cur, "id")) : NULL,
                           .path = exists ? NULL : path,
                           .content = content,
                           .content_len = len,
                           .remove = !content,
                           .expect_sha256 = seen,
                           .actor = {.session_id = y->mm->session_id}};
        int r = 0;
        if (!exists && !content) /* deleted here and in the store: nothing to do */
                json_object_del(y->mt->seen, path);
        else if ((exists && !seen) || (!exists && seen)) /* made or removed by someone else meanwhile */
                r = v1_fail(&err, 409, NULL, "changed");
        else
                r = v1_memory_write(y->mm->st, &q, &after, &err);
        if (r < 0 && err.status == 409)
                snprintf(err.msg, sizeof(err.msg),
                         "changed meanwhile by another writer (another session or an API call) since this session "
                         "read it");
        if (r < 0) {
                fprintf(y->notes, "\n[memory] not saved: %s%s: %s%s", shown, path, err.msg,
                        err.status == 409 ? " (the file now holds the store's version: read it and redo your change)"
                                          : "");
                if (err.status == 409)
                        json_object_set_new(y->restore, path, json_true());
                return;
        }
        if (after)
                json_object_set(y->mt->seen, path, json_object_get(after, "content_sha256"));
        else
                json_object_del(y->mt->seen, path);
        fprintf(y->notes, "\n[memory] %s %s%s", content ? "saved" : "deleted", shown, path);
}

/* One file of the mount: read through the jail, checked, saved when it changed. */
static void sync_file(syncer *y, const char *wpath) {
        const char *path = wpath + strlen(y->mt->dir);
        if (strcmp(path, "/.keep") == 0)
                return;
        json_object_set_new(y->found, path, json_null());
        v1_err err = {0};
        if (v1_memory_path_check(path, strlen(path), false, "path", &err) < 0) {
                fprintf(y->notes, "\n[memory] not saved: %s%s: %s", y->mt->shown, path, err.msg);
                return;
        }
        ws_read_result rd = {0};
        hull_error e = {0};
        int r = ss_read(y->ss, y->box, wpath, 0, MEMORY_CONTENT_MAX + 1, &rd, &e);
        if (r < 0) {
                fprintf(y->notes, "\n[memory] not saved: %s%s: %s", y->mt->shown, path,
                        r == -ELOOP    ? "a symbolic link (a memory is a regular file; links are never followed)"
                        : r == -EINVAL ? "not a regular file (a memory is a regular file)"
                                       : e.msg);
                return;
        }
        if (rd.len > MEMORY_CONTENT_MAX || !rd.eof) {
                fprintf(y->notes, "\n[memory] not saved: %s%s: more than %u bytes (split it into several files)",
                        y->mt->shown, path, MEMORY_CONTENT_MAX);
                ws_read_result_done(&rd);
                return;
        }
        char sha[SHA256_HEX_SIZE];
        if (sha256_hex(rd.data, rd.len, sha) == 0) {
                json_object_set_new(y->found, path, json_string(sha));
                const char *seen = json_string_value(json_object_get(y->mt->seen, path));
                if (!seen || strcmp(seen, sha) != 0)
                        save(y, path, rd.data, rd.len);
        }
        ws_read_result_done(&rd);
}

static void sync_mount(v1_memory_mounts *mm, mount *mt, ss_manager *ss, ss_session *box, FILE *notes) {
        json_auto_t *found = json_object(), *restore = json_object();
        if (!found || !restore)
                return;
        syncer y = {.mm = mm, .mt = mt, .ss = ss, .box = box, .notes = notes, .found = found, .restore = restore};
        char pattern[WS_PATH_MAX + 1];
        snprintf(pattern, sizeof(pattern), "%s/**/*", mt->dir);
        ws_glob_opts o = {.results_max = MEMORY_SYNC_FILES_MAX, .hidden = true};
        ws_glob_result g = {0};
        hull_error e = {0};
        if (ss_glob(ss, box, pattern, &o, &g, &e) < 0) {
                fprintf(notes, "\n[memory] %s could not be read back: %s", mt->shown, e.msg);
                return;
        }
        for (size_t i = 0; i < g.count; i++) {
                size_t n = strlen(g.paths[i]);
                if (n > strlen(mt->dir) && g.paths[i][n - 1] != '/')
                        sync_file(&y, g.paths[i]);
        }
        if (g.stopped)
                fprintf(notes, "\n[memory] %s: only part of it was read back (%s): keep it small", mt->shown,
                        ws_stop_reason(g.stopped));
        else { /* what the session had and is gone now: deleted */
                json_auto_t *gone = json_array();
                const char *path;
                json_t *v;
                json_object_foreach(mt->seen, path, v) if (!json_object_get(found, path))
                        json_array_append_new(gone, json_string(path));
                size_t i;
                json_array_foreach(gone, i, v) save(&y, json_string_value(v), NULL, 0);
        }
        ws_glob_result_done(&g);
        restore_all(&y);
}

void v1_memory_after_call(void *ud, ss_manager *ss, ss_session *s, call_result *res) {
        v1_memory_mounts *mm = ud;
        char *notes = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&notes, &len);
        if (!mm || !f)
                return;
        for (size_t i = 0; i < mm->n; i++)
                sync_mount(mm, &mm->m[i], ss, s, f);
        if (fclose(f) == 0 && len > 0) {
                size_t old = res->text ? strlen(res->text) : 0;
                char *t = realloc(res->text, old + len + 1);
                if (t) {
                        memcpy(t + old, notes, len + 1);
                        res->text = t;
                }
        }
        free(notes);
}
