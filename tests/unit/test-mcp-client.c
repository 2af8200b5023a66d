/* test-mcp-client.c: the MCP stdio client and its tools as agent tools.
 *
 * Against tests/unit/data/mcp-fake-server.py (always): initialize and version negotiation,
 * tools/list over three pages, the server's ping answered and its other requests refused,
 * progress and log messages, cancellation (notifications/cancelled sent, the late answer
 * ignored), a deadline; and servers that fail: one that cannot start, exits at start, writes
 * garbage, never answers, writes an oversized line (each a clear error well within its deadline,
 * nothing left running); misbehaving HTTP endpoints (tests/unit/data/mcp-fake-http.py: an event
 * stream or a JSON answer that is not JSON-RPC, one that never answers, a 401). Results to tool
 * outputs (text, structured content, an image as a binary to keep, resource links and embedded
 * resources, isError).
 *
 * Against @modelcontextprotocol/server-everything over stdio when MCP_EVERYTHING names its
 * binary (tests/integration/test-mcp-client.sh installs it from tests/conformance's lockfile and
 * runs this with it): list, echo, get-sum, trigger-long-running-operation with progress notes
 * through the tool's context, get-tiny-image as a binary, cancellation and a deadline mid-call,
 * a big result (get-env with a big variable) handed on as text for the spill middleware; and its
 * streamableHttp mode on loopback (session, get-sum, progress on the POST's event stream, a
 * cancellation, a refused connection, a wrong endpoint). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <unistd.h>

#include "limits.h"
#include "mcp-client.h"
#include "mcp-tools.h"
#include "test.h"
#include "time-util.h"
#include "utf8.h"

#define FAKE TEST_DATA_DIR "/mcp-fake-server.py"

static int spawn(const char *name, const char *const *argv, uint64_t init_ms, mcp_client **ret, hull_error *e) {
        mcp_stdio_config cfg = {.name = name, .argv = argv, .init_timeout_ms = init_ms};
        *e = (hull_error){0};
        return mcp_client_spawn(&cfg, ret, e);
}

/* The text of a CallToolResult's first block. */
static const char *first_text(const json_t *res) {
        return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
}

typedef struct seen {
        unsigned progress, messages;
        double last, total;
        char note[256];
        char level[32];
} seen;

static void on_progress(void *ud, double progress, double total, const char *message) {
        seen *s = ud;
        s->progress++;
        s->last = progress;
        s->total = total;
}

static void on_message(void *ud, const char *server, const char *level, const char *logger, const json_t *data) {
        seen *s = ud;
        s->messages++;
        snprintf(s->level, sizeof(s->level), "%s", level);
}

static void tool_note(void *ud, const char *note) {
        seen *s = ud;
        s->progress++;
        snprintf(s->note, sizeof(s->note), "%s", note);
}

/* Make fd readable after ms (a thread), as the agent's watcher does on an interrupt. */
typedef struct later {
        int fd;
        unsigned ms;
        pthread_t t;
} later;

static void *later_main(void *ud) {
        later *l = ud;
        usleep(l->ms * 1000);
        (void) !write(l->fd, "x", 1);
        return NULL;
}

static int later_start(later *l, unsigned ms, int ret_fds[2]) {
        if (pipe(ret_fds) < 0)
                return -errno;
        l->fd = ret_fds[1];
        l->ms = ms;
        return -pthread_create(&l->t, NULL, later_main, l);
}

/* Set a flag after ms (a thread), as a signal handler or user.interrupt does. */
typedef struct flag_later {
        atomic_bool *flag;
        unsigned ms;
        pthread_t t;
} flag_later;

static void *flag_later_main(void *ud) {
        flag_later *l = ud;
        usleep(l->ms * 1000);
        atomic_store(l->flag, true);
        return NULL;
}

/* ---- against the fake server ---- */

