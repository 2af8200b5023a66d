/* v1-skill.c: see v1-skill.h. Uploads made skills and versions; an agent's skills installed for
 * its sessions and named in its system prompt. */
#include "v1-skill.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "home.h"
#include "macro.h"
#include "sha256.h"
#include "skill-pack.h"
#include "v1-run.h"

/* ---- uploads ---- */

/* The upload's files into p (finished), and its display_title (NULL when none). */
static int pack_of(const char *content_type, const uint8_t *body, size_t len, skp_pack *p,
                   char title[static V1_NAME_MAX + 1], bool *ret_title, v1_err *e) {
        _cleanup_(skp_form_done) skp_form form = {0};
        hull_error he = {0};
        size_t files = 0;
        int r = skp_form_read(content_type, body, len, SKILL_PARTS_MAX, &form, &he);
        if (r == -ENOMEM)
                return v1_fail(e, 500, "", "%s", he.msg);
        if (r < 0)
                return v1_fail(e, 400, "", "%s", he.msg);
        const skp_part *parts = form.parts;
        size_t n = form.n;
        *ret_title = false;
        const skp_part *only = NULL;
        for (size_t i = 0; i < n; i++) {
                const skp_part *pt = &parts[i];
                if (strcmp(pt->name, "display_title") == 0 || strcmp(pt->name, "display_name") == 0) {
                        if (pt->len > V1_NAME_MAX || memchr(pt->data, '\0', pt->len))
                                return v1_fail(e, 400, "", "%s: at most %u bytes of text", pt->name, V1_NAME_MAX);
                        memcpy(title, pt->data, pt->len);
                        title[pt->len] = '\0';
                        *ret_title = true;
                } else if (strcmp(pt->name, "files[]") == 0 || strcmp(pt->name, "files") == 0) {
                        if (!pt->filename[0])
                                return v1_fail(e, 400, "",
                                               "files[] part %zu has no filename (each file's path in the skill, such "
                                               "as my-skill/SKILL.md)",
                                               i + 1);
                        files++;
                        only = pt;
                } else
                        return v1_fail(e, 400, "",
                                       "unknown form field '%.60s' (this route takes files[] and display_name)",
                                       pt->name);
        }
        if (files == 0)
                return v1_fail(e, 400, "",
                               "no files[] part: upload the skill's directory (its SKILL.md and other files) or one "
                               "zip of it");
        if (files == 1 && skp_is_archive(only->data, only->len))
                r = skp_pack_from_archive(only->data, only->len, p, &he);
        else {
                r = 0;
                for (size_t i = 0; i < n && r >= 0; i++)
                        if (strcmp(parts[i].name, "display_title") != 0 && strcmp(parts[i].name, "display_name") != 0)
                                r = skp_pack_add(p, parts[i].filename, parts[i].data, parts[i].len, false, &he);
                if (r >= 0)
                        r = skp_pack_finish(p, &he);
        }
        if (r == -ENOMEM || r == -ENOSYS)
                return v1_fail(e, 500, "", "%s", he.msg);
        if (r < 0)
                return v1_fail(e, r == -E2BIG ? 413 : 400, "", "%s", he.msg);
        return 0;
}

static int64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int store_failed(v1_err *e, int r, const hull_error *he, const char *what) {
        if (r == -ENOENT)
                return v1_fail(e, 404, "", "%s", he->msg);
        if (r == -EEXIST)
                return v1_fail(e, 409, "", "%s (another upload came first: try again)", he->msg);
        return v1_fail(e, 500, "", "the %s could not be stored: %s", what, he->msg);
}

int v1_skill_upload(store *st, const char *skill_id, const char *content_type, const uint8_t *body, size_t len,
                    json_t **ret, v1_err *e) {
        _cleanup_(skp_pack_done) skp_pack p = {0};
        char title[V1_NAME_MAX + 1] = "";
        bool has_title = false;
        int r = pack_of(content_type, body, len, &p, title, &has_title, e);
        if (r < 0)
                return r;
        _cleanup_free_ uint8_t *zip = NULL;
        size_t zn = 0;
        hull_error he = {0};
        if ((r = skp_pack_to_zip(&p, &zip, &zn, &he)) < 0)
                return v1_fail(e, 500, "", "%s", he.msg);

        char id[STORE_ID_MAX], now[STORE_TIME_MAX], ver[24];
        store_now_rfc3339(now);
        json_auto_t *skill = NULL;
        int64_t v = now_us();
        if (skill_id) {
                if ((r = store_skill_get(st, skill_id, &skill, &he)) < 0)
                        return store_failed(e, r, &he, "skill");
                uint64_t latest = 0;
                const char *lv = json_string_value(json_object_get(skill, "latest_version"));
                if (lv && sscanf(lv, "%" SCNu64, &latest) == 1 && (int64_t) latest >= v)
                        v = (int64_t) latest + 1; /* the clock stepped back: versions still go up */
                snprintf(id, sizeof(id), "%s", skill_id);
        } else
                v1_id_new("skill_", id);
        snprintf(ver, sizeof(ver), "%" PRId64, v);
        json_auto_t *version = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", ver, "type", "skill_version",
                                         "skill_id", id, "version", ver, "name", p.meta.name, "description",
                                         p.meta.description, "directory", p.directory, "created_at", now);
        if (!version)
                return v1_fail(e, 500, "", "out of memory");
        if (!skill_id) {
                skill = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:s, s:s, s:s}", "id", id, "type", "skill", "source",
                                  "custom", "display_title", has_title ? title : NULL, "display_name",
                                  has_title ? title : p.meta.name, "latest_version", ver, "created_at", now,
                                  "updated_at", now);
                if (skill && !has_title)
                        json_object_set_new(skill, "display_title", json_null());
                if (!skill)
                        return v1_fail(e, 500, "", "out of memory (or a display_title that is not UTF-8)");
                r = store_skill_create(st, skill, version, zip, zn, &he);
        } else {
                if (json_object_set_new(skill, "latest_version", json_string(ver)) < 0 ||
                    json_object_set_new(skill, "updated_at", json_string(now)) < 0)
                        return v1_fail(e, 500, "", "out of memory");
                r = store_skill_version_add(st, skill, version, zip, zn, &he);
        }
        if (r < 0)
                return store_failed(e, r, &he, "skill");
        *ret = json_incref(skill_id ? version : skill);
        return 0;
}

