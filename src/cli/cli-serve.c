/* cli-serve.c: `hull serve`: the daemon. Parses and checks the options, forks the sandbox broker
 * while the process is still single-threaded, starts the HTTP server, and owns the signals
 * (a signalfd): SIGTERM or SIGINT stop accepting, let in-flight runs finish for the grace period,
 * cancel what is left, and exit 0. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "broker.h"
#include "cli-env.h"
#include "cli-key.h"
#include "cli-options.h"
#include "cli-serve-node.h"
#include "cli.h"
#include "tool-document.h"
#include "dlib.h"
#include "dlog.h"
#include "fs-util.h"
#include "api-hull.h"
#include "api-agui.h"
#include "api-mcp.h"
#include "api-console.h"
#include "api-ops.h"
#include "api-plimsoll.h"
#include "egress.h"
#include "home.h"
#include "http-server.h"
#include "limits.h"
#include "macro.h"
#include "serve-metrics.h"
#include "parse-util.h"
#include "plimsoll.h"
#include "sbx.h"
#include "sbx-cgroup.h"
#include "sbx-oci.h"
#include "sbx-session.h"
#include "sessions.h"
#include "svc-env.h"
#include "settings.h"
#include "sha256.h"
#include "store.h"
#include "time-util.h"
#include "v1-run.h"
#include "api-v1.h"
#include "cli-serve-dirs.h"
#include "dotenv.h"

#ifndef HULL_VERSION
#define HULL_VERSION "0.0.0"
#endif

#define usage_error(...) cli_usage_error("serve", CLI_EXIT_USAGE, __VA_ARGS__)

/* Wait until the server is idle or the deadline passes; a signal on sfd ends the wait early.
 * Returns true when idle. */
static bool wait_idle(http_server *srv, int sfd, uint64_t deadline, bool *ret_signalled) {
        while (http_busy(srv) > 0) {
                uint64_t now = now_mono_ms();
                if (now >= deadline)
                        return false;
                struct pollfd p = {.fd = sfd, .events = POLLIN};
                if (poll(&p, 1, (int) MIN(deadline - now, 50U)) > 0) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                ;
                        *ret_signalled = true;
                        return false;
                }
        }
        return true;
}

/* What the options say. */
typedef struct serve_opts {
        const char *listen, *socket_path, *tokens_path, *work_dir, *audit_dir, *handles_dir;
        uint64_t max_runs, queue, memory, pids, grace_ms;
        bool use_cgroups, zygote, kernel_tier;
        uint64_t ready_fd; /* --ready-fd: "ready ADDR" written there once listening; 0: none */
        uint64_t max_sessions, per_owner, per_caller, lifetime_ms, idle_ms, session_memory;
        uint64_t handle_max, session_handles_max;
        uint64_t file_max; /* /v1/files */
        dlog_level log_level;
        const char *db_path;
        serve_node node; /* --node-id, --advertise, --capacity */
        const char *agui_agent, *agui_environment;
        uint64_t max_connections, max_per_address;
        settings_flags model;
        const char *model_headers[SERVE_MODEL_HEADERS_MAX];
        char *net_cidrs[BRK_NET_CIDRS_MAX + 1]; /* NULL-terminated */
        size_t n_net_cidrs;
        bool net_allow_loopback; /* TESTING ONLY */
        bool allow_unrestricted;
} serve_opts;

/* Everything hull serve runs; serve_teardown() ends what was started, in reverse. */
typedef struct serve_state {
        serve_opts o;
        char listen_default[SERVE_SHORT_STR_MAX];
        dlog log;
        metrics m;
        auth_tokens tokens;
        plim_evidence ev; /* the base; tier offers it, with the kernel tier once runsc's check passed */
        tg_gate *tier;
        struct sockaddr_storage listen;
        socklen_t listen_len;
        int sfd; /* SIGTERM, SIGINT */
        char work_root[SBX_PATH_MAX], audit_path[SBX_PATH_MAX], handles_path[SBX_PATH_MAX];
        bool work_root_made;
        int zygote_fd;
        int zygote_lift_fd; /* its warm-up priority's lift (sbx_zygote_lift), or -1 */
        pid_t zygote_pid;
        brk_broker *broker;
        hs_manager *sessions;
        api_plimsoll *plimsoll;
        api_hull *hull;
        api_ops *ops;
        http_server *srv;
        /* the agent API */
        char db_path[SBX_PATH_MAX];
        bool db_given; /* by --db or HULL_DB: a failure to open it is a usage error */
        store *db;
        settings settings;
        bool have_settings;
        char settings_error[HULL_ERROR_MSG_MAX];
        dotenv *env;
        v1_engine *engine;
        v1_deploy *deploy; /* the deployments' scheduler */
        api_v1 *v1;
        v1_files *files;                 /* /v1/files: the bytes in the store, node-local copies in $HULL_HOME/blobs */
        char mnt_path[SBX_PATH_MAX + 8]; /* the sessions' resource directories: $HULL_HOME/mnt */
        http_fallback fallbacks[1];      /* the server-wide fallback's prefixes: /v1 */
        http_keys keys;
        api_mcp *mcp;      /* /mcp */
        api_agui *agui;    /* /agui */
        pthread_t preload; /* loads libcurl once listening (preload_model_client) */
        bool preloading;
} serve_state;

/* ---- the options: one setter each ---- */

static int set_model(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->model.model = arg;
        return 0;
}

static int set_provider(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->model.provider = arg;
        return 0;
}

static int set_base_url(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->model.base_url = arg;
        return 0;
}

static int set_model_api_key(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->model.api_key = arg;
        return 0;
}

static int set_model_header(void *ctx, const char *arg) {
        serve_opts *o = ctx;
        if (o->model.n_headers >= SERVE_MODEL_HEADERS_MAX)
                return usage_error("--model-header is given more than %u times", SERVE_MODEL_HEADERS_MAX);
        o->model_headers[o->model.n_headers++] = arg;
        return 0;
}

static int set_max_connections(void *ctx, const char *arg) {
        if (parse_uint64(arg, 16, SERVE_CONNECTIONS_LIMIT, &((serve_opts *) ctx)->max_connections) < 0)
                return usage_error("--max-connections wants a whole number from 16 to %u, got '%s'",
                                   SERVE_CONNECTIONS_LIMIT, arg);
        return 0;
}

static int set_max_per_address(void *ctx, const char *arg) {
        if (parse_uint64(arg, 1, SERVE_CONNECTIONS_LIMIT, &((serve_opts *) ctx)->max_per_address) < 0)
                return usage_error("--max-connections-per-address wants a whole number from 1 to %u, got '%s'",
                                   SERVE_CONNECTIONS_LIMIT, arg);
        return 0;
}

