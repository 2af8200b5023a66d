/* test-ss.c: the session core in-process, as `hull run` will use it (no daemon, sandboxes from
 * ss_box_local): opening and finding sessions, the caps, a call's claim, every operation with its
 * run record, handles, and the audit log those records make, read back and checked the way
 * `hull verify` checks it (every digest, the chain, the close's numbers). Needs root (it makes
 * real sandboxes); skips (77) otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "sha256.h"
#include "ss.h"
#include "test.h"
#include "time-util.h"

static char tmp[64];

static bool contains(const char *hay, size_t len, const char *needle) {
        return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

static const char *op_of(const json_t *rec) {
        return rec ? json_string_value(json_object_get(rec, "sequence")) : NULL;
}

/* Every line of the session's audit log: strict, its digests hold, the chain links, and it ends
 * where the close said. Returns the number of lines, or -1. */
static int check_log(const char *fingerprint, uint64_t calls, const char *last, unsigned *ret_hull_kinds) {
        char path[256];
        snprintf(path, sizeof(path), "%s/audit/session-%s.jsonl", tmp, fingerprint);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        if (!f)
                return -1;
        rec_chain chain;
        rec_chain_init(&chain);
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        int lines = 0, bad = 0;
        *ret_hull_kinds = 0;
        while ((n = getline(&line, &cap, f)) > 0) {
                json_t *entry = NULL;
                hull_error e = {0};
                lines++;
                if (line[n - 1] == '\n')
                        n--;
                if (rec_log_parse_line(line, (size_t) n, &entry, &e) < 0 || rec_entry_check(entry, &e) < 0 ||
                    rec_chain_push(&chain, json_object_get(entry, "record"), &e) != 0) {
                        printf("# line %d: %s\n", lines, e.msg);
                        bad++;
                }
                if (json_object_get(entry, "operation"))
                        (*ret_hull_kinds)++;
                json_decref(entry);
        }
        free(line);
        fclose(f);
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(rec_chain_finish(&chain), REC_BREAK_NONE);
        CHECK_EQ_INT(chain.calls, calls);
        CHECK_EQ_STR(chain.last, last);
        return lines;
}

/* Two commands in the session's shell: output, exit code, env, the record; the cwd carries over. */
static void session_exec(ss_manager *m, ss_session *s) {
        hull_error e = {0};
        ss_output out = {0};
        ss_env env[] = {{"GREETING", "hi"}};
        ss_exec_args ex = {.command = "mkdir -p sub && cd sub && echo $GREETING; echo err >&2; exit 3",
                           .env = env,
                           .n_env = 1,
                           .timeout_ms = 10000,
                           .output_bytes = 1 << 20};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
        CHECK_EQ_INT(out.exit_code, 3);
        CHECK(contains(out.out, out.out_len, "hi\n"));
        CHECK(contains(out.err, out.err_len, "err\n"));
        CHECK_EQ_STR(op_of(out.record), "1");
        CHECK(ss_call_record(s) == out.record);
        ss_output_done(&out);
        ex = (ss_exec_args){.command = "pwd", .timeout_ms = 10000, .output_bytes = 1 << 20};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
        CHECK(contains(out.out, out.out_len, "/workspace/sub\n")); /* the shell's directory carries over */
        ss_output_done(&out);
}

