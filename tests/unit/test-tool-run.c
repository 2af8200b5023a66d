/* test-tool-run.c: the one tool-call runner (src/agent/tool-run.h) with tools of the test's own that
 * need no session: the texts a reader gets (invalid arguments, no session, failed, timed out,
 * interrupted), the interrupt and the caller's stop reaching the tool's cancel fd, the cancel fd
 * told to the caller and taken back, both ways a tool's notes reach the progress sink, and no
 * record without a claim. The session side (claim, spill into handles, records) runs in
 * test-agent, test-mcp-server and tests/integration/test-mcp*.sh. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tool-run.h"
#include "watch.h"

static bool has(const char *s, const char *part) {
        return s && strstr(s, part);
}

/* Does s hold a, then b later? */
static bool in_order(const char *s, const char *a, const char *b) {
        const char *x = strstr(s, a);
        return x && strstr(x + strlen(a), b);
}

/* ---- the test's tools ---- */

static int run_ok(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        ret->text = strdup("done");
        return 0;
}

static int run_fail(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        return hull_fail(e, -EIO, "the disk said no");
}

static int run_timeout(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        return hull_fail(e, -ETIMEDOUT, "too slow");
}

/* Waits (at most 5 s) for its cancel fd, then ends with -ECANCELED. */
static int run_wait(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        struct pollfd p = {.fd = c->cancel_fd, .events = POLLIN};
        if (poll(&p, 1, 5000) != 1)
                return hull_fail(e, -EIO, "the cancel fd never fired");
        return hull_fail(e, -ECANCELED, "stopped");
}

/* Notes its progress twice. */
static int run_notes(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        c->progress(c->progress_ud, "first");
        c->progress(c->progress_ud, "second");
        ret->text = strdup("noted");
        return 0;
}

/* Notes once, then runs a few of the watch's ticks. */
static int run_note_once(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        c->progress(c->progress_ud, "once");
        usleep(4 * AGENT_WATCH_TICK_MS * 1000);
        ret->text = strdup("noted");
        return 0;
}

/* Says whether its cancel fd is readable now. */
static int run_peek(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        struct pollfd p = {.fd = c->cancel_fd, .events = POLLIN};
        ret->text = strdup(poll(&p, 1, 0) == 1 ? "readable" : "quiet");
        return 0;
}

static const char schema_n[] = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}, "
                               "\"required\": [\"n\"]}";

static const tool_def t_ok = {.name = "ok", .input_schema = schema_n, .run = run_ok, .record_kind = "read"};
static const tool_def t_session = {.name = "boxed", .input_schema = "{}", .needs_session = true, .run = run_ok};
static const tool_def t_fail = {.name = "fails", .input_schema = "{}", .run = run_fail};
static const tool_def t_timeout = {.name = "slow", .input_schema = "{}", .run = run_timeout};
static const tool_def t_wait = {.name = "waits", .input_schema = "{}", .run = run_wait};
static const tool_def t_notes = {.name = "notes", .input_schema = "{}", .run = run_notes};
static const tool_def t_peek = {.name = "peek", .input_schema = "{}", .run = run_peek};
static const tool_def t_note_once = {.name = "note_once", .input_schema = "{}", .run = run_note_once};

/* How often part occurs in s. */
static unsigned count(const char *s, const char *part) {
        unsigned n = 0;
        for (const char *x = strstr(s, part); x; x = strstr(x + 1, part))
                n++;
        return n;
}

/* ---- the caller's side ---- */

typedef struct caller {
        atomic_bool interrupt;
        bool stop;       /* should_fire says so */
        int fds_told;    /* cancel_fd calls with an fd */
        int fds_taken;   /* ... and with -1 */
        char notes[256]; /* the reports' notes, "|"-separated ("-" for none) */
        unsigned reports;
        size_t stack; /* the stack of the thread should_fire ran on: the watch's */
} caller;

static bool c_should_fire(void *ud) {
        caller *c = ud;
        pthread_attr_t a;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
                (void) pthread_attr_getstacksize(&a, &c->stack);
                pthread_attr_destroy(&a);
        }
        if (!c->stop)
                return false;
        atomic_store(&c->interrupt, true);
        return true;
}

static void c_cancel_fd(void *ud, int fd) {
        caller *c = ud;
        if (fd >= 0)
                c->fds_told++;
        else
                c->fds_taken++;
}

