/* cli-mock-model.c: `hull mock-model`: a scripted model server (OpenAI Chat Completions and
 * Anthropic Messages) for testing agents and model clients offline. Reads and checks the script,
 * starts the server, prints the URL as its first line, and ends on SIGTERM or SIGINT. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dlog.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "http-server.h"
#include "limits.h"
#include "macro.h"
#include "metrics.h"
#include "mock-model.h"
#include "mock-script.h"
#include "time-util.h"

#define CMD "mock-model"
#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

enum {
        OPT_SCRIPT = 0x100,
        OPT_LISTEN,
        OPT_RECORD,
        OPT_API_KEY,
        OPT_LOG_LEVEL,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"script", required_argument, NULL, OPT_SCRIPT},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"record", required_argument, NULL, OPT_RECORD},
        {"api-key", required_argument, NULL, OPT_API_KEY},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {},
};

void cli_mock_model_help(void) {
        printf("Usage: hull mock-model --script FILE [--listen HOST:PORT] [--record FILE] [--api-key KEY]\n\n"
               "A scripted model server for testing agents and model clients offline: POST /v1/chat/completions\n"
               "speaks OpenAI's Chat Completions, POST /v1/messages Anthropic's Messages, streamed (\"stream\": true\n"
               "in the body) or not. Each request takes the script's next step: text, tool calls, an error,\n"
               "a broken or slow stream (docs/MOCK-MODEL.md). GET /_mock/requests answers every request\n"
               "received, as a JSON array. The first line printed is \"listening on http://HOST:PORT\".\n\n"
               "Options:\n"
               "  --script FILE        the steps, as JSON (checked before anything listens)\n"
               "  --listen HOST:PORT   the address (default 127.0.0.1:%u; PORT 0 picks a free one)\n"
               "  --record FILE        also write each request (method, path, headers, body) as a JSON line\n"
               "  --api-key KEY        accept only this key (OpenAI: Authorization: Bearer; Anthropic: that or\n"
               "                       x-api-key); required to listen beyond loopback. Default: any key\n"
               "  --log-level LEVEL    error, warn, info (default) or debug; one line per request on stderr\n\n"
               "Point a client at it: OpenAI's base URL http://HOST:PORT/v1, Anthropic's http://HOST:PORT.\n"
               "Ends on SIGTERM or SIGINT. Exit status: 0 after a signal, 1 on a failure (a bad script), 2 on\n"
               "a usage error.\n",
               MOCK_DEFAULT_PORT);
}

typedef struct mock_opts {
        const char *script, *listen, *record, *api_key;
        dlog_level log_level;
} mock_opts;

/* Returns -1 to go on, or the exit status (help, a usage error). */
static int parse_options(int argc, char **argv, mock_opts *o) {
        int c;
        *o = (mock_opts){.log_level = DLOG_INFO};
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_mock_model_help();
                        return CLI_EXIT_OK;
                case OPT_SCRIPT:
                        o->script = optarg;
                        break;
                case OPT_LISTEN:
                        o->listen = optarg;
                        break;
                case OPT_RECORD:
                        if (optarg[0] == '\0')
                                return usage_error("--record wants a file name%s", "");
                        o->record = optarg;
                        break;
                case OPT_API_KEY:
                        if (optarg[0] == '\0' || strpbrk(optarg, " \t\r\n"))
                                return usage_error("--api-key wants a key without blanks%s", "");
                        o->api_key = optarg;
                        break;
                case OPT_LOG_LEVEL:
                        if (dlog_level_from_string(optarg, &o->log_level) < 0)
                                return usage_error("--log-level wants error, warn, info or debug, got '%s'", optarg);
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        if (!o->script)
                return usage_error("--script FILE is required (docs/MOCK-MODEL.md says what it holds)%s", "");
        return -1;
}

/* Read and check the script. Returns 0 with *ret, or a negative errno with *e. */
static int load_script(const char *path, mock_script **ret, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return hull_err(e, negative_errno(), "cannot open the script %s", path);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "the script %s is not a regular file", path);
        if ((uint64_t) st.st_size > MOCK_SCRIPT_BYTES_MAX)
                return hull_fail(e, -EFBIG, "the script %s is over %u bytes", path, MOCK_SCRIPT_BYTES_MAX);
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, MOCK_SCRIPT_BYTES_MAX);
        for (;;) {
                int r = dynbuf_reserve(&b, 64U << 10);
                if (r == -E2BIG)
                        return hull_fail(e, -EFBIG, "the script %s is over %u bytes", path, MOCK_SCRIPT_BYTES_MAX);
                if (r < 0)
                        return hull_err(e, r, "cannot read the script %s", path);
                ssize_t n = read(fd, b.buf + b.len, 64U << 10);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, negative_errno(), "cannot read the script %s", path);
                if (n == 0)
                        break;
                dynbuf_advance(&b, (size_t) n);
        }
        hull_error pe = {0};
        int r = mock_script_parse(b.buf ? b.buf : "", b.len, ret, &pe);
        if (r < 0)
                return hull_fail(e, r, "%s: %s", path, pe.msg);
        return 0;
}