/* Writes, edits and reads of workspace files, read-only calls on the record, a python cell. */
static void session_files(ss_manager *m, ss_session *s) {
        hull_error e = {0};
        json_t *rec = NULL;
        CHECK_EQ_INT(ss_write(m, s, "data/a.csv", "x,y\n1,2\n", 8, false, &rec, &e), 0);
        CHECK_EQ_STR(op_of(rec), "3");
        json_decref(rec);
        rec = NULL;
        CHECK_EQ_INT(ss_write(m, s, "data/a.csv", "3,4\n", 4, true, &rec, &e), 0);
        json_decref(rec);
        rec = NULL;
        CHECK_EQ_INT(ss_edit(m, s, "data/a.csv", "3,4", 3, "5,\0", 3, &rec, &e), 0);
        json_decref(rec);
        rec = NULL;
        /* A refused edit changes nothing and is not on the record. */
        CHECK_EQ_INT(ss_edit(m, s, "data/a.csv", "nowhere", 7, "x", 1, &rec, &e), -ENODATA);
        CHECK(rec == NULL);
        CHECK_EQ_INT(ss_write(m, s, "../escape", "x", 1, false, &rec, &e) < 0, 1);
        ws_read_result rr = {0};
        CHECK_EQ_INT(ss_read(m, s, "data/a.csv", 0, 100, &rr, &e), 0);
        CHECK(rr.len == 12 && memcmp(rr.data, "x,y\n1,2\n5,\0\n", 12) == 0);
        ws_read_result_done(&rr);
        /* A face's read-only call on the record (hull mcp's): the arguments and the answer; one the
         * client cancelled, version 3 without a result; neither a kind that is not read-only nor a
         * malformed message is appended. */
        json_t *args = json_pack("{s:s, s:i}", "file_path", "data/a.csv", "limit", 2);
        json_t *answer = json_pack("{s:s, s:b, s:[]}", "text", "     1\tx,y\n", "isError", false, "handles");
        rec = NULL;
        CHECK_EQ_INT(ss_record_read_only(m, s, "read", args, answer, NULL, now_unix_ms(), &rec, &e), 0);
        CHECK_EQ_STR(op_of(rec), "6");
        json_decref(rec);
        CHECK_EQ_INT(ss_record_read_only(m, s, "read", args, NULL, "canceled", now_unix_ms(), NULL, &e), 0);
        CHECK_EQ_INT(ss_record_read_only(m, s, "write", args, answer, NULL, now_unix_ms(), NULL, &e), -EINVAL);
        CHECK(strstr(e.msg, "not one of hull's read-only kinds") != NULL);
        CHECK_EQ_INT(ss_record_read_only(m, s, "glob", args, answer, NULL, now_unix_ms(), NULL, &e), -EINVAL);
        CHECK(strstr(e.msg, "the glob request has an unknown field") != NULL);
        CHECK_EQ_INT(ss_record_read_only(m, s, "read", args, NULL, NULL, now_unix_ms(), NULL, &e), -EINVAL);
        json_decref(args);
        json_decref(answer);

        ss_cell_output co = {0};
        ss_file files[] = {{"in.txt", "41", 2}};
        ss_cell_args ca = {.lang = SBX_LANG_PYTHON,
                           .code = "int(open('in.txt').read()) + 1",
                           .code_len = strlen("int(open('in.txt').read()) + 1"),
                           .files = files,
                           .n_files = 1,
                           .timeout_ms = 20000,
                           .output_bytes = 1 << 20};
        CHECK_EQ_INT(ss_cell(m, s, &ca, &co, &e), 0);
        CHECK(contains(co.o.out, co.o.out_len, "42"));
        CHECK(co.interpreter_started);
        CHECK(co.o.record != NULL); /* recorded as plimsoll's cell kind */
        ss_output_done(&co.o);
}

/* Inputs as handles: idempotent, a CSV as a table queried with SQL, a bad one refused. */
static void session_handles(ss_manager *m, ss_session *s) {
        hull_error e = {0};
        json_t *rec;
        json_t *sum = NULL;
        rec = NULL;
        CHECK_EQ_INT(
                ss_handles_add_input(m, s, "sales", "dir/sales.csv", HD_FORMAT_BINARY, "r,v\na,1\n", 8, &sum, &rec, &e),
                0);
        CHECK(rec != NULL);
        json_decref(sum);
        json_decref(rec);
        sum = rec = NULL;
        /* Idempotent: the same input again answers the same handle, with no new record. */
        CHECK_EQ_INT(
                ss_handles_add_input(m, s, "sales", "dir/sales.csv", HD_FORMAT_BINARY, "r,v\na,1\n", 8, &sum, &rec, &e),
                0);
        CHECK(rec == NULL);
        json_decref(sum);
        CHECK_EQ_INT(ss_handles_add_input(m, s, "sales", "dir/sales.csv", HD_FORMAT_BINARY, "other", 5, &sum, &rec, &e),
                     -EEXIST);
        /* A CSV input becomes a table (types inferred), queried with SQL. */
        sum = rec = NULL;
        const char *csv = "region,v\nnorth,1\nsouth,2.5\n";
        CHECK_EQ_INT(
                ss_handles_add_input(m, s, "sales-t", "sales.csv", HD_FORMAT_CSV, csv, strlen(csv), &sum, &rec, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "table");
        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "n_rows")), 2);
        CHECK(rec != NULL);
        json_decref(sum);
        json_decref(rec);
        json_t *q = NULL;
        const char *ids[] = {"sales-t"};
        CHECK_EQ_INT(ss_handles_query(m, s, "SELECT sum(v) FROM \"sales-t\".data", ids, 1, 0, &q, &e), 0);
        CHECK(json_real_value(json_array_get(json_array_get(json_object_get(q, "rows"), 0), 0)) == 3.5);
        json_decref(q);
        sum = rec = NULL;
        CHECK_EQ_INT(ss_handles_add_input(m, s, "bad", "x.csv", HD_FORMAT_JSON_ARRAY, "[1,2]", 5, &sum, &rec, &e) < 0,
                     1);
        json_t *list = NULL;
        CHECK_EQ_INT(ss_handles_list(m, s, &list, &e), 0);
        CHECK_EQ_INT(json_array_size(list), 2);
        json_decref(list);
}

