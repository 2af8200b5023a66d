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
#include <wordexp.h>

#include "cli-tools.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "limits.h"
#include "macro.h"
#include "mcp-tools.h"
#include "sbx-workspace.h"
#include "tool-catalog.h"
#include "tool-web.h"

/* A tool as offered: the real one, run once the warm-up is over. */
typedef struct wrapped {
        cli_tools *t;
        const tool_def *orig;
} wrapped;

struct cli_tools {
        tool_web *web;
        tool_def web_defs[2];
        size_t n_web;
        const tool_def *defs[CLI_TOOLS_MAX]; /* what the agent gets: &offered[i] */
        tool_def offered[CLI_TOOLS_MAX];
        wrapped wraps[CLI_TOOLS_MAX];
        tool_policy policies[CLI_TOOLS_MAX];
        size_t n;
        /* MCP servers (--mcp) and their tools */
        mcp_client *mcp[MCP_SERVERS_MAX];
        size_t n_mcp;
        mcp_toolset *mcp_tools;
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
        tool_web_free(t->web);
        mcp_toolset_free(t->mcp_tools);
        for (size_t i = 0; i < t->n_mcp; i++)
                mcp_client_free(t->mcp[i]);
        free(t);
}

const tool_def *const *cli_tools_defs(const cli_tools *t) {
        return t->defs;
}

const tool_policy *cli_tools_policies(const cli_tools *t) {
        return t->policies;
}

size_t cli_tools_count(const cli_tools *t) {
        return t->n;
}

/* The tool called name, or NULL. */
static const tool_def *find_tool(const cli_tools *t, const char *name) {
        const tool_catalog_entry *c = tool_catalog_find(name);
        const tool_def *d = tool_catalog_def(name);
        if (c && c->toolset != TOOL_TOOLSET_NONE && d)
                return d;
        for (size_t i = 0; i < t->n_web; i++)
                if (strcmp(t->web_defs[i].name, name) == 0)
                        return &t->web_defs[i];
        return NULL;
}

static void add_tool(cli_tools *t, const tool_def *d) {
        for (size_t i = 0; i < t->n; i++)
                if (t->wraps[i].orig == d)
                        return;
        if (t->n >= CLI_TOOLS_MAX)
                return;
        size_t i = t->n++;
        t->wraps[i] = (wrapped){.t = t, .orig = d};
        t->offered[i] = *d;
        t->offered[i].run = run_warmed;
        t->offered[i].env = &t->wraps[i];
        t->defs[i] = &t->offered[i];
}

int cli_tools_new(const settings *st, const char *const *names, size_t n_names, cli_tools **ret, hull_error *e) {
        _cleanup_(cli_tools_freep) cli_tools *t = calloc(1, sizeof(*t));
        char known[512];
        size_t o = 0;
        int r;

        if (!t)
                return hull_err(e, -ENOMEM, "tools: out of memory");
        r = tool_web_new((const char *const *) st->allow_hosts, st->n_allow_hosts,
                         (const char *const *) st->allow_cidrs, st->n_allow_cidrs, st->web_max_bytes,
                         st->search_api_key, st->search_base_url, &t->web, e);
        if (r < 0)
                return r;
        t->n_web = tool_web_defs(t->web, t->web_defs);
        known[0] = '\0';
        for (size_t i = 0; i < tool_catalog_count() && o < sizeof(known); i++) {
                const tool_catalog_entry *c = tool_catalog_at(i);
                if (c->toolset != TOOL_TOOLSET_NONE)
                        o += (size_t) snprintf(known + o, sizeof(known) - o, "%s%s", o ? ", " : "", c->name);
        }
        if (!names) {
                const tool_def *builtin[TOOL_CATALOG_MAX];
                size_t n_builtin = tool_catalog_sandbox_defs(builtin);
                for (size_t i = 0; i < n_builtin; i++)
                        add_tool(t, builtin[i]);
                for (size_t i = 0; i < t->n_web; i++)
                        add_tool(t, &t->web_defs[i]);
        } else
                for (size_t k = 0; k < n_names; k++) {
                        const tool_def *d = find_tool(t, names[k]);
                        if (!d && strcmp(names[k], "web_search") == 0)
                                return hull_fail(e, -EINVAL,
                                                 "--tool web_search: no search key is configured (set TAVILY_API_KEY, "
                                                 "or search.api_key in $HULL_HOME/config.json; see docs/AGENT.md)");
                        if (!d)
                                return hull_fail(e, -EINVAL, "--tool %.64s: no such tool (hull's tools: %s)", names[k],
                                                 known);
                        add_tool(t, d);
                }
        for (size_t i = 0; i < t->n; i++)
                t->policies[i] = settings_policy_for(st, t->defs[i]->name, t->defs[i]->default_policy);
        *ret = TAKE_PTR(t);
        return 0;
}

