/* cli-worker.c: `hull worker --server URL --environment ID`: a self-hosted worker of a hull serve's
 * (or any Claude Managed Agents compatible) Work API (docs/DEPLOY.md "Self-hosted workers"). It
 * polls the environment's queue with its environment key, acknowledges an item, heartbeats its
 * lease on a thread of its own with the item's sessions token, and serves the session: every
 * agent.tool_use not yet answered (and allowed) runs in a local sandbox of hull's session engine
 * (ss_new_local, as hull mcp's) and its user.tool_result is posted; once the session has been
 * idle (end_turn) for --max-idle, or ends, the item is force-stopped and the next is polled. A
 * worker killed mid-tool stops heartbeating: the server requeues the item after the lease's TTL
 * and another worker takes it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "cli.h"
#include "fs-util.h"
#include "home.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"
#include "sbx-session.h"
#include "ss.h"
#include "time-util.h"
#include "tool-catalog.h"
#include "tool-run.h"

#define CMD "worker"
#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)
#define TOKEN_MAX 160U
#define BETA_HEADER "anthropic-beta: managed-agents-2026-04-01"

enum { OPT_SERVER = 0x100, OPT_ENV, OPT_KEY_FILE, OPT_HOME, OPT_NO_CGROUP, OPT_MAX_IDLE, OPT_TTL, OPT_ONCE };

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"server", required_argument, NULL, OPT_SERVER},
        {"environment", required_argument, NULL, OPT_ENV},
        {"key-file", required_argument, NULL, OPT_KEY_FILE},
        {"home", required_argument, NULL, OPT_HOME},
        {"no-cgroup", no_argument, NULL, OPT_NO_CGROUP},
        {"max-idle", required_argument, NULL, OPT_MAX_IDLE},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"once", no_argument, NULL, OPT_ONCE},
        {},
};

void cli_worker_help(void) {
        printf("Usage: hull worker --server URL --environment ENV_ID [--key-file FILE] [options]\n\n"
               "A self-hosted worker of a self_hosted environment: polls its work queue, acknowledges a\n"
               "work item, heartbeats its lease, and runs the session's built-in tool calls (bash, read,\n"
               "write, edit, glob, grep, ...) in a local sandbox of hull's session engine, posting each\n"
               "result as user.tool_result. A worker killed mid-tool loses its lease after the TTL and\n"
               "another worker takes the item. See docs/DEPLOY.md \"Self-hosted workers\".\n\n"
               "Options:\n"
               "  --server URL        the hull serve (or compatible /v1 API) to poll\n"
               "  --environment ID    the self_hosted environment (env_...)\n"
               "  --key-file FILE     its environment key (hull key create --environment ID);\n"
               "                      default $HULL_ENVIRONMENT_KEY\n"
               "  --home DIR          where the sandboxes' state goes (default $HULL_HOME)\n"
               "  --no-cgroup         no cgroup limits for the sandbox\n"
               "  --max-idle MS       end an item once its session has been idle this long (default 2000)\n"
               "  --ttl S             the lease's TTL asked for (desired_ttl_seconds, default 10; a\n"
               "                      heartbeat every TTL/2)\n"
               "  --once              exit after one work item\n");
}

static volatile sig_atomic_t quit; /* SIGINT, SIGTERM: the worker ends */
static void on_signal(int sig) {
        (void) sig;
        quit = 1;
}

typedef struct worker {
        const char *server, *env;
        char key[TOKEN_MAX];
        httpc *http;
        ss_manager *ss;
        ss_session *box;
        uint64_t max_idle_ms, ttl_s;
        char worker_id[128];
} worker;