static void print_url(const struct sockaddr_storage *a, unsigned port) {
        char host[64] = "127.0.0.1";
        if (a->ss_family == AF_INET6) {
                char h[48];
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) a)->sin6_addr, h, sizeof(h));
                snprintf(host, sizeof(host), "[%s]", h);
        } else
                inet_ntop(AF_INET, &((const struct sockaddr_in *) a)->sin_addr, host, sizeof(host));
        printf("listening on http://%s:%u\n", host, port);
        fflush(stdout);
}

/* Wait for the signal, then stop: delays and streams end, the server when nothing is in flight. */
static void run_until_signal(int sfd, http_server *srv, mock_server *m, const dlog *log) {
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                ;
        dlog_log(log, DLOG_INFO, "event=stopping signal=%u", si.ssi_signo);
        mock_server_stop(m);
        http_quiesce(srv);
        uint64_t deadline = now_mono_ms() + MOCK_SHUTDOWN_MS;
        while ((http_busy(srv) > 0 || mock_server_streams(m) > 0) && now_mono_ms() < deadline) {
                struct timespec ts = {.tv_nsec = 10 * 1000000L};
                nanosleep(&ts, NULL);
        }
}

int cli_mock_model_main(int argc, char **argv) {
        mock_opts o;
        int r = parse_options(argc, argv, &o);
        if (r >= 0)
                return r;
        char listen_default[SERVE_SHORT_STR_MAX];
        snprintf(listen_default, sizeof(listen_default), "127.0.0.1:%u", MOCK_DEFAULT_PORT);
        struct sockaddr_storage listen;
        socklen_t listen_len;
        if (http_listen_parse(o.listen ? o.listen : listen_default, &listen, &listen_len) < 0)
                return usage_error("--listen wants HOST:PORT with an IP address (IPv6 in brackets), got '%s'",
                                   o.listen);
        if (!o.api_key && !http_addr_is_loopback((const struct sockaddr *) &listen))
                return usage_error("refusing to listen on %s without --api-key: anyone who reaches it could read "
                                   "what clients sent (pass --api-key KEY)",
                                   o.listen);

        hull_error e = {0};
        mock_script *script = NULL;
        if (load_script(o.script, &script, &e) < 0) {
                cli_error(CMD, "%s", e.msg);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_close_ int record_fd = -1;
        if (o.record) {
                record_fd = open(o.record, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
                if (record_fd < 0) {
                        hull_err(&e, negative_errno(), "cannot open the record file %s", o.record);
                        cli_error(CMD, "%s", e.msg);
                        mock_script_free(script);
                        return CLI_EXIT_FAILURE;
                }
        }
        /* signals on a signalfd; every thread started later inherits the blocked mask */
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        signal(SIGPIPE, SIG_IGN);
        _cleanup_close_ int sfd = -1;
        if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 || (sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                cli_error(CMD, "cannot set up signal handling: %s", strerror(errno));
                mock_script_free(script);
                return CLI_EXIT_FAILURE;
        }
        dlog log = {.level = o.log_level, .fd = STDERR_FILENO};
        metrics mx;
        metrics_init(&mx);
        mock_server *m = NULL;
        http_server *srv = NULL;
        mock_config mc = {.script = script, .api_key = o.api_key, .record_fd = record_fd, .log = &log};
        if (mock_server_new(&mc, &m) < 0) {
                cli_error(CMD, "out of memory");
                mock_script_free(script);
                return CLI_EXIT_FAILURE;
        }
        http_config hc = {.listen = listen,
                          .listen_len = listen_len,
                          /* every hull serve of a test (several nodes, each with its turns) calls
                           * from one loopback address: the whole connection budget for it */
                          .max_per_address = SERVE_CONNECTIONS_MAX,
                          .fallback = &mock_fallback_api,
                          .fallback_data = m,
                          .log = &log,
                          .metrics = &mx};
        int status = CLI_EXIT_FAILURE;
        if (http_new(&hc, &srv, &e) < 0 || mock_server_register(m, srv) < 0 || http_start(srv, &e) < 0) {
                cli_report(CMD, &e);
                goto out;
        }
        print_url(&listen, http_port(srv));
        dlog_log(&log, DLOG_INFO, "event=listening port=%u steps=%zu", http_port(srv), script->n_steps);
        run_until_signal(sfd, srv, m, &log);
        status = CLI_EXIT_OK;
out:
        if (srv && http_stop(srv) < 0) {
                dlog_log(&log, DLOG_WARN, "event=exit-busy msg=\"requests still in flight at exit\"");
                _exit(status); /* their threads still use what would be freed */
        }
        if (mock_server_streams(m) > 0)
                _exit(status);
        mock_server_free(m);
        mock_script_free(script);
        return status;
}
