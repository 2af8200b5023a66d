/* cli-verify.c: `hull verify PATH`: read an audit log of run records (JSON lines), recompute
 * every request, result and record digest and the session chain, and print each problem on one
 * line, naming the first break of the chain; or one summary line when everything holds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dlib.h"
#include "dynbuf.h"
#include "limits.h"
#include "macro.h"
#include "sbx-record.h"

enum {
        OPT_CALLS = 0x100,
        OPT_LAST,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"calls", required_argument, NULL, OPT_CALLS},
        {"last", required_argument, NULL, OPT_LAST},
        {},
};

void cli_verify_help(void) {
        printf("Usage: hull verify [--calls N] [--last DIGEST] PATH\n\n"
               "Check an audit log of run records: PATH is the log (JSON lines) or a directory\n"
               "holding .hull/records.jsonl or records.jsonl, or the session logs .hull/session-*.jsonl\n"
               "(the directory of a kept hull run or hull chat: each log is checked). Every request,\n"
               "result and record\n"
               "digest is recomputed, and the records must form one session's chain: the same\n"
               "session, sequence 1, 2, 3... with no gap, each naming the record before it.\n\n"
               "Options:\n"
               "  --calls N        the session's call count as CloseSession stated it; a log with\n"
               "                   fewer calls was cut short\n"
               "  --last DIGEST    the last record digest as CloseSession stated it\n\n"
               "Each problem is printed on one line ('hull: verify: FILE line N: ...'); when all\n"
               "holds, one line 'ok: N records, session FINGERPRINT, last DIGEST'.\n"
               "Exit status: 0 when everything holds, 1 when a check fails or the log cannot be\n"
               "read, 2 on a usage error.\n");
}

#define usage_error(...) cli_usage_error("verify", CLI_EXIT_USAGE, __VA_ARGS__)

/* Lines of a file, each at most max bytes, read in chunks into one buffer that grows to max. */
typedef struct line_reader {
        int fd;
        size_t max;
        dynbuf b;              /* what was read and not yet handed out (from start) */
        size_t start, scanned; /* the next line starts at start; no '\n' in [start, scanned) */
        bool eof, skipping;
} line_reader;

static void line_reader_init(line_reader *lr, int fd, size_t max) {
        *lr = (line_reader){.fd = fd, .max = max};
        dynbuf_init(&lr->b, max + 1 + REC_LOG_READ_CHUNK);
}

static void line_reader_done(line_reader *lr) {
        dynbuf_free(&lr->b);
}

/* Next line without its newline: 1 with *ret and *ret_len (valid until the next call) and
 * *ret_newline (false for a last line without one), 0 at the end, -E2BIG for a line over max
 * (skipped whole), or a negative errno from read(). */