static bool c_progress(void *ud, uint64_t elapsed_ms, const char *note) {
        caller *c = ud;
        size_t o = strlen(c->notes);
        snprintf(c->notes + o, sizeof(c->notes) - o, "%s%s", o ? "|" : "", note ? note : "-");
        c->reports++;
        return true;
}

static tool_run_ctx ctx_of(caller *c) {
        return (tool_run_ctx){.interrupt = &c->interrupt,
                              .who = "agent",
                              .stopped = "interrupted",
                              .record = true,
                              .should_fire = c_should_fire,
                              .cancel_fd = c_cancel_fd,
                              .progress = c_progress,
                              .ud = c};
}

static void *interrupt_soon(void *ud) {
        caller *c = ud;
        usleep(100 * 1000);
        atomic_store(&c->interrupt, true);
        return NULL;
}

static void test_texts(void) {
        caller cl = {0};
        tool_run_ctx c = ctx_of(&cl);
        call_result res = {0};
        tool_run_record rec = {.made = true};

        CHECK_EQ_INT(tool_run_timeout(&t_ok), AGENT_TOOL_TIMEOUT_MS);
        json_t *schema = json_loads(schema_n, 0, NULL), *bad = json_pack("{s:s}", "n", "x"),
               *good = json_pack("{s:i}", "n", 1);
        CHECK_EQ_INT(tool_run_validate(schema, bad, "arguments", "ok", &res), -EINVAL);
        CHECK(res.is_error && has(res.text, "invalid arguments for ok; it did not run:\n") &&
              has(res.text, "arguments.n"));
        call_result_done(&res);
        CHECK_EQ_INT(tool_run_validate(schema, good, "arguments", "ok", &res), 0);
        CHECK(!res.text && !res.is_error);

        tool_run_call(&c, &t_ok, good, &res, &rec);
        CHECK_EQ_STR(res.text, "done");
        CHECK(!res.is_error && !rec.made && rec.error == 0); /* no claim: no record */
        CHECK_EQ_INT(cl.fds_told, 1);
        CHECK_EQ_INT(cl.fds_taken, 1);
        call_result_done(&res);

        tool_run_call(&c, &t_session, good, &res, NULL);
        CHECK_EQ_STR(res.text, "boxed needs the session's sandbox, and this agent has none");
        CHECK(res.is_error);
        call_result_done(&res);

        tool_run_call(&c, &t_fail, good, &res, NULL);
        CHECK_EQ_STR(res.text, "fails failed: the disk said no");
        call_result_done(&res);

        tool_run_call(&c, &t_timeout, good, &res, NULL);
        CHECK(res.is_error && has(res.text, "slow timed out after ") && has(res.text, " ms: too slow"));
        call_result_done(&res);
        json_decref(schema);
        json_decref(bad);
        json_decref(good);
}

static void test_cancel(void) {
        caller cl = {0};
        tool_run_ctx c = ctx_of(&cl);
        call_result res = {0};
        json_t *in = json_object();
        pthread_t th;

        /* the interrupt, set while the call runs, reaches the tool's cancel fd */
        CHECK(pthread_create(&th, NULL, interrupt_soon, &cl) == 0);
        tool_run_call(&c, &t_wait, in, &res, NULL);
        pthread_join(th, NULL);
        CHECK_EQ_STR(res.text, "waits was interrupted");
        call_result_done(&res);

        /* the caller's stop does too (hull mcp: hull stopping) */
        atomic_store(&cl.interrupt, false);
        cl.stop = true;
        c.stopped = "cancelled";
        tool_run_call(&c, &t_wait, in, &res, NULL);
        CHECK_EQ_STR(res.text, "waits was cancelled");
        CHECK_EQ_INT(cl.fds_told, 2);
        CHECK_EQ_INT(cl.fds_taken, 2);
        call_result_done(&res);
        json_decref(in);
}

