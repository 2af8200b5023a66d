/* cli-session.c: `hull session open|exec|cell|read|write|persist|close|list`, a client of the
 * sessions of a running `hull serve`: one POST per call (src/shared/http-client: libcurl, loaded
 * only when this command runs), the request built and the answer read with jansson (bytes as
 * base64, 64-bit integers as strings or numbers, fields at their zero value omitted, as in
 * ProtoJSON), every answer checked for our Plimsoll-Request-Id before it is believed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "cli-session.h"
#include "cli.h"
#include "dlib.h"
#include "dynbuf.h"
#include "http-client.h"
#include "limits.h"
#include "macro.h"
#include "parse-util.h"
#include "protojson.h"
#include "sha256.h"
#include "utf8.h"

#define CMD "session"
#define PROTOCOL 3
#define REQUEST_ID_HEADER "Plimsoll-Request-Id"
#define SESSION_END_PREFIX "SESSION_END_"

#define PATH_OPEN "/plimsoll.v1.SandboxService/OpenSession"
#define PATH_SESSION_RUN "/plimsoll.v1.SandboxService/SessionRun"
#define PATH_CLOSE "/plimsoll.v1.SandboxService/CloseSession"
#define PATH_EXEC "/hull.v1.Workspace/Exec"
#define PATH_READ "/hull.v1.Workspace/Read"
#define PATH_WRITE "/hull.v1.Workspace/Write"
#define PATH_PERSIST "/hull.v1.Workspace/Persist"
#define PATH_LIST "/hull.v1.Sessions/List"

#define DEFAULT_URL CLI_SERVE_DEFAULT_URL
_Static_assert(SERVE_DEFAULT_PORT == 8750, "DEFAULT_URL names hull serve's default port");

enum {
        OPT_URL = 0x100,
        OPT_UNIX,
        OPT_TOKEN_FILE,
        OPT_INSECURE,
        OPT_JSON,
        OPT_OWNER,
        OPT_LIFETIME,
        OPT_IDLE,
        OPT_LANGUAGE,
        OPT_TIMEOUT,
        OPT_ENV,
        OPT_PYTHON,
        OPT_JAVASCRIPT,
        OPT_FILE,
        OPT_OFFSET,
        OPT_LIMIT,
        OPT_FORCE,
};
#define BIT(o) (1U << ((o) -OPT_URL))
#define GLOBAL_OPTS (BIT(OPT_URL) | BIT(OPT_UNIX) | BIT(OPT_TOKEN_FILE) | BIT(OPT_INSECURE))

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"url", required_argument, NULL, OPT_URL},
        {"unix", required_argument, NULL, OPT_UNIX},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"json", no_argument, NULL, OPT_JSON},
        {"owner", required_argument, NULL, OPT_OWNER},
        {"lifetime", required_argument, NULL, OPT_LIFETIME},
        {"idle", required_argument, NULL, OPT_IDLE},
        {"language", required_argument, NULL, OPT_LANGUAGE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"env", required_argument, NULL, OPT_ENV},
        {"python", no_argument, NULL, OPT_PYTHON},
        {"javascript", no_argument, NULL, OPT_JAVASCRIPT},
        {"file", required_argument, NULL, OPT_FILE},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"force", no_argument, NULL, OPT_FORCE},
        {},
};

/* What the command line said. Strings point into argv. */
typedef struct session_args {
        const char *url, *unix_path, *token_file;
        bool insecure, json, force;
        const char *owner;
        const char *environment; /* open --env NAME: hull's extension hullEnvironment */
        bool has_lifetime, has_idle, has_timeout, has_limit;
        uint64_t lifetime_ms, idle_ms, timeout_ms, offset, limit;
        const char *languages[PLIM_LANGUAGES_MAX];
        size_t n_languages;
        const char *language; /* cell: "python" (default) or "javascript" */
        const char *env[HULL_API_ENV_MAX];
        size_t n_env;
        const char *files[PLIM_FILES_MAX];
        size_t n_files;
        char **pos; /* positional arguments */
        size_t n_pos;
} session_args;

void cli_client_done(cli_client *c) {
        if (c->http)
                httpc_free(c->http);
        explicit_bzero(c->auth, sizeof(c->auth));
}

typedef struct session_sub {
        const char *name;
        unsigned opts; /* the subcommand's own options, as BIT()s */
        size_t min_pos, max_pos;
        const char *synopsis;
        const char *help;
        int (*run)(cli_client *c, const session_args *a);
} session_sub;

static const session_sub *find_sub(const char *name);

#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)
#define conn_usage_error(...) cli_usage_error(c->cmd, CLI_EXIT_USAGE, __VA_ARGS__)

/* ---- small helpers ---- */

static const char *const session_ends[] = {
        "UNSPECIFIED",     "CLOSED",   "EXPIRED",  "DISK_EXCEEDED", "MAIN_PROCESS_ENDED", "BOUNDARY_FAILED",
        "SANDBOX_CHANGED", "SHUTDOWN", "REPLACED", "NOT_FOUND",     "UNCLAIMED",
};
static const char *const not_dispatched_reasons[] = {
        "unspecified", "request", "permission", "protocol", "unsupported", "isolation", "capacity", "environment",
};

bool cli_session_id_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static bool owner_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_OWNER_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      strchr("._:-", s[i])))
                        return false;
        return true;
}

/* A cell file's path as the protocol wants it: relative and clean. */
static bool cell_path_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > PLIM_PATH_MAX || s[0] == '/')
                return false;
        for (const char *seg = s;;) {
                const char *end = strchrnul(seg, '/');
                size_t len = (size_t) (end - seg);
                if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                        return false;
                if (!*end)
                        break;
                seg = end + 1;
        }
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\')
                        return false;
        return true;
}

