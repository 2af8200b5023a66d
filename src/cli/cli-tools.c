/* cli-tools.c: see cli-tools.h. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-tools.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "sbx-workspace.h"

/* A tool as offered: the real one, run once the warm-up is over. */
typedef struct wrapped {
        cli_tools *t;
        const tool_def *orig;
} wrapped;

struct cli_tools {
        svc_agent *built;                    /* the recipe's tools and MCP servers */
        const tool_def *defs[CLI_TOOLS_MAX]; /* what the agent gets: &offered[i] */
        tool_def offered[CLI_TOOLS_MAX];
        wrapped wraps[CLI_TOOLS_MAX];
        size_t n;
        /* the warm-up: python started in a thread while the first model request is in flight */
        ss_manager *warm_m;
        ss_session *warm_s;
        pthread_t warm_thread;
        bool warming;
        sem_t claimed; /* posted once the warm-up holds the session's claim (or gave up on it) */
};

static void *warm_main(void *arg) {
        cli_tools *t = arg;
        hull_error e = {0};
        int r = ss_call_begin(t->warm_m, t->warm_s, -1, &e);
        /* The claim is taken before cli_tools_warm_start returns: a tool call of the main thread
         * claims after it, and waits for this thread (never the other way round). */
        sem_post(&t->claimed);
        if (r >= 0) {
                (void) ss_warm(t->warm_m, t->warm_s, SBX_LANG_PYTHON, &e); /* a failure: the first cell starts it */
                ss_call_end(t->warm_m, t->warm_s);
        }
        return NULL;
}

void cli_tools_warm_start(cli_tools *t, ss_manager *m, ss_session *s) {
        if (t->warming)
                return;
        t->warm_m = m;
        t->warm_s = s;
        if (sem_init(&t->claimed, 0, 0) < 0)
                return; /* not warmed: the first cell starts python */
        t->warming = pthread_create(&t->warm_thread, NULL, warm_main, t) == 0;
        if (!t->warming) { /* no thread: warm now */
                (void) warm_main(t);
                sem_destroy(&t->claimed);
                return;
        }
        while (sem_wait(&t->claimed) < 0 && errno == EINTR)
                ;
}

void cli_tools_warm_wait(cli_tools *t) {
        if (t && t->warming) {
                pthread_join(t->warm_thread, NULL);
                sem_destroy(&t->claimed);
                t->warming = false;
        }
}

static int run_warmed(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const wrapped *w = c->env;
        cli_tools_warm_wait(w->t);
        tool_ctx inner = *c;
        inner.env = w->orig->env;
        return w->orig->run(&inner, input, ret, e);
}

void cli_tools_free(cli_tools *t) {
        if (!t)
                return;
        cli_tools_warm_wait(t);
        svc_agent_free(t->built);
        free(t);
}

const tool_def *const *cli_tools_defs(const cli_tools *t) {
        return t->defs;
}

const tool_policy *cli_tools_policies(const cli_tools *t) {
        return t->built->policies;
}

size_t cli_tools_count(const cli_tools *t) {
        return t->n;
}

int cli_tools_new(svc_agent *built, cli_tools **ret, hull_error *e) {
        cli_tools *t = calloc(1, sizeof(*t));
        if (!t) {
                svc_agent_free(built);
                return hull_err(e, -ENOMEM, "tools: out of memory");
        }
        t->built = built;
        for (size_t i = 0; i < built->n && i < CLI_TOOLS_MAX; i++) {
                const tool_def *d = &built->defs[i];
                t->offered[i] = *d;
                /* not an MCP tool: it does not use the session, so it need not wait for its warm-up */
                if (!d->mcp_server) {
                        t->wraps[i] = (wrapped){.t = t, .orig = d};
                        t->offered[i].run = run_warmed;
                        t->offered[i].env = &t->wraps[i];
                }
                t->defs[i] = &t->offered[i];
                t->n++;
        }
        *ret = t;
        return 0;
}

void cli_mcp_list_done(cli_mcp_list *l) {
        for (size_t i = 0; i < l->n; i++)
                if (l->have_words[i])
                        wordfree(&l->words[i]);
        l->n = 0;
}