/* A second session of the caller hydrated from the first one's persisted workspace, twice. */
static void session_hydrate(ss_manager *m, const ss_open_opts *o2, const void *tar, size_t tar_len) {
        hull_error e = {0};
        ss_session *u = NULL;
        json_t *rec;
        CHECK_EQ_INT(ss_open(m, o2, &u, &e), 0);
        if (u) {
                ss_info ui;
                ss_session_info(m, u, &ui);
                CHECK_EQ_INT(ss_call_begin(m, u, -1, &e), 0);
                ws_tar_stats st = {0};
                rec = NULL;
                CHECK_EQ_INT(ss_hydrate(m, u, tar, tar_len, &st, &rec, &e), 0);
                CHECK(st.files == 2 && rec != NULL); /* a.csv and in.txt (persisted before the input came) */
                json_decref(rec);
                rec = NULL;
                /* Again: every file exists now, so it is refused part-way, recorded as unanswered. */
                CHECK(ss_hydrate(m, u, tar, tar_len, &st, &rec, &e) < 0);
                const json_t *v3 = ss_call_record(u);
                CHECK(v3 && json_integer_value(json_object_get(v3, "version")) == 3);
                CHECK_EQ_STR(json_string_value(json_object_get(v3, "unanswered")), "invalid_argument");
                ss_call_end(m, u);
                ss_close_info ui_close;
                ss_close(m, u, &ui_close);
                CHECK_EQ_INT(ui_close.calls, 2);
                unsigned kinds = 0;
                CHECK_EQ_INT(check_log(ui.fingerprint, ui_close.calls, ui_close.last_sha256, &kinds), 2);
                CHECK_EQ_INT(kinds, 2);
                ss_unref(m, u);
        }
}

static void test_session(ss_manager *m) {
        ss_session *s = NULL, *t = NULL;
        hull_error e = {0};
        ss_open_opts o = {.principal = "alice", .owner = "agent"};
        CHECK_EQ_INT(ss_open(m, &o, &s, &e), 0);
        if (!s) {
                printf("# open: %s\n", e.msg);
                return;
        }
        ss_info info;
        ss_session_info(m, s, &info);
        CHECK_EQ_INT(strlen(info.id), 32);
        CHECK_EQ_INT(ss_lookup(m, info.id, "alice", &t), 0);
        ss_unref(m, t);
        CHECK_EQ_INT(ss_lookup(m, info.id, "mallory", &t), -ENOENT); /* another caller's: not there */
        CHECK_EQ_INT(ss_lookup(m, "00112233445566778899aabbccddeeff", "alice", &t), -ENOENT);
        /* The cap per caller (1 here): a second session is refused, and nothing is lost. */
        ss_session *u = NULL;
        ss_open_opts o2 = {.principal = "alice", .owner = "other"};
        CHECK_EQ_INT(ss_open(m, &o2, &u, &e), -EUSERS);
        CHECK(strstr(e.msg, "this caller has 1 sessions open") != NULL);

        CHECK_EQ_INT(ss_call_begin(m, s, -1, &e), 0);
        session_exec(m, s);
        session_files(m, s);

        void *tar = NULL;
        size_t tar_len = 0;
        CHECK_EQ_INT(ss_persist(m, s, 1 << 20, &tar, &tar_len, &e), 0);

        session_handles(m, s);
        ss_call_end(m, s);

        ss_close_info ci;
        ss_close(m, s, &ci);
        CHECK_EQ_INT(ci.ended, SS_END_CLOSED);
        CHECK_EQ_INT(ci.calls, 10); /* exec, exec, write, write (append), edit, read twice, cell, add_input twice */
        CHECK_EQ_INT(ss_call_begin(m, s, -1, &e), -ESHUTDOWN);
        ss_unref(m, s);

        session_hydrate(m, &o2, tar, tar_len);
        free(tar);

        unsigned kinds = 0;
        CHECK_EQ_INT(check_log(info.fingerprint, ci.calls, ci.last_sha256, &kinds), 10);
        CHECK_EQ_INT(kinds, 9); /* all but the cell, which is plimsoll's kind */
}

