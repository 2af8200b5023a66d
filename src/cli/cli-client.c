/* cli-client.c: the client side of hull serve's sessions API shared by hull session, hull handle
 * and hull chat --server (cli-client.h): the connection (its options, $HULL_URL and $HULL_TOKEN,
 * cleartext refused beyond loopback), one POST per call (src/shared/http-client: libcurl, loaded
 * only when a client runs) with a fresh Plimsoll-Request-Id that every answer must echo before it
 * is believed, Connect errors printed with their details, and the command line of a client with
 * subcommands. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base64.h"
#include "cli-client.h"
#include "cli.h"
#include "dlib.h"
#include "dynbuf.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"

#define REQUEST_ID_HEADER "Plimsoll-Request-Id"
#define DEFAULT_URL CLI_SERVE_DEFAULT_URL
_Static_assert(SERVE_DEFAULT_PORT == 8750, "DEFAULT_URL names hull serve's default port");

#define conn_usage_error(...) cli_usage_error(c->cmd, CLI_EXIT_USAGE, __VA_ARGS__)

void cli_client_done(cli_client *c) {
        if (c->http)
                httpc_free(c->http);
        explicit_bzero(c->auth, sizeof(c->auth));
}

/* ---- small helpers ---- */

static const char *const session_ends[] = {
        "UNSPECIFIED",     "CLOSED",   "EXPIRED",  "DISK_EXCEEDED", "MAIN_PROCESS_ENDED", "BOUNDARY_FAILED",
        "SANDBOX_CHANGED", "SHUTDOWN", "REPLACED", "NOT_FOUND",     "UNCLAIMED",
};
static const char *const not_dispatched_reasons[] = {
        "unspecified", "request", "permission", "protocol", "unsupported", "isolation", "capacity", "environment",
};

const char *cli_session_end_name(unsigned end) {
        return end < ELEMENTSOF(session_ends) ? session_ends[end] : NULL;
}

bool cli_session_id_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* Read a whole file (or stdin for NULL or "-") of at most max bytes into a new NUL-terminated
 * buffer. Returns 0, -EFBIG (over max), -EISDIR, or the errno of open/read. */