static void test_fake_protocol(void) {
        const char *argv[] = {"python3", FAKE, "ok", NULL};
        mcp_client *c = NULL;
        hull_error e;
        seen s = {0};
        int r = spawn("fake", argv, 0, &c, &e);
        TEST_RESULT(r == 0, "the fake server starts and initializes (%d %s)", r, e.msg);
        if (r < 0)
                return;
        CHECK_EQ_STR(mcp_client_protocol_version(c), "2025-11-25");
        CHECK_EQ_STR(mcp_client_instructions(c), "be nice");
        CHECK_EQ_STR(json_string_value(json_object_get(mcp_client_server_info(c), "name")), "fake");
        mcp_client_on_message(c, on_message, &s);

        json_t *tools = NULL;
        r = mcp_client_list_tools(c, NULL, &tools, &e);
        TEST_RESULT(r == 0 && json_array_size(tools) == 7, "tools/list follows the cursors over 3 pages (%d, %zu: %s)",
                    r, json_array_size(tools), e.msg);
        json_decref(tools);

        json_t *args = json_pack("{s:s}", "message", "hi there"), *res = NULL;
        r = mcp_client_call_tool(c, "echo", args, NULL, &res, &e);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_STR(first_text(res), "Echo: hi there");
        json_decref(res);

        r = mcp_client_call_tool(c, "pinger", NULL, NULL, &res, &e);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_STR(first_text(res), "pong answered");
        json_decref(res);

        r = mcp_client_call_tool(c, "sampling", NULL, NULL, &res, &e);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_STR(first_text(res), "sampling answered with error -32601");
        json_decref(res);

        mcp_call_opts o = {.cancel_fd = -1, .progress = on_progress, .progress_ud = &s};
        r = mcp_client_call_tool(c, "chatty", NULL, &o, &res, &e);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_STR(first_text(res), "chatty done");
        json_decref(res);
        TEST_RESULT(s.progress == 3 && s.last == 3 && s.total == 3,
                    "the call's 3 progress notifications reach the caller, another token's do not (%u)", s.progress);
        TEST_RESULT(s.messages == 1 && strcmp(s.level, "warning") == 0, "the log message reaches the callback (%u %s)",
                    s.messages, s.level);

        /* a deadline: the call gives up, says so, and the server is told */
        uint64_t t0 = now_mono_ms();
        mcp_call_opts late = {.deadline_mono_ms = t0 + 500, .cancel_fd = -1};
        r = mcp_client_call_tool(c, "hang", NULL, &late, &res, &e);
        TEST_RESULT(r == -ETIMEDOUT && strstr(e.msg, "tools/call hang: no answer in time"),
                    "a call past its deadline is -ETIMEDOUT (%d %s)", r, e.msg);
        /* cancellation: the fd becomes readable while the call waits */
        int fds[2];
        later l;
        CHECK_EQ_INT(later_start(&l, 300, fds), 0);
        mcp_call_opts cancel = {.cancel_fd = fds[0]};
        r = mcp_client_call_tool(c, "hang", NULL, &cancel, &res, &e);
        pthread_join(l.t, NULL);
        close(fds[0]);
        close(fds[1]);
        TEST_RESULT(r == -ECANCELED && strstr(e.msg, "cancelled"), "a cancelled call is -ECANCELED (%d %s)", r, e.msg);
        r = mcp_client_call_tool(c, "last-cancelled", NULL, NULL, &res, &e);
        CHECK_EQ_INT(r, 0);
        /* ids: 0 initialize, 1-3 tools/list, 4 echo, 5 pinger, 6 sampling, 7 chatty, 8 and 9 hang */
        TEST_RESULT(r == 0 && strcmp(first_text(res), "9") == 0,
                    "the server got notifications/cancelled for the cancelled request (%s)",
                    r == 0 ? first_text(res) : "");
        json_decref(res);
        TEST_RESULT(mcp_client_alive(c, NULL), "the connection survives a timeout and a cancellation");

        /* a tool the server does not know: an isError result, not a failure */
        r = mcp_client_call_tool(c, "nope", NULL, NULL, &res, &e);
        TEST_RESULT(r == 0 && json_is_true(json_object_get(res, "isError")), "an unknown tool is an isError result");
        json_decref(res);
        /* a method the server does not know: a JSON-RPC error */
        r = mcp_client_request(c, "resources/list", NULL, NULL, &res, &e);
        TEST_RESULT(r == -EREMOTEIO && strstr(e.msg, "error -32601: Method not found"), "a JSON-RPC error (%d %s)", r,
                    e.msg);
        json_decref(args);

        /* the tools as agent tools */
        mcp_toolset *ts = NULL;
        r = mcp_toolset_new(&c, 1, NULL, &ts, &e);
        TEST_RESULT(r == 0 && mcp_toolset_count(ts) == 7, "the toolset has the 7 tools (%d %s)", r, e.msg);
        if (r == 0) {
                const tool_def *d = mcp_toolset_def(ts, 0);
                CHECK_EQ_STR(d->name, "fake__echo");
                CHECK(strstr(d->input_schema, "$schema") == NULL && strstr(d->input_schema, "\"required\""));
                CHECK(strstr(d->description, "[MCP server fake] Echoes") == d->description);
                CHECK_EQ_STR(mcp_toolset_def(ts, 6)->name, "fake__odd_name_with_chars");
                const char *long_desc = mcp_toolset_def(ts, 1)->description;
                TEST_RESULT(strlen(long_desc) <= MCP_TOOL_DESCRIPTION_MAX + 64 &&
                                    utf8_is_valid(long_desc, strlen(long_desc)),
                            "a long description is cut at a character's end (%zu bytes)", strlen(long_desc));
                seen ns = {0};
                tool_ctx ctx = {.cancel_fd = -1,
                                .deadline_mono_ms = now_mono_ms() + 30000,
                                .progress = tool_note,
                                .progress_ud = &ns,
                                .env = mcp_toolset_def(ts, 2)->env};
                tool_output out = {0};
                r = mcp_toolset_def(ts, 2)->run(&ctx, NULL, &out, &e);
                TEST_RESULT(r == 0 && out.text && strcmp(out.text, "chatty done") == 0,
                            "a tool call through the toolset (%d %s)", r, e.msg);
                TEST_RESULT(ns.progress == 3 && strcmp(ns.note, "mcp:fake: 3/3") == 0,
                            "progress becomes the call's notes, tagged mcp:SERVER (%u, \"%s\")", ns.progress, ns.note);
                tool_output_done(&out);
        }
        mcp_toolset_free(ts);
        mcp_client_free(c);
}

