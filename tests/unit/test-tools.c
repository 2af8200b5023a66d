/* test-tools.c: each built-in sandbox tool against a real in-process session (ss_box_local, as
 * root; skips otherwise), called as the loop calls it (arguments checked against its schema, the
 * session claimed around the call): what it answers, its errors, and sheath's path-jail vectors
 * through every tool that takes a path. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "schema.h"
#include "ss.h"
#include "test.h"
#include "time-util.h"
#include "tool-catalog.h"
#include "tools-sandbox.h"

static ss_manager *M;
static ss_session *S;
static atomic_bool never;

static void noop_progress(void *ud, const char *note) {
}

/* Run tool t on the JSON input (checked against its schema first, as the loop does); the text
 * goes to *text (malloc'd), is_error to *err, handles (a new reference or NULL) to *handles. */
static int call_full(const tool_def *t, const char *input, uint64_t deadline_ms, char **text, bool *err,
                     json_t **handles) {
        json_error_t je;
        json_t *in = json_loads(input, 0, &je), *schema = json_loads(t->input_schema, 0, NULL);
        hull_error e = {0};
        char *problems = NULL;
        *text = NULL;
        *err = false;
        if (handles)
                *handles = NULL;
        if (!in) {
                printf("# bad test input %s: %s\n", input, je.text);
                return -EINVAL;
        }
        if (schema_validate(schema, in, "input", &problems) < 0) {
                *text = problems;
                *err = true;
                json_decref(in);
                json_decref(schema);
                return 1; /* refused before it ran */
        }
        tool_ctx c = {.ss = M,
                      .session = S,
                      .cancel = &never,
                      .cancel_fd = -1,
                      .deadline_mono_ms = now_mono_ms() + (deadline_ms ? deadline_ms : 60000),
                      .progress = noop_progress,
                      .env = t->env};
        tool_output out = {0};
        int r = ss_call_begin(M, S, -1, &e);
        if (r == 0) {
                r = t->run(&c, in, &out, &e);
                ss_call_end(M, S);
        }
        if (r < 0)
                printf("# %s failed: %s\n", t->name, e.msg);
        else {
                *text = out.text ? strdup(out.text) : NULL;
                *err = out.is_error;
                if (handles)
                        *handles = json_incref(out.handles);
        }
        tool_output_done(&out);
        json_decref(in);
        json_decref(schema);
        return r;
}

/* The tool's text for input (freed at the next call), with whether it is an error. */
static char *last_text;
static const char *call(const tool_def *t, const char *input, bool *err) {
        bool e2 = false;
        free(last_text);
        last_text = NULL;
        call_full(t, input, 0, &last_text, err ? err : &e2, NULL);
        return last_text;
}

static bool has(const char *s, const char *needle) {
        bool ok = s && strstr(s, needle);
        if (!ok)
                printf("# \"%s\" not in: %.800s\n", needle, s ? s : "(null)");
        return ok;
}

#define CHECK_OK(t, input, needle)                                                                                     \
        do {                                                                                                           \
                bool _err = true;                                                                                      \
                const char *_t = call(t, input, &_err);                                                                \
                TEST_RESULT(!_err && has(_t, needle), "%s %s -> %s", (t)->name, input, needle);                        \
        } while (0)
#define CHECK_ERR(t, input, needle)                                                                                    \
        do {                                                                                                           \
                bool _err = false;                                                                                     \
                const char *_t = call(t, input, &_err);                                                                \
                TEST_RESULT(_err &&has(_t, needle), "%s %s -> error %s", (t)->name, input, needle);                    \
        } while (0)

