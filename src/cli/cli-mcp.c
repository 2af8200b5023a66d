/* cli-mcp.c: `hull mcp`: hull's sandbox tools for an MCP host (Claude Desktop, Claude Code, ...)
 * over stdio. One sandbox session is opened the way `hull run` opens its own (no daemon: the
 * session's init is this process's child, ss_box_local, the python zygote) and kept for the
 * connection's life; src/mcp/mcp-server.c speaks the protocol. stdout carries nothing but
 * JSON-RPC: the protocol gets private copies of fds 0 and 1, and fd 1 becomes stderr, so nothing
 * else (this process, a child) can write a stray byte into it. The state lives in
 * $HULL_HOME/mcp/<id>/ (or --home DIR): the audit log stays there, the live handle store is
 * removed at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dlog.h"
#include "fs-util.h"
#include "home.h"
#include "limits.h"
#include "macro.h"
#include "mcp-server.h"
#include "sbx-session.h"
#include "ss.h"
#include "tool-catalog.h"

#ifndef HULL_VERSION
#define HULL_VERSION "0.0.0"
#endif

enum {
        OPT_NO_CGROUP = 0x100,
        OPT_HOME,
        OPT_TIER,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"no-cgroup", no_argument, NULL, OPT_NO_CGROUP},
        {"home", required_argument, NULL, OPT_HOME},
        {"tier", required_argument, NULL, OPT_TIER},
        {},
};

void cli_mcp_help(void) {
        printf("Usage: hull mcp [--tier container|kernel] [--no-cgroup] [--home DIR]\n\n"
               "Serve hull's sandbox tools to an MCP client (Claude Desktop, Claude Code, any Model\n"
               "Context Protocol host) over stdio: the client starts this command and speaks JSON-RPC on\n"
               "its stdin and stdout. One sandbox session is opened for the connection and kept until\n"
               "stdin ends: /workspace persists between calls, run_python keeps its variables, save()\n"
               "and load() keep data as handles that query_handle can query with SQL.\n\n"
               "Tools: run_python, bash, read, write, edit, glob, grep, inspect_handle, query_handle,\n"
               "and run_javascript (a persistent Node.js context) when /usr/bin/node is there.\n\n"
               "Options:\n"
               "  --home DIR     keep the state (the audit log) in DIR/mcp/<id>/ instead of $HULL_HOME\n"
               "  --no-cgroup    no memory and process limits for the session\n"
               "  --tier T       container (default) or kernel: the session is one gVisor sandbox\n"
               "                 (runsc, as root; Python starts cold in it: no zygote)\n\n"
               "Logs go to stderr; every tool call (reads, globs, greps and handle queries too) is\n"
               "recorded in the session's audit log (its path is logged, and given to the client in\n"
               "the instructions; 'hull verify PATH' checks it).\n\n"
               "Claude Code:    claude mcp add hull -- hull mcp\n"
               "Claude Desktop: \"mcpServers\": {\"hull\": {\"command\": \"hull\", \"args\": [\"mcp\"]}}\n");
}

#define usage_error(...) cli_usage_error("mcp", CLI_EXIT_USAGE, __VA_ARGS__)

static atomic_bool stop;

static void on_signal(int sig) {
        (void) sig;
        atomic_store(&stop, true);
}

static int make_id(char *ret, size_t size) {
        uint8_t rnd[3];
        time_t t = time(NULL);
        struct tm tm;
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                return -EIO;
        gmtime_r(&t, &tm);
        snprintf(ret, size, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1], rnd[2]);
        return 0;
}

static int join(char ret[SBX_PATH_MAX], const char *dir, const char *name, hull_error *e) {
        if (path_join(ret, SBX_PATH_MAX, dir, name) < 0)
                return hull_fail(e, -ENAMETOOLONG, "the path %.64s.../%.64s is too long (a shorter --home?)", dir,
                                 name);
        return 0;
}

typedef struct mcp_state {
        char dir[SBX_PATH_MAX];   /* $HULL_HOME/mcp/<id> */
        char audit[SBX_PATH_MAX]; /* the audit log's path */
        int zygote_fd;
        pid_t zygote_pid;
        ss_manager *ss;
        ss_session *s;
        pthread_t warm; /* python's warm-up */
        bool warming;
        sem_t claimed; /* posted once the warm-up holds the session's claim (or gave up on it) */
} mcp_state;