/* One request; the answer's JSON (any value) in *ret on a 2xx; *ret_status the status. */
static int request(httpc *h, const char *server, const char *method, const char *path, const char *token,
                   const json_t *body, const char *extra_header, long *ret_status, json_t **ret) {
        char url[HTTPC_URL_MAX], auth[TOKEN_MAX + 32];
        if ((size_t) snprintf(url, sizeof(url), "%s%s", server, path) >= sizeof(url))
                return -ENAMETOOLONG;
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        const char *headers[] = {auth,         "anthropic-version: 2023-06-01",
                                 BETA_HEADER,  "content-type: application/json",
                                 extra_header, NULL};
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        httpc_request hr = {.method = method,
                            .url = url,
                            .headers = headers,
                            .body = text,
                            .body_len = text ? strlen(text) : 0,
                            .timeout_ms = 30000,
                            .answer_max = 64U << 20};
        httpc_answer a;
        hull_error e = {0};
        int r = httpc_perform(h, &hr, &a, &e);
        explicit_bzero(auth, sizeof(auth));
        if (r < 0) {
                cli_error(CMD, "%s %s: %s", method, path, e.msg);
                return r;
        }
        *ret_status = a.status;
        if (ret)
                *ret = a.status >= 200 && a.status < 300 ? json_loadb(a.body, a.body_len, JSON_DECODE_ANY, NULL) : NULL;
        if (a.status >= 400 && a.status != 412)
                cli_error(CMD, "%s %s: %ld %.300s", method, path, a.status, a.body);
        httpc_answer_done(&a);
        return 0;
}

/* The sessions token in a work item's secret (base64url or base64 JSON), else "". */
static void token_of(const json_t *work, char ret[TOKEN_MAX]) {
        ret[0] = '\0';
        const char *s = json_string_value(json_object_get(work, "secret"));
        if (!s)
                return;
        _cleanup_free_ char *std = strdup(s);
        if (!std)
                return;
        size_t n = strlen(std);
        for (size_t i = 0; i < n; i++)
                std[i] = std[i] == '-' ? '+' : std[i] == '_' ? '/' : std[i];
        _cleanup_free_ char *padded = malloc(n + 4);
        if (!padded)
                return;
        memcpy(padded, std, n);
        while (n % 4)
                padded[n++] = '=';
        _cleanup_free_ void *raw = NULL;
        size_t len = 0;
        if (base64_decode(padded, n, &raw, &len) < 0)
                return;
        json_auto_t *o = json_loadb(raw, len, 0, NULL);
        explicit_bzero(raw, len);
        const char *t = json_string_value(json_object_get(o, "sessions_token"));
        if (t && strlen(t) < TOKEN_MAX)
                snprintf(ret, TOKEN_MAX, "%s", t);
}

/* ---- the lease, on a thread of its own ---- */

typedef struct lease {
        worker *w;
        const char *path; /* .../work/{id} */
        const char *token;
        atomic_bool done, lost, stop;
        pthread_mutex_t lock;
        pthread_cond_t wake;
} lease;

static void *lease_main(void *ud) {
        lease *l = ud;
        httpc *h = NULL;
        hull_error e = {0};
        if (httpc_new(&h, &e) < 0) {
                cli_error(CMD, "the heartbeat has no HTTP client: %s", e.msg);
                atomic_store(&l->stop, true);
                return NULL;
        }
        char last[STORE_ID_MAX] = "NO_HEARTBEAT";
        while (!atomic_load(&l->done)) {
                char path[HTTPC_URL_MAX];
                snprintf(path, sizeof(path), "%s/heartbeat?expected_last_heartbeat=%s&desired_ttl_seconds=%llu",
                         l->path, last, (unsigned long long) l->w->ttl_s);
                long st = 0;
                json_auto_t *a = NULL;
                if (request(h, l->w->server, "POST", path, l->token, NULL, NULL, &st, &a) == 0) {
                        const char *hb = json_string_value(json_object_get(a, "last_heartbeat"));
                        const char *state = json_string_value(json_object_get(a, "state"));
                        if (st == 412) {
                                fprintf(stderr, "hull: worker: the lease was lost (412): the item is another's\n");
                                atomic_store(&l->lost, true);
                                break;
                        }
                        if (st >= 400 && st != 408 && st != 429 && st < 500) {
                                atomic_store(&l->stop, true);
                                break;
                        }
                        if (hb && strlen(hb) < sizeof(last))
                                snprintf(last, sizeof(last), "%s", hb);
                        if (state && (strcmp(state, "stopping") == 0 || strcmp(state, "stopped") == 0 ||
                                      !json_is_true(json_object_get(a, "lease_extended")))) {
                                atomic_store(&l->stop, true);
                                break;
                        }
                }
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += (time_t) (l->w->ttl_s / 2 ? l->w->ttl_s / 2 : 1);
                pthread_mutex_lock(&l->lock);
                if (!atomic_load(&l->done))
                        pthread_cond_timedwait(&l->wake, &l->lock, &ts);
                pthread_mutex_unlock(&l->lock);
        }
        httpc_free(h);
        return NULL;
}