static void test_fake_versions(void) {
        mcp_client *c = NULL;
        hull_error e;
        const char *bad[] = {"python3", FAKE, "badversion", NULL};
        int r = spawn("old", bad, 0, &c, &e);
        TEST_RESULT(r == -EPROTO && strstr(e.msg, "mcp: old: the server answered initialize with protocol version "
                                                  "'1999-01-01'"),
                    "an unknown protocol version is refused (%d %s)", r, e.msg);
        const char *err[] = {"python3", FAKE, "initerror", NULL};
        r = spawn("refuses", err, 0, &c, &e);
        TEST_RESULT(r == -EREMOTEIO && strstr(e.msg, "initialize: error -32602: Unsupported protocol version"),
                    "an initialize refused (%d %s)", r, e.msg);
}

/* A failing server: the error, its message, and the time it took (well within the deadline). */
static void failing(const char *what, const char *const *argv, uint64_t init_ms, int want, const char *says) {
        mcp_client *c = NULL;
        hull_error e;
        uint64_t t0 = now_mono_ms();
        int r = spawn("bad", argv, init_ms, &c, &e);
        uint64_t took = now_mono_ms() - t0;
        TEST_RESULT(r == want && strstr(e.msg, says), "%s: %d \"%s\" in %llu ms (want %d, \"%s\")", what, r, e.msg,
                    (unsigned long long) took, want, says);
        if (r == 0)
                mcp_client_free(c);
}

static void test_failures(void) {
        const char *missing[] = {"hull-no-such-mcp-server", NULL};
        failing("a command that does not exist", missing, 0, -ENOENT,
                "mcp: bad: cannot start 'hull-no-such-mcp-server': No such file or directory");
        const char *exits[] = {"sh", "-c", "echo 'fatal: no config given' >&2; exit 3", NULL};
        failing("a server that exits at start", exits, 0, -EPIPE,
                "the server exited with status 3 while hull waited for initialize; its stderr ended with: fatal: no "
                "config given");
        const char *garbage[] = {"sh", "-c", "read line; echo 'Server listening, hello!'; exec sleep 30", NULL};
        failing("a server that writes garbage", garbage, 0, -EPROTO,
                "not a JSON-RPC message on its stdout (message is not valid JSON");
        const char *silent[] = {"sh", "-c", "exec sleep 30", NULL};
        failing("a server that never answers", silent, 1500, -ETIMEDOUT,
                "the server did not answer initialize within 1500 ms");
        const char *big[] = {
                "python3", "-c",
                "import sys,time; sys.stdin.readline(); sys.stdout.write('{\"jsonrpc\":\"2.0\",\"x\":\"' + "
                "'x' * (11 << 20)); sys.stdout.flush(); time.sleep(30)",
                NULL};
        failing("a server that writes an oversized message", big, 0, -E2BIG, "a message over 10485760 bytes");
        /* an interrupt cuts the initialize wait (the deadline is a minute away) */
        atomic_bool stop = false;
        flag_later fl = {.flag = &stop, .ms = 500};
        mcp_stdio_config cfg = {.name = "slow", .argv = silent, .init_timeout_ms = 60000, .cancel = &stop};
        mcp_client *c = NULL;
        hull_error e = {0};
        CHECK_EQ_INT(pthread_create(&fl.t, NULL, flag_later_main, &fl), 0);
        uint64_t t0 = now_mono_ms();
        int r = mcp_client_spawn(&cfg, &c, &e);
        uint64_t took = now_mono_ms() - t0;
        pthread_join(fl.t, NULL);
        TEST_RESULT(r == -ECANCELED && !c && strstr(e.msg, "mcp: slow: initialize was interrupted") && took < 20000,
                    "an interrupt ends a stdio initialize that is not answered (%d \"%s\" in %llu ms)", r, e.msg,
                    (unsigned long long) took);
        /* set before the start: nothing waits */
        r = mcp_client_spawn(&cfg, &c, &e);
        TEST_RESULT(r == -ECANCELED && !c, "an interrupt already set: the start gives up at once (%d %s)", r, e.msg);
        /* the sleepers above were ended: nothing of theirs is left (free waits for them) */
        FILE *p = popen("pgrep -f '[e]xec sleep 30|[t]ime.sleep\\(30\\)' | wc -l", "r");
        char n[16] = "";
        if (p) {
                if (!fgets(n, sizeof(n), p))
                        n[0] = '\0';
                pclose(p);
        }
        TEST_RESULT(atoi(n) == 0, "no failed server is left running (%d)", atoi(n));
}