/* The state's directory, the manager and the session, while this process is single-threaded. */
static int open_session(mcp_state *st, const char *home_opt, bool no_cgroup, bool kernel, hull_error *e) {
        char home[SBX_PATH_MAX], parent[SBX_PATH_MAX], audit_dir[SBX_PATH_MAX], stores[SBX_PATH_MAX];
        char id[CLI_AGENT_ID_MAX];
        int r;

        if (home_opt) {
                if (home_opt[0] != '/') {
                        _cleanup_free_ char *cwd = getcwd(NULL, 0);
                        if (!cwd)
                                return hull_err(e, -errno, "cannot know the current directory");
                        r = join(home, cwd, home_opt, e);
                } else
                        r = snprintf(home, sizeof(home), "%s", home_opt) >= (int) sizeof(home)
                                    ? hull_fail(e, -ENAMETOOLONG, "--home %.64s... is too long", home_opt)
                                    : 0;
        } else
                r = home_resolve(home, e);
        if (r < 0)
                return r;
        r = home_mkdir(home, 0711, true, e);
        if (r >= 0)
                r = home_dir(home, "mcp", 0711, true, parent, e);
        if (r < 0)
                return r;
        r = make_id(id, sizeof(id));
        if (r < 0)
                return hull_err(e, r, "cannot make an id");
        r = join(st->dir, parent, id, e);
        if (r < 0)
                return r;
        r = home_mkdir(st->dir, 0711, true, e);
        if (r >= 0)
                r = home_dir(st->dir, "audit", 0700, false, audit_dir, e);
        if (r >= 0)
                r = home_dir(st->dir, ".stores", 0711, true, stores, e);
        if (r < 0)
                return r;
        /* the zygote forks interpreters of the container tier only */
        if (!kernel && access("/usr/bin/python3", X_OK) == 0) {
                hull_error ze = {0};
                st->zygote_fd = sbx_zygote_start(&st->zygote_pid, &ze);
                if (st->zygote_fd < 0)
                        fprintf(stderr, "hull: mcp: python starts cold: %s\n", ze.msg);
        }
        r = ss_new_local(st->zygote_fd, !no_cgroup, audit_dir, stores, &st->ss, e);
        if (r < 0)
                return r;
        ss_open_opts oo = {.principal = "mcp", .owner = "", .tier = kernel ? SBX_TIER_KERNEL : SBX_TIER_CONTAINER};
        r = ss_open(st->ss, &oo, &st->s, e);
        if (r < 0)
                return r;
        ss_info info;
        char name[REC_DIGEST_HEX_SIZE + 32];
        ss_session_info(st->ss, st->s, &info);
        snprintf(name, sizeof(name), "session-%s.jsonl", info.fingerprint);
        return join(st->audit, audit_dir, name, e);
}

/* The warm-up: the session's claim is taken (and st->claimed posted) before the server starts, so
 * the first tool call waits for this thread, never the other way round. */
static void *warm_main(void *ud) {
        mcp_state *st = ud;
        int r = ss_call_begin(st->ss, st->s, -1, NULL);
        sem_post(&st->claimed);
        if (r >= 0) {
                (void) ss_warm(st->ss, st->s, SBX_LANG_PYTHON, NULL); /* a failure: the first cell starts it */
                ss_call_end(st->ss, st->s);
        }
        return NULL;
}

static void close_session(mcp_state *st) {
        /* a warm-up still waiting for the zygote's imports ends now */
        if (st->zygote_fd >= 0 && st->zygote_pid > 0)
                (void) kill(st->zygote_pid, SIGKILL);
        if (st->s) {
                ss_close_info ci;
                ss_close(st->ss, st->s, &ci);
        }
        if (st->warming) { /* ended with the session and the zygote, if it still waited */
                pthread_join(st->warm, NULL);
                sem_destroy(&st->claimed);
        }
        if (st->s)
                ss_unref(st->ss, st->s);
        if (st->ss) {
                ss_shutdown(st->ss, 5000);
                ss_free(st->ss);
        }
        if (st->zygote_fd >= 0)
                close(st->zygote_fd);
        if (st->dir[0]) {
                char stores[SBX_PATH_MAX];
                if (path_join(stores, sizeof(stores), st->dir, ".stores") >= 0)
                        (void) rm_rf_at(AT_FDCWD, stores);
        }
}