static void test_bash(void) {
        CHECK_OK(&tool_bash, "{\"command\": \"echo hi; echo there >&2\"}", "hi\n[stderr]\nthere\n[exit code 0]");
        CHECK_OK(&tool_bash, "{\"command\": \"exit 7\", \"description\": \"fails\"}", "[exit code 7]");
        CHECK_OK(&tool_bash, "{\"command\": \"mkdir -p deep/er && cd deep/er && export X=42\"}", "[exit code 0]");
        CHECK_OK(&tool_bash, "{\"command\": \"pwd; echo $X\"}", "/workspace/deep/er\n42\n"); /* state carries over */
        CHECK_OK(&tool_bash, "{\"command\": \"cd /workspace\"}", "[exit code 0]");
        CHECK_ERR(&tool_bash, "{\"command\": \"sleep 5\", \"timeout\": 300}", "[timed out after 300 ms");
        CHECK_ERR(&tool_bash, "{\"command\": \"ls\", \"timeout\": 0}", "input.timeout: must be >= 1, got 0");
        CHECK_ERR(&tool_bash, "{\"cmd\": \"ls\"}", "unknown field \"cmd\"");
        /* long output: the head and the tail, the middle cut */
        bool err = true;
        const char *t = call(&tool_bash, "{\"command\": \"seq 1 100000\"}", &err);
        CHECK(!err && has(t, "1\n2\n3\n") && has(t, "the middle of this output was cut") && has(t, "100000\n"));
        CHECK(t && strlen(t) < TOOL_OUTPUT_BYTES + 512);
        /* bytes that are not text come back as valid UTF-8, NULs included */
        t = call(&tool_bash, "{\"command\": \"printf 'a\\\\000b\\\\377c'\"}", &err);
        CHECK(has(t, "a\xef\xbf\xbd"
                     "b\xef\xbf\xbd"
                     "c"));
        /* python run from the shell saves a handle: it is reported */
        json_t *h = NULL;
        char *text = NULL;
        call_full(&tool_bash, "{\"command\": \"python3 -c \\\"import hull; hull.save('from_sh', [1, 2])\\\"\"}", 0,
                  &text, &err, &h);
        CHECK(has(text, "New handles") && has(text, "\"id\":\"from_sh\""));
        CHECK_EQ_INT(json_array_size(h), 1);
        free(text);
        json_decref(h);
}

static void test_python(void) {
        CHECK_OK(&tool_run_python, "{\"code\": \"x = 6 * 7\\nx\"}", "42");
        CHECK_OK(&tool_run_python, "{\"code\": \"print(x + 1)\"}", "43"); /* the interpreter stays */
        CHECK_OK(&tool_run_python, "{\"code\": \"y = 1\"}", "[done; no output");
        CHECK_ERR(&tool_run_python, "{\"code\": \"1/0\"}", "ZeroDivisionError");
        CHECK_ERR(&tool_run_python, "{\"code\": \"1/0\"}", "[the code raised an exception]");
        CHECK_ERR(&tool_run_python, "{\"code\": \"\"}", "must be at least 1 characters long");
        json_t *h = NULL;
        char *text = NULL;
        bool err = true;
        call_full(&tool_run_python,
                  "{\"code\": \"import json\\nsave('squares', [{'n': i, 'sq': i * i} for i in range(1, "
                  "11)])\\n'saved'\"}",
                  0, &text, &err, &h);
        CHECK(!err && has(text, "saved") && has(text, "\"id\":\"squares\""));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(h, 0), "kind")), "table"); /* records: a table */
        free(text);
        json_decref(h);
        /* the call's deadline bounds a cell */
        call_full(&tool_run_python, "{\"code\": \"import time\\ntime.sleep(20)\"}", 1500, &text, &err, NULL);
        CHECK(err && has(text, "[timed out after") && has(text, "variables are gone"));
        free(text);
        CHECK_OK(&tool_run_python, "{\"code\": \"'x' in globals()\"}", "False"); /* a fresh interpreter */
}