/* "950ms", "12.5s", "5m", "5m30s", "2h", "2h05m". */
static void format_ms(uint64_t ms, char *buf, size_t size) {
        uint64_t s = ms / 1000;
        if (ms < 1000)
                snprintf(buf, size, "%" PRIu64 "ms", ms);
        else if (ms < 60000)
                snprintf(buf, size, ms % 1000 ? "%.1fs" : "%.0fs", (double) ms / 1000.0);
        else if (s < 3600)
                snprintf(buf, size, s % 60 ? "%" PRIu64 "m%02" PRIu64 "s" : "%" PRIu64 "m", s / 60, s % 60);
        else
                snprintf(buf, size, (s / 60) % 60 ? "%" PRIu64 "h%02" PRIu64 "m" : "%" PRIu64 "h", s / 3600,
                         (s / 60) % 60);
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

/* A SessionEnd by name (with or without its prefix) or number; absent: 0 (open). */
static int get_session_end(const json_t *o, const char *camel, const char *snake, unsigned *ret, hull_error *e) {
        json_t *v;
        const char *s;
        int r = pj_field(o, camel, snake, &v, e);
        if (r < 0)
                return r;
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            (size_t) json_integer_value(v) < ELEMENTSOF(session_ends)) {
                *ret = (unsigned) json_integer_value(v);
                return 0;
        }
        if ((s = json_string_value(v))) {
                if (strncmp(s, SESSION_END_PREFIX, strlen(SESSION_END_PREFIX)) == 0)
                        s += strlen(SESSION_END_PREFIX);
                for (size_t i = 0; i < ELEMENTSOF(session_ends); i++)
                        if (strcmp(s, session_ends[i]) == 0) {
                                *ret = (unsigned) i;
                                return 0;
                        }
        }
        if (e) {
                hull_err(e, 0, "%s is not a SessionEnd name or number", camel);
                e->err = -EINVAL;
        }
        return -EINVAL;
}

static int bad_answer(const char *what) {
        cli_error(CMD, "the daemon's answer is malformed: %s", what);
        return CLI_EXIT_FAILURE;
}

/* What a ProtoJSON reader found wrong with an answer. */
static int bad_field(const hull_error *e) {
        return bad_answer(e->msg);
}

static int print_json(const json_t *o) {
        if (json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) == EOF) {
                cli_error(CMD, "cannot write the answer to stdout");
                return CLI_EXIT_FAILURE;
        }
        return CLI_EXIT_OK;
}