/* The bounds a session's handles live in: one handle, and all of them. */
static void test_bounds(const ss_config *base) {
        ss_config cfg = *base;
        cfg.handle_bytes_max = 1 << 20;
        cfg.store_bytes_max = 2 << 20;
        cfg.audit_dir = NULL;
        ss_manager *m = NULL;
        ss_session *s = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), 0);
        if (!m)
                return;
        ss_open_opts o = {.principal = "bob"};
        CHECK_EQ_INT(ss_open(m, &o, &s, &e), 0);
        CHECK_EQ_INT(ss_handle_bytes_max(m), 1 << 20);
        if (s && ss_call_begin(m, s, -1, &e) == 0) {
                size_t n = 700 << 10;
                char *buf = calloc(1, (2 << 20));
                json_t *sum = NULL, *rec = NULL;
                /* a long text output, its length found by the store: over one handle's bound */
                char *text = malloc((3 << 20) / 2 + 1);
                if (text) {
                        memset(text, 't', (3 << 20) / 2);
                        text[(3 << 20) / 2] = '\0';
                }
                CHECK(text && ss_handles_spill_text(m, s, "tool", text, &sum, &e) == -EFBIG);
                CHECK(strstr(e.msg, "over the 1048576 bytes allowed for one handle") != NULL);
                CHECK_EQ_INT(ss_handles_add_input(m, s, "a", "a.bin", HD_FORMAT_BINARY, buf, n, &sum, &rec, &e), 0);
                json_decref(sum);
                json_decref(rec);
                sum = rec = NULL;
                CHECK_EQ_INT(
                        ss_handles_add_input(m, s, "b", "b.bin", HD_FORMAT_BINARY, buf, (3 << 20) / 2, &sum, &rec, &e),
                        -EFBIG);
                CHECK(strstr(e.msg, "over the limit of 1048576 for one handle") != NULL);
                CHECK_EQ_INT(ss_handles_add_input(m, s, "b", "b.bin", HD_FORMAT_BINARY, buf, n, &sum, &rec, &e), 0);
                json_decref(sum);
                json_decref(rec);
                sum = rec = NULL;
                /* over the room left (2 MiB - 2 x 700 KiB), within one handle's bound */
                if (text)
                        text[n] = '\0';
                CHECK(text && ss_handles_spill_text(m, s, "tool", text, &sum, &e) == -EFBIG);
                CHECK(strstr(e.msg, "over the 663552 bytes left in the session's handles") != NULL);
                if (text)
                        text[100] = '\0';
                CHECK(text && ss_handles_spill_text(m, s, "tool", text, &sum, &e) == 0);
                CHECK_EQ_INT(json_integer_value(json_object_get(sum, "bytes")), 100);
                json_decref(sum);
                sum = NULL;
                free(text);
                CHECK_EQ_INT(ss_handles_add_input(m, s, "c", "c.bin", HD_FORMAT_BINARY, buf, n, &sum, &rec, &e),
                             -EFBIG);
                CHECK(strstr(e.msg, "the session's handles would exceed 2097152 bytes") != NULL);
                /* An upload streamed to the store's anonymous file first. */
                int fd = ss_upload_file(m, s, &e);
                CHECK(fd >= 0);
                if (fd >= 0) {
                        CHECK(write(fd, "k\tv\nx\t1\n", 8) == 8);
                        CHECK_EQ_INT(
                                ss_handles_add_input_fd(m, s, "t", "t.tsv", HD_FORMAT_TSV, fd, NULL, &sum, &rec, &e),
                                0);
                        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "table");
                        json_decref(sum);
                        json_decref(rec);
                        close(fd);
                }
                /* The daemon's way: the digest taken as it streamed in, the file parsed in place. */
                fd = ss_upload_file(m, s, &e);
                CHECK(fd >= 0);
                if (fd >= 0) {
                        static const char tsv[] = "k\tv\ny\t2\n";
                        char hex[SHA256_HEX_SIZE];
                        _cleanup_sha256_ sha256_ctx c = {0};
                        CHECK(write(fd, tsv, sizeof(tsv) - 1) == (ssize_t) sizeof(tsv) - 1);
                        CHECK(sha256_init(&c) == 0 && sha256_update(&c, tsv, sizeof(tsv) - 1) == 0 &&
                              sha256_final_hex(&c, hex) == 0);
                        sum = rec = NULL;
                        CHECK_EQ_INT(
                                ss_handles_add_input_fd(m, s, "t2", "t2.tsv", HD_FORMAT_TSV, fd, hex, &sum, &rec, &e),
                                0);
                        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "n_rows")), 1);
                        const char *src = json_string_value(json_object_get(sum, "source"));
                        CHECK(src && strstr(src, hex) != NULL);
                        json_decref(sum);
                        json_decref(rec);
                        close(fd);
                }
                free(buf);
                ss_call_end(m, s);
        }
        ss_unref(m, s);
        ss_shutdown(m, 1000);
        ss_free(m);
        cfg.handle_bytes_max = 4 << 20; /* more than all handles together: refused */
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), -EINVAL);
}

