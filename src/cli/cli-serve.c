/* cli-serve.c: `hull serve`: the daemon. Parses and checks the options, forks the sandbox broker
 * while the process is still single-threaded, starts the HTTP server, and owns the signals
 * (a signalfd): SIGTERM or SIGINT stop accepting, let in-flight runs finish for the grace period,
 * cancel what is left, and exit 0. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
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
#include "cli.h"
#include "dlib.h"
#include "dlog.h"
#include "fs-util.h"
#include "http.h"
#include "limits.h"
#include "macro.h"
#include "metrics.h"
#include "parse-util.h"
#include "plimsoll.h"
#include "sbx.h"
#include "sbx-cgroup.h"
#include "sbx-session.h"
#include "sessions.h"
#include "time-util.h"

enum {
        OPT_LISTEN = 0x100,
        OPT_SOCKET,
        OPT_TOKENS,
        OPT_MAX_RUNS,
        OPT_QUEUE,
        OPT_MEMORY,
        OPT_PIDS,
        OPT_NO_CGROUP,
        OPT_WORK_DIR,
        OPT_GRACE,
        OPT_LOG_LEVEL,
        OPT_MAX_SESSIONS,
        OPT_MAX_PER_OWNER,
        OPT_SESSION_LIFETIME,
        OPT_SESSION_IDLE,
        OPT_SESSION_MEMORY,
        OPT_AUDIT_DIR,
        OPT_NO_ZYGOTE,
        OPT_HANDLES_DIR,
        OPT_MAX_PER_CALLER,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"tokens", required_argument, NULL, OPT_TOKENS},
        {"max-runs", required_argument, NULL, OPT_MAX_RUNS},
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"pids", required_argument, NULL, OPT_PIDS},
        {"no-cgroup", no_argument, NULL, OPT_NO_CGROUP},
        {"work-dir", required_argument, NULL, OPT_WORK_DIR},
        {"shutdown-grace", required_argument, NULL, OPT_GRACE},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
        {"max-sessions-per-owner", required_argument, NULL, OPT_MAX_PER_OWNER},
        {"session-lifetime", required_argument, NULL, OPT_SESSION_LIFETIME},
        {"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
        {"session-memory", required_argument, NULL, OPT_SESSION_MEMORY},
        {"audit-dir", required_argument, NULL, OPT_AUDIT_DIR},
        {"no-zygote", no_argument, NULL, OPT_NO_ZYGOTE},
        {"handles-dir", required_argument, NULL, OPT_HANDLES_DIR},
        {"max-sessions-per-caller", required_argument, NULL, OPT_MAX_PER_CALLER},
        {},
};

void cli_serve_help(void) {
        printf("Usage: hull serve [OPTIONS]\n\n"
               "Serve the plimsoll sandbox protocol 3 (Connect, JSON) over HTTP/1.1: Describe and Run\n"
               "(javascript, project) under /plimsoll.v1.SandboxService/, plus /healthz, /readyz, /metrics.\n\n"
               "Options:\n"
               "  --listen HOST:PORT       TCP address (default 127.0.0.1:%u; PORT 0 picks a free one)\n"
               "  --socket PATH            also listen on a unix socket (mode 0600)\n"
               "  --tokens FILE            bearer tokens: lines '<sha256 hex> <scope>[,...] [name]' (see\n"
               "                           'hull token new'); required to listen beyond loopback\n"
               "  --max-runs N             runs at once (default %u, at most %u)\n"
               "  --queue N                admitted runs that wait for a slot (default %u); more are refused\n"
               "  --memory SIZE            memory limit of each run, tmpfs included (default 512M)\n"
               "  --pids N                 process limit of each run (default %u)\n"
               "  --no-cgroup              run without cgroup limits (memory, pids)\n"
               "  --work-dir DIR           where runs' work directories are made (default $TMPDIR or /tmp)\n"
               "  --shutdown-grace SECONDS how long in-flight runs may finish after SIGTERM (default %u)\n"
               "  --log-level LEVEL        error, warn, info (default) or debug; one line per event on stderr\n\n"
               "Sessions (OpenSession, SessionRun, CloseSession, /hull.v1.Workspace/*, /hull.v1.Sessions/List):\n"
               "  --max-sessions N         sessions open at once (default %u, at most %u; 0 turns sessions off)\n"
               "  --max-sessions-per-owner N  per caller and owner; one more ends the least recently used\n"
               "                           idle one (default %u)\n"
               "  --max-sessions-per-caller N  per caller (token), whatever its owners (default %u)\n"
               "  --session-lifetime DUR   a session ends this long after it opened (default 30m, at most 12h)\n"
               "  --session-idle DUR       ... or when unused this long (default 5m); DUR: 90s, 5m, 1h, 500ms\n"
               "  --session-memory SIZE    memory of each session, its /workspace included (default 1G)\n"
               "  --audit-dir DIR          each session's run records as JSON lines, DIR/session-<fingerprint>.jsonl\n"
               "                           (default /var/lib/hull/audit as root, else ~/.local/state/hull/audit)\n"
               "  --no-zygote              start every python interpreter cold (no pre-imported numpy/pandas)\n"
               "  --handles-dir DIR        each session's handle store, DIR/serve-PID/<fingerprint>, read-only in the "
               "sandbox\n"
               "                           at /handles (default /var/lib/hull/handles as root, else\n"
               "                           ~/.local/state/hull/handles)\n\n"
               "Without --tokens every local caller may run code. Exit status: 0 after a graceful\n"
               "shutdown, 1 on a failure, 2 on a usage error.\n",
               SERVE_DEFAULT_PORT, SERVE_DEFAULT_RUNS, SERVE_RUNS_MAX, SERVE_RUN_QUEUE_MAX, SBX_DEFAULT_PIDS,
               SERVE_SHUTDOWN_GRACE_MS / 1000, SERVE_DEFAULT_SESSIONS, SERVE_SESSIONS_MAX,
               SERVE_DEFAULT_SESSIONS_PER_OWNER, SERVE_DEFAULT_SESSIONS_PER_CALLER);
}

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

/* A fresh directory for the runs' work directories, searchable by the sandbox user. */
static int make_work_root(const char *parent, char *buf, size_t size, hull_error *e) {
        if (!parent) {
                parent = getenv("TMPDIR");
                if (!parent || parent[0] != '/')
                        parent = "/tmp";
        }
        if ((size_t) snprintf(buf, size, "%s/hull-serve.XXXXXX", parent) >= size)
                return hull_err(e, -ENAMETOOLONG, "serve: the work directory path is too long");
        if (!mkdtemp(buf))
                return hull_err_hint(e, negative_errno(), "pass --work-dir DIR",
                                     "serve: cannot create a directory in %s", parent);
        if (chmod(buf, 0711) < 0)
                return hull_err(e, negative_errno(), "serve: cannot set the mode of %s", buf);
        return 0;
}