static void test_progress(void) {
        json_t *in = json_object();
        call_result res = {0};

        /* a note goes with one report; due at once (progress_ms 0), each goes */
        caller next = {0};
        tool_run_ctx c = ctx_of(&next);
        c.notes = TOOL_RUN_NOTE_NEXT;
        tool_run_call(&c, &t_notes, in, &res, NULL);
        CHECK_EQ_STR(res.text, "noted");
        CHECK(in_order(next.notes, "first", "second"));
        call_result_done(&res);

        /* none due (a long interval): no report */
        caller quiet = {0};
        c = ctx_of(&quiet);
        c.progress_ms = 3600 * 1000;
        tool_run_call(&c, &t_notes, in, &res, NULL);
        CHECK_EQ_INT(quiet.reports, 0);
        call_result_done(&res);

        /* the last note stays with every report after it */
        caller keep = {0};
        c = ctx_of(&keep);
        c.notes = TOOL_RUN_NOTE_KEEP;
        tool_run_call(&c, &t_notes, in, &res, NULL);
        CHECK(in_order(keep.notes, "first", "second"));
        call_result_done(&res);

        /* the ticks after a note: NEXT reports it once, KEEP with each */
        caller once = {0};
        c = ctx_of(&once);
        c.notes = TOOL_RUN_NOTE_NEXT;
        tool_run_call(&c, &t_note_once, in, &res, NULL);
        CHECK_EQ_INT(count(once.notes, "once"), 1);
        CHECK(once.reports >= 3);
        /* each tool call makes a watch thread: a small stack (an 8 MiB one cost its unmapping) */
        CHECK(once.stack > 0 && once.stack <= AGENT_WATCH_STACK);
        call_result_done(&res);
        caller kept = {0};
        c = ctx_of(&kept);
        c.notes = TOOL_RUN_NOTE_KEEP;
        tool_run_call(&c, &t_note_once, in, &res, NULL);
        CHECK(count(kept.notes, "once") >= 3);
        call_result_done(&res);

        /* no sink: the notes go nowhere */
        caller none = {0};
        c = ctx_of(&none);
        c.progress = NULL;
        tool_run_call(&c, &t_notes, in, &res, NULL);
        CHECK_EQ_STR(res.text, "noted");
        CHECK_EQ_INT(none.reports, 0);
        call_result_done(&res);
        json_decref(in);
}

/* A watch kept across calls (the agent's): one thread and one fd serve every call, the interrupt,
 * the caller's stop and the progress still reach each, and a call starts with its fd unread. */
static void test_kept(void) {
        caller cl = {0};
        tool_run_ctx c = ctx_of(&cl);
        call_result res = {0};
        json_t *in = json_object();
        pthread_t th;
        watch w;

        CHECK_EQ_INT(watch_init(&w), 0);
        c.watch = &w;
        tool_run_call(&c, &t_peek, in, &res, NULL);
        CHECK_EQ_STR(res.text, "quiet");
        call_result_done(&res);
        CHECK(w.started);
        pthread_t first = w.thread;
        int efd = w.efd;

        CHECK(pthread_create(&th, NULL, interrupt_soon, &cl) == 0);
        tool_run_call(&c, &t_wait, in, &res, NULL);
        pthread_join(th, NULL);
        CHECK_EQ_STR(res.text, "waits was interrupted");
        call_result_done(&res);

        atomic_store(&cl.interrupt, false);
        tool_run_call(&c, &t_peek, in, &res, NULL); /* the last call's firing read away */
        CHECK_EQ_STR(res.text, "quiet");
        call_result_done(&res);

        cl.stop = true;
        c.stopped = "cancelled";
        tool_run_call(&c, &t_wait, in, &res, NULL);
        CHECK_EQ_STR(res.text, "waits was cancelled");
        call_result_done(&res);
        cl.stop = false;
        atomic_store(&cl.interrupt, false);

        c.notes = TOOL_RUN_NOTE_KEEP;
        tool_run_call(&c, &t_note_once, in, &res, NULL);
        CHECK(count(cl.notes, "once") >= 3);
        call_result_done(&res);

        /* the same thread and fd all along; each call told its fd and took it back */
        CHECK(w.started && !w.ended && pthread_equal(first, w.thread));
        CHECK_EQ_INT(w.efd, efd);
        CHECK_EQ_INT(cl.fds_told, 5);
        CHECK_EQ_INT(cl.fds_taken, 5);
        watch_done(&w);
        CHECK_EQ_INT(w.efd, -1);
        json_decref(in);
}

int main(void) {
        alarm(60);
        test_texts();
        test_cancel();
        test_progress();
        test_kept();
        return test_done();
}