static void test_results(void) {
        tool_output o = {0};
        json_t *r = json_loads("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"resource_link\",\"uri\":"
                               "\"demo://x/1\",\"name\":\"One\",\"mimeType\":\"text/plain\"},{\"type\":\"resource\","
                               "\"resource\":{\"uri\":\"demo://t\",\"text\":\"inner\"}}]}",
                               0, NULL);
        CHECK_EQ_INT(mcp_result_to_output(r, "mcp:x/y", &o), 0);
        CHECK(o.text &&
              strcmp(o.text, "a\n[resource link: One <demo://x/1> text/plain]\n[resource <demo://t>]\ninner") == 0);
        CHECK(!o.is_error && !o.value && !o.spill_data);
        tool_output_done(&o);
        json_decref(r);

        /* structured content whose text is its JSON: the value */
        r = json_loads(
                "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"t\\\": 3}\"}],\"structuredContent\":{\"t\":3}}", 0,
                NULL);
        CHECK_EQ_INT(mcp_result_to_output(r, "mcp:x/y", &o), 0);
        CHECK(o.value && json_integer_value(json_object_get(o.value, "t")) == 3 && !o.text);
        /* its bytes kept beside it: a big one is stored from them, not serialized again */
        CHECK(o.value_json && o.value_json_len == 8 && memcmp(o.value_json, "{\"t\": 3}", 8) == 0);
        tool_output_done(&o);
        json_decref(r);
        /* ... and whose text says more: the text */
        r = json_loads("{\"content\":[{\"type\":\"text\",\"text\":\"alpha\\n\"}],\"structuredContent\":{\"content\":"
                       "\"alpha\\n\"}}",
                       0, NULL);
        CHECK_EQ_INT(mcp_result_to_output(r, "mcp:x/y", &o), 0);
        CHECK(o.text && strcmp(o.text, "alpha\n") == 0 && !o.value);
        tool_output_done(&o);
        json_decref(r);

        /* images: the first kept as binary, a second named */
        r = json_loads("{\"isError\":true,\"content\":[{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":"
                       "\"image/png\"},{\"type\":\"audio\",\"data\":\"AAAA\",\"mimeType\":\"audio/wav\"}]}",
                       0, NULL);
        CHECK_EQ_INT(mcp_result_to_output(r, "mcp:x/y", &o), 0);
        CHECK(o.is_error && o.spill_len == 8 && memcmp(o.spill_data, "\x89PNG\r\n\x1a\n", 8) == 0);
        CHECK_EQ_STR(o.spill_format, "binary");
        CHECK_EQ_STR(o.spill_source, "mcp:x/y");
        const char *t = json_string_value(json_object_get(o.value, "text"));
        CHECK(t && strstr(t, "[image image/png, 8 bytes: kept as the handle below]") &&
              strstr(t, "[audio audio/wav, 3 bytes: not kept"));
        tool_output_done(&o);
        json_decref(r);

        /* nothing */
        r = json_loads("{\"content\":[]}", 0, NULL);
        CHECK_EQ_INT(mcp_result_to_output(r, "mcp:x/y", &o), 0);
        CHECK_EQ_STR(o.text, "(no output)");
        tool_output_done(&o);
        json_decref(r);

        char name[65];
        mcp_tool_name("everything", "get-sum", name);
        CHECK_EQ_STR(name, "everything__get-sum");
        mcp_tool_name("s", "a.b c", name);
        CHECK_EQ_STR(name, "s__a_b_c");
        char longname[200];
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        mcp_tool_name("srv", longname, name);
        char other[65];
        longname[150] = 'y';
        mcp_tool_name("srv", longname, other);
        TEST_RESULT(strlen(name) == 64 && strlen(other) == 64 && strcmp(name, other) != 0,
                    "long names are cut to 64 and stay apart (%s, %s)", name, other);
}

/* ---- against server-everything ---- */