/* One --mcp spec: NAME=COMMAND ARGS... started. */
static int start_mcp(cli_tools *t, const char *spec, bool sandboxed, const atomic_bool *interrupt,
                     mcp_message_fn on_message, void *ud, hull_error *e) {
        char name[MCP_SERVER_NAME_MAX + 1];
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
        for (size_t i = 0; i < t->n_mcp; i++)
                if (strcmp(mcp_client_name(t->mcp[i]), name) == 0)
                        return hull_fail(e, -EINVAL, "--mcp: two servers are named %s", name);
        if (strncmp(eq + 1, "http://", 7) == 0 || strncmp(eq + 1, "https://", 8) == 0) {
                if (sandboxed)
                        return hull_fail(e, -EINVAL,
                                         "--mcp-sandbox %s: %s is a server over HTTP; only a stdio server (a "
                                         "command) runs in a sandbox",
                                         name, name);
                mcp_http_config hc = {.name = name,
                                      .url = eq + 1,
                                      .cancel = interrupt,
                                      .on_message = on_message,
                                      .on_message_ud = ud};
                int k = mcp_client_connect(&hc, &t->mcp[t->n_mcp], e);
                if (k < 0)
                        return k;
                t->n_mcp++;
                return 0;
        }
        wordexp_t we;
        int r = wordexp(eq + 1, &we, WRDE_NOCMD);
        if (r != 0)
                return hull_fail(e, -EINVAL,
                                 "--mcp %s: the command cannot be split into words (%s); quote as in a shell, "
                                 "without $(...) or `...`",
                                 name,
                                 r == WRDE_CMDSUB    ? "it has a command substitution"
                                 : r == WRDE_BADCHAR ? "an unquoted | & ; < > ( ) { } or newline"
                                 : r == WRDE_SYNTAX  ? "unbalanced quotes"
                                                     : "out of memory");
        if (we.we_wordc == 0) {
                wordfree(&we);
                return hull_fail(e, -EINVAL, "--mcp %s: no command", name);
        }
        mcp_sandbox sb = {0}; /* --mcp-sandbox alone: no network */
        mcp_stdio_config cfg = {.name = name,
                                .argv = (const char *const *) we.we_wordv,
                                .sandbox = sandboxed ? &sb : NULL,
                                .cancel = interrupt,
                                .on_message = on_message,
                                .on_message_ud = ud};
        r = mcp_client_spawn(&cfg, &t->mcp[t->n_mcp], e);
        wordfree(&we);
        if (r < 0)
                return r;
        t->n_mcp++;
        return 0;
}