static int set_agui_agent(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->agui_agent = arg;
        return 0;
}

static int set_agui_environment(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->agui_environment = arg;
        return 0;
}

static int set_db(void *ctx, const char *arg) {
        hull_error e = {0};
        if (cli_db_check(arg, &e) < 0)
                return usage_error("--db: %s", e.msg);
        ((serve_opts *) ctx)->db_path = arg;
        return 0;
}

static int set_node_id(void *ctx, const char *arg) {
        return cli_serve_node_set(&((serve_opts *) ctx)->node, 'i', arg);
}
static int set_advertise(void *ctx, const char *arg) {
        return cli_serve_node_set(&((serve_opts *) ctx)->node, 'a', arg);
}
static int set_capacity(void *ctx, const char *arg) {
        return cli_serve_node_set(&((serve_opts *) ctx)->node, 'c', arg);
}

static int set_listen(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->listen = arg;
        return 0;
}

static int set_socket(void *ctx, const char *arg) {
        if (arg[0] == '\0')
                return usage_error("--socket wants a path%s", "");
        ((serve_opts *) ctx)->socket_path = arg;
        return 0;
}

static int set_tokens(void *ctx, const char *arg) {
        ((serve_opts *) ctx)->tokens_path = arg;
        return 0;
}

static int set_max_runs(void *ctx, const char *arg) {
        if (parse_uint64(arg, 1, SERVE_RUNS_MAX, &((serve_opts *) ctx)->max_runs) < 0)
                return usage_error("--max-runs wants a whole number from 1 to 64, got '%s'", arg);
        return 0;
}

static int set_queue(void *ctx, const char *arg) {
        if (parse_uint64(arg, 0, SERVE_RUN_QUEUE_MAX, &((serve_opts *) ctx)->queue) < 0)
                return usage_error("--queue wants a whole number from 0 to 16, got '%s'", arg);
        return 0;
}

static int set_memory(void *ctx, const char *arg) {
        if (parse_size(arg, SBX_MEMORY_BYTES_MIN, SBX_MEMORY_BYTES_MAX, &((serve_opts *) ctx)->memory) < 0)
                return usage_error("--memory wants a size of at least 4M such as 512M or 2G, got '%s'", arg);
        return 0;
}

static int set_pids(void *ctx, const char *arg) {
        if (parse_uint64(arg, 1, SBX_PIDS_MAX, &((serve_opts *) ctx)->pids) < 0)
                return usage_error("--pids wants a whole number from 1 to 65536, got '%s'", arg);
        return 0;
}

static int set_no_cgroup(void *ctx, const char *arg) {
        (void) arg;
        ((serve_opts *) ctx)->use_cgroups = false;
        return 0;
}