/* ---- the session ---- */

/* Run one call in the sandbox and post its user.tool_result. */
static int run_call(worker *w, const char *sid, const char *token, const json_t *use) {
        const char *name = json_string_value(json_object_get(use, "name"));
        const char *id = json_string_value(json_object_get(use, "id"));
        const tool_def *d = name ? tool_catalog_def(name) : NULL;
        if (!d || !id || d->client)
                return 0; /* not a built-in this worker runs: another client owns it */
        const json_t *input = json_object_get(use, "input");
        json_auto_t *schema = json_loads(d->input_schema, 0, NULL);
        call_result res = {0};
        fprintf(stderr, "hull: worker: %s runs %s (%s)\n", sid, name, id);
        if (tool_run_validate(schema, input, "input", name, &res) >= 0) {
                tool_run_ctx c = {.ss = w->ss, .session = w->box, .who = "worker", .stopped = "interrupted"};
                tool_run_call(&c, d, input, &res, NULL);
        }
        json_auto_t *ev = json_pack("{s:[{s:s, s:s, s:b, s:[{s:s, s:s}]}]}", "events", "type", "user.tool_result",
                                    "tool_use_id", id, "is_error", res.is_error, "content", "type", "text", "text",
                                    res.text && res.text[0] ? res.text : "(no output)");
        call_result_done(&res);
        char path[HTTPC_URL_MAX];
        snprintf(path, sizeof(path), "/v1/sessions/%s/events", sid);
        long st = 0;
        int r = ev ? request(w->http, w->server, "POST", path, token, ev, NULL, &st, NULL) : -ENOMEM;
        return r < 0 ? r : st >= 200 && st < 300 ? 0 : -EIO;
}

/* One look at the session's log: run what is unanswered. 1 once the session is done with (idle
 * long enough, or ended), 0 to look again. */
static int look(worker *w, const char *sid, const char *token, uint64_t *idle_since) {
        json_auto_t *answered = json_object(), *uses = json_array();
        const char *last_status = NULL;
        bool end_turn = false;
        char page[STORE_ID_MAX * 2] = "";
        json_t *keep = json_array(); /* the pages, for the strings above */
        for (;;) {
                char path[HTTPC_URL_MAX];
                snprintf(path, sizeof(path), "/v1/sessions/%s/events?limit=1000%s%s", sid, page[0] ? "&page=" : "",
                         page);
                long st = 0;
                json_t *a = NULL;
                if (request(w->http, w->server, "GET", path, token, NULL, NULL, &st, &a) < 0 || !json_is_object(a)) {
                        json_decref(a);
                        json_decref(keep);
                        return st == 401 || st == 403 || st == 404 ? 1 : 0;
                }
                json_array_append_new(keep, a);
                size_t i;
                json_t *ev;
                json_array_foreach(json_object_get(a, "data"), i, ev) {
                        const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
                        if (strcmp(type, "agent.tool_use") == 0)
                                json_array_append(uses, ev);
                        else if (strcmp(type, "user.tool_result") == 0)
                                json_object_set_new(answered,
                                                    json_string_value(json_object_get(ev, "tool_use_id")) ?: "",
                                                    json_true());
                        else if (strncmp(type, "session.status_", 15) == 0 || strcmp(type, "session.deleted") == 0) {
                                last_status = type;
                                const char *sr =
                                        json_string_value(json_object_get(json_object_get(ev, "stop_reason"), "type"));
                                end_turn = sr && strcmp(sr, "end_turn") == 0;
                        }
                }
                const char *next = json_string_value(json_object_get(a, "next_page"));
                if (!next || !next[0] || json_array_size(json_object_get(a, "data")) == 0 ||
                    strlen(next) >= sizeof(page))
                        break;
                snprintf(page, sizeof(page), "%s", next);
        }
        bool outstanding = false;
        size_t i;
        json_t *use;
        json_array_foreach(uses, i, use) {
                const char *id = json_string_value(json_object_get(use, "id"));
                const char *perm = json_string_value(json_object_get(use, "evaluated_permission"));
                if (!id || json_object_get(answered, id) || (perm && strcmp(perm, "allow") != 0))
                        continue;
                outstanding = true;
                if (run_call(w, sid, token, use) < 0)
                        break;
        }
        bool ended = last_status && (strcmp(last_status, "session.status_terminated") == 0 ||
                                     strcmp(last_status, "session.deleted") == 0);
        bool idle = last_status && strcmp(last_status, "session.status_idle") == 0;
        json_decref(keep); /* last_status pointed into it */
        last_status = NULL;
        if (ended)
                return 1;
        if (outstanding || !idle || !end_turn) {
                *idle_since = 0;
                return 0;
        }
        if (!*idle_since)
                *idle_since = now_mono_ms();
        return now_mono_ms() - *idle_since >= w->max_idle_ms;
}