int cli_read_input(const char *path, size_t max, char **ret, size_t *ret_len) {
        bool std = !path || strcmp(path, "-") == 0;
        _cleanup_close_ int own = std ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        int fd = std ? STDIN_FILENO : own;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        /* One byte more than max may be held: reading it says the input is too big. */
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, max + 1);
        for (;;) {
                size_t want = MIN((size_t) SESSION_CLI_READ_CHUNK, b.max - b.len);
                int r = dynbuf_reserve(&b, want);
                if (r < 0)
                        return r;
                ssize_t k = read(fd, b.buf + b.len, want);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                dynbuf_advance(&b, (size_t) k);
                if (b.len > max)
                        return -EFBIG;
        }
        char *p = dynbuf_take(&b, ret_len);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cli_write_all_fd(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int cli_write_out(FILE *f, const char *p, size_t n) {
        if (n == 0)
                return 0;
        return fwrite(p, 1, n, f) == n && fflush(f) == 0 ? 0 : -EIO;
}

/* ---- Connect error details: base64 of a tiny protobuf message ---- */

/* Read varint fields 1 (the reason) and string field 2 (a detail) of a binary message. */
static void proto_decode(const char *p, size_t n, uint64_t *ret_reason, char *detail, size_t detail_size) {
        size_t i = 0;
        *ret_reason = 0;
        detail[0] = 0;
        while (i < n) {
                uint64_t key = 0, v = 0;
                for (unsigned shift = 0; i < n && shift < 64; shift += 7) {
                        key |= (uint64_t) ((unsigned char) p[i] & 0x7f) << shift;
                        if (!((unsigned char) p[i++] & 0x80))
                                break;
                }
                unsigned wire = key & 7, num = (unsigned) (key >> 3);
                if (wire != 0 && wire != 2)
                        return;
                for (unsigned shift = 0; i < n && shift < 64; shift += 7) {
                        v |= (uint64_t) ((unsigned char) p[i] & 0x7f) << shift;
                        if (!((unsigned char) p[i++] & 0x80))
                                break;
                }
                if (wire == 0) {
                        if (num == 1)
                                *ret_reason = v;
                        continue;
                }
                if (v > n - i)
                        return;
                if (num == 2) {
                        size_t k = MIN((size_t) v, detail_size - 1);
                        memcpy(detail, p + i, k);
                        detail[k] = 0;
                        for (size_t j = 0; j < k; j++) /* one line on a terminal */
                                if ((unsigned char) detail[j] < 0x20 || detail[j] == 0x7f)
                                        detail[j] = '?';
                }
                i += (size_t) v;
        }
}

/* What the details of a Connect error add to its message: " (session ended: CLOSED: ...)". */
static void describe_details(const json_t *details, const char *message, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = 0;
        if (!json_is_array(details))
                return;
        for (size_t i = 0; i < json_array_size(details) && i < SESSION_CLI_DETAILS_MAX; i++) {
                const json_t *d = json_array_get(details, i);
                const char *type = json_string_value(json_object_get(d, "type"));
                const json_t *value = json_object_get(d, "value");
                if (!type || !json_is_string(value))
                        continue;
                const char *slash = strrchr(type, '/');
                type = slash ? slash + 1 : type;
                _cleanup_free_ void *raw = NULL;
                size_t raw_len;
                if (base64_decode(json_string_value(value), json_string_length(value), &raw, &raw_len) < 0)
                        continue;
                uint64_t reason;
                char detail[PLIM_END_DETAIL_MAX];
                proto_decode(raw, raw_len, &reason, detail, sizeof(detail));
                int k = 0;
                if (strcmp(type, "plimsoll.v1.SessionEnded") == 0 && reason < ELEMENTSOF(session_ends) &&
                    strstr(message, session_ends[reason]))
                        k = 0; /* the message already names it */
                else if (strcmp(type, "plimsoll.v1.SessionEnded") == 0)
                        k = snprintf(buf + len, size - len, " (session ended: %s%s%s)",
                                     reason < ELEMENTSOF(session_ends) ? session_ends[reason] : "unknown reason",
                                     detail[0] ? ": " : "", detail);
                else if (strcmp(type, "plimsoll.v1.NotDispatched") == 0 && !strstr(message, "nothing ran"))
                        k = snprintf(buf + len, size - len, " (nothing ran: %s)",
                                     reason < ELEMENTSOF(not_dispatched_reasons) ? not_dispatched_reasons[reason]
                                                                                 : "unknown");
                else if (strcmp(type, "plimsoll.v1.UnansweredCall") == 0)
                        k = snprintf(buf + len, size - len, " (the call may have run; it is counted in the session)");
                if (k < 0 || (size_t) k >= size - len)
                        return;
                len += (size_t) k;
        }
}

/* ---- one call ---- */

/* POST a body (hr's body fields, with its content type) to path with a fresh request ID. On a
 * bound 200 answer with a JSON object, return 0 with *ret. Anything else is printed (one line)
 * and CLI_EXIT_FAILURE returned. */
static int call(cli_client *c, const char *path, const char *content_type, httpc_request hr, json_t **ret) {
        uint8_t rnd[16];
        char id[2 * sizeof(rnd) + 1], id_header[sizeof(id) + sizeof(REQUEST_ID_HEADER) + 2];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd)) {
                cli_error(c->cmd, "cannot make a request ID: %m");
                return CLI_EXIT_FAILURE;
        }
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(id + 2 * i, 3, "%02x", rnd[i]);
        snprintf(id_header, sizeof(id_header), REQUEST_ID_HEADER ": %s", id);

        char url[HTTPC_URL_MAX];
        if ((size_t) snprintf(url, sizeof(url), "%s%s", c->base, path) >= sizeof(url)) {
                cli_error(c->cmd, "the URL is too long");
                return CLI_EXIT_FAILURE;
        }
        char ct_header[HTTPC_HEADER_VALUE_MAX + 16];
        snprintf(ct_header, sizeof(ct_header), "Content-Type: %s", content_type);
        const char *headers[] = {ct_header, "Connect-Protocol-Version: 1", id_header, c->auth[0] ? c->auth : NULL,
                                 NULL};
        hr.url = url;
        hr.unix_socket = c->unix_path;
        hr.headers = headers;
        hr.connect_timeout_ms = HTTPC_CONNECT_TIMEOUT_MS;
        hr.answer_max = PLIM_ANSWER_MAX;
        hr.capture_header = REQUEST_ID_HEADER;
        httpc_answer a;
        hull_error e = {0};
        int r = httpc_post(c->http, &hr, &a, &e);
        if (r < 0) {
                if (r == -ECONNREFUSED)
                        cli_error(c->cmd, "%s (is 'hull serve' running there? see --url, --unix, $HULL_URL)", e.msg);
                else
                        cli_report(c->cmd, &e);
                return CLI_EXIT_FAILURE;
        }
        bool bound = a.captured_count == 1 && strcmp(a.captured, id) == 0;
        json_error_t je;
        json_t *o = json_loadb(a.body, a.body_len, JSON_REJECT_DUPLICATES, &je);
        if (o && !json_is_object(o)) {
                json_decref(o);
                o = NULL;
        }
        if (a.status != 200) {
                const char *code = o ? json_string_value(json_object_get(o, "code")) : NULL;
                const char *msg = o ? json_string_value(json_object_get(o, "message")) : NULL;
                if (code) {
                        char more[2 * PLIM_END_DETAIL_MAX];
                        describe_details(bound ? json_object_get(o, "details") : NULL, msg ? msg : "", more,
                                         sizeof(more));
                        cli_error(c->cmd, "%s: %s%s%s", code, msg ? msg : "(no message)", more,
                                  bound ? "" : " (the answer does not carry our request ID)");
                } else {
                        char shown[SESSION_CLI_ERROR_SHOWN + 1];
                        size_t k = MIN(a.body_len, (size_t) SESSION_CLI_ERROR_SHOWN);
                        for (size_t i = 0; i < k; i++)
                                shown[i] = (unsigned char) a.body[i] < 0x20 || a.body[i] == 0x7f ? ' ' : a.body[i];
                        shown[k] = 0;
                        cli_error(c->cmd, "HTTP %ld from %s%s%s", a.status, url, k ? ": " : "", shown);
                }
                json_decref(o);
                httpc_answer_done(&a);
                return CLI_EXIT_FAILURE;
        }
        if (!bound) {
                cli_error(c->cmd,
                          "the answer from %s is not bound to our request (%u %s headers, ours is %s): not believed; "
                          "the call may have run",
                          url, a.captured_count, REQUEST_ID_HEADER, id);
                json_decref(o);
                httpc_answer_done(&a);
                return CLI_EXIT_FAILURE;
        }
        if (strncasecmp(a.content_type, "application/json", 16) != 0 ||
            (a.content_type[16] && a.content_type[16] != ';' && a.content_type[16] != ' ')) {
                cli_error(c->cmd, "the answer from %s is '%s', not application/json", url, a.content_type);
                json_decref(o);
                httpc_answer_done(&a);
                return CLI_EXIT_FAILURE;
        }
        httpc_answer_done(&a);
        if (!o) {
                cli_error(c->cmd, "the answer from %s is not a JSON object: %s", url, je.text);
                return CLI_EXIT_FAILURE;
        }
        *ret = o;
        return 0;
}