static int line_next(line_reader *lr, const char **ret, size_t *ret_len, bool *ret_newline) {
        for (;;) {
                char *buf = lr->b.buf;
                size_t end = lr->b.len;
                char *nl = lr->scanned < end ? memchr(buf + lr->scanned, '\n', end - lr->scanned) : NULL;
                if (nl) {
                        size_t len = (size_t) (nl - (buf + lr->start));
                        const char *line = buf + lr->start;
                        lr->start = lr->scanned = (size_t) (nl - buf) + 1;
                        if (lr->skipping) {
                                lr->skipping = false;
                                return -E2BIG;
                        }
                        *ret = line;
                        *ret_len = len;
                        *ret_newline = true;
                        return 1;
                }
                lr->scanned = end;
                if (end - lr->start > lr->max) { /* too long: drop what we have, find its end */
                        lr->skipping = true;
                        dynbuf_reset(&lr->b);
                        lr->start = lr->scanned = 0;
                }
                if (lr->eof) {
                        if (lr->skipping) {
                                lr->skipping = false;
                                lr->start = lr->b.len;
                                return -E2BIG;
                        }
                        if (lr->start == lr->b.len)
                                return 0;
                        *ret = lr->b.buf + lr->start;
                        *ret_len = lr->b.len - lr->start;
                        *ret_newline = false;
                        lr->start = lr->scanned = lr->b.len;
                        return 1;
                }
                if (lr->start > 0) { /* keep the partial line at the front */
                        dynbuf_consume(&lr->b, lr->start);
                        lr->scanned -= lr->start;
                        lr->start = 0;
                }
                int r = dynbuf_reserve(&lr->b, REC_LOG_READ_CHUNK);
                if (r < 0)
                        return r == -E2BIG ? -ENOMEM : r;
                ssize_t n = read(lr->fd, lr->b.buf + lr->b.len, REC_LOG_READ_CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        lr->eof = true;
                dynbuf_advance(&lr->b, (size_t) n);
        }
}

typedef struct verify_state {
        const char *name; /* the log as the user knows it */
        unsigned problems;
} verify_state;

static void problem(verify_state *s, size_t line, const char *msg) {
        if (++s->problems <= REC_VERIFY_PROBLEMS_MAX)
                cli_error("verify", "%s line %zu: %s", s->name, line, msg);
}

/* Open the log: PATH itself, or .hull/records.jsonl or records.jsonl inside the directory PATH.
 * Writes the name to show into name. Returns an fd or a negative errno (message printed). */
static int open_log(const char *path, char *name, size_t size) {
        static const char *const candidates[] = {".hull/records.jsonl", "records.jsonl"};
        struct stat st;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                int r = negative_errno();
                cli_error("verify", "cannot open '%s': %s", path, strerror(-r));
                return r;
        }
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                cli_error("verify", "cannot stat '%s': %s", path, strerror(-r));
                return r;
        }
        snprintf(name, size, "%s", path);
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int dfd = TAKE_FD(fd);
                size_t len = strlen(path);
                while (len > 1 && path[len - 1] == '/')
                        len--;
                for (size_t i = 0; i < ELEMENTSOF(candidates) && fd < 0; i++) {
                        fd = openat(dfd, candidates[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
                        if (fd < 0 && errno != ENOENT) {
                                int r = negative_errno();
                                cli_error("verify", "cannot open '%.*s/%s': %s", (int) len, path, candidates[i],
                                          strerror(-r));
                                return r;
                        }
                        if (fd >= 0)
                                snprintf(name, size, "%.*s/%s", (int) len, path, candidates[i]);
                }
                if (fd < 0) {
                        cli_error("verify", "'%s' holds no .hull/records.jsonl or records.jsonl", path);
                        return -ENOENT;
                }
                if (fstat(fd, &st) < 0) {
                        int r = negative_errno();
                        cli_error("verify", "cannot stat '%s': %s", name, strerror(-r));
                        return r;
                }
        }
        if (!S_ISREG(st.st_mode)) {
                cli_error("verify", "'%s' is not a regular file", name);
                return -EINVAL;
        }
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
                (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        return TAKE_FD(fd);
}

/* Check one line: the entry's own digests and consistency, the record's digest, its place in the
 * chain (settled at the end). */
static void verify_line(verify_state *s, rec_chain *chain, size_t lineno, const char *line, size_t len, bool newline) {
        json_auto_t *entry = NULL;
        hull_error e = {};
        if (rec_log_parse_line(line, len, &entry, &e) < 0) {
                problem(s, lineno, e.msg);
                rec_chain_push_unreadable(chain);
                return;
        }
        if (!newline)
                problem(s, lineno, "the last line has no newline (an interrupted append?)");
        int r = rec_chain_push(chain, json_object_get(entry, "record"), &e);
        if (r != 0) {
                problem(s, lineno, e.msg);
                if (r < 0)
                        return; /* a record that cannot be read has nothing more to check */
        }
        e = (hull_error){};
        if (rec_entry_check(entry, &e) < 0)
                problem(s, lineno, e.msg);
}

/* Check one log (fd, shown as name). Returns the exit status. */
static int verify_log(int fd, const char *name, bool have_calls, uint64_t want_calls, const char *want_last) {
        verify_state s = {.name = name};
        rec_chain chain;
        _cleanup_(line_reader_done) line_reader lr;
        line_reader_init(&lr, fd, REC_LOG_LINE_MAX);
        size_t lineno = 0;
        rec_chain_init(&chain);
        for (;;) {
                const char *line;
                size_t len;
                bool newline;
                int r = line_next(&lr, &line, &len, &newline);
                if (r == 0)
                        break;
                if (r != -E2BIG && r < 0) {
                        cli_error("verify", "cannot read '%s': %s", name, strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                if (++lineno > REC_LOG_LINES_MAX) {
                        char msg[HULL_ERROR_MSG_MAX];
                        snprintf(msg, sizeof(msg), "more than %u lines; hull verify stops here", REC_LOG_LINES_MAX);
                        problem(&s, lineno, msg);
                        break;
                }
                if (r == -E2BIG) {
                        char msg[HULL_ERROR_MSG_MAX];
                        snprintf(msg, sizeof(msg), "the line is longer than %llu bytes",
                                 (unsigned long long) REC_LOG_LINE_MAX);
                        problem(&s, lineno, msg);
                        rec_chain_push_unreadable(&chain);
                        continue;
                }
                verify_line(&s, &chain, lineno, line, len, newline);
        }
        if (lineno == 0)
                problem(&s, 1, "no records: the log is empty");

        char msg[HULL_ERROR_MSG_MAX];
        rec_break brk = rec_chain_finish(&chain);
        if (brk != REC_BREAK_NONE) {
                /* An unreadable line was reported as such; the chain stops there without another word. */
                if (brk != REC_BREAK_MALFORMED) {
                        rec_chain_describe(&chain, msg, sizeof(msg));
                        problem(&s, chain.brk_index + 1, msg);
                }
        } else if (lineno > 0 && lineno <= REC_LOG_LINES_MAX) {
                if (have_calls && chain.calls != want_calls) {
                        snprintf(msg, sizeof(msg),
                                 "the log ends after call %" PRIu64 ", the close states %" PRIu64 " calls%s",
                                 chain.calls, want_calls, chain.calls < want_calls ? " (calls cut off the end?)" : "");
                        problem(&s, lineno, msg);
                }
                if (want_last && strcmp(chain.last, want_last) != 0) {
                        snprintf(msg, sizeof(msg), "the last record is %.16s..., the close states %.16s...", chain.last,
                                 want_last);
                        problem(&s, lineno, msg);
                }
        }

        if (s.problems > 0) {
                if (s.problems > REC_VERIFY_PROBLEMS_MAX)
                        cli_error("verify", "%s: %u more problems not shown", name,
                                  s.problems - REC_VERIFY_PROBLEMS_MAX);
                cli_error("verify", "%s: %u problem%s; the log does not verify", name, s.problems,
                          s.problems == 1 ? "" : "s");
                return CLI_EXIT_FAILURE;
        }
        if (chain.single)
                printf("ok: %zu records, single runs (no session)\n", lineno);
        else
                printf("ok: %zu records, session %s, last %s\n", lineno, chain.session, chain.last);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* The session logs of a directory that holds no records.jsonl: DIR/.hull/session-*.jsonl (what
 * hull run and hull chat keep), sorted. Returns how many (0: none, or PATH is no such directory). */
static size_t session_logs(const char *path, char logs[VERIFY_LOGS_MAX][SBX_PATH_MAX + 32]) {
        char sub[SBX_PATH_MAX + 32];
        struct dirent **names = NULL;
        struct stat st;
        size_t n_logs = 0;

        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        snprintf(sub, sizeof(sub), "%s/records.jsonl", path);
        if (access(sub, F_OK) == 0)
                return 0;
        snprintf(sub, sizeof(sub), "%s/.hull/records.jsonl", path);
        if (access(sub, F_OK) == 0)
                return 0;
        snprintf(sub, sizeof(sub), "%s/.hull", path);
        int n = scandir(sub, &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
                const char *d = names[i]->d_name;
                size_t len = strlen(d);
                size_t sub_len = strlen(sub);
                if (n_logs < VERIFY_LOGS_MAX && strncmp(d, "session-", 8) == 0 && len > 14 &&
                    strcmp(d + len - 6, ".jsonl") == 0 && sub_len + 1 + len < SBX_PATH_MAX + 32) {
                        char *out = logs[n_logs++];
                        memcpy(out, sub, sub_len);
                        out[sub_len] = '/';
                        memcpy(out + sub_len + 1, d, len + 1);
                }
                free(names[i]);
        }
        free(names);
        return n_logs;
}

int cli_verify_main(int argc, char **argv) {
        uint64_t want_calls = 0;
        bool have_calls = false;
        const char *want_last = NULL;
        int c;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_verify_help();
                        return CLI_EXIT_OK;
                case OPT_CALLS: {
                        char *end;
                        errno = 0;
                        unsigned long long v = strtoull(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-' || optarg[0] == '+' ||
                            optarg[0] == ' ')
                                return usage_error("--calls wants a count, not '%s'", optarg);
                        want_calls = v;
                        have_calls = true;
                        break;
                }
                case OPT_LAST:
                        if (!sha256_hex_is_valid(optarg, strlen(optarg)))
                                return usage_error("--last wants a record digest (64 lowercase hex digits), not '%s'",
                                                   optarg);
                        want_last = optarg;
                        break;
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind >= argc)
                return usage_error("%s", "no log given");
        if (argc - optind > 1)
                return usage_error("one log at a time, not also '%s'", argv[optind + 1]);

        hull_error e = {0};
        if (dlib_load(DLIB_CRYPTO, &e) < 0) { /* every digest is SHA-256 */
                cli_report("verify", &e);
                return CLI_EXIT_FAILURE;
        }
        /* a directory of hull run or hull chat: one log per session, .hull/session-*.jsonl */
        char logs[VERIFY_LOGS_MAX][SBX_PATH_MAX + 32];
        size_t n_logs = session_logs(argv[optind], logs);
        if (n_logs > 0) {
                if (have_calls || want_last)
                        return usage_error("--calls and --last check one log: name it (%s)", logs[0]);
                int status = CLI_EXIT_OK;
                for (size_t i = 0; i < n_logs; i++) {
                        char name[SBX_PATH_MAX + 32];
                        _cleanup_close_ int fd = open_log(logs[i], name, sizeof(name));
                        if (fd < 0 || verify_log(fd, name, false, 0, NULL) != CLI_EXIT_OK)
                                status = CLI_EXIT_FAILURE;
                }
                return status;
        }
        char name[SBX_PATH_MAX + 32];
        _cleanup_close_ int fd = open_log(argv[optind], name, sizeof(name));
        if (fd < 0)
                return CLI_EXIT_FAILURE;
        return verify_log(fd, name, have_calls, want_calls, want_last);
}