static void test_files(void) {
        CHECK_OK(&tool_write, "{\"file_path\": \"data.csv\", \"content\": \"a,b\\n1,2\\n3,4\\n5,6\\n7,8\\n\"}",
                 "wrote 20 bytes to /workspace/data.csv");
        CHECK_OK(&tool_write, "{\"file_path\": \"/workspace/sub/dir/data.csv\", \"content\": \"x\\ny\"}",
                 "wrote 3 bytes to /workspace/sub/dir/data.csv");
        CHECK_ERR(&tool_write, "{\"file_path\": \"/workspace\", \"content\": \"x\"}", "is a directory");
        CHECK_ERR(&tool_write, "{\"file_path\": \"sub\", \"content\": \"x\"}", "");
        /* read: numbered lines, pages, the end */
        CHECK_OK(&tool_read, "{\"file_path\": \"data.csv\"}",
                 "     1\ta,b\n     2\t1,2\n     3\t3,4\n     4\t5,6\n     5\t7,8\n");
        CHECK_OK(&tool_read, "{\"file_path\": \"data.csv\", \"offset\": 2, \"limit\": 2}",
                 "     2\t1,2\n     3\t3,4\n[lines 2-3 shown; the file goes on: continue with offset=4]");
        CHECK_OK(&tool_read, "{\"file_path\": \"data.csv\", \"offset\": 5}", "     5\t7,8\n");
        CHECK_OK(&tool_read, "{\"file_path\": \"data.csv\", \"offset\": 9}", "has 5 lines: offset 9 is past its end");
        CHECK_OK(&tool_read, "{\"file_path\": \"/workspace/sub/dir/data.csv\"}", "     1\tx\n     2\ty\n");
        CHECK_OK(&tool_read, "{\"file_path\": \"sub/../data.csv\", \"limit\": 1}", "     1\ta,b\n");
        CHECK_ERR(&tool_read, "{\"file_path\": \"nope.txt\"}", "/workspace/nope.txt does not exist");
        CHECK_ERR(&tool_read, "{\"file_path\": \"sub\"}", "/workspace/sub is a directory");
        CHECK_ERR(&tool_read, "{\"file_path\": \"data.csv\", \"limit\": 0}", "input.limit: must be >= 1");
        CHECK_ERR(&tool_read, "{\"path\": \"data.csv\"}", "missing required field \"file_path\"");
        CHECK_OK(&tool_write, "{\"file_path\": \"empty\", \"content\": \"\"}", "wrote 0 bytes");
        CHECK_OK(&tool_read, "{\"file_path\": \"empty\"}", "[/workspace/empty is empty]");
        CHECK_OK(&tool_bash,
                 "{\"command\": \"head -c 3000 /dev/zero > zeros.bin; python3 -c \\\"print('y' * 5000)\\\" > "
                 "long.txt; seq 1 20000 > many.txt\"}",
                 "[exit code 0]");
        CHECK_ERR(&tool_read, "{\"file_path\": \"zeros.bin\"}", "is a binary file of 3000 bytes");
        CHECK_OK(&tool_read, "{\"file_path\": \"long.txt\"}", "[... 3000 more bytes of this line]");
        CHECK_OK(&tool_read, "{\"file_path\": \"many.txt\", \"limit\": 100000}",
                 "[output cut at about 50000 characters");
        CHECK_OK(&tool_read, "{\"file_path\": \"many.txt\", \"offset\": 19999}", " 19999\t19999\n 20000\t20000\n");
        /* edit */
        CHECK_OK(&tool_edit, "{\"file_path\": \"data.csv\", \"old_string\": \"3,4\", \"new_string\": \"30,40\"}",
                 "replaced 1 occurrence in /workspace/data.csv");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"data.csv\", \"old_string\": \"3,4\\n\", \"new_string\": \"x\"}",
                  "old_string was not found in /workspace/data.csv");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"data.csv\", \"old_string\": \",\", \"new_string\": \";\"}",
                  "or set replace_all");
        CHECK_OK(&tool_edit,
                 "{\"file_path\": \"data.csv\", \"old_string\": \",\", \"new_string\": \";\", \"replace_all\": true}",
                 "replaced 5 occurrences");
        CHECK_OK(&tool_read, "{\"file_path\": \"data.csv\", \"limit\": 3}", "     3\t30;40\n");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"data.csv\", \"old_string\": \"a\", \"new_string\": \"a\"}",
                  "are the same");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"data.csv\", \"old_string\": \"\", \"new_string\": \"a\"}",
                  "old_string is empty");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"missing.txt\", \"old_string\": \"a\", \"new_string\": \"b\"}",
                  "does not exist");
        /* glob */
        CHECK_OK(&tool_glob, "{\"pattern\": \"**/*.csv\"}", "/workspace/data.csv\n/workspace/sub/dir/data.csv\n");
        CHECK_OK(&tool_glob, "{\"pattern\": \"/workspace/**/*.csv\"}", "/workspace/sub/dir/data.csv");
        CHECK_OK(&tool_glob, "{\"pattern\": \"*.csv\", \"path\": \"/workspace/sub/dir\"}",
                 "/workspace/sub/dir/data.csv\n");
        CHECK_OK(&tool_glob, "{\"pattern\": \"*.none\"}", "no files match *.none");
        CHECK_ERR(&tool_glob, "{\"pattern\": \"/etc/*\"}", "is outside /workspace");
        CHECK_ERR(&tool_glob, "{\"pattern\": \"*\", \"path\": \"..\"}", "is outside /workspace");
        CHECK_ERR(&tool_glob, "{\"pattern\": \"../*\"}", "");
        /* grep */
        CHECK_OK(&tool_write, "{\"file_path\": \"src/a.py\", \"content\": \"import os\\nprint('Hello')\\n\"}", "wrote");
        CHECK_OK(&tool_write, "{\"file_path\": \"src/b.txt\", \"content\": \"hello hello\\nbye\\nhello\\n\"}", "wrote");
        CHECK_OK(&tool_grep, "{\"pattern\": \"hello\"}", "/workspace/src/b.txt\n");
        CHECK_OK(&tool_grep, "{\"pattern\": \"hello\", \"-i\": true}", "/workspace/src/a.py\n/workspace/src/b.txt\n");
        CHECK_OK(&tool_grep, "{\"pattern\": \"hel+o\", \"output_mode\": \"content\"}",
                 "/workspace/src/b.txt:1:hello hello\n/workspace/src/b.txt:3:hello\n");
        CHECK_OK(&tool_grep, "{\"pattern\": \"hello\", \"output_mode\": \"count\", \"-i\": true}",
                 "/workspace/src/a.py:1\n/workspace/src/b.txt:2\n");
        CHECK_OK(&tool_grep, "{\"pattern\": \"hello\", \"-i\": true, \"glob\": \"**/*.py\"}", "/workspace/src/a.py\n");
        CHECK_OK(&tool_grep, "{\"pattern\": \"o\", \"output_mode\": \"content\", \"head_limit\": 2}",
                 "[only the first 2 shown");
        CHECK_OK(&tool_grep, "{\"pattern\": \"zzz\", \"path\": \"src\"}", "no matches for zzz");
        CHECK_ERR(&tool_grep, "{\"pattern\": \"(\"}", "grep:");
        CHECK_ERR(&tool_grep, "{\"pattern\": \"x\", \"output_mode\": \"lines\"}",
                  "input.output_mode: must be one of \"content\", \"files_with_matches\", \"count\"");
        CHECK_ERR(&tool_grep, "{\"pattern\": \"x\", \"glob\": \"src/*.py\"}", "cannot hold a /");
        CHECK_ERR(&tool_grep, "{\"pattern\": \"root\", \"path\": \"/etc\"}", "is outside /workspace");
}