int cli_call(cli_client *c, const char *path, json_t *req, uint64_t call_ms, json_t **ret) {
        _cleanup_free_ char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        if (!body) {
                cli_error(c->cmd, "out of memory");
                return CLI_EXIT_FAILURE;
        }
        httpc_request hr = {.body = body, .body_len = strlen(body), .timeout_ms = call_ms + HTTPC_TIMEOUT_SLACK_MS};
        return call(c, path, "application/json", hr, ret);
}

int cli_upload(cli_client *c, const char *path, int fd, int64_t size, uint64_t call_ms, json_t **ret) {
        httpc_request hr = {.body_from = HTTPC_BODY_FD,
                            .body_fd = fd,
                            .body_size = size,
                            .timeout_ms = call_ms + HTTPC_TIMEOUT_SLACK_MS};
        return call(c, path, "application/octet-stream", hr, ret);
}

int cli_escape(cli_client *c, const char *s, char **ret) {
        return httpc_escape(c->http, s, ret);
}

/* ---- the connection ---- */

static bool host_is_loopback(const char *host, size_t len) {
        char h[64];
        struct in_addr a4;
        struct in6_addr a6;
        if (len == 0 || len >= sizeof(h))
                return false;
        memcpy(h, host, len);
        h[len] = 0;
        if (strcasecmp(h, "localhost") == 0)
                return true;
        if (inet_pton(AF_INET, h, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        return inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* Check the base URL: http(s), a host, no userinfo, query or fragment; cleartext to a host that
 * is not loopback only with --insecure (the token and the code would cross the network in the
 * clear). Copies it without a trailing '/' into c->base. Returns 0 or a usage error's status. */
static int setup_url(cli_client *c, const char *url, bool over_unix, bool insecure) {
        size_t len = strlen(url);
        bool https = strncasecmp(url, "https://", 8) == 0;
        if (!https && strncasecmp(url, "http://", 7) != 0)
                return conn_usage_error("--url wants http://HOST[:PORT][/PREFIX] or https://..., got '%s'", url);
        if (len + 64 >= sizeof(c->base))
                return conn_usage_error("--url is over %u bytes", HTTPC_URL_MAX - 64);
        const char *auth = url + (https ? 8 : 7), *auth_end = strchrnul(auth, '/');
        if (strpbrk(url, "?# \t\r\n") || memchr(auth, '@', (size_t) (auth_end - auth)))
                return conn_usage_error("--url may not carry user information, a query or a fragment: '%s'", url);
        const char *host = auth, *host_end;
        if (*host == '[') {
                host_end = memchr(host, ']', (size_t) (auth_end - host));
                if (!host_end)
                        return conn_usage_error("--url has an unclosed '[': '%s'", url);
                host++;
        } else {
                host_end = memchr(host, ':', (size_t) (auth_end - host));
                if (!host_end)
                        host_end = auth_end;
        }
        if (host_end == host)
                return conn_usage_error("--url names no host: '%s'", url);
        if (!https && !over_unix && !insecure && !host_is_loopback(host, (size_t) (host_end - host)))
                return conn_usage_error(
                        "refusing cleartext http to %.*s: the token and the code would cross the network "
                        "unencrypted (use https://, or --insecure)",
                        (int) (host_end - host), host);
        while (len > (size_t) (auth_end - url) && url[len - 1] == '/')
                len--;
        memcpy(c->base, url, len);
        c->base[len] = 0;
        return 0;
}

/* The bearer token: --token-file, else $HULL_TOKEN, else none. Returns 0 or an exit status. */
static int setup_token(cli_client *c, const char *token_file) {
        _cleanup_free_ char *buf = NULL;
        const char *token = NULL, *from = NULL;
        size_t len = 0;
        if (token_file) {
                int r = cli_read_input(token_file, SESSION_CLI_TOKEN_FILE_MAX, &buf, &len);
                if (r < 0) {
                        if (r == -EFBIG)
                                return conn_usage_error("--token-file %s is over %u bytes: not a token", token_file,
                                                        SESSION_CLI_TOKEN_FILE_MAX);
                        cli_error(c->cmd, "cannot read the token file %s: %s", token_file, strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                token = buf;
                from = "--token-file";
        } else if ((token = getenv("HULL_TOKEN")) && token[0]) {
                len = strlen(token);
                from = "$HULL_TOKEN";
        } else
                return 0;
        while (len > 0 &&
               (token[len - 1] == '\n' || token[len - 1] == '\r' || token[len - 1] == ' ' || token[len - 1] == '\t'))
                len--;
        bool ok = len > 0 && len <= AUTH_TOKEN_MAX;
        for (size_t i = 0; ok && i < len; i++)
                ok = token[i] > 0x20 && token[i] < 0x7f;
        if (!ok) {
                if (buf)
                        explicit_bzero(buf, strlen(buf));
                return conn_usage_error("the token from %s must be 1 to %u visible ASCII characters on one line", from,
                                        AUTH_TOKEN_MAX);
        }
        snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %.*s", (int) len, token);
        if (buf)
                explicit_bzero(buf, strlen(buf));
        return 0;
}

int cli_client_setup(cli_client *c, const char *cmd, const char *url, const char *unix_path, const char *token_file,
                     bool insecure) {
        c->cmd = cmd;
        if (!url)
                url = getenv("HULL_URL");
        if (!url || !url[0])
                url = unix_path ? "http://localhost" : DEFAULT_URL;
        int r = setup_url(c, url, unix_path != NULL, insecure);
        if (r)
                return r;
        c->unix_path = unix_path;
        r = setup_token(c, token_file);
        if (r)
                return r;
        hull_error e = {0};
        /* libcrypto for the fingerprints, digests and base64 the answers are checked with */
        if (dlib_load(DLIB_CRYPTO, &e) < 0 || httpc_new(&c->http, &e) < 0) {
                cli_report(cmd, &e);
                return CLI_EXIT_FAILURE;
        }
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

/* ---- the command line ---- */

void cli_client_sub_help(const cli_client_cmd *cmd, const cli_client_sub *sub) {
        printf("Usage: hull %s %s\n\n%s\n" CLI_CONNECTION_HELP "%s", cmd->name, sub->synopsis, sub->help,
               sub->opts & CLI_OPT_BIT(CLI_OPT_JSON) ? "  --json             print the daemon's whole answer as JSON\n"
                                                     : "");
}

static const cli_client_sub *find_sub(const cli_client_cmd *cmd, const char *name) {
        for (size_t i = 0; i < cmd->n_subs; i++) {
                const cli_client_sub *s = (const cli_client_sub *) ((const char *) cmd->subs + i * cmd->sub_size);
                if (strcmp(s->name, name) == 0)
                        return s;
        }
        return NULL;
}

/* One of the options every client takes. Returns 0 or a usage error's status. */
static int client_option(const cli_client_cmd *cmd, int c, const char *arg, cli_client_args *a) {
        switch (c) {
        case CLI_OPT_URL:
                a->url = arg;
                break;
        case CLI_OPT_UNIX:
                if (!arg[0] || strlen(arg) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                        return cli_usage_error(cmd->name, CLI_EXIT_USAGE,
                                               "--unix wants a socket path of 1 to %zu bytes, got '%s'",
                                               sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1, arg);
                a->unix_path = arg;
                break;
        case CLI_OPT_TOKEN_FILE:
                a->token_file = arg;
                break;
        case CLI_OPT_INSECURE:
                a->insecure = true;
                break;
        case CLI_OPT_JSON:
                a->json = true;
                break;
        default:
                break;
        }
        return 0;
}

/* Parse the options of sub (or the connection's when sub is NULL) from argv; getopt permutes, so
 * the positional arguments end at argv[optind..]. Returns 0 or an exit status (--help: 0 as
 * well, with *ret_done set). */
static int parse_options(const cli_client_cmd *cmd, int argc, char **argv, const cli_client_sub *sub,
                         cli_client_args *a, void *args, bool *ret_done) {
        const unsigned connection = CLI_OPT_BIT(CLI_OPT_URL) | CLI_OPT_BIT(CLI_OPT_UNIX) |
                                    CLI_OPT_BIT(CLI_OPT_TOKEN_FILE) | CLI_OPT_BIT(CLI_OPT_INSECURE);
        int c, idx = 0, r;
        opterr = 0;
        optind = 0; /* GNU getopt: start afresh (the first pass used '+') */
        while ((c = getopt_long(argc, argv,
                                !sub             ? "+h"
                                : sub->shortopts ? sub->shortopts
                                                 : "h",
                                cmd->options, &idx)) != -1) {
                if (c >= CLI_OPT_URL && !(CLI_OPT_BIT(c) & (connection | (sub ? sub->opts : 0)))) {
                        if (!sub)
                                return cli_usage_error(cmd->name, CLI_EXIT_USAGE,
                                                       "option '--%s' goes after the subcommand",
                                                       cmd->options[idx].name);
                        return cli_usage_error(cmd->name, CLI_EXIT_USAGE, "'hull %s %s' takes no option '--%s'",
                                               cmd->name, sub->name, cmd->options[idx].name);
                }
                if (c == 'h') {
                        if (sub)
                                cli_client_sub_help(cmd, sub);
                        else
                                cmd->help();
                        *ret_done = true;
                        return CLI_EXIT_OK;
                }
                if (c == '?')
                        return cli_usage_error(cmd->name, CLI_EXIT_USAGE, "option '%s' is unknown or lacks its value",
                                               argv[optind - 1]);
                r = c >= CLI_OPT_URL && c < CLI_OPT_OWN ? client_option(cmd, c, optarg, a)
                                                        : cmd->own(args, sub, c, optarg);
                if (r)
                        return r;
        }
        return 0;
}

int cli_client_parse(const cli_client_cmd *cmd, int argc, char **argv, cli_client_args *a, void *args,
                     const cli_client_sub **ret_sub) {
        bool done = false;
        int r;

        *ret_sub = NULL;
        if (argc < 2) {
                cmd->help();
                return CLI_EXIT_USAGE;
        }
        r = parse_options(cmd, argc, argv, NULL, a, args, &done);
        if (r || done)
                return r;
        if (optind >= argc)
                return cli_usage_error(cmd->name, CLI_EXIT_USAGE, "no subcommand given (%s)", cmd->subcommands);
        const cli_client_sub *sub = find_sub(cmd, argv[optind]);
        if (!sub)
                return cli_usage_error(cmd->name, CLI_EXIT_USAGE, "unknown subcommand '%s' (%s)", argv[optind],
                                       cmd->subcommands);
        argc -= optind;
        argv += optind;
        r = parse_options(cmd, argc, argv, sub, a, args, &done);
        if (r || done)
                return r;
        a->pos = argv + optind;
        a->n_pos = (size_t) (argc - optind);
        *ret_sub = sub;
        return 0;
}