/* One server of config.json's "mcp" started (its entry checked by settings.c). */
static int start_mcp_file(cli_tools *t, const settings_mcp *m, bool sandboxed, const atomic_bool *interrupt,
                          mcp_message_fn on_message, void *ud, hull_error *e) {
        mcp_sandbox sb = {.allow_hosts = (const char *const *) m->allow_hosts,
                          .allow_package_managers = m->allow_package_managers,
                          .allow_loopback = m->net_allow_loopback};
        int r;
        if (m->url && sandboxed)
                return hull_fail(e, -EINVAL,
                                 "--mcp-sandbox %s: %s is a server over HTTP; only a stdio server (a command) runs in "
                                 "a sandbox",
                                 m->name, m->name);
        if (m->url) {
                mcp_http_config hc = {.name = m->name,
                                      .url = m->url,
                                      .headers = (const char *const *) m->headers,
                                      .cancel = interrupt,
                                      .on_message = on_message,
                                      .on_message_ud = ud};
                r = mcp_client_connect(&hc, &t->mcp[t->n_mcp], e);
        } else {
                mcp_stdio_config cfg = {.name = m->name,
                                        .argv = (const char *const *) m->argv,
                                        .env = (const char *const *) m->env,
                                        .cwd = m->sandbox && m->workdir ? m->workdir : m->cwd,
                                        .sandbox = m->sandbox || sandboxed ? &sb : NULL,
                                        .cancel = interrupt,
                                        .on_message = on_message,
                                        .on_message_ud = ud};
                r = mcp_client_spawn(&cfg, &t->mcp[t->n_mcp], e);
        }
        if (r < 0)
                return r;
        t->n_mcp++;
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

int cli_tools_add_mcp(cli_tools *t, const settings *st, const char *const *specs, size_t n,
                      const char *const *sandboxed, size_t n_sandboxed, const atomic_bool *interrupt,
                      mcp_message_fn on_message, void *ud, hull_error *e) {
        size_t n_file = 0;
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
        if (n + n_file == 0)
                return 0;
        if (n + n_file > MCP_SERVERS_MAX || t->n_mcp > 0)
                return hull_fail(e, -EINVAL,
                                 "--mcp: at most %u servers in all (config.json's \"mcp\" and --mcp), given at once",
                                 MCP_SERVERS_MAX);
        /* the file's servers first, in its order, but for those a --mcp of the same name replaces */
        for (size_t i = 0; i < st->n_mcp; i++) {
                bool replaced = false;
                for (size_t k = 0; k < n && !replaced; k++)
                        replaced = spec_names(specs[k], st->mcp[i].name);
                if (replaced)
                        continue;
                int r = start_mcp_file(t, &st->mcp[i], named(sandboxed, n_sandboxed, st->mcp[i].name), interrupt,
                                       on_message, ud, e);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                char name[MCP_SERVER_NAME_MAX + 1] = "";
                const char *eq = strchr(specs[i], '=');
                if (eq && (size_t) (eq - specs[i]) <= MCP_SERVER_NAME_MAX)
                        memcpy(name, specs[i], (size_t) (eq - specs[i]));
                int r = start_mcp(t, specs[i], named(sandboxed, n_sandboxed, name), interrupt, on_message, ud, e);
                if (r < 0)
                        return r;
        }
        int r = mcp_toolset_new(t->mcp, t->n_mcp, interrupt, &t->mcp_tools, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < mcp_toolset_count(t->mcp_tools); i++) {
                const tool_def *d = mcp_toolset_def(t->mcp_tools, i);
                for (size_t j = 0; j < t->n; j++)
                        if (strcmp(t->defs[j]->name, d->name) == 0)
                                return hull_fail(e, -EINVAL, "--mcp: the tool %s is offered twice", d->name);
                if (t->n >= CLI_TOOLS_MAX)
                        return hull_fail(e, -E2BIG, "--mcp: more than %u tools in all", CLI_TOOLS_MAX);
                /* not wrapped: an MCP tool does not use the session, so it need not wait for its warm-up */
                size_t k = t->n++;
                t->offered[k] = *d;
                t->defs[k] = &t->offered[k];
                t->policies[k] = settings_policy_for(st, d->name, d->default_policy);
        }
        return 0;
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