/* Writes 1 to an eventfd after a delay: another thread's interrupt. */
typedef struct later {
        int fd;
        unsigned ms;
} later;

static void *write_later(void *ud) {
        later *l = ud;
        usleep(l->ms * 1000);
        uint64_t one = 1;
        (void) !write(l->fd, &one, sizeof(one));
        return NULL;
}

static double since_ms(const struct timespec *t0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* What the agent's tools need of the core: a warmed interpreter, a call stopped by its cancel
 * fd, the handles a call made, a host value kept as a handle, a published file. */
static void test_for_tools(const ss_config *base) {
        ss_config cfg = *base;
        cfg.audit_dir = NULL;
        ss_manager *m = NULL;
        ss_session *s = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), 0);
        if (!m)
                return;
        ss_open_opts o = {.principal = "carol"};
        CHECK_EQ_INT(ss_open(m, &o, &s, &e), 0);
        if (!s || ss_call_begin(m, s, -1, &e) < 0) {
                ss_free(m);
                return;
        }
        /* warm: returns before python is ready; the first cell waits for the rest */
        CHECK_EQ_INT(ss_warm(m, s, SBX_LANG_PYTHON, &e), 0);
        CHECK_EQ_INT(ss_warm(m, s, SBX_LANG_PYTHON, &e), 0); /* already running: nothing to do */
        ss_output out = {0};
        ss_exec_args ex = {.command = "echo between", .timeout_ms = 10000, .output_bytes = 4096};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0); /* a call in between spares the warming interpreter */
        ss_output_done(&out);
        ss_cell_output co = {0};
        const char *code = "x = 41\nsave('t1', {'a': [1, 2]})\nx + 1";
        ss_cell_args ca = {.lang = SBX_LANG_PYTHON,
                           .code = code,
                           .code_len = strlen(code),
                           .timeout_ms = 30000,
                           .output_bytes = 1 << 16};
        CHECK_EQ_INT(ss_cell(m, s, &ca, &co, &e), 0);
        CHECK(co.interpreter_started);
        CHECK(contains(co.o.out, co.o.out_len, "42"));
        CHECK_EQ_INT(json_array_size(co.o.handles), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(co.o.handles, 0), "id")), "t1");
        ss_output_done(&co.o);
        /* the same interpreter: its state stays */
        ca.code = "x";
        ca.code_len = 1;
        CHECK_EQ_INT(ss_cell(m, s, &ca, &co, &e), 0);
        CHECK(!co.interpreter_started && contains(co.o.out, co.o.out_len, "41"));
        CHECK(co.o.handles == NULL);
        ss_output_done(&co.o);

        /* a command and a cell stopped by their cancel fd long before their deadline */
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        later l = {.fd = efd, .ms = 300};
        pthread_t th;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_create(&th, NULL, write_later, &l);
        ex = (ss_exec_args){.command = "sleep 60", .timeout_ms = 60000, .output_bytes = 4096, .cancel_fd = efd};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
        pthread_join(th, NULL);
        TEST_RESULT(since_ms(&t0) < 20000, "the cancelled command ended after %.0f ms", since_ms(&t0));
        CHECK(!out.timed_out && out.exit_code != 0);
        ss_output_done(&out);
        uint64_t v;
        (void) !read(efd, &v, sizeof(v));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_create(&th, NULL, write_later, &l);
        ca = (ss_cell_args){.lang = SBX_LANG_PYTHON,
                            .code = "import time\ntime.sleep(60)",
                            .code_len = strlen("import time\ntime.sleep(60)"),
                            .timeout_ms = 60000,
                            .output_bytes = 4096,
                            .cancel_fd = efd};
        CHECK_EQ_INT(ss_cell(m, s, &ca, &co, &e), 0);
        pthread_join(th, NULL);
        TEST_RESULT(since_ms(&t0) < 20000, "the cancelled cell ended after %.0f ms", since_ms(&t0));
        CHECK(co.interpreter_ended);
        ss_output_done(&co.o);
        close(efd);

        /* a handle saved by python run from the shell is reported too */
        ex = (ss_exec_args){.command = "python3 -c \"import hull; hull.save('t2', 'some text')\"",
                            .timeout_ms = 30000,
                            .output_bytes = 4096};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
        CHECK_EQ_INT(json_array_size(out.handles), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(out.handles, 0), "kind")), "text");
        ss_output_done(&out);

        /* a host value as a handle */
        json_t *sum = NULL;
        CHECK_EQ_INT(ss_handles_spill(m, s, HD_FORMAT_JSON, "tool x", "{\"k\": [1, 2, 3]}", 16, &sum, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "json");
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "source")), "tool x");
        json_decref(sum);
        sum = NULL;
        CHECK_EQ_INT(ss_handles_spill(m, s, HD_FORMAT_CSV, "fetch", "a,b\n1,2\n", 8, &sum, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "table");
        json_decref(sum);
        sum = NULL;
        CHECK_EQ_INT(ss_handles_spill(m, s, HD_FORMAT_JSON, "bad", "{", 1, &sum, &e), -EBADMSG);
        CHECK_EQ_INT(ss_handles_spill(m, s, HD_FORMAT_SQLITE, "x", "x", 1, &sum, &e), -EINVAL);

        /* publish */
        json_t *rec = NULL;
        CHECK_EQ_INT(ss_write(m, s, "outputs/r.csv", "a,b\n1,2\n", 8, false, &rec, &e), 0);
        json_decref(rec);
        rec = NULL;
        CHECK_EQ_INT(ss_write(m, s, "data.csv", "x\n", 2, false, &rec, &e), 0);
        json_decref(rec);
        CHECK_EQ_INT(
                ss_publish(m, s, "/workspace/outputs/r.csv", "../../evil\x1b\xe2\x80\xae.csv", "the report", &sum, &e),
                0);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "kind")), "binary");
        CHECK_EQ_INT(json_integer_value(json_object_get(sum, "bytes")), 8);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "source")),
                     "published outputs/r.csv as evil.csv: the report");
        json_decref(sum);
        sum = NULL;
        CHECK_EQ_INT(ss_publish(m, s, "outputs/r.csv", NULL, NULL, &sum, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(sum, "source")), "published outputs/r.csv as r.csv");
        json_decref(sum);
        sum = NULL;
        CHECK_EQ_INT(ss_publish(m, s, "data.csv", NULL, NULL, &sum, &e), -EPERM); /* not a deliverable */
        CHECK(strstr(e.msg, "not a file under outputs/") != NULL);
        CHECK_EQ_INT(ss_publish(m, s, "/etc/hosts", NULL, NULL, &sum, &e), -EPERM);
        CHECK(strstr(e.msg, "is outside /workspace") != NULL);
        CHECK_EQ_INT(ss_publish(m, s, "outputs/../../x", NULL, NULL, &sum, &e), -EPERM);
        CHECK_EQ_INT(ss_publish(m, s, "outputs/none.csv", NULL, NULL, &sum, &e), -ENOENT);
        ex = (ss_exec_args){.command = "ln -s /etc/passwd outputs/l && ln -s r.csv outputs/in && mkfifo outputs/f && "
                                       "mkdir outputs/d",
                            .timeout_ms = 10000,
                            .output_bytes = 4096};
        CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
        CHECK_EQ_INT(out.exit_code, 0);
        ss_output_done(&out);
        CHECK_EQ_INT(ss_publish(m, s, "outputs/l", NULL, NULL, &sum, &e), -ELOOP);
        CHECK_EQ_INT(ss_publish(m, s, "outputs/in", NULL, NULL, &sum, &e), -ELOOP); /* even to a file inside */
        CHECK_EQ_INT(ss_publish(m, s, "outputs/f", NULL, NULL, &sum, &e), -EINVAL);
        CHECK_EQ_INT(ss_publish(m, s, "outputs/d", NULL, NULL, &sum, &e), -EINVAL);
        CHECK(sum == NULL);
        ss_call_end(m, s);
        ss_unref(m, s);
        ss_shutdown(m, 1000);
        ss_free(m);
}