/* The exit status of something that ran in the session: 124 when it timed out. */
static int ran_status(int64_t exit_code, bool timed_out) {
        if (timed_out)
                return 124;
        return exit_code >= 0 && exit_code <= 255 ? (int) exit_code : CLI_EXIT_FAILURE;
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

/* ---- the subcommands ---- */

static uint64_t call_ms(const session_args *a) {
        return a->has_timeout ? a->timeout_ms : SESSION_CLI_CALL_MS_DEFAULT;
}

static int do_close(cli_client *c, const char *id, json_t **ret) {
        json_t *req = json_pack("{s:i, s:s}", "protocol", PROTOCOL, "sessionId", id);
        return cli_call(c, PATH_CLOSE, req, SESSION_CLI_CALL_MS_DEFAULT, ret);
}

static int sub_open(cli_client *c, const session_args *a) {
        json_t *req = json_pack("{s:i}", "protocol", PROTOCOL);
        if (!req)
                return bad_answer("out of memory");
        if (a->owner)
                json_object_set_new(req, "owner", json_string(a->owner));
        if (a->environment)
                json_object_set_new(req, "hullEnvironment", json_string(a->environment));
        if (a->has_lifetime)
                json_object_set_new(req, "lifetimeMs", json_integer((json_int_t) a->lifetime_ms));
        if (a->has_idle)
                json_object_set_new(req, "idleTimeoutMs", json_integer((json_int_t) a->idle_ms));
        if (a->n_languages) {
                json_t *l = json_array();
                for (size_t i = 0; i < a->n_languages; i++)
                        json_array_append_new(l, json_string(a->languages[i]));
                json_object_set_new(req, "languages", l);
        }
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_OPEN, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r != 0)
                return r;
        const char *id, *fp;
        char want[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_string(ans, "sessionId", "session_id", NULL, SIZE_MAX, &id, NULL, &e) < 0)
                return bad_field(&e);
        if (!cli_session_id_is_valid(id))
                return bad_answer("sessionId is not 1 to 64 lowercase hex digits");
        if (pj_string(ans, "session", NULL, NULL, SIZE_MAX, &fp, NULL, &e) < 0 ||
            sha256_hex(id, strlen(id), want) < 0 || strcmp(fp, want) != 0) {
                /* The fingerprint must be the ID's SHA-256, or the run records cannot be tied to it. */
                json_auto_t *closed = NULL;
                cli_error(CMD, "the daemon's session fingerprint is not the SHA-256 of the session ID; closing it");
                (void) do_close(c, id, &closed);
                return CLI_EXIT_FAILURE;
        }
        if (a->json)
                return print_json(ans);
        printf("%s\n", id);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* stdout, stderr, their truncation flags: written raw, a note for each truncated stream. */
static int print_streams(const json_t *o, const char *what) {
        _cleanup_free_ void *out = NULL, *err = NULL;
        size_t out_len, err_len;
        bool out_trunc, err_trunc;
        hull_error e = {0};
        if (pj_bytes(o, "stdout", NULL, NULL, PLIM_ANSWER_MAX, &out, &out_len, &e) < 0 ||
            pj_bytes(o, "stderr", NULL, NULL, PLIM_ANSWER_MAX, &err, &err_len, &e) < 0 ||
            pj_bool(o, "stdoutTruncated", "stdout_truncated", &out_trunc, &e) < 0 ||
            pj_bool(o, "stderrTruncated", "stderr_truncated", &err_trunc, &e) < 0)
                return bad_field(&e);
        if (cli_write_out(stdout, out, out_len) < 0 || cli_write_out(stderr, err, err_len) < 0)
                return CLI_EXIT_FAILURE;
        if (out_trunc)
                cli_error(CMD, "the %s's stdout was cut by the daemon (the rest is lost)", what);
        if (err_trunc)
                cli_error(CMD, "the %s's stderr was cut by the daemon (the rest is lost)", what);
        return 0;
}

/* Append word w as /bin/sh reads it back as one word: as it is when it is only
 * [A-Za-z0-9_@%+=:,./-] (the set of Python's shlex.quote), else in single quotes, each ' in it
 * written '"'"'. Returns 0 or the errors of dynbuf_add. */
static int shell_quote_add(dynbuf *b, const char *w) {
        static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";
        size_t n = strlen(w);
        if (n > 0 && strspn(w, safe) == n)
                return dynbuf_add(b, w, n);
        int r = dynbuf_add(b, "'", 1);
        for (const char *p = w; r >= 0;) {
                const char *q = strchrnul(p, '\'');
                r = dynbuf_add(b, p, (size_t) (q - p));
                if (r < 0 || !*q)
                        break;
                r = dynbuf_add_str(b, "'\"'\"'");
                p = q + 1;
        }
        return r < 0 ? r : dynbuf_add(b, "'", 1);
}

/* The command line of exec: one argument is a command line for the shell, as it is; several are
 * one command's words, each quoted so that the shell hands them over unchanged. */
static int exec_command(const session_args *a, dynbuf *b) {
        if (a->n_pos == 2)
                return dynbuf_add_str(b, a->pos[1]);
        for (size_t i = 1; i < a->n_pos; i++) {
                int r = i > 1 ? dynbuf_add(b, " ", 1) : 0;
                if (r < 0 || (r = shell_quote_add(b, a->pos[i])) < 0)
                        return r;
        }
        return 0;
}

static int sub_exec(cli_client *c, const session_args *a) {
        const char *id = a->pos[0];
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, HULL_API_COMMAND_MAX);
        int r = exec_command(a, &b);
        if (r == -E2BIG)
                return usage_error("the command is over %u bytes%s", HULL_API_COMMAND_MAX,
                                   a->n_pos > 2 ? " (its words quoted for the shell)" : "");
        if (r < 0)
                return bad_answer("out of memory");
        const char *cmd = b.buf ? b.buf : "";
        if (!cmd[0])
                return usage_error("the command is empty%s", "");
        if (!utf8_is_valid(cmd, b.len))
                return usage_error("the command is not UTF-8%s", "");

        json_t *req = json_pack("{s:s, s:s}", "sessionId", id, "command", cmd);
        if (!req)
                return bad_answer("out of memory");
        if (a->has_timeout)
                json_object_set_new(req, "timeoutMs", json_integer((json_int_t) a->timeout_ms));
        if (a->n_env) {
                json_t *env = json_object();
                for (size_t i = 0; i < a->n_env; i++) {
                        const char *eq = strchr(a->env[i], '=');
                        char name[HULL_API_ENV_NAME_MAX + 1];
                        memcpy(name, a->env[i], (size_t) (eq - a->env[i]));
                        name[eq - a->env[i]] = 0;
                        json_object_set_new(env, name, json_string(eq + 1));
                }
                json_object_set_new(req, "env", env);
        }
        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_EXEC, req, call_ms(a), &ans);
        if (r != 0)
                return r;
        int64_t exit_code;
        bool timed_out;
        hull_error e = {0};
        if (pj_int(ans, "exitCode", "exit_code", INT64_MIN, INT64_MAX, NULL, &exit_code, &e) < 0 ||
            pj_bool(ans, "timedOut", "timed_out", &timed_out, &e) < 0)
                return bad_field(&e);
        if (a->json) {
                r = print_json(ans);
                return r ? r : ran_status(exit_code, timed_out);
        }
        r = print_streams(ans, "command");
        if (r)
                return r;
        if (timed_out)
                cli_error(CMD, "the command timed out and was stopped (raise --timeout)");
        return ran_status(exit_code, timed_out);
}