/* One --mcp spec: NAME=COMMAND ARGS... (split as a shell would) or NAME=http(s)://... */
static int spec_entry(cli_mcp_list *l, const char *spec, bool sandboxed, hull_error *e) {
        size_t k = l->n;
        char *name = l->names[k];
        const char *eq = strchr(spec, '=');
        size_t nl = eq ? (size_t) (eq - spec) : 0;
        if (!eq || nl == 0 || nl > MCP_SERVER_NAME_MAX)
                return hull_fail(e, -EINVAL,
                                 "--mcp %.64s: want NAME=COMMAND [ARGS...] with a NAME of 1 to %u letters, "
                                 "digits, _ and -",
                                 spec, MCP_SERVER_NAME_MAX);
        memcpy(name, spec, nl);
        name[nl] = '\0';
        if (!mcp_server_name_valid(name))
                return hull_fail(e, -EINVAL, "--mcp: '%s' is not a server name (letters, digits, _ and -)", name);
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->mcp[i].name, name) == 0)
                        return hull_fail(e, -EINVAL, "--mcp: two servers are named %s", name);
        l->mcp[k] = (svc_agent_mcp){.name = name, .others = {.enabled = true, .from_settings = true}};
        if (strncmp(eq + 1, "http://", 7) == 0 || strncmp(eq + 1, "https://", 8) == 0) {
                if (sandboxed)
                        return hull_fail(e, -EINVAL,
                                         "--mcp-sandbox %s: %s is a server over HTTP; only a stdio server (a "
                                         "command) runs in a sandbox",
                                         name, name);
                l->mcp[k].url = eq + 1;
                l->n++;
                return 0;
        }
        int r = wordexp(eq + 1, &l->words[k], WRDE_NOCMD);
        if (r != 0)
                return hull_fail(e, -EINVAL,
                                 "--mcp %s: the command cannot be split into words (%s); quote as in a shell, "
                                 "without $(...) or `...`",
                                 name,
                                 r == WRDE_CMDSUB    ? "it has a command substitution"
                                 : r == WRDE_BADCHAR ? "an unquoted | & ; < > ( ) { } or newline"
                                 : r == WRDE_SYNTAX  ? "unbalanced quotes"
                                                     : "out of memory");
        l->have_words[k] = true;
        l->n++;
        if (l->words[k].we_wordc == 0)
                return hull_fail(e, -EINVAL, "--mcp %s: no command", name);
        l->sandboxes[k] = (mcp_sandbox){0}; /* --mcp-sandbox alone: no network */
        l->mcp[k].argv = (const char *const *) l->words[k].we_wordv;
        l->mcp[k].sandbox = sandboxed ? &l->sandboxes[k] : NULL;
        return 0;
}

/* One server of config.json's "mcp" (its entry checked by settings.c). */
static int file_entry(cli_mcp_list *l, const settings_mcp *m, bool sandboxed, hull_error *e) {
        size_t k = l->n;
        if (m->url && sandboxed)
                return hull_fail(e, -EINVAL,
                                 "--mcp-sandbox %s: %s is a server over HTTP; only a stdio server (a command) runs in "
                                 "a sandbox",
                                 m->name, m->name);
        l->sandboxes[k] = (mcp_sandbox){.allow_hosts = (const char *const *) m->allow_hosts,
                                        .allow_package_managers = m->allow_package_managers,
                                        .allow_loopback = m->net_allow_loopback};
        l->mcp[k] = (svc_agent_mcp){.name = m->name, .others = {.enabled = true, .from_settings = true}};
        if (m->url) {
                l->mcp[k].url = m->url;
                l->mcp[k].headers = (const char *const *) m->headers;
        } else {
                l->mcp[k].argv = (const char *const *) m->argv;
                l->mcp[k].env = (const char *const *) m->env;
                l->mcp[k].cwd = m->sandbox && m->workdir ? m->workdir : m->cwd;
                l->mcp[k].sandbox = m->sandbox || sandboxed ? &l->sandboxes[k] : NULL;
        }
        l->n++;
        return 0;
}

/* Whether a --mcp spec names the server name ("NAME=..."). */
static bool spec_names(const char *spec, const char *name) {
        size_t n = strlen(name);
        return strncmp(spec, name, n) == 0 && spec[n] == '=';
}

/* Whether --mcp-sandbox named name. */
static bool named(const char *const *names, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(names[i], name) == 0)
                        return true;
        return false;
}

int cli_mcp_list_make(const settings *st, const char *const *specs, size_t n, const char *const *sandboxed,
                      size_t n_sandboxed, cli_mcp_list *ret, hull_error *e) {
        size_t n_file = 0;
        *ret = (cli_mcp_list){0};
        for (size_t k = 0; k < n_sandboxed; k++) {
                bool found = false;
                for (size_t i = 0; i < st->n_mcp && !found; i++)
                        found = strcmp(st->mcp[i].name, sandboxed[k]) == 0;
                for (size_t i = 0; i < n && !found; i++)
                        found = spec_names(specs[i], sandboxed[k]);
                if (!found)
                        return hull_fail(e, -EINVAL,
                                         "--mcp-sandbox %s: no MCP server of that name (give it with --mcp %s=COMMAND "
                                         "or in config.json's \"mcp\")",
                                         sandboxed[k], sandboxed[k]);
        }
        for (size_t i = 0; i < st->n_mcp; i++) {
                bool replaced = false;
                for (size_t k = 0; k < n && !replaced; k++)
                        replaced = spec_names(specs[k], st->mcp[i].name);
                n_file += !replaced;
        }
        if (n + n_file > MCP_SERVERS_MAX)
                return hull_fail(e, -EINVAL,
                                 "--mcp: at most %u servers in all (config.json's \"mcp\" and --mcp), given at once",
                                 MCP_SERVERS_MAX);
        /* the file's servers first, in its order, but for those a --mcp of the same name replaces */
        int r = 0;
        for (size_t i = 0; i < st->n_mcp && r >= 0; i++) {
                bool replaced = false;
                for (size_t k = 0; k < n && !replaced; k++)
                        replaced = spec_names(specs[k], st->mcp[i].name);
                if (!replaced)
                        r = file_entry(ret, &st->mcp[i], named(sandboxed, n_sandboxed, st->mcp[i].name), e);
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                char name[MCP_SERVER_NAME_MAX + 1] = "";
                const char *eq = strchr(specs[i], '=');
                if (eq && (size_t) (eq - specs[i]) <= MCP_SERVER_NAME_MAX)
                        memcpy(name, specs[i], (size_t) (eq - specs[i]));
                r = spec_entry(ret, specs[i], named(sandboxed, n_sandboxed, name), e);
        }
        if (r < 0)
                cli_mcp_list_done(ret);
        return r;
}