/* sheath §8.1 through every tool that takes a path: the same refusal whatever is on the host. */
static void test_jail(void) {
        CHECK_OK(&tool_bash,
                 "{\"command\": \"ln -s /etc link && ln -s /nonexistent-hull deadlink && echo s > "
                 "inside.txt && ln -s inside.txt inlink\"}",
                 "[exit code 0]");
        static const char *const escapes[] = {"../escape.txt", "sub/../../escape.txt", "/etc/passwd",
                                              "/workspace/../etc/passwd", "/etc/nonexistent-hull-file"};
        char in[512];
        for (size_t i = 0; i < ELEMENTSOF(escapes); i++) {
                snprintf(in, sizeof(in), "{\"file_path\": \"%s\"}", escapes[i]);
                CHECK_ERR(&tool_read, in, "is outside /workspace");
                snprintf(in, sizeof(in), "{\"file_path\": \"%s\", \"content\": \"x\"}", escapes[i]);
                CHECK_ERR(&tool_write, in, "is outside /workspace");
                snprintf(in, sizeof(in), "{\"file_path\": \"%s\", \"old_string\": \"a\", \"new_string\": \"b\"}",
                         escapes[i]);
                CHECK_ERR(&tool_edit, in, "is outside /workspace");
                snprintf(in, sizeof(in), "{\"path\": \"%s\"}", escapes[i]);
                CHECK_ERR(&tool_publish_file, in, "is outside /workspace");
        }
        /* an existing and a missing file outside read the same but for the name */
        bool err;
        char *a = strdup(call(&tool_read, "{\"file_path\": \"/etc/passwd\"}", &err));
        const char *b = call(&tool_read, "{\"file_path\": \"/etc/passwx\"}", &err);
        CHECK(a && b && strlen(a) == strlen(b) && strncmp(a, b, strlen("workspace: path '/etc/passw")) == 0);
        free(a);
        /* links: never followed, whether the target exists or not, even to a file inside */
        CHECK_ERR(&tool_read, "{\"file_path\": \"link/passwd\"}", "goes through a symbolic link");
        CHECK_ERR(&tool_read, "{\"file_path\": \"deadlink/x\"}", "goes through a symbolic link");
        CHECK_ERR(&tool_read, "{\"file_path\": \"inlink\"}", "goes through a symbolic link");
        CHECK_ERR(&tool_write, "{\"file_path\": \"link/x\", \"content\": \"x\"}", "symbolic link");
        CHECK_ERR(&tool_edit, "{\"file_path\": \"link/passwd\", \"old_string\": \"root\", \"new_string\": \"x\"}",
                  "symbolic link");
        CHECK_ERR(&tool_grep, "{\"pattern\": \"root\", \"path\": \"link\"}", "symbolic link");
        /* empty and blank */
        CHECK_ERR(&tool_read, "{\"file_path\": \"\"}", "empty path");
        CHECK_ERR(&tool_read, "{\"file_path\": \"   \"}", "blank path");
        /* allowed forms: relative, absolute under /workspace, a '..' that stays inside, the root */
        CHECK_OK(&tool_read, "{\"file_path\": \"inside.txt\"}", "\ts\n");
        CHECK_OK(&tool_read, "{\"file_path\": \"/workspace/inside.txt\"}", "\ts\n");
        CHECK_OK(&tool_read, "{\"file_path\": \"sub/../inside.txt\"}", "\ts\n");
        CHECK_OK(&tool_glob, "{\"pattern\": \"inside.*\", \"path\": \".\"}", "/workspace/inside.txt");
        /* the write through a planted link replaced the link, not its target: /etc is untouched */
        CHECK(access("/etc/x", F_OK) != 0);
}