/* The protocol's own copies of stdin and stdout; fd 0 becomes /dev/null and fd 1 stderr. */
static int take_stdio(int *ret_in, int *ret_out, hull_error *e) {
        _cleanup_close_ int in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        _cleanup_close_ int out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        _cleanup_close_ int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || out < 0 || null < 0)
                return hull_err(e, -errno, "cannot take stdin and stdout");
        if (dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
                return hull_err(e, -errno, "cannot set stdin and stdout aside");
        *ret_in = TAKE_FD(in);
        *ret_out = TAKE_FD(out);
        return 0;
}

int cli_mcp_main(int argc, char **argv) {
        const char *home_opt = NULL;
        bool no_cgroup = false, kernel = false;
        int c, idx;

        while ((c = getopt_long(argc, argv, "h", options, &idx)) != -1) {
                switch (c) {
                case 'h':
                        cli_mcp_help();
                        return CLI_EXIT_OK;
                case OPT_NO_CGROUP:
                        no_cgroup = true;
                        break;
                case OPT_HOME:
                        if (!optarg[0])
                                return usage_error("%s", "--home wants a directory");
                        home_opt = optarg;
                        break;
                case OPT_TIER:
                        if (strcmp(optarg, "kernel") != 0 && strcmp(optarg, "container") != 0)
                                return usage_error("--tier wants container or kernel (gVisor), not '%s'", optarg);
                        kernel = strcmp(optarg, "kernel") == 0;
                        break;
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("no arguments are taken, not '%s'", argv[optind]);

        const tool_def *tools[MCP_OFFER_MAX];
        /* the session's javascript cell runs the host's node (the sandbox sees the host's /usr) */
        size_t n_tools = tool_catalog_mcp_offer(access("/usr/bin/node", X_OK) == 0, tools);

        if (isatty(STDIN_FILENO))
                fprintf(stderr, "hull: mcp: stdin is a terminal: this command speaks JSON-RPC to an MCP client, which "
                                "starts it (see 'hull mcp --help'); Ctrl-D ends it\n");
        hull_error e = {0};
        int in_fd = -1, out_fd = -1;
        if (take_stdio(&in_fd, &out_fd, &e) < 0) {
                cli_report("mcp", &e);
                return CLI_EXIT_FAILURE;
        }
        /* no SA_RESTART: a wait in progress returns, and the server sees the flag */
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        mcp_state st = {.zygote_fd = -1};
        int r = open_session(&st, home_opt, no_cgroup, kernel, &e);
        if (r < 0) {
                cli_report("mcp", &e);
                close_session(&st);
                close(in_fd);
                close(out_fd);
                return CLI_EXIT_FAILURE;
        }
        /* python starts on a thread while the client initializes: the thread holds the session's
         * claim until the interpreter is forked from the zygote (which waits for its imports), and
         * the first tool call waits for that claim */
        if (sem_init(&st.claimed, 0, 0) == 0) {
                st.warming = pthread_create(&st.warm, NULL, warm_main, &st) == 0;
                if (st.warming)
                        while (sem_wait(&st.claimed) < 0 && errno == EINTR)
                                ;
                else
                        sem_destroy(&st.claimed);
        }
        fprintf(stderr, "hull: mcp: serving on stdio (tier %s); the session's audit log: %s\n",
                kernel ? "kernel" : "container", st.audit);

        char instructions[SBX_PATH_MAX + 1024];
        snprintf(instructions, sizeof(instructions),
                 "hull runs these tools in one sandbox session (%s) kept for this connection: files under /workspace "
                 "persist between calls, and run_python keeps its variables and imports. In run_python, save(id, "
                 "obj) keeps a value (a pandas DataFrame becomes a table) as a data handle and load(id) gives it "
                 "back; inspect_handle describes a handle and query_handle runs SQL over table handles. Paths are "
                 "confined to /workspace. Every tool call (reads included) is recorded in the session's "
                 "audit log on the host: %s (hull verify checks it).",
                 kernel ? "a gVisor sandbox" : "a container", st.audit);
        dlog log = {.level = DLOG_INFO, .fd = STDERR_FILENO};
        mcp_server_config cfg = {
                .ss = st.ss,
                .session = st.s,
                .tools = tools,
                .n_tools = n_tools,
                .name = "hull",
                .version = HULL_VERSION,
                .instructions = instructions,
                .stop = &stop,
                .log = &log,
        };
        r = mcp_server_run(&cfg, in_fd, out_fd, &e);
        close(in_fd);
        close(out_fd);
        close_session(&st);
        if (r < 0) {
                cli_report("mcp", &e);
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hull: mcp: the session ended; its audit log: %s\n", st.audit);
        return CLI_EXIT_OK;
}