/* A fresh directory tmp (mode 0700) in dfd, and its fd. */
static int fresh_dir(int dfd, const char *tmp, const char *dir, hull_error *e) {
        (void) rm_rf_at(dfd, tmp);
        if (mkdirat(dfd, tmp, 0700) < 0)
                return hull_err(e, -errno, "cannot create %s/%s", dir, tmp);
        int fd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd >= 0 ? fd : hull_err(e, -errno, "cannot open %s/%s", dir, tmp);
}

/* Put the directory tmp in the place of name (whose old content goes), in one rename. */
static int swap_in(int dfd, const char *tmp, const char *name, const char *dir, hull_error *e) {
        if (renameat2(dfd, tmp, dfd, name, RENAME_EXCHANGE) == 0) {
                (void) rm_rf_at(dfd, tmp);
                return 0;
        }
        if (errno == ENOENT && renameat(dfd, tmp, dfd, name) == 0)
                return 0;
        return hull_err(e, -errno, "cannot put %s/%s in place", dir, name);
}

int cli_tools_save(ss_manager *m, ss_session *s, const char *dir, hull_error *e) {
        /* what persisted must hydrate back: the whole snapshot's bound for one file too */
        static const ws_tar_limits lim = {.bytes_max = WS_TAR_BYTES_DEFAULT, .file_bytes_max = WS_TAR_BYTES_DEFAULT};
        _cleanup_free_ void *tar = NULL;
        size_t len = 0;
        _cleanup_close_ int dfd = -1, wfd = -1, hfd = -1;
        int r;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, -errno, "cannot open %s", dir);
        /* both written beside the old ones, then swapped in: a failure keeps what was there */
        hfd = fresh_dir(dfd, ".handles.new", dir, e);
        if (hfd < 0)
                return hfd;
        char handles[SBX_PATH_MAX];
        if (path_join(handles, sizeof(handles), dir, ".handles.new") < 0)
                return hull_fail(e, -ENAMETOOLONG, "the path %.64s.../handles is too long", dir);
        r = ss_call_begin(m, s, -1, e);
        if (r < 0)
                return r;
        r = ss_persist(m, s, WS_TAR_BYTES_DEFAULT, &tar, &len, e);
        if (r >= 0) {
                r = ss_handles_export(m, s, handles, e);
                if (r == -EOPNOTSUPP)
                        r = 0;
        }
        ss_call_end(m, s);
        if (r < 0)
                goto fail;
        wfd = fresh_dir(dfd, ".workspace.new", dir, e);
        if (wfd < 0) {
                r = wfd;
                goto fail;
        }
        r = ws_hydrate_mem(wfd, tar, len, &lim, NULL, e);
        if (r < 0)
                goto fail;
        r = swap_in(dfd, ".workspace.new", "workspace", dir, e);
        if (r >= 0)
                r = swap_in(dfd, ".handles.new", "handles", dir, e);
        if (r >= 0)
                return 0;
fail:
        (void) rm_rf_at(dfd, ".workspace.new");
        (void) rm_rf_at(dfd, ".handles.new");
        return r;
}

int cli_tools_restore(ss_manager *m, ss_session *s, const char *dir, hull_error *e) {
        _cleanup_free_ void *tar = NULL;
        size_t len = 0;
        char path[SBX_PATH_MAX];
        int r;

        if (path_join(path, sizeof(path), dir, "workspace") < 0)
                return hull_fail(e, -ENAMETOOLONG, "the path %.64s.../workspace is too long", dir);
        _cleanup_close_ int wfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (wfd < 0)
                return errno == ENOENT ? 0 : hull_err(e, -errno, "cannot open %s", path);
        r = ws_persist_mem(wfd, NULL, &tar, &len, NULL, e);
        if (r < 0)
                return r;
        r = ss_call_begin(m, s, -1, e);
        if (r < 0)
                return r;
        json_t *record = NULL;
        ws_tar_stats stats;
        r = ss_hydrate(m, s, tar, len, &stats, &record, e);
        json_decref(record);
        ss_call_end(m, s);
        return r;
}