static void test_handles(void) {
        hull_error e = {0};
        json_t *sum = NULL, *rec = NULL;
        const char *csv = "region,amount\neu,10\nus,20\neu,5\nasia,7\n";
        CHECK_EQ_INT(ss_call_begin(M, S, -1, &e), 0);
        CHECK_EQ_INT(ss_handles_add_input(M, S, "sales", "sales.csv", HD_FORMAT_CSV, csv, strlen(csv), &sum, &rec, &e),
                     0);
        json_decref(sum);
        json_decref(rec);
        sum = rec = NULL;
        CHECK_EQ_INT(ss_handles_add_input(M, S, "my-data", "m.csv", HD_FORMAT_CSV, "k,v\na,1\n", 8, &sum, &rec, &e), 0);
        json_decref(sum);
        json_decref(rec);
        sum = NULL;
        CHECK_EQ_INT(ss_handles_spill(M, S, HD_FORMAT_TEXT, "notes", "line one\nline two\n", 18, &sum, &e), 0);
        char text_id[HD_ID_MAX + 1];
        snprintf(text_id, sizeof(text_id), "%s", json_string_value(json_object_get(sum, "id")));
        json_decref(sum);
        ss_call_end(M, S);

        CHECK_OK(&tool_inspect_handle, "{\"handle_id\": \"sales\", \"rows\": 2, \"stats\": true}", "\"stats\"");
        CHECK_OK(&tool_inspect_handle, "{\"handle_id\": \"sales\", \"rows\": 2}", "\"head\":[[\"eu\",10],[\"us\",20]]");
        CHECK_ERR(&tool_inspect_handle, "{\"handle_id\": \"salse\"}", "there is no handle salse; the handles are: ");
        CHECK_ERR(&tool_inspect_handle, "{\"handle_id\": \"salse\"}", "sales");
        CHECK_ERR(&tool_inspect_handle, "{\"handle_id\": \"sales\", \"rows\": 101}", "must be <= 100");
        /* query_handle: by id, as a model writes it; the schema form; a quoted id; case */
        CHECK_OK(&tool_query_handle, "{\"sql\": \"SELECT region, sum(amount) FROM sales GROUP BY 1 ORDER BY 2 DESC\"}",
                 "\"rows\":[[\"us\",20],[\"eu\",15],[\"asia\",7]]");
        CHECK_OK(&tool_query_handle, "{\"sql\": \"SELECT count(*) AS n FROM sales.data\"}", "\"rows\":[[4]]");
        CHECK_OK(&tool_query_handle, "{\"sql\": \"select count(*) from SALES s join \\\"my-data\\\" m on 1\"}",
                 "\"rows\":[[4]]");
        CHECK_OK(&tool_query_handle, "{\"sql\": \"SELECT 'sales' AS s -- not a table here\\n FROM \\\"my-data\\\"\"}",
                 "\"rows\":[[\"sales\"]]");
        CHECK_ERR(&tool_query_handle, "{\"sql\": \"SELECT * FROM salse\"}", "no such table: salse");
        CHECK_ERR(&tool_query_handle, "{\"sql\": \"SELECT * FROM salse\"}",
                  "the table handles are: squares, sales, my-data");
        CHECK_ERR(&tool_query_handle, "{\"sql\": \"DELETE FROM sales\"}", "query_handle:");
        json_t *h = NULL;
        char *text = NULL;
        bool err = true;
        call_full(&tool_query_handle,
                  "{\"sql\": \"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500) SELECT i, "
                  "i * i AS sq FROM c\"}",
                  0, &text, &err, &h);
        CHECK(!err && has(text, "The result has 500 rows: it was kept as the table handle"));
        CHECK_EQ_INT(json_array_size(h), 1);
        free(text);
        json_decref(h);
        /* read_handle */
        char in[256];
        snprintf(in, sizeof(in), "{\"handle_id\": \"%s\"}", text_id);
        CHECK_OK(&tool_read_handle, in, "line one\nline two\n");
        snprintf(in, sizeof(in), "{\"handle_id\": \"%s\", \"offset\": 5, \"limit\": 3}", text_id);
        CHECK_OK(&tool_read_handle, in, "one\n[bytes 5-8 of 18: continue with offset=8]");
        CHECK_ERR(&tool_read_handle, "{\"handle_id\": \"sales\"}", "is a table: use query_handle");
        CHECK_ERR(&tool_read_handle, "{\"handle_id\": \"nope\"}", "there is no handle nope");
        /* publish_file */
        CHECK_OK(&tool_write, "{\"file_path\": \"outputs/report.csv\", \"content\": \"n,sq\\n1,1\\n\"}", "wrote");
        call_full(&tool_publish_file,
                  "{\"path\": \"/workspace/outputs/report.csv\", \"name\": \"../../Squares\\u202e.csv\", "
                  "\"description\": \"the squares\"}",
                  0, &text, &err, &h);
        CHECK(!err && has(text, "published outputs/report.csv as Squares.csv: the squares (9 bytes, handle h"));
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(h, 0), "kind")), "binary");
        free(text);
        json_decref(h);
        CHECK_ERR(&tool_publish_file, "{\"path\": \"data.csv\"}", "is not a file under outputs/");
        CHECK_ERR(&tool_publish_file, "{\"path\": \"outputs/none.csv\"}", "/workspace/outputs/none.csv does not exist");
        CHECK_OK(&tool_bash, "{\"command\": \"ln -s /etc/passwd outputs/pw; mkfifo outputs/fifo\"}", "[exit code 0]");
        CHECK_ERR(&tool_publish_file, "{\"path\": \"outputs/pw\"}", "symbolic link");
        CHECK_ERR(&tool_publish_file, "{\"path\": \"outputs/fifo\"}", "not a regular file");
}