static int sub_cell(cli_client *c, const session_args *a) {
        const char *id = a->pos[0];
        _cleanup_free_ char *code = NULL;
        size_t code_len;
        const char *src = a->n_pos > 1 ? a->pos[1] : "-";
        int r;
        if (strcmp(src, "-") == 0) {
                r = cli_read_input(NULL, PLIM_CODE_MAX, &code, &code_len);
                if (r < 0) {
                        if (r == -EFBIG)
                                return usage_error("the code on stdin is over %u bytes", PLIM_CODE_MAX);
                        cli_error(CMD, "cannot read the code from stdin: %s", strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
        } else {
                code_len = strlen(src);
                if (code_len > PLIM_CODE_MAX)
                        return usage_error("the code is over %u bytes", PLIM_CODE_MAX);
                if (!(code = strdup(src)))
                        return bad_answer("out of memory");
        }
        if (code_len == 0)
                return usage_error("the code is empty%s", "");
        if (memchr(code, 0, code_len) || !utf8_is_valid(code, code_len))
                return usage_error("the code must be UTF-8 without NUL bytes%s", "");

        json_t *files = json_array(), *cell = NULL;
        size_t total = 0;
        for (size_t i = 0; files && i < a->n_files; i++) {
                const char *eq = strchr(a->files[i], '=');
                char path[PLIM_PATH_MAX + 1];
                size_t plen = (size_t) (eq - a->files[i]);
                memcpy(path, a->files[i], plen);
                path[plen] = 0;
                for (size_t j = 0; j < i; j++)
                        if (strncmp(a->files[j], a->files[i], plen + 1) == 0) {
                                json_decref(files);
                                return usage_error("--file names the path '%s' twice", path);
                        }
                _cleanup_free_ char *data = NULL;
                size_t data_len;
                r = cli_read_input(eq + 1, PLIM_FILES_BYTES_MAX - total, &data, &data_len);
                if (r < 0) {
                        json_decref(files);
                        if (r == -EFBIG)
                                return usage_error("the --file contents are over %u bytes in all",
                                                   PLIM_FILES_BYTES_MAX);
                        cli_error(CMD, "cannot read %s: %s", eq + 1, strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                total += data_len;
                /* plimsoll carries a file's content as a JSON string (NULs escaped), not base64. */
                if (!utf8_is_valid(data, data_len)) {
                        json_decref(files);
                        return usage_error("--file %s is not UTF-8 text; cell files travel as text (write binary files "
                                           "with 'hull session write')",
                                           eq + 1);
                }
                json_t *b = json_stringn(data, data_len);
                if (!b || json_array_append_new(files, json_pack("{s:s, s:o}", "path", path, "content", b)) < 0) {
                        json_decref(files);
                        return bad_answer("out of memory");
                }
        }
        if (files)
                cell = json_pack("{s:s, s:s%, s:o}", "language", a->language, "code", code, code_len, "files", files);
        json_t *req = cell ? json_pack("{s:i, s:s, s:o}", "protocol", PROTOCOL, "sessionId", id, "cell", cell) : NULL;
        if (!req)
                return bad_answer("out of memory");
        if (a->has_timeout)
                json_object_set_new(req, "timeoutMs", json_integer((json_int_t) a->timeout_ms));

        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_SESSION_RUN, req, call_ms(a), &ans);
        if (r != 0)
                return r;
        json_t *run = NULL, *res = NULL;
        unsigned ended;
        const char *detail;
        int64_t exit_code;
        bool timed_out;
        hull_error e = {0};
        if (pj_field(ans, "run", NULL, &run, &e) < 0 || (run && pj_field(run, "cell", NULL, &res, &e) < 0))
                return bad_field(&e);
        if (!json_is_object(run) || !json_is_object(res))
                return bad_answer("it carries no run.cell result");
        if (get_session_end(ans, "ended", NULL, &ended, &e) < 0 ||
            pj_string(ans, "endDetail", "end_detail", NULL, SIZE_MAX, &detail, NULL, &e) < 0 ||
            pj_int(res, "exitCode", "exit_code", INT64_MIN, INT64_MAX, NULL, &exit_code, &e) < 0 ||
            pj_bool(res, "timedOut", "timed_out", &timed_out, &e) < 0)
                return bad_field(&e);
        if (a->json)
                r = print_json(ans);
        else
                r = print_streams(res, "cell");
        if (r)
                return r;
        if (!a->json && timed_out)
                cli_error(CMD, "the cell timed out and was stopped (raise --timeout)");
        if (ended)
                cli_error(CMD, "the session ended during this call: %s%s%s", session_ends[ended], detail[0] ? ": " : "",
                          detail);
        return ran_status(exit_code, timed_out);
}

static json_t *read_request(const session_args *a, uint64_t offset, uint64_t limit) {
        json_t *req = json_pack("{s:s, s:s}", "sessionId", a->pos[0], "path", a->pos[1]);
        if (req && offset)
                json_object_set_new(req, "offset", json_integer((json_int_t) offset));
        if (req && limit)
                json_object_set_new(req, "limit", json_integer((json_int_t) limit));
        return req;
}

static int sub_read(cli_client *c, const session_args *a) {
        uint64_t offset = a->offset;
        if (a->json) {
                json_auto_t *ans = NULL;
                int r = cli_call(c, PATH_READ, read_request(a, offset, a->has_limit ? a->limit : 0),
                                 SESSION_CLI_CALL_MS_DEFAULT, &ans);
                return r ? r : print_json(ans);
        }
        /* Without --limit, the whole file from --offset on, in the largest pieces the daemon reads. */
        for (;;) {
                json_auto_t *ans = NULL;
                int r = cli_call(c, PATH_READ, read_request(a, offset, a->has_limit ? a->limit : WS_READ_MAX_BYTES),
                                 SESSION_CLI_CALL_MS_DEFAULT, &ans);
                if (r)
                        return r;
                _cleanup_free_ void *data = NULL;
                size_t len;
                bool eof;
                hull_error e = {0};
                if (pj_bytes(ans, "content", NULL, NULL, PLIM_ANSWER_MAX, &data, &len, &e) < 0 ||
                    pj_bool(ans, "eof", NULL, &eof, &e) < 0)
                        return bad_field(&e);
                if (cli_write_out(stdout, data, len) < 0) {
                        cli_error(CMD, "cannot write to stdout");
                        return CLI_EXIT_FAILURE;
                }
                if (eof || a->has_limit)
                        return CLI_EXIT_OK;
                if (len == 0)
                        return bad_answer("no bytes and no end of file");
                offset += len;
        }
}

static int sub_write(cli_client *c, const session_args *a) {
        const char *src = a->n_pos > 2 ? a->pos[2] : "-";
        _cleanup_free_ char *data = NULL;
        size_t len;
        int r = cli_read_input(src, SESSION_CLI_WRITE_MAX, &data, &len);
        if (r < 0) {
                if (r == -EFBIG)
                        return usage_error("%s is over %u bytes, the most one write carries",
                                           strcmp(src, "-") ? src : "stdin", SESSION_CLI_WRITE_MAX);
                cli_error(CMD, "cannot read %s: %s", strcmp(src, "-") ? src : "stdin", strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        json_t *b = pj_new_bytes(data, len);
        json_t *req = b ? json_pack("{s:s, s:s, s:o}", "sessionId", a->pos[0], "path", a->pos[1], "content", b) : NULL;
        if (!req)
                return bad_answer("out of memory");
        json_auto_t *ans = NULL;
        r = cli_call(c, PATH_WRITE, req, SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        int64_t bytes;
        hull_error e = {0};
        if (pj_int(ans, "bytes", NULL, 0, INT64_MAX, NULL, &bytes, &e) < 0)
                return bad_field(&e);
        if (a->json)
                return print_json(ans);
        printf("wrote %" PRId64 " bytes to %s\n", bytes, a->pos[1]);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_persist(cli_client *c, const session_args *a) {
        const char *out = a->pos[1];
        struct stat st;
        if (!a->force && lstat(out, &st) == 0) {
                cli_error(CMD, "%s exists (pass --force to overwrite it)", out);
                return CLI_EXIT_FAILURE;
        }
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_PERSIST, json_pack("{s:s}", "sessionId", a->pos[0]), SESSION_CLI_CALL_MS_DEFAULT,
                         &ans);
        if (r)
                return r;
        _cleanup_free_ void *tar = NULL;
        size_t len;
        int64_t bytes;
        const char *digest;
        char got[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_bytes(ans, "archive", NULL, NULL, PLIM_ANSWER_MAX, &tar, &len, &e) < 0 ||
            pj_int(ans, "bytes", NULL, 0, INT64_MAX, NULL, &bytes, &e) < 0 ||
            pj_string(ans, "sha256", NULL, NULL, SIZE_MAX, &digest, NULL, &e) < 0)
                return bad_field(&e);
        if ((uint64_t) bytes != len)
                return bad_answer("bytes is not the archive's length");
        if (sha256_hex(tar, len, got) < 0 || strcmp(got, digest) != 0)
                return bad_answer("sha256 is not the archive's digest");

        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | (a->force ? O_TRUNC : O_EXCL);
        _cleanup_close_ int fd = open(out, flags, 0644);
        if (fd < 0) {
                cli_error(CMD, "cannot create %s: %s%s", out, strerror(errno),
                          errno == EEXIST ? " (pass --force to overwrite it)" : "");
                return CLI_EXIT_FAILURE;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || cli_write_all_fd(fd, tar, len) < 0 || fsync(fd) < 0) {
                cli_error(CMD, "cannot write %s: %s", out,
                          S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
                if (S_ISREG(st.st_mode))
                        (void) unlink(out);
                return CLI_EXIT_FAILURE;
        }
        if (a->json) {
                json_object_del(ans, "archive");
                json_object_set_new(ans, "path", json_string(out));
                return print_json(ans);
        }
        printf("%s\n", got);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_close(cli_client *c, const session_args *a) {
        json_auto_t *ans = NULL;
        int r = do_close(c, a->pos[0], &ans);
        if (r)
                return r;
        const char *fp, *last;
        int64_t calls;
        unsigned ended;
        char want[SHA256_HEX_SIZE];
        hull_error e = {0};
        if (pj_string(ans, "session", NULL, NULL, SIZE_MAX, &fp, NULL, &e) < 0 ||
            pj_string(ans, "lastRecordSha256", "last_record_sha256", NULL, SIZE_MAX, &last, NULL, &e) < 0 ||
            pj_int(ans, "calls", NULL, 0, INT64_MAX, NULL, &calls, &e) < 0 ||
            get_session_end(ans, "ended", NULL, &ended, &e) < 0)
                return bad_field(&e);
        if (sha256_hex(a->pos[0], strlen(a->pos[0]), want) < 0 || strcmp(fp, want) != 0)
                return bad_answer("the session fingerprint is not the SHA-256 of the session ID");
        if (a->json)
                return print_json(ans);
        printf("closed %s calls=%" PRId64 " last=%s ended=%s\n", fp, calls, last[0] ? last : "-", session_ends[ended]);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int sub_list(cli_client *c, const session_args *a) {
        json_auto_t *ans = NULL;
        int r = cli_call(c, PATH_LIST, json_object(), SESSION_CLI_CALL_MS_DEFAULT, &ans);
        if (r)
                return r;
        json_t *sessions;
        hull_error e = {0};
        if (pj_array(ans, "sessions", NULL, NULL, SIZE_MAX, &sessions, &e) < 0)
                return bad_field(&e);
        if (a->json)
                return print_json(ans);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t now_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
        printf("%-32s %6s %8s %10s  %s\n", "SESSION", "CALLS", "IDLE", "EXPIRES", "OWNER");
        for (size_t i = 0; sessions && i < json_array_size(sessions) && i < SESSION_CLI_LIST_MAX; i++) {
                const json_t *s = json_array_get(sessions, i);
                const char *id, *owner;
                int64_t calls, expires, idle;
                char idle_s[32], left_s[32];
                if (!json_is_object(s))
                        return bad_answer("a session of the list is not an object");
                if (pj_string(s, "sessionId", "session_id", "sessions[].", SIZE_MAX, &id, NULL, &e) < 0 ||
                    pj_string(s, "owner", NULL, "sessions[].", SIZE_MAX, &owner, NULL, &e) < 0 ||
                    pj_int(s, "calls", NULL, 0, INT64_MAX, NULL, &calls, &e) < 0 ||
                    pj_int(s, "expiresUnixMs", "expires_unix_ms", 0, INT64_MAX, NULL, &expires, &e) < 0 ||
                    pj_int(s, "idleTimeoutMs", "idle_timeout_ms", 0, INT64_MAX, NULL, &idle, &e) < 0)
                        return bad_field(&e);
                if (!cli_session_id_is_valid(id))
                        return bad_answer("a session of the list has a sessionId that is not 1 to 64 hex digits");
                format_ms(idle > 0 ? (uint64_t) idle : 0, idle_s, sizeof(idle_s));
                if (expires > now_ms) {
                        char d[28];
                        format_ms((uint64_t) (expires - now_ms), d, sizeof(d));
                        snprintf(left_s, sizeof(left_s), "in %s", d);
                } else
                        snprintf(left_s, sizeof(left_s), "%s", expires ? "now" : "-");
                printf("%-32s %6" PRId64 " %8s %10s  %s\n", id, calls, idle_s, left_s, owner[0] ? owner : "-");
        }
        if (sessions && json_array_size(sessions) > SESSION_CLI_LIST_MAX)
                cli_error(CMD, "%zu more sessions not shown (use --json)",
                          json_array_size(sessions) - SESSION_CLI_LIST_MAX);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* ---- usage ---- */

#define CONNECTION_HELP CLI_CONNECTION_HELP

static const session_sub subs[] = {
        {"open", BIT(OPT_JSON) | BIT(OPT_OWNER) | BIT(OPT_LIFETIME) | BIT(OPT_IDLE) | BIT(OPT_LANGUAGE) | BIT(OPT_ENV),
         0, 0, "open [--owner O] [--env NAME] [--lifetime DUR] [--idle DUR] [--language python|javascript]... [--json]",
         "Open a session: one sandbox kept for many calls. Prints its ID, a capability: whoever has it\n"
         "can use the session. With --json, the whole answer (fingerprint, isolation, expiry).\n\n"
         "  --owner O          who the session is for, [A-Za-z0-9._:-]{1,64}\n"
         "  --env NAME         the environment (hull env) whose packages (its layer, built first when\n"
         "                     missing) and network the session gets\n"
         "  --lifetime DUR     end it after DUR (may only shorten the daemon's; at most 12h)\n"
         "  --idle DUR         end it after DUR without a call (at least 1s)\n"
         "  --language L       warm an interpreter: python or javascript (repeatable)\n",
         sub_open},
        {"exec", BIT(OPT_JSON) | BIT(OPT_TIMEOUT) | BIT(OPT_ENV), 2, SIZE_MAX,
         "exec ID [--timeout DUR] [--env K=V]... [--json] -- COMMAND...",
         "Run COMMAND with /bin/sh -c in the session's workspace: one argument is a command line for\n"
         "the shell ('cd /tmp && ls *.csv'); several are one command's words, handed over as they are\n"
         "(each quoted for the shell). The working directory and exported variables carry over to\n"
         "the next exec.\n"
         "Its stdout and stderr are written as they are; the exit status is the command's (124: it\n"
         "timed out).\n\n"
         "  --timeout DUR      stop it after DUR (default 30s, at most 5m)\n"
         "  --env K=V          set a variable for this command (repeatable)\n",
         sub_exec},
        {"cell", BIT(OPT_JSON) | BIT(OPT_TIMEOUT) | BIT(OPT_PYTHON) | BIT(OPT_JAVASCRIPT) | BIT(OPT_FILE), 1, 2,
         "cell ID [--python|--javascript] [--timeout DUR] [--file PATH=LOCALFILE]... [--json] [CODE|-]",
         "Run CODE (or stdin, when it is '-' or absent) in the session's interpreter, which keeps its\n"
         "variables between cells and prints the value of the last expression. The exit status is 0\n"
         "(it ran), 1 (it raised) or 124 (it timed out).\n\n"
         "  --python           a python cell (the default)\n"
         "  --javascript       a javascript cell\n"
         "  --timeout DUR      stop it after DUR (default 30s, at most 5m)\n"
         "  --file PATH=LOCAL  write LOCAL (UTF-8 text) to PATH in the workspace before the code runs\n"
         "                     (repeatable; 4M in all)\n",
         sub_cell},
        {"read", BIT(OPT_JSON) | BIT(OPT_OFFSET) | BIT(OPT_LIMIT), 2, 2,
         "read ID PATH [--offset N] [--limit N] [--json]",
         "Write the bytes of the workspace file PATH to stdout, exactly.\n\n"
         "  --offset N         start at byte N\n"
         "  --limit N          at most N bytes (one call; default: the whole file, at most 16M a call)\n"
         "  --json             the daemon's answer (content in base64, size, eof)\n",
         sub_read},
        {"write", BIT(OPT_JSON), 2, 3, "write ID PATH [LOCALFILE|-] [--json]",
         "Write the workspace file PATH (created or replaced) with the bytes of LOCALFILE, or of stdin\n"
         "when it is '-' or absent.\n",
         sub_write},
        {"persist", BIT(OPT_JSON) | BIT(OPT_FORCE), 2, 2, "persist ID OUT.tar [--force] [--json]",
         "Save the session's workspace as a tar archive in OUT.tar and print its SHA-256 (checked\n"
         "against the daemon's).\n\n"
         "  --force            overwrite OUT.tar if it exists\n",
         sub_persist},
        {"close", BIT(OPT_JSON), 1, 1, "close ID [--json]",
         "Close the session. Prints 'closed FINGERPRINT calls=N last=DIGEST ended=REASON': the calls\n"
         "recorded and the digest of the last run record, which an audit log can be checked against.\n",
         sub_close},
        {"list", BIT(OPT_JSON), 0, 0, "list [--json]",
         "List your open sessions: ID, calls, idle timeout, time left, owner.\n", sub_list},
};

static const session_sub *find_sub(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                if (strcmp(subs[i].name, name) == 0)
                        return &subs[i];
        return NULL;
}

void cli_session_help(void) {
        printf("Usage: hull session SUBCOMMAND [OPTIONS] [ARGS]\n\n"
               "Drive sessions of a running 'hull serve': one sandbox kept for many calls, with its files,\n"
               "a shell whose working directory and exported variables persist, and python and javascript\n"
               "interpreters.\n\n"
               "Subcommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                printf("  hull session %s\n", subs[i].synopsis);
        printf("\n" CONNECTION_HELP "\n"
               "ID is a session ID as 'open' prints it (1 to 64 lowercase hex digits). DUR is a duration:\n"
               "1500ms, 30s, 2.5s, 5m, 1h. Run 'hull session SUBCOMMAND --help' for one subcommand.\n"
               "Exit status: 0 on success, 1 when the daemon refused or failed (its code and message are\n"
               "printed), 2 on a usage error; exec and cell exit with the status of what ran (124: timeout).\n");
}

static void sub_help(const session_sub *s) {
        printf("Usage: hull session %s\n\n%s\n" CONNECTION_HELP
               "  --json             print the daemon's whole answer as JSON\n",
               s->synopsis, s->help);
}

/* ---- the command ---- */

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

/* Parse the options of sub (or the global ones when sub is NULL) from argv; getopt permutes, so
 * the positional arguments end at argv[optind..]. Returns 0 or an exit status (--help: 0 as
 * well, with *ret_done set). */
static int parse_options(int argc, char **argv, const session_sub *sub, session_args *a, bool *ret_done) {
        int c, idx = 0;
        opterr = 0;
        optind = 0; /* GNU getopt: start afresh (the first pass used '+') */
        while ((c = getopt_long(argc, argv, sub ? "h" : "+h", options, &idx)) != -1) {
                if (c >= OPT_URL && !(BIT(c) & (GLOBAL_OPTS | (sub ? sub->opts : 0)))) {
                        if (!sub)
                                return usage_error("option '--%s' goes after the subcommand", options[idx].name);
                        return usage_error("'hull session %s' takes no option '--%s'", sub->name, options[idx].name);
                }
                uint64_t v;
                switch (c) {
                case 'h':
                        if (sub)
                                sub_help(sub);
                        else
                                cli_session_help();
                        *ret_done = true;
                        return CLI_EXIT_OK;
                case OPT_URL:
                        a->url = optarg;
                        break;
                case OPT_UNIX:
                        if (!optarg[0] || strlen(optarg) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                                return usage_error("--unix wants a socket path of 1 to %zu bytes, got '%s'",
                                                   sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1, optarg);
                        a->unix_path = optarg;
                        break;
                case OPT_TOKEN_FILE:
                        a->token_file = optarg;
                        break;
                case OPT_INSECURE:
                        a->insecure = true;
                        break;
                case OPT_JSON:
                        a->json = true;
                        break;
                case OPT_FORCE:
                        a->force = true;
                        break;
                case OPT_OWNER:
                        if (!owner_is_valid(optarg))
                                return usage_error("--owner wants 1 to 64 characters of [A-Za-z0-9._:-], got '%s'",
                                                   optarg);
                        a->owner = optarg;
                        break;
                case OPT_LIFETIME:
                        if (parse_duration_ms(optarg, 1, SESSION_CLI_LIFETIME_MS_MAX, &a->lifetime_ms) < 0)
                                return usage_error("--lifetime wants a duration up to 12h such as 30m, got '%s'",
                                                   optarg);
                        a->has_lifetime = true;
                        break;
                case OPT_IDLE:
                        if (parse_duration_ms(optarg, SESSION_CLI_IDLE_MS_MIN, SESSION_CLI_LIFETIME_MS_MAX,
                                              &a->idle_ms) < 0)
                                return usage_error("--idle wants a duration from 1s to 12h such as 5m, got '%s'",
                                                   optarg);
                        a->has_idle = true;
                        break;
                case OPT_LANGUAGE:
                        if (strcmp(optarg, "python") != 0 && strcmp(optarg, "javascript") != 0)
                                return usage_error("--language wants python or javascript, got '%s'", optarg);
                        for (size_t i = 0; i < a->n_languages; i++)
                                if (strcmp(a->languages[i], optarg) == 0)
                                        return usage_error("--language %s is given twice", optarg);
                        a->languages[a->n_languages++] = optarg; /* two distinct values fit */
                        break;
                case OPT_TIMEOUT:
                        if (parse_duration_ms(optarg, 1, PLIM_TIMEOUT_MS_MAX, &a->timeout_ms) < 0)
                                return usage_error("--timeout wants a duration from 1ms to 5m such as 30s, got '%s'",
                                                   optarg);
                        a->has_timeout = true;
                        break;
                case OPT_ENV: {
                        if (sub && strcmp(sub->name, "open") == 0) {
                                /* open --env NAME: an environment of `hull env` (checked by hull serve) */
                                if (!optarg[0] || strlen(optarg) >= ENV_NAME_MAX || strchr(optarg, '='))
                                        return usage_error("open --env wants an environment's name (see 'hull env "
                                                           "list'), got '%s'",
                                                           optarg);
                                if (a->environment)
                                        return usage_error("open --env is given twice%s", "");
                                a->environment = optarg;
                                break;
                        }
                        const char *eq = strchr(optarg, '=');
                        if (parse_env_assignment(optarg, HULL_API_ENV_NAME_MAX + 1 + HULL_API_ENV_VALUE_MAX) < 0 ||
                            !eq || (size_t) (eq - optarg) > HULL_API_ENV_NAME_MAX ||
                            strlen(eq + 1) > HULL_API_ENV_VALUE_MAX || !utf8_is_valid(eq + 1, strlen(eq + 1)))
                                return usage_error(
                                        "--env wants NAME=VALUE (NAME [A-Za-z_][A-Za-z0-9_]{0,127}, VALUE UTF-8 up "
                                        "to 8K), got '%s'",
                                        optarg);
                        for (size_t i = 0; i < a->n_env; i++)
                                if (strncmp(a->env[i], optarg, (size_t) (eq - optarg) + 1) == 0)
                                        return usage_error("--env sets %.*s twice", (int) (eq - optarg), optarg);
                        if (a->n_env >= HULL_API_ENV_MAX)
                                return usage_error("too many --env options (at most %u)", HULL_API_ENV_MAX);
                        a->env[a->n_env++] = optarg;
                        break;
                }
                case OPT_PYTHON:
                case OPT_JAVASCRIPT: {
                        const char *l = c == OPT_PYTHON ? "python" : "javascript";
                        if (a->language && strcmp(a->language, l) != 0)
                                return usage_error("--python and --javascript exclude each other%s", "");
                        a->language = l;
                        break;
                }
                case OPT_FILE: {
                        const char *eq = strchr(optarg, '=');
                        char path[PLIM_PATH_MAX + 1];
                        if (!eq || (size_t) (eq - optarg) > PLIM_PATH_MAX || !eq[1])
                                return usage_error("--file wants PATH=LOCALFILE, got '%s'", optarg);
                        memcpy(path, optarg, (size_t) (eq - optarg));
                        path[eq - optarg] = 0;
                        if (!cell_path_is_valid(path))
                                return usage_error("--file wants a clean relative PATH (no '/', '.' or '..' segment at "
                                                   "either end or inside, no '\\' or control character), got '%s'",
                                                   path);
                        if (a->n_files >= PLIM_FILES_MAX)
                                return usage_error("too many --file options (at most %u)", PLIM_FILES_MAX);
                        a->files[a->n_files++] = optarg;
                        break;
                }
                case OPT_OFFSET:
                        if (parse_size(optarg, 0, INT64_MAX, &v) < 0)
                                return usage_error("--offset wants a byte offset such as 0 or 4096, got '%s'", optarg);
                        a->offset = v;
                        break;
                case OPT_LIMIT:
                        if (parse_size(optarg, 1, WS_READ_MAX_BYTES, &v) < 0)
                                return usage_error("--limit wants a byte count from 1 to 16M, got '%s'", optarg);
                        a->limit = v;
                        a->has_limit = true;
                        break;
                case '?':
                default:
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        return 0;
}

int cli_session_main(int argc, char **argv) {
        session_args a = {.language = NULL};
        bool done = false;
        int r;

        if (argc < 2) {
                cli_session_help();
                return CLI_EXIT_USAGE;
        }
        r = parse_options(argc, argv, NULL, &a, &done);
        if (r || done)
                return r;
        if (optind >= argc)
                return usage_error("no subcommand given (open, exec, cell, read, write, persist, close, list)%s", "");
        const session_sub *sub = find_sub(argv[optind]);
        if (!sub)
                return usage_error("unknown subcommand '%s' (open, exec, cell, read, write, persist, close, list)",
                                   argv[optind]);
        argc -= optind;
        argv += optind;
        r = parse_options(argc, argv, sub, &a, &done);
        if (r || done)
                return r;
        a.pos = argv + optind;
        a.n_pos = (size_t) (argc - optind);
        if (a.n_pos < sub->min_pos)
                return usage_error("'hull session %s' wants %s", sub->name,
                                   sub->min_pos == 1                   ? "a session ID"
                                   : strcmp(sub->name, "exec") == 0    ? "a session ID and a command"
                                   : strcmp(sub->name, "persist") == 0 ? "a session ID and the archive to write"
                                                                       : "a session ID and a path");
        if (a.n_pos > sub->max_pos)
                return usage_error("unexpected argument '%s'", a.pos[sub->max_pos]);
        if (sub->min_pos > 0 && !cli_session_id_is_valid(a.pos[0]))
                return usage_error("'%s' is not a session ID (1 to 64 lowercase hex digits, as 'open' prints)",
                                   a.pos[0]);
        if ((sub->run == sub_read || sub->run == sub_write) && (!a.pos[1][0] || strlen(a.pos[1]) > WS_PATH_MAX))
                return usage_error("the workspace path must be 1 to %u bytes", WS_PATH_MAX);
        if (sub->run == sub_persist && !a.pos[1][0])
                return usage_error("the archive's path is empty%s", "");
        if (!a.language)
                a.language = "python";

        _cleanup_(cli_client_done) cli_client c = {0};
        r = cli_client_setup(&c, CMD, a.url, a.unix_path, a.token_file, a.insecure);
        if (r)
                return r;
        return sub->run(&c, &a);
}