/* A state directory (audit logs, handle stores): given, or DEFAULT-ROOT/leaf as root, else
 * ~/.local/state/hull/leaf; made when missing. The handle stores' directory must be searchable
 * by the sandbox user (mode 0711, its parents too), the audit logs' need not (0700). */
static int make_state_dir(const char *dir, const char *leaf, mode_t mode, char *buf, size_t size, hull_error *e) {
        if (dir)
                snprintf(buf, size, "%s", dir);
        else if (geteuid() == 0)
                snprintf(buf, size, "/var/lib/hull/%s", leaf);
        else {
                const char *home = getenv("HOME");
                if (!home || home[0] != '/')
                        return hull_err_hint(e, -EINVAL, "pass --audit-dir and --handles-dir",
                                             "serve: no HOME for the default state directory");
                if ((size_t) snprintf(buf, size, "%s/.local/state/hull/%s", home, leaf) >= size)
                        return hull_err(e, -ENAMETOOLONG, "serve: the state directory path is too long");
        }
        for (char *p = buf + 1;; p++) {
                if (*p == '/' || *p == '\0') {
                        char c = *p;
                        *p = '\0';
                        int r = mkdir(buf, c == '\0' ? mode : 0711);
                        *p = c;
                        if (r < 0 && errno != EEXIST)
                                return hull_err_hint(e, negative_errno(), "pass another directory",
                                                     "serve: cannot create %s", buf);
                        if (c == '\0')
                                break;
                }
        }
        if (mode == 0711 && chmod(buf, 0711) < 0)
                return hull_err(e, negative_errno(), "serve: cannot set the mode of %s", buf);
        if (!dir && mode == 0711 && geteuid() == 0)
                (void) chmod("/var/lib/hull", 0711); /* ours; an older hull made it 0700 */
        /* As root, the sandbox user (another uid) must be able to reach it: the session's init
         * binds it from inside its user namespace. */
        if (mode == 0711 && geteuid() == 0) {
                char part[SBX_PATH_MAX];
                snprintf(part, sizeof(part), "%s", buf);
                for (char *p = part + strlen(part); p > part; p = strrchr(part, '/')) {
                        struct stat st;
                        *p = '\0';
                        const char *dirpath = part[0] ? part : "/";
                        if (stat(dirpath, &st) == 0 && !(st.st_mode & S_IXOTH))
                                return hull_err_hint(
                                        e, -EACCES, "run 'chmod o+x' on it, or pass --handles-dir elsewhere",
                                        "serve: the sandbox user cannot reach %s: %s is not searchable by others", buf,
                                        dirpath);
                        if (!part[0])
                                break;
                }
        }
        return 0;
}