/* A session's handles kept beyond it (ss_handles_export) and a new session started from them
 * (handles_from): the same ids and data; a kept file changed afterwards reads as tampered. And a
 * cell's emitted value found within its stdout (emit_at, emit_len). */
static void test_export(const ss_config *base) {
        ss_config cfg = *base;
        cfg.audit_dir = NULL;
        ss_manager *m = NULL;
        ss_session *s = NULL, *t = NULL, *u = NULL;
        hull_error e = {0};
        char kept[256];
        snprintf(kept, sizeof(kept), "%s/kept", tmp);
        CHECK(mkdir(kept, 0711) == 0);
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), 0);
        if (!m)
                return;
        ss_open_opts o = {.principal = "dave"};
        CHECK_EQ_INT(ss_open(m, &o, &s, &e), 0);
        if (!s || ss_call_begin(m, s, -1, &e) < 0) {
                ss_free(m);
                return;
        }
        json_t *sum = NULL;
        CHECK_EQ_INT(ss_handles_spill(m, s, HD_FORMAT_CSV, "fetch", "a,b\n1,2\n3,4\n", 12, &sum, &e), 0);
        char id[64];
        snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(sum, "id")) ?: "");
        json_decref(sum);
        ss_cell_args ca = {.lang = SBX_LANG_PYTHON,
                           .code = "print('before')\nemit({'n': 7})",
                           .code_len = strlen("print('before')\nemit({'n': 7})"),
                           .timeout_ms = 60000,
                           .output_bytes = 4096};
        ss_cell_output co = {0};
        CHECK_EQ_INT(ss_cell(m, s, &ca, &co, &e), 0);
        CHECK(co.emit_len > 0 && co.emit_at + co.emit_len == co.o.out_len);
        CHECK(co.emit_len > 0 && strncmp(co.o.out + co.emit_at, "{\"n\": 7}\n", co.emit_len) == 0);
        CHECK(strncmp(co.o.out, "before\n", co.emit_at) == 0);
        ss_output_done(&co.o);
        CHECK_EQ_INT(ss_handles_export(m, s, kept, &e), 0);
        ss_call_end(m, s);
        ss_close_info ci;
        ss_close(m, s, &ci);
        ss_unref(m, s);

        ss_open_opts o2 = {.principal = "dave", .handles_from = kept};
        CHECK_EQ_INT(ss_open(m, &o2, &t, &e), 0);
        if (t && ss_call_begin(m, t, -1, &e) == 0) {
                json_t *rows = NULL;
                char sql[128];
                snprintf(sql, sizeof(sql), "SELECT sum(b) AS s FROM \"%s\"", id);
                CHECK_EQ_INT(ss_handles_query(m, t, sql, NULL, 0, 10, &rows, &e), 0);
                char *d = rows ? json_dumps(rows, JSON_COMPACT) : NULL;
                CHECK(d && strstr(d, "6") != NULL);
                free(d);
                json_decref(rows);
                ss_call_end(m, t);
                ss_close(m, t, &ci);
        }
        if (t)
                ss_unref(m, t);

        /* a kept file changed: the new session refuses to use it */
        char path[512];
        snprintf(path, sizeof(path), "%s/%s.sqlite", kept, id);
        FILE *f = fopen(path, "r+");
        CHECK(f != NULL);
        if (f) {
                fseek(f, 200, SEEK_SET);
                fputc('X', f);
                fclose(f);
        }
        CHECK_EQ_INT(ss_open(m, &o2, &u, &e), 0);
        if (u && ss_call_begin(m, u, -1, &e) == 0) {
                json_t *got = NULL;
                ss_inspect_opts io = {0};
                CHECK(ss_handles_inspect(m, u, id, &io, &got, &e) < 0);
                CHECK(strstr(e.msg, "tampered") != NULL);
                json_decref(got);
                ss_call_end(m, u);
        }
        if (u)
                ss_unref(m, u);
        ss_shutdown(m, 1000);
        ss_free(m);
}