static void test_everything(const char *ev) {
        const char *argv[] = {ev, "stdio", NULL};
        mcp_client *c = NULL;
        hull_error e;
        int r = spawn("everything", argv, 0, &c, &e);
        TEST_RESULT(r == 0, "server-everything starts and initializes (%d %s)", r, e.msg);
        if (r < 0)
                return;
        CHECK_EQ_STR(mcp_client_protocol_version(c), "2025-11-25");
        CHECK_EQ_STR(json_string_value(json_object_get(mcp_client_server_info(c), "name")), "mcp-servers/everything");

        mcp_toolset *ts = NULL;
        r = mcp_toolset_new(&c, 1, NULL, &ts, &e);
        TEST_RESULT(r == 0 && mcp_toolset_count(ts) >= 12, "its tools are listed (%d, %zu tools: %s)", r,
                    mcp_toolset_count(ts), e.msg);
        const tool_def *echo = NULL, *sum = NULL, *longop = NULL, *image = NULL, *env = NULL;
        for (size_t i = 0; i < mcp_toolset_count(ts); i++) {
                const tool_def *d = mcp_toolset_def(ts, i);
                if (strcmp(d->name, "everything__echo") == 0)
                        echo = d;
                else if (strcmp(d->name, "everything__get-sum") == 0)
                        sum = d;
                else if (strcmp(d->name, "everything__trigger-long-running-operation") == 0)
                        longop = d;
                else if (strcmp(d->name, "everything__get-tiny-image") == 0)
                        image = d;
                else if (strcmp(d->name, "everything__get-env") == 0)
                        env = d;
        }
        CHECK(echo && sum && longop && image && env);
        if (!echo || !sum || !longop || !image || !env) {
                mcp_toolset_free(ts);
                mcp_client_free(c);
                return;
        }
        seen s = {0};
        tool_ctx ctx = {.cancel_fd = -1, .progress = tool_note, .progress_ud = &s};
        tool_output out = {0};
        json_t *in = json_pack("{s:s}", "message", "hello");
        ctx.deadline_mono_ms = now_mono_ms() + 60000;
        ctx.env = echo->env;
        r = echo->run(&ctx, in, &out, &e);
        TEST_RESULT(r == 0 && out.text && strcmp(out.text, "Echo: hello") == 0, "echo (%d %s)", r,
                    out.text ? out.text : e.msg);
        tool_output_done(&out);
        json_decref(in);

        in = json_pack("{s:i, s:i}", "a", 2, "b", 3);
        ctx.env = sum->env;
        r = sum->run(&ctx, in, &out, &e);
        TEST_RESULT(r == 0 && out.text && strcmp(out.text, "The sum of 2 and 3 is 5.") == 0, "get-sum (%d %s)", r,
                    out.text ? out.text : e.msg);
        tool_output_done(&out);
        json_decref(in);

        in = json_pack("{s:i, s:i}", "duration", 2, "steps", 4);
        ctx.env = longop->env;
        r = longop->run(&ctx, in, &out, &e);
        TEST_RESULT(r == 0 && out.text && strstr(out.text, "Long running operation completed"),
                    "trigger-long-running-operation (%d %s)", r, out.text ? out.text : e.msg);
        TEST_RESULT(s.progress == 4 && strcmp(s.note, "mcp:everything: 4/4") == 0,
                    "its 4 progress notifications become notes (%u, \"%s\")", s.progress, s.note);
        tool_output_done(&out);
        json_decref(in);

        ctx.env = image->env;
        r = image->run(&ctx, NULL, &out, &e);
        TEST_RESULT(r == 0 && out.spill_data && out.spill_len > 100 && memcmp(out.spill_data, "\x89PNG", 4) == 0,
                    "get-tiny-image: the PNG handed on to be kept (%d, %zu bytes)", r, out.spill_len);
        tool_output_done(&out);

        /* a cancellation mid-call (the agent's watcher writes its fd on an interrupt) */
        int fds[2];
        later l;
        in = json_pack("{s:i, s:i}", "duration", 10, "steps", 10);
        CHECK_EQ_INT(later_start(&l, 1500, fds), 0);
        ctx.cancel_fd = fds[0];
        ctx.env = longop->env;
        uint64_t t0 = now_mono_ms();
        r = longop->run(&ctx, in, &out, &e);
        uint64_t took = now_mono_ms() - t0;
        pthread_join(l.t, NULL);
        close(fds[0]);
        close(fds[1]);
        ctx.cancel_fd = -1;
        TEST_RESULT(r == -ECANCELED && took < 8000, "a cancelled long operation ends at once (%d %s, %llu ms)", r,
                    e.msg, (unsigned long long) took);
        /* and a deadline mid-call */
        ctx.deadline_mono_ms = now_mono_ms() + 1000;
        r = longop->run(&ctx, in, &out, &e);
        TEST_RESULT(r == -ETIMEDOUT, "a long operation past its deadline is -ETIMEDOUT (%d %s)", r, e.msg);
        json_decref(in);
        /* the connection still works (stray progress of the abandoned calls is dropped) */
        in = json_pack("{s:s}", "message", "still here");
        ctx.deadline_mono_ms = now_mono_ms() + 60000;
        ctx.env = echo->env;
        r = echo->run(&ctx, in, &out, &e);
        TEST_RESULT(r == 0 && out.text && strcmp(out.text, "Echo: still here") == 0,
                    "the server still answers after a cancel and a timeout (%d %s)", r, out.text ? out.text : e.msg);
        tool_output_done(&out);
        json_decref(in);
        mcp_toolset_free(ts);
        mcp_client_free(c);

        /* a big result: the server's environment with a 100 KB variable, handed on as text that the
         * spill middleware keeps as a handle (over AGENT_TOOL_TEXT_MAX) */
        char *big = malloc(100010);
        memcpy(big, "MCP_BIG=", 8);
        memset(big + 8, 'b', 100000);
        big[100008] = '\0';
        const char *envs[] = {big, NULL};
        mcp_stdio_config cfg = {.name = "ev2", .argv = argv, .env = envs};
        r = mcp_client_spawn(&cfg, &c, &e);
        TEST_RESULT(r == 0, "server-everything with a big variable (%d %s)", r, e.msg);
        if (r == 0) {
                json_t *res = NULL;
                r = mcp_client_call_tool(c, "get-env", NULL, NULL, &res, &e);
                CHECK_EQ_INT(r, 0);
                if (r == 0) {
                        CHECK_EQ_INT(mcp_result_to_output(res, "mcp:ev2/get-env", &out), 0);
                        TEST_RESULT(out.text && strlen(out.text) > AGENT_TOOL_TEXT_MAX && strstr(out.text, "MCP_BIG"),
                                    "get-env's %zu bytes of text go on whole (the loop spills them)",
                                    out.text ? strlen(out.text) : 0);
                        tool_output_done(&out);
                }
                json_decref(res);
                mcp_client_free(c);
        }
        free(big);
}