static int set_work_dir(void *ctx, const char *arg) {
        struct stat st;
        if (arg[0] != '/' || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
                return usage_error("--work-dir '%s' is not an existing directory given by absolute path", arg);
        ((serve_opts *) ctx)->work_dir = arg;
        return 0;
}

static int set_grace(void *ctx, const char *arg) {
        if (parse_duration_ms(arg, 0, SERVE_SHUTDOWN_GRACE_MS_MAX, &((serve_opts *) ctx)->grace_ms) < 0)
                return usage_error("--shutdown-grace wants seconds from 0 to 600, got '%s'", arg);
        return 0;
}

static int set_log_level(void *ctx, const char *arg) {
        if (dlog_level_from_string(arg, &((serve_opts *) ctx)->log_level) < 0)
                return usage_error("--log-level wants error, warn, info or debug, got '%s'", arg);
        return 0;
}

static int set_max_sessions(void *ctx, const char *arg) {
        if (parse_uint64(arg, 0, SERVE_SESSIONS_MAX, &((serve_opts *) ctx)->max_sessions) < 0)
                return usage_error("--max-sessions wants a whole number from 0 to %u, got '%s'", SERVE_SESSIONS_MAX,
                                   arg);
        return 0;
}

static int set_max_per_owner(void *ctx, const char *arg) {
        if (parse_uint64(arg, 1, SERVE_SESSIONS_MAX, &((serve_opts *) ctx)->per_owner) < 0)
                return usage_error("--max-sessions-per-owner wants a whole number from 1 to %u, got '%s'",
                                   SERVE_SESSIONS_MAX, arg);
        return 0;
}

static int set_max_per_caller(void *ctx, const char *arg) {
        if (parse_uint64(arg, 1, SERVE_SESSIONS_MAX, &((serve_opts *) ctx)->per_caller) < 0)
                return usage_error("--max-sessions-per-caller wants a whole number from 1 to %u, got '%s'",
                                   SERVE_SESSIONS_MAX, arg);
        return 0;
}

static int set_session_lifetime(void *ctx, const char *arg) {
        if (parse_duration_ms(arg, 1000, SERVE_SESSION_LIFETIME_MS_MAX, &((serve_opts *) ctx)->lifetime_ms) < 0)
                return usage_error("--session-lifetime wants a duration from 1s to 12h such as 30m, got '%s'", arg);
        return 0;
}

static int set_session_idle(void *ctx, const char *arg) {
        if (parse_duration_ms(arg, 100, SERVE_SESSION_LIFETIME_MS_MAX, &((serve_opts *) ctx)->idle_ms) < 0)
                return usage_error("--session-idle wants a duration from 100ms to 12h such as 5m, got '%s'", arg);
        return 0;
}

static int set_session_memory(void *ctx, const char *arg) {
        if (parse_size(arg, 64ULL << 20, SBX_MEMORY_BYTES_MAX, &((serve_opts *) ctx)->session_memory) < 0)
                return usage_error("--session-memory wants a size of at least 64M such as 1G, got '%s'", arg);
        return 0;
}

static int set_net_cidr(void *ctx, const char *arg) {
        serve_opts *o = ctx;
        if (o->n_net_cidrs >= BRK_NET_CIDRS_MAX || strlen(arg) >= BRK_NET_CIDR_TEXT ||
            egress_cidr_parse(arg, &(egress_cidr){0}) < 0)
                return usage_error("--net-allow-cidr: at most %u, each a CIDR such as 10.8.0.0/16 (got '%s')",
                                   BRK_NET_CIDRS_MAX, arg);
        o->net_cidrs[o->n_net_cidrs++] = (char *) arg;
        return 0;
}

static int set_net_unrestricted(void *ctx, const char *arg) {
        (void) arg;
        ((serve_opts *) ctx)->allow_unrestricted = true;
        return 0;
}

static int set_net_loopback(void *ctx, const char *arg) {
        (void) arg;
        ((serve_opts *) ctx)->net_allow_loopback = true;
        return 0;
}

static int set_audit_dir(void *ctx, const char *arg) {
        if (arg[0] != '/')
                return usage_error("--audit-dir wants an absolute path, got '%s'", arg);
        ((serve_opts *) ctx)->audit_dir = arg;
        return 0;
}

static int set_no_kernel_tier(void *ctx, const char *arg) {
        (void) arg;
        ((serve_opts *) ctx)->kernel_tier = false;
        return 0;
}

/* HULL_KERNEL_TIER=off (or 0): as --no-kernel-tier (a test suite's servers skip runsc's check). */
static bool kernel_tier_wanted(void) {
        const char *v = getenv("HULL_KERNEL_TIER");
        return !v || (strcmp(v, "off") != 0 && strcmp(v, "0") != 0);
}

static int set_ready_fd(void *ctx, const char *arg) {
        uint64_t *fd = &((serve_opts *) ctx)->ready_fd;
        if (parse_uint64(arg, 3, SERVE_READY_FD_MAX, fd) < 0 || fcntl((int) *fd, F_SETFD, FD_CLOEXEC) < 0)
                return usage_error("--ready-fd wants an open file descriptor of 3 or more, got '%s'", arg);
        return 0;
}

static int set_no_zygote(void *ctx, const char *arg) {
        (void) arg;
        ((serve_opts *) ctx)->zygote = false;
        return 0;
}

static int set_handles_dir(void *ctx, const char *arg) {
        if (arg[0] != '/')
                return usage_error("--handles-dir wants an absolute path, got '%s'", arg);
        ((serve_opts *) ctx)->handles_dir = arg;
        return 0;
}

static int set_handle_max(void *ctx, const char *arg) {
        if (parse_size(arg, 1ULL << 20, HD_MAX_SPILL_MAX, &((serve_opts *) ctx)->handle_max) < 0)
                return usage_error("--handle-max wants a size from 1M to 1T such as 2G, got '%s'", arg);
        return 0;
}

static int set_file_max(void *ctx, const char *arg) {
        if (parse_size(arg, 1, V1_FILE_BYTES_MAX, &((serve_opts *) ctx)->file_max) < 0)
                return usage_error("--file-max wants a size from 1 to 500M such as 100M, got '%s'", arg);
        return 0;
}

static int set_session_handles_max(void *ctx, const char *arg) {
        if (parse_size(arg, 1ULL << 20, HD_MAX_SPILL_MAX, &((serve_opts *) ctx)->session_handles_max) < 0)
                return usage_error("--session-handles-max wants a size from 1M to 1T such as 20G, got '%s'", arg);
        return 0;
}

static const cli_option serve_options[] = {
        {"listen",
         "HOST:PORT",
         set_listen,
         "TCP address (default 127.0.0.1:%u; PORT 0 picks a free one)",
         {SERVE_DEFAULT_PORT}},
        {"socket", "PATH", set_socket, "also listen on a unix socket (mode 0600)", {0}},
        {"tokens",
         "FILE",
         set_tokens,
         "bearer tokens: lines '<sha256 hex> <scope>[,...] [name]' (see\n"
         "'hull token new'); required to listen beyond loopback",
         {0}},
        {"max-runs", "N", set_max_runs, "runs at once (default %u, at most %u)", {SERVE_DEFAULT_RUNS, SERVE_RUNS_MAX}},
        {"queue",
         "N",
         set_queue,
         "admitted runs that wait for a slot (default %u); more are refused",
         {SERVE_RUN_QUEUE_MAX}},
        {"memory", "SIZE", set_memory, "memory limit of each run, tmpfs included (default 512M)", {0}},
        {"pids", "N", set_pids, "process limit of each run (default %u)", {SBX_DEFAULT_PIDS}},
        {"no-cgroup", NULL, set_no_cgroup, "run without cgroup limits (memory, pids)", {0}},
        {"work-dir", "DIR", set_work_dir, "where runs' work directories are made (default $TMPDIR or /tmp)", {0}},
        {"shutdown-grace",
         "SECONDS",
         set_grace,
         "how long in-flight runs may finish after SIGTERM (default %u)",
         {SERVE_SHUTDOWN_GRACE_MS / 1000}},
        {"log-level",
         "LEVEL",
         set_log_level,
         "error, warn, info (default) or debug; one line per event on stderr",
         {0}},
        {"max-connections",
         "N",
         set_max_connections,
         "open TCP connections at once (default %u; event streams hold one each)",
         {SERVE_CONNECTIONS_MAX}},
        {"max-connections-per-address",
         "N",
         set_max_per_address,
         "... of one client address (default %u)",
         {SERVE_CONNECTIONS_PER_IP_MAX}},
        {NULL,
         NULL,
         NULL,
         "\nSessions (OpenSession, SessionRun, CloseSession, /hull.v1.Workspace/*, /hull.v1.Sessions/List):\n",
         {0}},
        {"max-sessions",
         "N",
         set_max_sessions,
         "sessions open at once (default $HULL_MAX_SESSIONS, else %u; at most %u;\n"
         "0 turns sessions off)",
         {SERVE_DEFAULT_SESSIONS, SERVE_SESSIONS_MAX}},
        {"max-sessions-per-owner",
         "N",
         set_max_per_owner,
         "per caller and owner; one more ends the least recently used\n"
         "idle one (default %u)",
         {SERVE_DEFAULT_SESSIONS_PER_OWNER}},
        {"max-sessions-per-caller",
         "N",
         set_max_per_caller,
         "per caller (token), whatever its owners (default %u)",
         {SERVE_DEFAULT_SESSIONS_PER_CALLER}},
        {"session-lifetime",
         "DUR",
         set_session_lifetime,
         "a session ends this long after it opened (default 30m, at most 12h)",
         {0}},
        {"session-idle",
         "DUR",
         set_session_idle,
         "... or when unused this long (default 5m); DUR: 90s, 5m, 1h, 500ms",
         {0}},
        {"session-memory",
         "SIZE",
         set_session_memory,
         "memory of each session, its /workspace included (default 1G)",
         {0}},
        {"audit-dir",
         "DIR",
         set_audit_dir,
         "each session's run records as JSON lines, DIR/session-<fingerprint>.jsonl\n"
         "(default $HULL_HOME/audit; HULL_HOME: /var/lib/hull as root, else\n"
         "~/.local/state/hull)",
         {0}},
        {"ready-fd",
         "N",
         set_ready_fd,
         "once listening, write \"ready ADDR\\n\" to fd N and close it (a parent waits on it)",
         {0}},
        {"no-zygote", NULL, set_no_zygote, "start every python interpreter cold (no pre-imported numpy/pandas)", {0}},
        {"no-kernel-tier",
         NULL,
         set_no_kernel_tier,
         "skip runsc's self-check at start: container is the highest tier (else kernel, gVisor, when it passes;\n"
         "HULL_KERNEL_TIER=off does the same)",
         {0}},
        {"handles-dir",
         "DIR",
         set_handles_dir,
         "each session's handle store, DIR/serve-PID/<fingerprint>, read-only in the sandbox\n"
         "at /handles (default $HULL_HOME/handles)",
         {0}},
        {"handle-max",
         "SIZE",
         set_handle_max,
         "the largest handle (a table: its SQLite file; an upload, a save)\n"
         "(default 1G)",
         {0}},
        {"session-handles-max", "SIZE", set_session_handles_max, "a session's handles together (default 8G)", {0}},
        {"file-max", "SIZE", set_file_max, "the largest file POST /v1/files keeps (default 500M)", {0}},
        {"net-allow-cidr",
         "CIDR",
         set_net_cidr,
         "limited networking: let the egress guard pass this internal range\n"
         "(a mirror, a gateway; metadata addresses stay refused; repeatable)",
         {0}},
        {"net-allow-loopback",
         NULL,
         set_net_loopback,
         "TESTING ONLY: limited networking may reach 127.0.0.0/8 and ::1",
         {0}},
        {"allow-unrestricted-network",
         NULL,
         set_net_unrestricted,
         "a /v1 environment whose networking is unrestricted (the\n"
         "default of Managed Agents) gets a real network (pasta); without\n"
         "this its sessions have none; a plimsoll hullEnvironment that\n"
         "is unrestricted gets pasta too, and is refused without it",
         {0}},
        {NULL,
         NULL,
         NULL,
         "\nThe agent API (/v1: agents, environments, sessions, events; Claude Managed Agents compatible):\n",
         {0}},
        {"db",
         "DB",
         set_db,
         "hull's state: a path, sqlite:PATH or postgres://USER@HOST/NAME (default $HULL_DB, else "
         "$HULL_HOME/hull.db)",
         {0}},
        {"node-id", "ID", set_node_id, "one node of several on one PostgreSQL --db (docs/DEPLOY.md, Nodes)", {0}},
        {"advertise", "URL", set_advertise, "... the URL it is reached at (default http://LISTEN)", {0}},
        {"capacity", "N", set_capacity, "... sessions it runs turns of at once (default %u)", {NODE_CAPACITY_DEFAULT}},
        {"model",
         "ID",
         set_model,
         "the model every agent uses (default: each agent's model id goes to\n"
         "the provider); like hull run, also HULL_MODEL or config.json",
         {0}},
        {"provider", "NAME", set_provider, "openai or anthropic (or HULL_PROVIDER, config.json)", {0}},
        {"base-url", "URL", set_base_url, "the model server (or HULL_BASE_URL, OPENAI_BASE_URL, ...)", {0}},
        {"model-api-key",
         "KEY",
         set_model_api_key,
         "the model server's key (or OPENAI_API_KEY, ANTHROPIC_API_KEY);\n"
         "--api-key is the same",
         {0}},
        {"api-key", "KEY", set_model_api_key, NULL, {0}}, /* in the row above */
        {"model-header", "'N: V'", set_model_header, "an extra header on every model request (repeatable)", {0}},
        {NULL,
         NULL,
         NULL,
         "  /v1 keys: 'hull key create' (or POST /v1/api-keys); HULL_SERVE_KEY adds one at start.\n",
         {0}},
        {"agui-agent",
         "ID",
         set_agui_agent,
         "AG-UI (POST /agui): a new thread's agent unless forwardedProps.agent_id\n"
         "names one",
         {0}},
        {"agui-environment",
         "ID",
         set_agui_environment,
         "... and its environment (default: the newest one; when there is\n"
         "none, one made for it, named default)",
         {0}},
        {NULL, NULL, NULL, "  Until a key exists (in hull.db or --tokens), loopback callers need none.\n", {0}},
};

static const cli_options serve_cli = {
        .cmd = "serve",
        .usage_status = CLI_EXIT_USAGE,
        .help = cli_serve_help,
        .table = serve_options,
        .n = ELEMENTSOF(serve_options),
        .width = 24,
};

void cli_serve_help(void) {
        printf("Usage: hull serve [OPTIONS]\n\n"
               "Serve the plimsoll sandbox protocol 3 (Connect, JSON) over HTTP/1.1: Describe and Run\n"
               "(javascript, project) under /plimsoll.v1.SandboxService/; the agent API under /v1/ (agents,\n"
               "environments, sessions and their events: Claude Managed Agents compatible); the MCP server\n"
               "(hull mcp's tools over Streamable HTTP, one sandbox session per MCP session) at /mcp;\n"
               "/healthz, /readyz, /metrics.\n\n"
               "Options:\n");
        cli_options_help(&serve_cli);
        printf("\nWithout --tokens every local caller may run code. Exit status: 0 after a graceful\n"
               "shutdown, 1 on a failure, 2 on a usage error.\n");
}

/* Returns -1 to go on, or the exit status (help, a usage error). */
static int parse_options(int argc, char **argv, serve_opts *o) {
        bool done;
        *o = (serve_opts){
                .max_runs = SERVE_DEFAULT_RUNS,
                .queue = SERVE_RUN_QUEUE_MAX,
                .memory = SBX_DEFAULT_MEMORY_BYTES,
                .pids = SBX_DEFAULT_PIDS,
                .grace_ms = SERVE_SHUTDOWN_GRACE_MS,
                .use_cgroups = true,
                .zygote = true,
                .kernel_tier = kernel_tier_wanted(),
                .max_sessions = SERVE_DEFAULT_SESSIONS,
                .per_owner = SERVE_DEFAULT_SESSIONS_PER_OWNER,
                .per_caller = SERVE_DEFAULT_SESSIONS_PER_CALLER,
                .lifetime_ms = SERVE_SESSION_LIFETIME_MS,
                .idle_ms = SERVE_SESSION_IDLE_MS,
                .session_memory = SERVE_SESSION_MEMORY_BYTES,
                .log_level = DLOG_INFO,
        };
        o->model.stream = -1;
        /* HULL_MAX_SESSIONS: the session cap from the service's environment (a unit's
         * Environment=); --max-sessions still wins */
        const char *cap = getenv("HULL_MAX_SESSIONS");
        if (cap && parse_uint64(cap, 0, SERVE_SESSIONS_MAX, &o->max_sessions) < 0)
                return usage_error("HULL_MAX_SESSIONS wants a whole number from 0 to %u, got '%s'", SERVE_SESSIONS_MAX,
                                   cap);
        int r = cli_options_parse(&serve_cli, argc, argv, o, &done);
        if (r || done)
                return r;
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        if ((o->handle_max ? o->handle_max : HD_MAX_SPILL_DEFAULT) >
            (o->session_handles_max ? o->session_handles_max : SS_STORE_BYTES_DEFAULT))
                return usage_error("--handle-max is larger than a session's handles together "
                                   "(--session-handles-max)%s",
                                   "");
        return -1;
}

/* hull's state (hull.db or PostgreSQL), where /v1 keeps agents, sessions, events and keys; with
 * --node-id this node joins the others (cli-serve-node.c). */
static int open_store(serve_state *st, hull_error *e) {
        const char *tiers = st->o.kernel_tier ? "[\"container\",\"kernel\"]" : "[\"container\"]";
        int r = cli_serve_open_store(st->o.db_path, &st->o.node, st->o.listen, tiers, st->db_path, sizeof(st->db_path),
                                     &st->db_given, &st->db, e);
        if (r >= 0)
                st->keys = api_v1_keys(st->db);
        return r;
}

static bool serve_has_keys(serve_state *st) {
        return st->db && st->keys.count && st->keys.count(st->keys.ud) > 0;
}

/* The model settings of the agent API, as hull run resolves them; without any, /v1 still
 * serves and each turn ends with a session.error saying what is missing. */
static void load_settings(serve_state *st) {
        hull_error e = {0};
        char home[SBX_PATH_MAX], config[SBX_PATH_MAX];
        settings_flags f = st->o.model;
        f.headers = st->o.model_headers;
        if (!f.model) /* each agent names its model; this one only satisfies the settings */
                f.model = "the-agents-model";
        if (dotenv_load(".env", &st->env, &e) < 0 || home_resolve(home, &e) < 0 ||
            (size_t) snprintf(config, sizeof(config), "%s/config.json", home) >= sizeof(config) ||
            settings_load(&f, config, st->env, &st->settings, &e) < 0) {
                snprintf(st->settings_error, sizeof(st->settings_error), "%s", e.msg[0] ? e.msg : "no settings");
                dlog_log(&st->log, DLOG_WARN, "event=v1-no-model error=\"%s\" msg=\"agent turns will fail\"",
                         st->settings_error);
                return;
        }
        st->have_settings = true;
}

/* The address, the tokens and the rule that ties them; what Describe states. Returns -1 to go
 * on, or the exit status. */
static int check_options(serve_state *st) {
        const serve_opts *o = &st->o;
        hull_error e = {0};
        snprintf(st->listen_default, sizeof(st->listen_default), "127.0.0.1:%u", SERVE_DEFAULT_PORT);
        if (!st->o.listen)
                st->o.listen = st->listen_default;
        if (http_listen_parse(o->listen, &st->listen, &st->listen_len) < 0)
                return usage_error("--listen wants HOST:PORT with an IP address (IPv6 in brackets), got '%s'",
                                   o->listen);
        /* libcrypto: the tokens' digests, run records, handle digests, base64 */
        if (dlib_load(DLIB_CRYPTO, &e) < 0) {
                cli_report("serve", &e);
                return CLI_EXIT_FAILURE;
        }
        if (open_store(st, &e) < 0) {
                /* one line, without the URL (its password): the store's message never holds it */
                cli_report("serve", &e);
                return st->db_given ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
        if (o->tokens_path) {
                if (auth_tokens_load(o->tokens_path, &st->tokens, &e) < 0) {
                        cli_report("serve", &e);
                        return CLI_EXIT_FAILURE;
                }
                if (st->tokens.n == 0) {
                        cli_error("serve", "%s holds no token (add one with 'hull token new --tokens %s')",
                                  o->tokens_path, o->tokens_path);
                        return CLI_EXIT_FAILURE;
                }
        }
        if (st->tokens.n == 0 && !http_addr_is_loopback((const struct sockaddr *) &st->listen) && !serve_has_keys(st)) {
                cli_error("serve",
                          "refusing to listen on %s without tokens or keys: anyone who reaches it could run code "
                          "(make a key with 'hull key create', or pass --tokens FILE from 'hull token new --tokens "
                          "FILE')",
                          o->listen);
                return CLI_EXIT_USAGE;
        }
        st->ev = (plim_evidence){
                .sandbox = "hull",
                .isolation = "container",
                .javascript = access("/usr/bin/node", X_OK) == 0,
                .python = access("/usr/bin/python3", X_OK) == 0,
                .memory_bytes = o->memory,
                .pids = o->pids,
                .sessions = o->max_sessions > 0,
                .session_lifetime_ms = o->lifetime_ms,
                .session_idle_timeout_ms = o->idle_ms,
                .max_sessions_per_owner = (uint32_t) o->per_owner,
                .max_sessions_per_caller = (uint32_t) o->per_caller,
        };
        st->ev.session_python = st->ev.python;
        st->ev.session_javascript = st->ev.javascript;
        return -1;
}

/* Signals arrive on a signalfd; every thread started later inherits the blocked mask. */
static int setup_signals(serve_state *st, hull_error *e) {
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 || (st->sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return hull_err(e, negative_errno(), "serve: cannot set up signal handling");
        return 0;
}

/* The runs' work root, and with sessions the audit logs' and the handle stores' directories.
 * Sessions hold fds (control sockets, pipes, workspace and store fds, payloads being adopted):
 * the soft fd limit goes up to the hard one. Sandboxed commands get their own. */
static int make_directories(serve_state *st, hull_error *e) {
        const serve_opts *o = &st->o;
        if (serve_make_work_root(o->work_dir, st->work_root, sizeof(st->work_root), e) < 0)
                return -1;
        st->work_root_made = true;
        if (o->max_sessions > 0 &&
            (serve_make_state_dir(o->audit_dir, "audit", 0700, st->audit_path, sizeof(st->audit_path), e) < 0 ||
             serve_make_state_dir(o->handles_dir, "handles", 0711, st->handles_path, sizeof(st->handles_path), e) < 0))
                return -1;
        struct rlimit nofile;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &nofile);
        }
        return 0;
}

/* What is forked, while the process is still single-threaded: the stale cgroups swept first,
 * then the zygote (a failure is a warning: python starts cold), the kernel check's prober, then
 * the broker. */
static int start_children(serve_state *st, hull_error *e) {
        const serve_opts *o = &st->o;
        if (o->use_cgroups) {
                unsigned swept = 0;
                hull_error ce = {0};
                if (sbx_cgroup_sweep_stale(&swept, &ce) == 0 && swept > 0)
                        dlog_log(&st->log, DLOG_INFO, "event=stale-cgroups-removed count=%u", swept);
        }
        if (o->max_sessions > 0 && o->zygote && st->ev.python) {
                hull_error ze = {0};
                /* it warms up at low priority: numpy's and pandas' imports do not compete with
                 * the first requests; the first session call, or its readiness, lifts it */
                st->zygote_fd = sbx_zygote_start_reaped(&st->zygote_pid, true, &st->zygote_lift_fd, &ze);
                if (st->zygote_fd < 0) {
                        dlog_log(&st->log, DLOG_WARN,
                                 "event=zygote-unavailable error=\"%s\" msg=\"python interpreters start cold\"",
                                 ze.msg);
                        st->zygote_fd = -1;
                }
        }
        brk_config bc = {.max_runs = (unsigned) o->max_runs,
                         .queue_max = (unsigned) o->queue,
                         .work_root = st->work_root,
                         .use_cgroups = o->use_cgroups,
                         .spare_memory_bytes = o->memory,
                         .spare_pids = o->pids,
                         .spare_tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                         .warm_javascript = st->ev.javascript};
        /* The kernel tier: runsc's self-check (a real bundle running /bin/true, about a second) in
         * the background; "kernel" becomes the highest tier of single runs once it passed
         * (tier-gate.h), with runsc's version and platform as the evidence, and what names or
         * needs the highest tier waits for it. Sessions are container unless their floor is kernel. */
        if (tg_start(&st->ev, o->kernel_tier, &st->tier, e) < 0)
                return -1;
        return brk_start(&bc, &st->broker, e);
}

/* OpenSession's hullEnvironment (hs_config.env_resolve): the environment's layer, built first
 * when missing (svc-env.h; the flock of env-layer makes it the only build of that spec; a failed
 * step's output goes to hull serve's log), and its network. */
static void serve_env_building(void *ud, const char *name, const char *digest) {
        *(bool *) ud = true;
        fprintf(stderr, "hull: env: building the layer of %s (%.12s)...\n", name, digest);
}

static int serve_env_resolve(void *ctx, const char *name, char ret_layer[SBX_PATH_MAX], sbx_net_mode *ret_net,
                             sbx_net_policy *ret_policy, char ret_desc[ENV_DESC_MAX], hull_error *e) {
        const serve_opts *o = ctx;
        char home[SBX_PATH_MAX], v[24];
        _cleanup_(env_spec_done) env_spec es = {0};
        int64_t version;
        env_build_info info = {0};
        bool building = false;
        svc_env env;
        int r = home_resolve(home, e);
        if (r < 0 || (r = svc_env_named(home, name, &es, &version, e)) < 0)
                return r;
        snprintf(v, sizeof(v), "%" PRId64, version);
        svc_env_opts eo = {.home = home,
                           .name = name,
                           .version = v,
                           .describe = true,
                           .build = true,
                           /* pasta's network, started where the sandbox is (a keeper or a run's
                            * worker), only when the operator allows it, as for /v1 */
                           .rules = {.unrestricted = o->allow_unrestricted ? SVC_ENV_UNRESTRICTED_ALLOW
                                                                           : SVC_ENV_UNRESTRICTED_REFUSE},
                           .on_build = serve_env_building,
                           .ud = &building,
                           .build_info = &info};
        r = svc_env_resolve(&es, &eo, &env, e);
        if (r < 0 && building) {
                fprintf(stderr, "hull: env: %s\n%s%s", e->msg, info.log, info.log[0] ? "\n" : "");
                return hull_fail(e, -EIO,
                                 "environment %s: its layer could not be built (hull serve's log has the "
                                 "build's output; try 'hull env build %s')",
                                 name, name);
        }
        if (r < 0)
                return r;
        memcpy(ret_layer, env.layer, SBX_PATH_MAX);
        memcpy(ret_desc, env.desc, ENV_DESC_MAX);
        *ret_net = env.net;
        *ret_policy = env.policy; /* its hosts outlive env: serve_env_done frees them */
        return 0;
}

static void serve_env_done(void *ctx, sbx_net_policy *policy) {
        (void) ctx;
        sbx_net_hosts_free((char **) policy->allowed_hosts);
        policy->allowed_hosts = NULL;
}

/* The session table and its reaper thread (with sessions on). */
static int start_sessions(serve_state *st, hull_error *e) {
        const serve_opts *o = &st->o;
        if (o->max_sessions == 0)
                return 0;
        hs_config sc = {.broker = st->broker,
                        .tier = st->tier,
                        .log = &st->log,
                        .metrics = &st->m,
                        .zygote_fd = st->zygote_fd,
                        .zygote_lift_fd = st->zygote_lift_fd,
                        .max_sessions = (unsigned) o->max_sessions,
                        .max_per_owner = (unsigned) o->per_owner,
                        .max_per_caller = (unsigned) o->per_caller,
                        .lifetime_ms = o->lifetime_ms,
                        .idle_ms = o->idle_ms,
                        .memory_bytes = o->use_cgroups ? o->session_memory : 0,
                        .pids = o->use_cgroups ? SERVE_SESSION_PIDS : 0,
                        .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                        .audit_dir = st->audit_path,
                        .handles_dir = st->handles_path,
                        .handle_bytes_max = o->handle_max,
                        .store_bytes_max = o->session_handles_max,
                        .env_resolve = serve_env_resolve,
                        .env_done = serve_env_done,
                        .env_ctx = &st->o,
                        .read_document = doc_read_fd};
        return hs_new(&sc, &st->sessions, e);
}

/* The HTTP server: the route tables (plimsoll, hull's API, the operational routes), then the
 * listeners. */
static int start_server(serve_state *st, hull_error *e) {
        const serve_opts *o = &st->o;
        api_plimsoll_config pc = {.max_runs = (unsigned) o->max_runs,
                                  .queue_max = (unsigned) o->queue,
                                  .tier = st->tier,
                                  .broker = st->broker,
                                  .sessions = st->sessions,
                                  .log = &st->log,
                                  .metrics = &st->m,
                                  .env_resolve = serve_env_resolve,
                                  .env_done = serve_env_done,
                                  .env_ctx = &st->o};
        api_hull_config hc = {.sessions = st->sessions, .log = &st->log, .metrics = &st->m};
        api_ops_config oc = {.broker = st->broker, .metrics = &st->m};
        load_settings(st);
        v1_engine_config vc = {.store = st->db,
                               .settings = st->have_settings ? &st->settings : NULL,
                               .settings_error = st->settings_error,
                               .force_model = o->model.model != NULL,
                               .ss = hs_core(st->sessions),
                               .log = &st->log,
                               .netlog_dir = st->audit_path[0] ? st->audit_path : NULL,
                               .net_allow_cidrs = o->net_cidrs,
                               .net_allow_loopback = o->net_allow_loopback,
                               .allow_unrestricted = o->allow_unrestricted,
                               .node = o->node.row.id ? &o->node.row : NULL,
                               .webhooks = true};
        char home[SBX_PATH_MAX], blobs[SBX_PATH_MAX + 8], *mnt = st->mnt_path;
        int r = home_resolve(home, e); /* the files' node-local copies; the sessions' resources (0711) */
        if (r >= 0 && ((size_t) snprintf(blobs, sizeof(blobs), "%s/blobs", home) >= sizeof(blobs) ||
                       (size_t) snprintf(mnt, sizeof(st->mnt_path), "%s/mnt", home) >= sizeof(st->mnt_path)))
                r = hull_err(e, -ENAMETOOLONG, "serve: the path of the files' directory is too long");
        if (r >= 0)
                r = v1_files_new(&(v1_files_config){.store = st->db, .cache_dir = blobs, .file_max = o->file_max},
                                 &st->files, e);
        vc.files = st->files;
        vc.mnt_root = mnt;
        if (r >= 0)
                r = v1_engine_new(&vc, &st->engine, e);
        v1_deploy_config dc = {.start = {.store = st->db, .engine = st->engine, .files = st->files, .mnt_root = mnt},
                               .log = &st->log};
        if (r >= 0 && (r = v1_deploy_test_clock(getenv("HULL_TEST_CLOCK"), &dc, e)) >= 0) /* TESTING ONLY */
                r = v1_deploy_new(&dc, &st->deploy, e);
        if (r < 0)
                return r;
        api_v1_config vac = {.store = st->db,
                             .files = st->files,
                             .mnt_root = st->mnt_path,
                             .engine = st->engine,
                             .deploy = st->deploy,
                             .log = &st->log,
                             .audit_dir = st->audit_path[0] ? st->audit_path : NULL};
        api_mcp_config mcc = {.ss = hs_core(st->sessions),
                              .javascript = st->ev.session_javascript,
                              .audit_dir = st->audit_path[0] ? st->audit_path : NULL,
                              .version = HULL_VERSION,
                              .log = &st->log,
                              .node_id = o->node.row.id,
                              .store = st->db};
        r = api_mcp_new(&mcc, &st->mcp, e);
        if (r < 0)
                return r;
        api_agui_config agc = {.store = st->db,
                               .engine = st->engine,
                               .agent_id = o->agui_agent,
                               .environment_id = o->agui_environment,
                               .log = &st->log};
        if (api_agui_new(&agc, &st->agui) < 0)
                return hull_err(e, -ENOMEM, "serve: out of memory");
        if (api_plimsoll_new(&pc, &st->plimsoll) < 0 || api_hull_new(&hc, &st->hull) < 0 ||
            api_ops_new(&oc, &st->ops) < 0 || api_v1_new(&vac, &st->v1) < 0)
                return hull_err(e, -ENOMEM, "serve: out of memory");
        http_config cfg = {.listen = st->listen,
                           .listen_len = st->listen_len,
                           .socket_path = o->socket_path,
                           .tokens = &st->tokens,
                           .keys = &st->keys,
                           .max_connections = (unsigned) o->max_connections,
                           .max_per_address = (unsigned) o->max_per_address,
                           /* a path nothing serves: a Connect error, or /v1's under /v1 */
                           .fallback = &api_connect_api,
                           .fallback_data = st->plimsoll,
                           .prefixed = st->fallbacks,
                           .n_prefixed = ELEMENTSOF(st->fallbacks),
                           .log = &st->log,
                           .metrics = &st->m};
        st->fallbacks[0] = (http_fallback){.prefix = "/v1", .api = &api_v1_fallback_api, .data = st->v1};
        r = http_new(&cfg, &st->srv, e);
        if (r < 0)
                return r;
        if (api_plimsoll_register(st->plimsoll, st->srv) < 0 || api_hull_register(st->hull, st->srv) < 0 ||
            api_ops_register(st->ops, st->srv) < 0 || api_v1_register(st->v1, st->srv) < 0 ||
            api_mcp_register(st->mcp, st->srv) < 0 || api_agui_register(st->agui, st->srv) < 0 ||
            api_console_register(st->srv) < 0)
                return hull_err(e, -E2BIG, "serve: too many routes");
        r = http_start(st->srv, e);
        if (r < 0)
                return r;
        char where[SERVE_SHORT_STR_MAX];
        snprintf(where, sizeof(where), "%s", o->listen);
        char *colon = where[0] == '[' ? strstr(where, "]:") + 1 : strrchr(where, ':');
        snprintf(colon + 1, sizeof(where) - (size_t) (colon + 1 - where), "%u", http_port(st->srv));
        cli_serve_node_listening(st->db, &st->o.node, where, &st->log); /* the port --listen left to the kernel */
        dlog_log(&st->log, DLOG_INFO,
                 "event=listening addr=%s%s%s auth=%s tokens=%zu max_runs=%u queue=%u javascript=%s python=%s "
                 "protocol=%u work=%s",
                 where, o->socket_path ? " socket=" : "", o->socket_path ? o->socket_path : "",
                 st->tokens.n || serve_has_keys(st) ? "bearer" : "open", st->tokens.n, (unsigned) o->max_runs,
                 (unsigned) o->queue, st->ev.javascript ? "yes" : "no", st->ev.python ? "yes" : "no", PLIM_PROTOCOL,
                 st->work_root);
        if (o->ready_fd > 0) { /* the parent's notice: no polling for the socket */
                (void) dprintf((int) o->ready_fd, "ready %s\n", where);
                close((int) o->ready_fd);
        }
        if (st->tokens.n == 0 && !serve_has_keys(st)) {
                char db[SBX_PATH_MAX];
                store_url_describe(st->db_path, db, sizeof(db)); /* never its password */
                dlog_log(&st->log, DLOG_WARN,
                         "event=open-mode msg=\"no tokens or keys: every local caller may run code\" db=%s", db);
        }
        return 0;
}

/* libcurl and the ~25 libraries it pulls in (26-38 ms here) were loaded by the first model
 * call, inside the first turn; loaded on a thread of its own once listening, the first turn
 * finds them loaded (dlib_load is once per process: a turn that comes first waits for it). */
static void *preload_model_client(void *arg) {
        (void) arg;
        (void) dlib_load(DLIB_CURL, NULL); /* a failure is remembered: the model call reports it */
        return NULL;
}

/* Serve until a signal (CLI_EXIT_OK), or until the broker dies or poll fails (CLI_EXIT_FAILURE). */
static int serve_until_signal(serve_state *st) {
        for (;;) {
                struct pollfd p[3] = {{.fd = st->sfd, .events = POLLIN},
                                      {.fd = brk_pidfd(st->broker), .events = POLLIN},
                                      {.fd = tg_fd(st->tier), .events = POLLIN}};
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        dlog_log(&st->log, DLOG_ERROR, "event=poll-failed errno=%s msg=\"shutting down\"",
                                 strerrorname_np(errno));
                        return CLI_EXIT_FAILURE;
                }
                if (p[1].revents) {
                        dlog_log(&st->log, DLOG_ERROR,
                                 "event=broker-died msg=\"the sandbox broker ended; shutting down\"");
                        return CLI_EXIT_FAILURE;
                }
                if (p[2].revents)
                        tg_settle(st->tier, &st->log); /* the kernel tier's check has its answer */
                struct signalfd_siginfo si;
                if (p[0].revents && read(st->sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                        dlog_log(&st->log, DLOG_INFO, "event=shutdown signal=%s in_flight=%u grace_ms=%" PRIu64,
                                 sigabbrev_np((int) si.ssi_signo), http_busy(st->srv), st->o.grace_ms);
                        return CLI_EXIT_OK;
                }
        }
}

/* Stop accepting; end the sessions (their logs stay); let what is in flight finish; then cancel
 * what is left, and stop the server. Returns false when calls are still in flight: their
 * threads use the server and the broker, so neither may be freed (the caller exits at once). */
static bool shut_down(serve_state *st) {
        api_agui_shutdown(st->agui, SERVE_SHUTDOWN_CANCEL_MS); /* its streams' last event, before they end */
        http_quiesce(st->srv);
        api_mcp_shutdown(st->mcp, st->o.grace_ms);
        v1_deploy_stop(st->deploy); /* no run starts from here on */
        v1_engine_shutdown(st->engine, st->o.grace_ms);
        hs_shutdown(st->sessions, SERVE_SHUTDOWN_CANCEL_MS);
        bool signalled = false;
        if (!wait_idle(st->srv, st->sfd, now_mono_ms() + st->o.grace_ms, &signalled)) {
                dlog_log(&st->log, DLOG_WARN, "event=cancel-runs reason=%s in_flight=%u",
                         signalled ? "second-signal" : "grace-over", http_busy(st->srv));
                brk_cancel_all(st->broker);
                signalled = false;
                wait_idle(st->srv, -1, now_mono_ms() + SERVE_SHUTDOWN_CANCEL_MS, &signalled);
        }
        if (http_stop(st->srv) < 0)
                return false;
        st->srv = NULL;
        return true;
}

/* End what was started, in reverse, and return status (the process exits at once when the
 * server cannot be stopped under calls in flight). */
static int serve_teardown(serve_state *st, int status) {
        if (st->srv) {
                http_quiesce(st->srv);
                if (http_stop(st->srv) < 0) { /* threads use what follows: free nothing */
                        dlog_log(&st->log, DLOG_ERROR,
                                 "event=stop-failed msg=\"calls in flight; exiting without waiting\"");
                        if (st->work_root_made)
                                (void) rm_rf_at(AT_FDCWD, st->work_root);
                        _exit(CLI_EXIT_FAILURE);
                }
        }
        api_ops_free(st->ops);
        api_hull_free(st->hull);
        api_plimsoll_free(st->plimsoll);
        api_v1_free(st->v1);
        api_mcp_free(st->mcp);
        v1_deploy_free(st->deploy);
        st->deploy = NULL;
        v1_engine_shutdown(st->engine, SERVE_SHUTDOWN_CANCEL_MS);
        api_agui_shutdown(st->agui, SERVE_SHUTDOWN_CANCEL_MS);
        api_agui_free(st->agui);
        v1_engine_free(st->engine);
        v1_files_free(st->files);
        hs_shutdown(st->sessions, SERVE_SHUTDOWN_CANCEL_MS);
        hs_free(st->sessions);
        safe_close(st->zygote_fd); /* EOF: the zygote exits */
        if (st->zygote_pid > 0) {
                /* ...but one still importing numpy and pandas (at low priority) would see the EOF
                 * only once done: it ends now, at the default priority (it holds nothing to save) */
                sbx_zygote_lift(st->zygote_lift_fd);
                (void) kill(st->zygote_pid, SIGTERM);
                _cleanup_close_ int zfd = (int) syscall(SYS_pidfd_open, st->zygote_pid, 0);
                struct pollfd zp = {.fd = zfd, .events = POLLIN};
                if (zfd < 0 || poll(&zp, 1, BRK_STOP_GRACE_MS) <= 0)
                        kill(st->zygote_pid, SIGKILL);
                (void) waitpid(st->zygote_pid, NULL, 0);
        }
        safe_close(st->zygote_lift_fd);
        brk_stop(st->broker);
        tg_free(st->tier); /* after what uses it; waits for a check still running */
        if (st->work_root_made && rm_rf_at(AT_FDCWD, st->work_root) < 0)
                dlog_log(&st->log, DLOG_WARN, "event=cleanup msg=\"cannot remove the work directory\" path=%s",
                         st->work_root);
        auth_tokens_done(&st->tokens);
        if (st->have_settings)
                settings_done(&st->settings);
        dotenv_free(st->env);
        cli_serve_close_store(st->db, &st->o.node);
        safe_close(st->sfd);
        if (status == CLI_EXIT_OK)
                dlog_log(&st->log, DLOG_INFO, "event=stopped");
        return status;
}

int cli_serve_main(int argc, char **argv) {
        serve_state st = {.sfd = -1, .zygote_fd = -1, .zygote_lift_fd = -1, .zygote_pid = -1};
        hull_error e = {0};
        int status = parse_options(argc, argv, &st.o);
        if (status >= 0)
                return status;
        st.log = (dlog){.level = st.o.log_level, .fd = STDERR_FILENO};
        metrics_init(&st.m);
        (void) serve_metrics_register(&st.m); /* a fresh registry holds them all */
        status = check_options(&st);
        if (status >= 0) {
                auth_tokens_done(&st.tokens);
                cli_serve_close_store(st.db, &st.o.node);
                return status;
        }
        if (setup_signals(&st, &e) < 0 || make_directories(&st, &e) < 0 || start_children(&st, &e) < 0 ||
            start_sessions(&st, &e) < 0 || start_server(&st, &e) < 0) {
                cli_report("serve", &e);
                return serve_teardown(&st, CLI_EXIT_FAILURE);
        }
        st.preloading = pthread_create(&st.preload, NULL, preload_model_client, NULL) == 0;
        status = serve_until_signal(&st);
        if (st.preloading)
                (void) pthread_join(st.preload, NULL);
        if (!shut_down(&st)) {
                /* Calls still use the server and the broker: neither may be freed under them.
                 * Exit at once; the broker and its workers die with this process. */
                dlog_log(&st.log, DLOG_ERROR,
                         "event=stop-failed msg=\"runs still in flight; exiting without waiting\"");
                (void) rm_rf_at(AT_FDCWD, st.work_root);
                _exit(CLI_EXIT_FAILURE);
        }
        return serve_teardown(&st, status);
}