static void serve_item(worker *w, const json_t *work) {
        const char *wid = json_string_value(json_object_get(work, "id"));
        const char *sid = json_string_value(json_object_get(json_object_get(work, "data"), "id"));
        char token[TOKEN_MAX], base[HTTPC_URL_MAX / 2], path[HTTPC_URL_MAX];
        token_of(work, token);
        const char *cred = token[0] ? token : w->key;
        snprintf(base, sizeof(base), "/v1/environments/%s/work/%s", w->env, wid);
        fprintf(stderr, "hull: worker: serving %s (session %s)\n", wid, sid ? sid : "?");
        lease l = {.w = w, .path = base, .token = cred};
        pthread_mutex_init(&l.lock, NULL);
        pthread_cond_init(&l.wake, NULL);
        pthread_t t;
        bool started = pthread_create(&t, NULL, lease_main, &l) == 0;
        uint64_t idle_since = 0;
        while (started && sid && !quit && !atomic_load(&l.lost) && !atomic_load(&l.stop) &&
               look(w, sid, cred, &idle_since) == 0)
                usleep(200 * 1000);
        pthread_mutex_lock(&l.lock);
        atomic_store(&l.done, true);
        pthread_cond_signal(&l.wake);
        pthread_mutex_unlock(&l.lock);
        if (started)
                pthread_join(t, NULL);
        if (!atomic_load(&l.lost)) { /* a lost lease is another worker's item now */
                json_auto_t *force = json_pack("{s:b}", "force", true);
                long st = 0;
                snprintf(path, sizeof(path), "%s/stop", base);
                (void) request(w->http, w->server, "POST", path, cred, force, NULL, &st, NULL);
        }
        explicit_bzero(token, sizeof(token));
        pthread_cond_destroy(&l.wake);
        pthread_mutex_destroy(&l.lock);
        fprintf(stderr, "hull: worker: %s done%s\n", wid, atomic_load(&l.lost) ? " (lease lost)" : "");
}

/* The directories of workers killed before they could remove theirs (their pid gone). */
static void sweep_dead(const char *parent) {
        _cleanup_close_ int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                return;
        fd = -1; /* the DIR owns it */
        struct dirent *de;
        uint64_t pid;
        while ((de = readdir(d)))
                if (parse_uint64(de->d_name, 2, INT32_MAX, &pid) == 0 && (pid_t) pid != getpid() &&
                    kill((pid_t) pid, 0) < 0 && errno == ESRCH)
                        (void) rm_rf_at(dirfd(d), de->d_name);
        closedir(d);
}