/* ---- server-everything over Streamable HTTP ---- */

extern char **environ;

/* A free loopback port (bound and closed: the server takes it right after). */
static int free_port(void) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            getsockname(fd, (struct sockaddr *) &sa, &len) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        close(fd);
        return ntohs(sa.sin_port);
}

static bool port_open(int port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {
                .sin_family = AF_INET, .sin_port = htons((uint16_t) port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
        if (fd >= 0)
                close(fd);
        return ok;
}

/* server-everything spawned over Streamable HTTP on a free port: *ret_pid, the port (-1: it never
 * listened). The port is free when picked, but another process may take it before the server
 * binds it (the server then exits): a new one is tried, 5 at most. */
static int everything_http_spawn(const char *ev, pid_t *ret_pid) {
        size_t n = 0;
        while (environ[n])
                n++;
        for (int attempt = 0; attempt < 5; attempt++) {
                int port = free_port();
                if (port <= 0)
                        return -1;
                char port_env[32];
                snprintf(port_env, sizeof(port_env), "PORT=%d", port);
                char **envp = calloc(n + 2, sizeof(*envp));
                if (!envp)
                        return -1;
                memcpy(envp, environ, n * sizeof(*envp));
                envp[n] = port_env;
                posix_spawn_file_actions_t fa;
                posix_spawn_file_actions_init(&fa);
                posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
                posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
                char *const argv[] = {(char *) ev, (char *) "streamableHttp", NULL};
                pid_t pid = 0;
                int r = posix_spawn(&pid, ev, &fa, NULL, argv, envp);
                posix_spawn_file_actions_destroy(&fa);
                free(envp);
                if (r != 0)
                        return -1;
                bool exited = false;
                for (int i = 0; i < 600; i++) {
                        if (port_open(port)) {
                                *ret_pid = pid;
                                return port;
                        }
                        if ((exited = waitpid(pid, NULL, WNOHANG) == pid))
                                break; /* the port was taken meanwhile: another one */
                        usleep(50000);
                }
                if (!exited) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                }
        }
        return -1;
}

static void test_everything_http(const char *ev) {
        pid_t pid = 0;
        int port = everything_http_spawn(ev, &pid);
        bool up = port > 0;
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
        TEST_RESULT(up, "server-everything listens over Streamable HTTP on 127.0.0.1:%d", port);
        if (up) {
                const char *headers[] = {"X-Test: hull", NULL};
                mcp_http_config cfg = {.name = "evh", .url = url, .headers = headers};
                mcp_client *c = NULL;
                hull_error e = {0};
                int r = mcp_client_connect(&cfg, &c, &e);
                TEST_RESULT(r == 0, "hull connects and initializes over HTTP (%d %s)", r, e.msg);
                if (r == 0) {
                        CHECK_EQ_STR(mcp_client_protocol_version(c), "2025-11-25");
                        json_t *tools = NULL, *res = NULL;
                        r = mcp_client_list_tools(c, NULL, &tools, &e);
                        TEST_RESULT(r == 0 && json_array_size(tools) >= 12, "tools/list over HTTP (%d, %zu: %s)", r,
                                    json_array_size(tools), e.msg);
                        json_decref(tools);
                        json_t *args = json_pack("{s:i, s:i}", "a", 2, "b", 3);
                        r = mcp_client_call_tool(c, "get-sum", args, NULL, &res, &e);
                        TEST_RESULT(r == 0 && first_text(res) &&
                                            strcmp(first_text(res), "The sum of 2 and 3 is 5.") == 0,
                                    "get-sum over HTTP (%d %s)", r, r == 0 ? first_text(res) : e.msg);
                        json_decref(res);
                        json_decref(args);
                        seen s = {0};
                        mcp_call_opts o = {.cancel_fd = -1, .progress = on_progress, .progress_ud = &s};
                        args = json_pack("{s:i, s:i}", "duration", 2, "steps", 4);
                        r = mcp_client_call_tool(c, "trigger-long-running-operation", args, &o, &res, &e);
                        TEST_RESULT(r == 0 && s.progress == 4 && s.last == 4,
                                    "progress arrives on the POST's event stream (%d, %u: %s)", r, s.progress, e.msg);
                        json_decref(res);
                        json_decref(args);
                        int fds[2];
                        later l;
                        args = json_pack("{s:i, s:i}", "duration", 10, "steps", 10);
                        CHECK_EQ_INT(later_start(&l, 1500, fds), 0);
                        mcp_call_opts co = {.cancel_fd = fds[0]};
                        uint64_t t0 = now_mono_ms();
                        r = mcp_client_call_tool(c, "trigger-long-running-operation", args, &co, &res, &e);
                        uint64_t took = now_mono_ms() - t0;
                        pthread_join(l.t, NULL);
                        close(fds[0]);
                        close(fds[1]);
                        TEST_RESULT(r == -ECANCELED && took < 8000, "a cancelled call over HTTP ends (%d %s, %llu ms)",
                                    r, e.msg, (unsigned long long) took);
                        json_decref(args);
                        args = json_pack("{s:s}", "message", "after");
                        r = mcp_client_call_tool(c, "echo", args, NULL, &res, &e);
                        TEST_RESULT(r == 0 && first_text(res) && strcmp(first_text(res), "Echo: after") == 0,
                                    "the session still answers (%d %s)", r, e.msg);
                        json_decref(res);
                        json_decref(args);
                        mcp_client_free(c);
                }
                /* nothing listens on a closed port: a clear error */
                char dead[64];
                int p2 = free_port();
                snprintf(dead, sizeof(dead), "http://127.0.0.1:%d/mcp", p2);
                mcp_http_config bad = {.name = "gone", .url = dead};
                r = mcp_client_connect(&bad, &c, &e);
                TEST_RESULT(r == -ECONNREFUSED, "a server that is not there: %d %s", r, e.msg);
                mcp_http_config wrong = {.name = "wrong", .url = url};
                char wrong_url[96];
                snprintf(wrong_url, sizeof(wrong_url), "http://127.0.0.1:%d/nope", port);
                wrong.url = wrong_url;
                r = mcp_client_connect(&wrong, &c, &e);
                TEST_RESULT(r == -EREMOTEIO && strstr(e.msg, "HTTP 404"), "a wrong endpoint: %d %s", r, e.msg);
        }
        if (pid > 0) {
                kill(pid, SIGINT);
                int st;
                for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
                        usleep(50000);
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
        }
}

/* The lines of PORTFILE.log (the fake's GETs) as a JSON array. */
static json_t *get_log(const char *portfile) {
        char path[128];
        snprintf(path, sizeof(path), "%s.log", portfile);
        json_t *all = json_array();
        FILE *f = fopen(path, "re");
        char line[4096];
        while (f && fgets(line, sizeof(line), f))
                json_array_append_new(all, json_loads(line, 0, NULL));
        if (f)
                fclose(f);
        unlink(path);
        return all;
}

/* A tools/call whose event stream breaks after its first progress event is resumed with a GET
 * carrying Last-Event-ID and the session: the replayed progress and the result arrive once. */
static void test_http_resume(int port, const char *portfile) {
        static const char *const paths[] = {"/resume", "/resume-eof"};
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                char url[96];
                snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, paths[i]);
                mcp_http_config cfg = {.name = "res", .url = url};
                mcp_client *c = NULL;
                hull_error e = {0};
                int r = mcp_client_connect(&cfg, &c, &e);
                TEST_RESULT(r == 0, "%s: connects (%d %s)", paths[i], r, e.msg);
                if (r < 0)
                        continue;
                seen s = {0};
                mcp_call_opts o = {.cancel_fd = -1, .progress = on_progress, .progress_ud = &s};
                json_t *res = NULL;
                r = mcp_client_call_tool(c, "slow", NULL, &o, &res, &e);
                TEST_RESULT(r == 0 && first_text(res) && strcmp(first_text(res), "resumed result") == 0,
                            "%s: the call's result arrives through the resumed stream (%d %s)", paths[i], r,
                            r == 0 ? first_text(res) : e.msg);
                TEST_RESULT(s.progress == 2 && s.last == 2, "%s: each progress event arrives once (%u, last %g)",
                            paths[i], s.progress, s.last);
                json_decref(res);
                mcp_client_free(c);
                json_t *log = get_log(portfile);
                json_t *g = json_array_get(log, 0);
                TEST_RESULT(
                        json_array_size(log) == 1 &&
                                strcmp(json_string_value(json_object_get(g, "last_event_id")) ?: "", "s2") == 0 &&
                                strcmp(json_string_value(json_object_get(g, "session")) ?: "", "fake-session-1") == 0 &&
                                strcmp(json_string_value(json_object_get(g, "accept")) ?: "", "text/event-stream") == 0,
                        "%s: one GET, with Last-Event-ID s2, the session's id and Accept: text/event-stream (%zu)",
                        paths[i], json_array_size(log));
                json_decref(log);
        }
        static const struct {
                const char *path;
                size_t gets;
                const char *says;
        } bad[] = {
                {"/resume-dead", MCP_RESUME_TRIES,
                 "resumptions from event 's2' (GET with Last-Event-ID) brought nothing"},
                {"/resume-405", 1, "cannot be resumed from event 's2': mcp: res: GET"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char url[96];
                snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, bad[i].path);
                mcp_http_config cfg = {.name = "res", .url = url};
                mcp_client *c = NULL;
                hull_error e = {0};
                int r = mcp_client_connect(&cfg, &c, &e);
                if (r < 0) {
                        TEST_RESULT(false, "%s: connects (%d %s)", bad[i].path, r, e.msg);
                        continue;
                }
                json_t *res = NULL;
                uint64_t t0 = now_mono_ms();
                r = mcp_client_call_tool(c, "slow", NULL, NULL, &res, &e);
                uint64_t took = now_mono_ms() - t0;
                json_t *log = get_log(portfile);
                TEST_RESULT(r < 0 && strstr(e.msg, bad[i].says) && json_array_size(log) == bad[i].gets && took < 30000,
                            "%s: a clear error after %zu GETs (%d \"%s\", %zu GETs, %llu ms)", bad[i].path, bad[i].gets,
                            r, e.msg, json_array_size(log), (unsigned long long) took);
                json_decref(log);
                mcp_client_free(c);
        }
}