/* A NULL-terminated list as "a, b, c". */
static void join(const char *const *v, char *buf, size_t size) {
        size_t o = 0;
        buf[0] = '\0';
        for (size_t i = 0; v[i] && o < size; i++)
                o += (size_t) snprintf(buf + o, size - o, "%s%s", i ? ", " : "", v[i]);
}

/* The catalog (tool-catalog.h): the toolsets, the read-only tools, what hull mcp offers. */
static void test_catalog(void) {
        const char *names[TOOL_CATALOG_MAX + 1];
        char list[512];
        CHECK_EQ_INT(tool_catalog_toolset_names(TOOL_TOOLSET_AGENT, names), 8);
        join(names, list, sizeof(list));
        CHECK_EQ_STR(list, "bash, edit, read, write, glob, grep, web_fetch, web_search");
        CHECK_EQ_INT(tool_catalog_toolset_names(TOOL_TOOLSET_HULL, names), 6);
        join(names, list, sizeof(list));
        CHECK_EQ_STR(list, "run_python, inspect_handle, query_handle, read_handle, publish_file, read_document");
        CHECK_EQ_STR(tool_toolset_to_string(TOOL_TOOLSET_AGENT), "agent_toolset_20260401");
        CHECK_EQ_INT(tool_toolset_from_string("hull_toolset_20261201"), TOOL_TOOLSET_HULL);
        CHECK_EQ_INT(tool_toolset_from_string("mcp_toolset"), -EINVAL);
        CHECK(tool_toolset_to_string(TOOL_TOOLSET_NONE) == NULL);

        const char *const read_only[] = {"read",           "glob",         "grep",       "web_search",
                                         "inspect_handle", "query_handle", "read_handle"};
        size_t n_read_only = 0;
        for (size_t i = 0; i < tool_catalog_count(); i++)
                n_read_only += tool_catalog_at(i)->read_only;
        CHECK_EQ_INT(n_read_only, ELEMENTSOF(read_only));
        for (size_t i = 0; i < ELEMENTSOF(read_only); i++)
                TEST_RESULT(tool_catalog_is_read_only(read_only[i]), "%s only reads", read_only[i]);
        CHECK(!tool_catalog_is_read_only("bash") && !tool_catalog_is_read_only("web_fetch") &&
              !tool_catalog_is_read_only("nope") && !tool_catalog_is_read_only(NULL));

        CHECK(tool_catalog_find("web_fetch") && !tool_catalog_def("web_fetch"));
        CHECK(tool_catalog_def("run_javascript") == &tool_run_javascript);
        CHECK(tool_catalog_find("nope") == NULL && tool_catalog_at(tool_catalog_count()) == NULL);
        CHECK(tools_sandbox_find("run_javascript") == NULL);

        const tool_def *offer[MCP_OFFER_MAX];
        const char *offer_names[MCP_OFFER_MAX + 1];
        size_t n = tool_catalog_mcp_offer(false, offer);
        for (size_t i = 0; i < n; i++)
                offer_names[i] = offer[i]->name;
        offer_names[n] = NULL;
        join(offer_names, list, sizeof(list));
        CHECK_EQ_STR(list,
                     "run_python, bash, read, write, edit, glob, grep, inspect_handle, query_handle, read_document");
        CHECK_EQ_INT(tool_catalog_mcp_offer(true, offer), 11);
        CHECK(offer[10] == &tool_run_javascript && offer[0] == &tool_run_python && offer[9] == &tool_read_document);

        /* every definition's schema, run_javascript's too */
        for (size_t i = 0; i < tool_catalog_count(); i++) {
                const tool_def *d = tool_catalog_def(tool_catalog_at(i)->name);
                if (!d)
                        continue;
                json_t *s = json_loads(d->input_schema, 0, NULL);
                hull_error e = {0};
                TEST_RESULT(s && schema_check(s, &e) == 0 &&
                                    strcmp(json_string_value(json_object_get(s, "type")), "object") == 0,
                            "%s's schema is a valid object schema (%s)", d->name, e.msg);
                CHECK_EQ_STR(d->name, tool_catalog_at(i)->name);
                json_decref(s);
        }
}