/* A limited network through the session core: the proxy runs beside the session, every call
 * gets HTTP_PROXY, and a host not on the list is refused (and counted in the log). */
static void test_net(const ss_config *base) {
        ss_config cfg = *base;
        ss_manager *m = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), 0);
        if (!m)
                return;
        int logp[2];
        CHECK(pipe2(logp, O_CLOEXEC) == 0);
        char *allow[] = {(char *) "allowed.invalid", NULL};
        sbx_net_policy pol = {.allowed_hosts = allow, .log_fd = logp[1]};
        ss_open_opts o = {.principal = "net", .owner = "net", .net = SBX_NET_LIMITED, .net_policy = &pol};
        ss_session *s = NULL;
        CHECK_EQ_INT(ss_open(m, &o, &s, &e), 0);
        close(logp[1]);
        if (s) {
                CHECK_EQ_INT(ss_call_begin(m, s, -1, &e), 0);
                ss_output out = {0};
                ss_exec_args ex = {.command = "echo \"$HTTPS_PROXY\"; curl -s -o /dev/null -w '%{http_code}\\n' "
                                              "http://blocked.invalid/ 2>&1",
                                   .timeout_ms = 20000,
                                   .output_bytes = 4096};
                CHECK_EQ_INT(ss_exec(m, s, &ex, &out, &e), 0);
                CHECK(contains(out.out, out.out_len, "http://127.0.0.1:3128\n403\n"));
                ss_output_done(&out);
                ss_call_end(m, s);
                ss_unref(m, s);
        }
        ss_shutdown(m, 1000);
        ss_free(m);
        char buf[512];
        ssize_t n = read(logp[0], buf, sizeof(buf) - 1);
        CHECK(n > 0);
        if (n > 0) {
                buf[n] = '\0';
                CHECK(strstr(buf, "net refused HTTP blocked.invalid:80") != NULL);
        }
        close(logp[0]);
}