json_t *v1_skill_view(const json_t *stored, bool beta) {
        json_t *o = json_deep_copy(stored);
        if (!o || json_object_set(o, "latest_version_id", json_object_get(o, "latest_version") ?: json_null()) < 0 ||
            (!beta && json_object_set_new(o, "source", json_pack("{s:s}", "type", "custom")) < 0)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* ---- an agent's skills for its session ---- */

typedef struct resolved {
        char id[STORE_ID_MAX];
        char version[24];
} resolved;

/* The agent's skills with their versions: every one found, or -ENOENT naming it. */
static int resolve(store *st, const json_t *skills, resolved *out, size_t *ret_n, hull_error *e) {
        size_t i, n = 0;
        json_t *s;
        json_array_foreach(skills, i, s) {
                const char *type = json_string_value(json_object_get(s, "type"));
                const char *id = json_string_value(json_object_get(s, "skill_id"));
                const json_t *ver = json_object_get(s, "version");
                if (!id || n >= V1_SKILLS_MAX)
                        continue;
                if (type && strcmp(type, "anthropic") == 0)
                        return hull_fail(e, -ENOENT,
                                         "skill %.64s: hull serves no Anthropic-provided skills; upload it with POST "
                                         "/v1/skills (or hull skill add) and name it as a custom skill",
                                         id);
                snprintf(out[n].id, sizeof(out[n].id), "%s", id);
                if (json_is_integer(ver))
                        snprintf(out[n].version, sizeof(out[n].version), "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(ver));
                else if (json_is_string(ver) && strcmp(json_string_value(ver), "latest") != 0)
                        snprintf(out[n].version, sizeof(out[n].version), "%.23s", json_string_value(ver));
                else {
                        json_auto_t *sk = NULL;
                        int r = store_skill_get(st, id, &sk, e);
                        if (r < 0)
                                return hull_fail(e, r, "skill %.64s: %s", id, r == -ENOENT ? "no such skill" : e->msg);
                        const char *lv = json_string_value(json_object_get(sk, "latest_version"));
                        if (!lv)
                                return hull_fail(e, -ENOENT, "skill %.64s has no version left", id);
                        snprintf(out[n].version, sizeof(out[n].version), "%s", lv);
                }
                n++;
        }
        *ret_n = n;
        return 0;
}

/* The prompt's words for one skill, appended to b. */
static int prompt_add(dynbuf *b, const json_t *v) {
        return dynbuf_addf(b,
                           "<skill>\n<name>%s</name>\n<description>%s</description>\n<location>%s/%s/SKILL.md</"
                           "location>\n</skill>\n",
                           json_string_value(json_object_get(v, "name")),
                           json_string_value(json_object_get(v, "description")), V1_SKILLS_MOUNT,
                           json_string_value(json_object_get(v, "directory")));
}

/* Each skill's files installed under the directory fd (-1: they are already), their prompt
 * words into b. */
static int install_all(store *st, const resolved *rs, size_t n, int fd, dynbuf *b, hull_error *e) {
        for (size_t i = 0; i < n; i++) {
                json_auto_t *v = NULL;
                _cleanup_free_ uint8_t *zip = NULL;
                size_t zn = 0;
                int r = store_skill_version_get(st, rs[i].id, rs[i].version, &v, e);
                if (r >= 0 && fd >= 0)
                        r = store_skill_zip(st, rs[i].id, rs[i].version, &zip, &zn, e);
                if (r < 0)
                        return hull_fail(e, r, "skill %.64s version %s: %s", rs[i].id, rs[i].version,
                                         r == -ENOENT ? "no such skill or version" : e->msg);
                _cleanup_(skp_pack_done) skp_pack p = {0};
                if (fd < 0)
                        goto words;
                if ((r = skp_pack_from_archive(zip, zn, &p, e)) < 0)
                        return hull_fail(e, r, "skill %.64s version %s: its stored files: %s", rs[i].id, rs[i].version,
                                         e->msg);
                if ((r = skp_pack_install(&p, fd, p.directory, e)) < 0)
                        return hull_fail(e, r, "skill %.64s version %s: %s%s", rs[i].id, rs[i].version, e->msg,
                                         r == -EEXIST ? " (two of the agent's skills use the same directory name)"
                                                      : "");
        words:
                if (prompt_add(b, v) < 0)
                        return hull_fail(e, -E2BIG, "the agent's skills' names and descriptions are over %u bytes",
                                         SKILL_PROMPT_MAX);
        }
        return 0;
}

/* The skills' directory made as root/digest: filled under a temporary name, sealed, renamed. */
static int build(store *st, const resolved *rs, size_t n, int rfd, const char *root, const char *digest, dynbuf *b,
                 hull_error *e) {
        char tmp[64];
        uint32_t rnd = 0;
        (void) getrandom(&rnd, sizeof(rnd), 0);
        snprintf(tmp, sizeof(tmp), ".tmp-%.16s-%08x", digest, rnd);
        if (mkdirat(rfd, tmp, 0755) < 0)
                return hull_err(e, -errno, "skills: cannot make %s/%s", root, tmp);
        _cleanup_close_ int tfd = openat(rfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = tfd < 0 ? hull_err(e, -errno, "skills: cannot open %s/%s", root, tmp)
                        : install_all(st, rs, n, tfd, b, e);
        if (r >= 0 && fchmod(tfd, 0555) < 0)
                r = hull_err(e, -errno, "skills: cannot seal %s/%s", root, tmp);
        /* one rename makes it whole; another session that made the same first keeps its own */
        if (r >= 0 && renameat(rfd, tmp, rfd, digest) < 0 && errno != EEXIST && errno != ENOTEMPTY)
                r = hull_err(e, -errno, "skills: cannot put %s/%s in place", root, digest);
        (void) rm_rf_at(rfd, tmp);
        return r;
}

int v1_skills_prepare(store *st, const json_t *skills, const char *home, char ret_dir[static SBX_PATH_MAX],
                      char **ret_prompt, hull_error *e) {
        resolved rs[V1_SKILLS_MAX];
        size_t n = 0;
        int r;
        ret_dir[0] = '\0';
        *ret_prompt = NULL;
        if (json_array_size(skills) == 0)
                return 0;
        if ((r = resolve(st, skills, rs, &n, e)) < 0)
                return r;
        /* the directory is named by what it holds: the same skills share it across sessions */
        _cleanup_(sha256_done) sha256_ctx c = {0};
        char digest[SHA256_HEX_SIZE], root[SBX_PATH_MAX], dir[SBX_PATH_MAX];
        if (sha256_init(&c) < 0)
                return hull_err(e, -ENOMEM, "skills: cannot hash");
        for (size_t i = 0; i < n; i++)
                if (sha256_update(&c, rs[i].id, strlen(rs[i].id) + 1) < 0 ||
                    sha256_update(&c, rs[i].version, strlen(rs[i].version) + 1) < 0)
                        return hull_err(e, -ENOMEM, "skills: cannot hash");
        if (sha256_final_hex(&c, digest) < 0)
                return hull_err(e, -ENOMEM, "skills: cannot hash");
        if ((r = home_dir(home, "skills", 0755, true, root, e)) < 0)
                return r;
        _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0)
                return hull_err(e, -errno, "skills: cannot open %s", root);
        _cleanup_(dynbuf_freep) dynbuf b;
        dynbuf_init(&b, SKILL_PROMPT_MAX);
        if (faccessat(rfd, digest, F_OK, AT_SYMLINK_NOFOLLOW) == 0) /* made before: the words alone */
                r = install_all(st, rs, n, -1, &b, e);
        else
                r = build(st, rs, n, rfd, root, digest, &b, e);
        if (r < 0)
                return r;
        if ((size_t) snprintf(dir, sizeof(dir), "%s/%s", root, digest) >= sizeof(dir))
                return hull_fail(e, -ENAMETOOLONG, "skills: the path %s is too long", root);
        _cleanup_(dynbuf_freep) dynbuf prompt;
        dynbuf_init(&prompt, SKILL_PROMPT_MAX + 1024);
        if (dynbuf_addf(&prompt,
                        "\n\n# Skills\n\nSkills are folders of instructions, scripts and resources under %s that "
                        "extend what you can do. When a task matches a skill's description, read its SKILL.md "
                        "first (at the location given) and follow it; its other files are in the same folder. "
                        "The folders are read-only.\n\n<available_skills>\n%s</available_skills>\n",
                        V1_SKILLS_MOUNT, b.buf ? b.buf : "") < 0)
                return hull_err(e, -ENOMEM, "skills: out of memory");
        snprintf(ret_dir, SBX_PATH_MAX, "%s", dir);
        *ret_prompt = dynbuf_take(&prompt, NULL);
        return 0;
}