int main(void) {
        CHECK(tools_sandbox_find("bash") == &tool_bash);
        CHECK(tools_sandbox_find("query_handle") == &tool_query_handle);
        CHECK(tools_sandbox_find("web_fetch") == NULL);
        const tool_def *sandbox[TOOL_CATALOG_MAX];
        size_t n_sandbox = tool_catalog_sandbox_defs(sandbox);
        size_t n = 0;
        for (; n < n_sandbox; n++) {
                json_t *s = json_loads(sandbox[n]->input_schema, 0, NULL);
                hull_error e = {0};
                TEST_RESULT(s && schema_check(s, &e) == 0 &&
                                    strcmp(json_string_value(json_object_get(s, "type")), "object") == 0,
                            "%s's schema is a valid object schema (%s)", sandbox[n]->name, e.msg);
                TEST_RESULT(tools_sandbox_find(sandbox[n]->name) == sandbox[n], "%s is found by its name",
                            sandbox[n]->name);
                json_decref(s);
        }
        CHECK_EQ_INT(n, 12);
        CHECK_EQ_INT(n_sandbox, n);
        test_catalog();
        if (geteuid() != 0 || access("/usr/bin/python3", X_OK) < 0) {
                printf("skip - the tools run in real sandboxes: they need root and /usr/bin/python3\n");
                test_done();
                return 77;
        }
        signal(SIGPIPE, SIG_IGN);
        alarm(600);
        atomic_init(&never, false);
        char tmp[64], handles[128];
        snprintf(tmp, sizeof(tmp), "/tmp/hull-test-tools.XXXXXX");
        if (!mkdtemp(tmp) || chmod(tmp, 0711) < 0)
                return 1;
        snprintf(handles, sizeof(handles), "%s/handles", tmp);
        mkdir(handles, 0711);
        ss_config cfg = {.box = ss_box_local(false),
                         .zygote_fd = -1,
                         .max_sessions = 1,
                         .max_per_owner = 1,
                         .lifetime_ms = 600000,
                         .idle_ms = 600000,
                         .memory_bytes = 512ULL << 20,
                         .pids = 256,
                         .tmp_bytes = 64ULL << 20,
                         .handles_dir = handles,
                         .provider = "hull",
                         .isolation = "container",
                         .no_reaper = true};
        hull_error e = {0};
        ss_open_opts o = {.principal = "tools"};
        if (ss_new(&cfg, &M, &e) < 0 || ss_open(M, &o, &S, &e) < 0) {
                printf("not ok - no session: %s\n", e.msg);
                return 1;
        }
        test_bash();
        test_python();
        test_files();
        test_jail();
        test_handles();
        free(last_text);
        ss_unref(M, S);
        ss_shutdown(M, 1000);
        ss_free(M);
        (void) rm_rf_at(AT_FDCWD, tmp);
        return test_done();
}