int cli_serve_main(int argc, char **argv) {
        const char *listen = NULL, *socket_path = NULL, *tokens_path = NULL, *work_dir = NULL;
        uint64_t max_runs = SERVE_DEFAULT_RUNS, queue = SERVE_RUN_QUEUE_MAX, memory = SBX_DEFAULT_MEMORY_BYTES;
        uint64_t pids = SBX_DEFAULT_PIDS, grace_ms = SERVE_SHUTDOWN_GRACE_MS;
        bool use_cgroups = true, zygote = true;
        uint64_t max_sessions = SERVE_DEFAULT_SESSIONS, per_owner = SERVE_DEFAULT_SESSIONS_PER_OWNER,
                 per_caller = SERVE_DEFAULT_SESSIONS_PER_CALLER;
        uint64_t lifetime_ms = SERVE_SESSION_LIFETIME_MS, idle_ms = SERVE_SESSION_IDLE_MS,
                 session_memory = SERVE_SESSION_MEMORY_BYTES;
        const char *audit_dir = NULL, *handles_dir = NULL;
        dlog log = {.level = DLOG_INFO, .fd = STDERR_FILENO};
        int c;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_serve_help();
                        return CLI_EXIT_OK;
                case OPT_LISTEN:
                        listen = optarg;
                        break;
                case OPT_SOCKET:
                        if (optarg[0] == '\0')
                                return usage_error("--socket wants a path%s", "");
                        socket_path = optarg;
                        break;
                case OPT_TOKENS:
                        tokens_path = optarg;
                        break;
                case OPT_MAX_RUNS:
                        if (parse_uint64(optarg, 1, SERVE_RUNS_MAX, &max_runs) < 0)
                                return usage_error("--max-runs wants a whole number from 1 to 64, got '%s'", optarg);
                        break;
                case OPT_QUEUE:
                        if (parse_uint64(optarg, 0, SERVE_RUN_QUEUE_MAX, &queue) < 0)
                                return usage_error("--queue wants a whole number from 0 to 16, got '%s'", optarg);
                        break;
                case OPT_MEMORY:
                        if (parse_size(optarg, SBX_MEMORY_BYTES_MIN, SBX_MEMORY_BYTES_MAX, &memory) < 0)
                                return usage_error("--memory wants a size of at least 4M such as 512M or 2G, got '%s'",
                                                   optarg);
                        break;
                case OPT_PIDS:
                        if (parse_uint64(optarg, 1, SBX_PIDS_MAX, &pids) < 0)
                                return usage_error("--pids wants a whole number from 1 to 65536, got '%s'", optarg);
                        break;
                case OPT_NO_CGROUP:
                        use_cgroups = false;
                        break;
                case OPT_WORK_DIR: {
                        struct stat st;
                        if (optarg[0] != '/' || stat(optarg, &st) < 0 || !S_ISDIR(st.st_mode))
                                return usage_error(
                                        "--work-dir '%s' is not an existing directory given by absolute path", optarg);
                        work_dir = optarg;
                        break;
                }
                case OPT_GRACE:
                        if (parse_duration_ms(optarg, 0, SERVE_SHUTDOWN_GRACE_MS_MAX, &grace_ms) < 0)
                                return usage_error("--shutdown-grace wants seconds from 0 to 600, got '%s'", optarg);
                        break;
                case OPT_LOG_LEVEL:
                        if (dlog_level_from_string(optarg, &log.level) < 0)
                                return usage_error("--log-level wants error, warn, info or debug, got '%s'", optarg);
                        break;
                case OPT_MAX_SESSIONS:
                        if (parse_uint64(optarg, 0, SERVE_SESSIONS_MAX, &max_sessions) < 0)
                                return usage_error("--max-sessions wants a whole number from 0 to %u, got '%s'",
                                                   SERVE_SESSIONS_MAX, optarg);
                        break;
                case OPT_MAX_PER_OWNER:
                        if (parse_uint64(optarg, 1, SERVE_SESSIONS_MAX, &per_owner) < 0)
                                return usage_error(
                                        "--max-sessions-per-owner wants a whole number from 1 to %u, got '%s'",
                                        SERVE_SESSIONS_MAX, optarg);
                        break;
                case OPT_SESSION_LIFETIME:
                        if (parse_duration_ms(optarg, 1000, SERVE_SESSION_LIFETIME_MS_MAX, &lifetime_ms) < 0)
                                return usage_error(
                                        "--session-lifetime wants a duration from 1s to 12h such as 30m, got '%s'",
                                        optarg);
                        break;
                case OPT_SESSION_IDLE:
                        if (parse_duration_ms(optarg, 100, SERVE_SESSION_LIFETIME_MS_MAX, &idle_ms) < 0)
                                return usage_error(
                                        "--session-idle wants a duration from 100ms to 12h such as 5m, got '%s'",
                                        optarg);
                        break;
                case OPT_SESSION_MEMORY:
                        if (parse_size(optarg, 64ULL << 20, SBX_MEMORY_BYTES_MAX, &session_memory) < 0)
                                return usage_error("--session-memory wants a size of at least 64M such as 1G, got '%s'",
                                                   optarg);
                        break;
                case OPT_AUDIT_DIR:
                        if (optarg[0] != '/')
                                return usage_error("--audit-dir wants an absolute path, got '%s'", optarg);
                        audit_dir = optarg;
                        break;
                case OPT_NO_ZYGOTE:
                        zygote = false;
                        break;
                case OPT_MAX_PER_CALLER:
                        if (parse_uint64(optarg, 1, SERVE_SESSIONS_MAX, &per_caller) < 0)
                                return usage_error(
                                        "--max-sessions-per-caller wants a whole number from 1 to %u, got '%s'",
                                        SERVE_SESSIONS_MAX, optarg);
                        break;
                case OPT_HANDLES_DIR:
                        if (optarg[0] != '/')
                                return usage_error("--handles-dir wants an absolute path, got '%s'", optarg);
                        handles_dir = optarg;
                        break;
                case '?':
                default:
                        /* getopt has moved past the offending argument. */
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);

        http_config hc = {.socket_path = socket_path, .max_runs = (unsigned) max_runs, .queue_max = (unsigned) queue};
        char default_listen[SERVE_SHORT_STR_MAX];
        snprintf(default_listen, sizeof(default_listen), "127.0.0.1:%u", SERVE_DEFAULT_PORT);
        if (!listen)
                listen = default_listen;
        if (http_listen_parse(listen, &hc.listen, &hc.listen_len) < 0)
                return usage_error("--listen wants HOST:PORT with an IP address (IPv6 in brackets), got '%s'", listen);

        auth_tokens tokens = {0};
        hull_error e = {0};
        /* libcrypto: the tokens' digests, run records, handle digests, base64 */
        if (dlib_load(DLIB_CRYPTO, &e) < 0) {
                cli_report("serve", &e);
                return CLI_EXIT_FAILURE;
        }
        if (tokens_path) {
                if (auth_tokens_load(tokens_path, &tokens, &e) < 0) {
                        cli_report("serve", &e);
                        return CLI_EXIT_FAILURE;
                }
                if (tokens.n == 0) {
                        cli_error("serve", "%s holds no token (add one with 'hull token new --tokens %s')", tokens_path,
                                  tokens_path);
                        return CLI_EXIT_FAILURE;
                }
        }
        if (tokens.n == 0 && !http_addr_is_loopback((const struct sockaddr *) &hc.listen)) {
                cli_error("serve",
                          "refusing to listen on %s without tokens: anyone who reaches it could run code "
                          "(pass --tokens FILE; make one with 'hull token new --tokens FILE')",
                          listen);
                return CLI_EXIT_USAGE;
        }
        hc.tokens = &tokens;

        plim_evidence ev = {
                .sandbox = "hull",
                .isolation = "container",
                .javascript = access("/usr/bin/node", X_OK) == 0,
                .python = access("/usr/bin/python3", X_OK) == 0,
                .memory_bytes = memory,
                .pids = pids,
                .sessions = max_sessions > 0,
                .session_lifetime_ms = lifetime_ms,
                .session_idle_timeout_ms = idle_ms,
                .max_sessions_per_owner = (uint32_t) per_owner,
                .max_sessions_per_caller = (uint32_t) per_caller,
        };
        ev.session_python = ev.python;
        ev.session_javascript = ev.javascript;
        metrics m;
        metrics_init(&m);
        hc.evidence = &ev;
        hc.log = &log;
        hc.metrics = &m;

        /* Signals arrive on a signalfd; every thread started later inherits the blocked mask. */
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        signal(SIGPIPE, SIG_IGN);
        _cleanup_close_ int sfd = -1;
        if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 || (sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                cli_error("serve", "cannot set up signal handling: %s", strerror(errno));
                auth_tokens_done(&tokens);
                return CLI_EXIT_FAILURE;
        }

        char work_root[SBX_PATH_MAX], audit_path[SBX_PATH_MAX] = "", handles_path[SBX_PATH_MAX] = "";
        int status = CLI_EXIT_FAILURE;
        int zygote_fd = -1;
        pid_t zygote_pid = -1;
        hs_manager *sessions = NULL;
        brk_broker *broker = NULL;
        http_server *srv = NULL;
        if (make_work_root(work_dir, work_root, sizeof(work_root), &e) < 0) {
                cli_report("serve", &e);
                auth_tokens_done(&tokens);
                return CLI_EXIT_FAILURE;
        }
        brk_config bc = {.max_runs = (unsigned) max_runs,
                         .queue_max = (unsigned) queue,
                         .work_root = work_root,
                         .use_cgroups = use_cgroups,
                         .spare_memory_bytes = memory,
                         .spare_pids = pids,
                         .spare_tmp_bytes = SBX_DEFAULT_TMP_BYTES};
        /* Sessions hold fds (control sockets, pipes, workspace and store fds, payloads being
         * adopted): the soft limit goes up to the hard one. Sandboxed commands get their own. */
        struct rlimit nofile;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &nofile);
        }
        if (use_cgroups) {
                unsigned swept = 0;
                hull_error ce = {0};
                if (sbx_cgroup_sweep_stale(&swept, &ce) == 0 && swept > 0)
                        dlog_log(&log, DLOG_INFO, "event=stale-cgroups-removed count=%u", swept);
        }
        /* The zygote and the broker are forked before any thread exists. */
        if (max_sessions > 0 && zygote && ev.python) {
                zygote_fd = sbx_zygote_start(&zygote_pid, &e);
                if (zygote_fd < 0) {
                        dlog_log(&log, DLOG_WARN,
                                 "event=zygote-unavailable error=\"%s\" msg=\"python interpreters start cold\"", e.msg);
                        zygote_fd = -1;
                }
        }
        if (brk_start(&bc, &broker, &e) < 0) {
                cli_report("serve", &e);
                goto out;
        }
        hc.broker = broker;
        if (max_sessions > 0) {
                if (make_state_dir(audit_dir, "audit", 0700, audit_path, sizeof(audit_path), &e) < 0 ||
                    make_state_dir(handles_dir, "handles", 0711, handles_path, sizeof(handles_path), &e) < 0) {
                        cli_report("serve", &e);
                        goto out;
                }
                hs_config sc = {.broker = broker,
                                .evidence = &ev,
                                .log = &log,
                                .metrics = &m,
                                .zygote_fd = zygote_fd,
                                .max_sessions = (unsigned) max_sessions,
                                .max_per_owner = (unsigned) per_owner,
                                .max_per_caller = (unsigned) per_caller,
                                .lifetime_ms = lifetime_ms,
                                .idle_ms = idle_ms,
                                .memory_bytes = use_cgroups ? session_memory : 0,
                                .pids = use_cgroups ? SERVE_SESSION_PIDS : 0,
                                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                                .audit_dir = audit_path,
                                .handles_dir = handles_path};
                if (hs_new(&sc, &sessions, &e) < 0) {
                        cli_report("serve", &e);
                        goto out;
                }
                hc.sessions = sessions;
        }
        if (http_start(&hc, &srv, &e) < 0) {
                cli_report("serve", &e);
                goto out;
        }
        {
                char where[SERVE_SHORT_STR_MAX];
                snprintf(where, sizeof(where), "%s", listen);
                char *colon = where[0] == '[' ? strstr(where, "]:") + 1 : strrchr(where, ':');
                snprintf(colon + 1, sizeof(where) - (size_t) (colon + 1 - where), "%u", http_port(srv));
                dlog_log(&log, DLOG_INFO,
                         "event=listening addr=%s%s%s auth=%s tokens=%zu max_runs=%u queue=%u javascript=%s python=%s "
                         "protocol=%u work=%s",
                         where, socket_path ? " socket=" : "", socket_path ? socket_path : "",
                         tokens.n ? "bearer" : "open", tokens.n, (unsigned) max_runs, (unsigned) queue,
                         ev.javascript ? "yes" : "no", ev.python ? "yes" : "no", PLIM_PROTOCOL, work_root);
                if (tokens.n == 0)
                        dlog_log(&log, DLOG_WARN, "event=open-mode msg=\"no tokens: every local caller may run code\"");
        }

        /* Serve until a signal, or until the broker dies. */
        bool broker_died = false, poll_failed = false;
        for (;;) {
                struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = brk_pidfd(broker), .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        dlog_log(&log, DLOG_ERROR, "event=poll-failed errno=%s msg=\"shutting down\"",
                                 strerrorname_np(errno));
                        poll_failed = true;
                        break;
                }
                if (p[1].revents) {
                        dlog_log(&log, DLOG_ERROR, "event=broker-died msg=\"the sandbox broker ended; shutting down\"");
                        broker_died = true;
                        break;
                }
                if (p[0].revents) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                dlog_log(&log, DLOG_INFO, "event=shutdown signal=%s in_flight=%u grace_ms=%" PRIu64,
                                         sigabbrev_np((int) si.ssi_signo), http_busy(srv), grace_ms);
                                break;
                        }
                }
        }

        /* Stop accepting; end the sessions (their logs stay); let what is in flight finish; then
         * cancel what is left. */
        http_quiesce(srv);
        hs_shutdown(sessions, SERVE_SHUTDOWN_CANCEL_MS);
        bool signalled = false;
        if (!wait_idle(srv, sfd, now_mono_ms() + grace_ms, &signalled)) {
                dlog_log(&log, DLOG_WARN, "event=cancel-runs reason=%s in_flight=%u",
                         signalled ? "second-signal" : "grace-over", http_busy(srv));
                brk_cancel_all(broker);
                signalled = false;
                wait_idle(srv, -1, now_mono_ms() + SERVE_SHUTDOWN_CANCEL_MS, &signalled);
        }
        if (http_stop(srv) < 0) {
                /* Run threads still use the server and the broker: neither may be freed under
                 * them. Exit at once; the broker and its workers die with this process. */
                dlog_log(&log, DLOG_ERROR, "event=stop-failed msg=\"runs still in flight; exiting without waiting\"");
                (void) rm_rf_at(AT_FDCWD, work_root);
                _exit(CLI_EXIT_FAILURE);
        }
        srv = NULL;
        status = broker_died || poll_failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
out:
        if (srv) {
                http_quiesce(srv);
                if (http_stop(srv) < 0)
                        status = CLI_EXIT_FAILURE;
        }
        hs_shutdown(sessions, SERVE_SHUTDOWN_CANCEL_MS);
        hs_free(sessions);
        safe_close(zygote_fd); /* EOF: the zygote exits */
        if (zygote_pid > 0) {
                _cleanup_close_ int zfd = (int) syscall(SYS_pidfd_open, zygote_pid, 0);
                struct pollfd zp = {.fd = zfd, .events = POLLIN};
                if (zfd < 0 || poll(&zp, 1, BRK_STOP_GRACE_MS) <= 0)
                        kill(zygote_pid, SIGKILL);
                (void) waitpid(zygote_pid, NULL, 0);
        }
        brk_stop(broker);
        if (rm_rf_at(AT_FDCWD, work_root) < 0)
                dlog_log(&log, DLOG_WARN, "event=cleanup msg=\"cannot remove the work directory\" path=%s", work_root);
        auth_tokens_done(&tokens);
        if (status == CLI_EXIT_OK)
                dlog_log(&log, DLOG_INFO, "event=stopped");
        return status;
}