int main(void) {
        if (geteuid() != 0 || access("/usr/bin/python3", X_OK) < 0) {
                printf("skip - the session core makes real sandboxes: it needs root and /usr/bin/python3\n");
                test_done();
                return 77;
        }
        signal(SIGPIPE, SIG_IGN);
        snprintf(tmp, sizeof(tmp), "/tmp/hull-test-ss.XXXXXX");
        if (!mkdtemp(tmp) || chmod(tmp, 0711) < 0) {
                printf("not ok - cannot make a temporary directory\n");
                return 1;
        }
        char audit[128], handles[128];
        snprintf(audit, sizeof(audit), "%s/audit", tmp);
        snprintf(handles, sizeof(handles), "%s/handles", tmp);
        CHECK(mkdir(audit, 0700) == 0 && mkdir(handles, 0711) == 0);
        ss_config cfg = {.box = ss_box_local(false),
                         .zygote_fd = -1,
                         .max_sessions = 4,
                         .max_per_owner = 2,
                         .max_per_caller = 1,
                         .lifetime_ms = 600000,
                         .idle_ms = 600000,
                         .memory_bytes = 512ULL << 20,
                         .pids = 256,
                         .tmp_bytes = 64ULL << 20,
                         .audit_dir = audit,
                         .handles_dir = handles,
                         .provider = "hull",
                         .isolation = "container",
                         .no_reaper = true};
        ss_manager *m = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(ss_new(&cfg, &m, &e), 0);
        if (m) {
                test_session(m);
                ss_shutdown(m, 1000);
                ss_free(m);
        }
        test_bounds(&cfg);
        test_for_tools(&cfg);
        test_export(&cfg);
        if (access("/usr/bin/curl", X_OK) == 0)
                test_net(&cfg);
        else
                printf("skip - a limited session: needs /usr/bin/curl\n");
        (void) rm_rf_at(AT_FDCWD, tmp);
        return test_done();
}