/* The sandbox: a session of hull's engine under $HULL_HOME/worker/<pid>. */
static int open_box(worker *w, const char *home_opt, bool no_cgroup, char dir[static SBX_PATH_MAX], hull_error *e) {
        char home[SBX_PATH_MAX], parent[SBX_PATH_MAX], audit[SBX_PATH_MAX], stores[SBX_PATH_MAX], leaf[32];
        int r = home_opt ? (snprintf(home, sizeof(home), "%s", home_opt), 0) : home_resolve(home, e);
        if (r >= 0)
                r = home_mkdir(home, 0711, true, e);
        if (r >= 0)
                r = home_dir(home, "worker", 0711, true, parent, e);
        if (r >= 0)
                sweep_dead(parent);
        snprintf(leaf, sizeof(leaf), "%ld", (long) getpid());
        if (r >= 0)
                r = home_dir(parent, leaf, 0711, true, dir, e);
        if (r >= 0)
                r = home_dir(dir, "audit", 0700, false, audit, e);
        if (r >= 0)
                r = home_dir(dir, ".stores", 0711, true, stores, e);
        if (r >= 0)
                r = ss_new_local(-1, !no_cgroup, audit, stores, &w->ss, e);
        if (r < 0)
                return r;
        ss_open_opts oo = {.principal = "worker", .owner = "", .tier = SBX_TIER_CONTAINER};
        return ss_open(w->ss, &oo, &w->box, e);
}

static void close_box(worker *w, const char *dir) {
        if (w->box) {
                ss_close_info ci;
                ss_close(w->ss, w->box, &ci);
                ss_unref(w->ss, w->box);
        }
        if (w->ss) {
                ss_shutdown(w->ss, 5000);
                ss_free(w->ss);
        }
        if (dir[0])
                (void) rm_rf_at(AT_FDCWD, dir);
}

/* The server, the key and the environment, checked before any sandbox starts: one line and exit 2
 * when the server cannot be reached or refuses them. */
static int check_server(worker *w) {
        char url[HTTPC_URL_MAX], auth[TOKEN_MAX + 32];
        snprintf(url, sizeof(url), "%s/v1/environments/%s/work/stats", w->server, w->env);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", w->key);
        const char *headers[] = {auth, "anthropic-version: 2023-06-01", BETA_HEADER, NULL};
        httpc_request hr = {
                .method = "GET", .url = url, .headers = headers, .timeout_ms = 10000, .answer_max = 1U << 20};
        httpc_answer a;
        hull_error e = {0};
        int r = httpc_perform(w->http, &hr, &a, &e);
        explicit_bzero(auth, sizeof(auth));
        if (r < 0) {
                cli_error(CMD, "cannot reach the server %s: %s (is hull serve running there?)", w->server, e.msg);
                return CLI_EXIT_USAGE;
        }
        long st = a.status;
        json_auto_t *o = json_loadb(a.body, a.body_len, 0, NULL);
        const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
        if (st == 401)
                cli_error(CMD,
                          "the server refused the environment key (401): give the key `hull key create "
                          "--environment %s` printed",
                          w->env);
        else if (st != 200)
                cli_error(CMD, "the server refused environment %s (%ld): %.300s", w->env, st,
                          msg ? msg : "not a /v1 API with a Work API");
        httpc_answer_done(&a);
        return st == 200 ? 0 : CLI_EXIT_USAGE;
}

static int read_key(const char *file, char ret[static TOKEN_MAX]) {
        if (!file) {
                const char *k = getenv("HULL_ENVIRONMENT_KEY");
                if (!k || !k[0] || strlen(k) >= TOKEN_MAX)
                        return usage_error("no environment key: --key-file FILE or $HULL_ENVIRONMENT_KEY%s", "");
                snprintf(ret, TOKEN_MAX, "%s", k);
                return 0;
        }
        FILE *f = fopen(file, "re");
        bool ok = f && fgets(ret, TOKEN_MAX, f);
        if (f)
                fclose(f);
        if (!ok)
                return usage_error("cannot read the environment key from %s", file);
        ret[strcspn(ret, "\r\n")] = '\0';
        return ret[0] ? 0 : usage_error("%s holds no key", file);
}