/* Misbehaving HTTP endpoints (tests/unit/data/mcp-fake-http.py): each a clear error, in time. */
static void test_http_failures(void) {
        char portfile[] = "/tmp/hull-mcp-http-XXXXXX";
        int fd = mkstemp(portfile);
        if (fd < 0)
                return;
        close(fd);
        unlink(portfile);
        pid_t pid = fork();
        if (pid == 0) {
                execl("/usr/bin/python3", "python3", TEST_DATA_DIR "/mcp-fake-http.py", portfile, (char *) NULL);
                _exit(127);
        }
        int port = 0;
        for (int i = 0; i < 600 && port <= 0; i++) {
                FILE *f = fopen(portfile, "r");
                if (f) {
                        if (fscanf(f, "%d", &port) != 1)
                                port = 0;
                        fclose(f);
                }
                if (port <= 0)
                        usleep(50000);
        }
        TEST_RESULT(port > 0, "the fake HTTP endpoint listens");
        static const struct {
                const char *path;
                uint64_t init_ms;
                int want;
                const char *says;
        } cases[] = {
                {"/garbage", 0, -EPROTO, "not a JSON-RPC message"},
                {"/json", 0, -EPROTO, "not a JSON-RPC message (invalid message: \"jsonrpc\" is not \"2.0\")"},
                {"/hang", 1500, -ETIMEDOUT, "did not answer initialize within 1500 ms"},
                {"/401", 0, -EACCES, "HTTP 401"},
        };
        for (size_t i = 0; port > 0 && i < ELEMENTSOF(cases); i++) {
                char url[96];
                snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, cases[i].path);
                mcp_http_config cfg = {.name = "web", .url = url, .init_timeout_ms = cases[i].init_ms};
                mcp_client *c = NULL;
                hull_error e = {0};
                uint64_t t0 = now_mono_ms();
                int r = mcp_client_connect(&cfg, &c, &e);
                uint64_t took = now_mono_ms() - t0;
                TEST_RESULT(r == cases[i].want && strstr(e.msg, cases[i].says) && took < 20000,
                            "HTTP %s: %d \"%s\" in %llu ms", cases[i].path, r, e.msg, (unsigned long long) took);
                if (r == 0)
                        mcp_client_free(c);
        }
        if (port > 0)
                test_http_resume(port, portfile);
        if (port > 0) { /* an interrupt cuts the initialize wait over HTTP too */
                char url[96];
                snprintf(url, sizeof(url), "http://127.0.0.1:%d/hang", port);
                atomic_bool stop = false;
                flag_later fl = {.flag = &stop, .ms = 500};
                mcp_http_config cfg = {.name = "slow", .url = url, .init_timeout_ms = 60000, .cancel = &stop};
                mcp_client *c = NULL;
                hull_error e = {0};
                CHECK_EQ_INT(pthread_create(&fl.t, NULL, flag_later_main, &fl), 0);
                uint64_t t0 = now_mono_ms();
                int r = mcp_client_connect(&cfg, &c, &e);
                uint64_t took = now_mono_ms() - t0;
                pthread_join(fl.t, NULL);
                TEST_RESULT(r == -ECANCELED && !c && strstr(e.msg, "initialize was interrupted") && took < 20000,
                            "an interrupt ends an HTTP initialize that is not answered (%d \"%s\" in %llu ms)", r,
                            e.msg, (unsigned long long) took);
        }
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        unlink(portfile);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        if (access("/usr/bin/python3", X_OK) == 0) {
                test_fake_protocol();
                test_fake_versions();
                test_failures();
                test_http_failures();
        } else
                printf("skip - fake MCP servers: no /usr/bin/python3\n");
        test_results();
        const char *ev = getenv("MCP_EVERYTHING");
        if (ev && ev[0]) {
                test_everything(ev);
                test_everything_http(ev);
        } else
                printf("skip - server-everything: MCP_EVERYTHING is not set (tests/integration/test-mcp-client.sh "
                       "sets it)\n");
        return test_done();
}