int cli_worker_main(int argc, char **argv) {
        worker w = {.max_idle_ms = 2000, .ttl_s = 10};
        const char *key_file = NULL, *home = NULL;
        bool no_cgroup = false, once = false;
        uint64_t v;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_worker_help();
                        return CLI_EXIT_OK;
                case OPT_SERVER:
                        w.server = optarg;
                        break;
                case OPT_ENV:
                        w.env = optarg;
                        break;
                case OPT_KEY_FILE:
                        key_file = optarg;
                        break;
                case OPT_HOME:
                        home = optarg;
                        break;
                case OPT_NO_CGROUP:
                        no_cgroup = true;
                        break;
                case OPT_MAX_IDLE:
                case OPT_TTL:
                        if (parse_uint64(optarg, 1, c == OPT_TTL ? 600 : 3600000, &v) < 0)
                                return usage_error("%s wants a number (%s)", argv[optind - 1],
                                                   c == OPT_TTL ? "1 to 600 s" : "1 to 3600000 ms");
                        *(c == OPT_TTL ? &w.ttl_s : &w.max_idle_ms) = v;
                        break;
                case OPT_ONCE:
                        once = true;
                        break;
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("no arguments are taken, not '%s'", argv[optind]);
        if (!w.server || (strncmp(w.server, "http://", 7) != 0 && strncmp(w.server, "https://", 8) != 0))
                return usage_error("--server wants the server's http:// or https:// URL%s", "");
        char server[HTTPC_URL_MAX / 2];
        if (strlen(w.server) >= sizeof(server))
                return usage_error("--server %.64s... is too long", w.server);
        snprintf(server, sizeof(server), "%s", w.server);
        for (size_t n = strlen(server); n > 0 && server[n - 1] == '/'; n--)
                server[n - 1] = '\0'; /* http://host:8750/ is http://host:8750 */
        w.server = server;
        if (!w.env || strncmp(w.env, "env_", 4) != 0 || strlen(w.env) >= STORE_ID_MAX || strchr(w.env, '/'))
                return usage_error("--environment wants a self_hosted environment's id (env_...)%s", "");
        int r = read_key(key_file, w.key);
        if (r != 0)
                return r;
        char hostname[64] = "host", dir[SBX_PATH_MAX] = "";
        (void) gethostname(hostname, sizeof(hostname) - 1);
        snprintf(w.worker_id, sizeof(w.worker_id), "Anthropic-Worker-ID: %.40s-%ld", hostname, (long) getpid());
        hull_error e = {0};
        if (httpc_new(&w.http, &e) < 0) {
                cli_report(CMD, &e);
                return CLI_EXIT_FAILURE;
        }
        r = check_server(&w);
        if (r != 0) {
                explicit_bzero(w.key, sizeof(w.key));
                httpc_free(w.http);
                return r;
        }
        if (open_box(&w, home, no_cgroup, dir, &e) < 0) {
                cli_report(CMD, &e);
                close_box(&w, dir);
                httpc_free(w.http);
                return CLI_EXIT_FAILURE;
        }
        signal(SIGPIPE, SIG_IGN);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        char poll[HTTPC_URL_MAX];
        snprintf(poll, sizeof(poll), "/v1/environments/%s/work/poll?block_ms=999", w.env);
        fprintf(stderr, "hull: worker: polling %s for %s\n", w.server, w.env);
        int rc = CLI_EXIT_OK;
        while (!quit) {
                long st = 0;
                json_auto_t *work = NULL;
                if (request(w.http, w.server, "GET", poll, w.key, NULL, w.worker_id, &st, &work) < 0 ||
                    (st >= 400 && st < 500 && st != 408 && st != 429)) {
                        if (st >= 400) { /* a key or environment gone: no point in polling on */
                                rc = CLI_EXIT_USAGE;
                                break;
                        }
                        sleep(1);
                        continue;
                }
                if (!json_is_object(work))
                        continue;
                char ack[HTTPC_URL_MAX];
                snprintf(ack, sizeof(ack), "/v1/environments/%s/work/%s/ack", w.env,
                         json_string_value(json_object_get(work, "id")) ?: "");
                if (request(w.http, w.server, "POST", ack, w.key, NULL, NULL, &st, NULL) < 0 || st != 200)
                        continue;
                serve_item(&w, work);
                if (once)
                        break;
        }
        explicit_bzero(w.key, sizeof(w.key));
        close_box(&w, dir);
        httpc_free(w.http);
        return rc;
}
