/* test-sse.c: the server-sent events decoder: line ends, fields, comments, joining, dispatch rules,
 * the per-event bound, the end of the stream, a handler's error, and the same events whatever
 * the split of the bytes (every position, single bytes, inside "\r\n" and UTF-8). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "sse.h"
#include "test.h"

/* Events written as "name|data" lines into a dynbuf, to compare. */
typedef struct seen {
        dynbuf out;
        unsigned count;
        int fail_at; /* the handler fails at this event (1-based); 0: never */
} seen;

static int on_event(void *ud, const sse_event *ev) {
        seen *s = ud;
        s->count++;
        if (s->fail_at && (int) s->count == s->fail_at)
                return -ECANCELED;
        if (ev->name[ev->name_len] != '\0' || ev->data[ev->data_len] != '\0')
                TEST_RESULT(false, "an event's name and data are NUL-terminated");
        dynbuf_add(&s->out, ev->name, ev->name_len);
        dynbuf_add(&s->out, "|", 1);
        dynbuf_add(&s->out, ev->data, ev->data_len);
        dynbuf_add(&s->out, "\x01", 1);
        return 0;
}

/* Decode text in pieces of at most piece bytes (0: one piece); returns sse_finish's result (or
 * the feed's error) and the events in *out (freed by the caller). */
static int decode(const char *text, size_t len, size_t piece, size_t max, char **out, unsigned *count) {
        sse_decoder d;
        seen s = {0};
        int r = 0;
        dynbuf_init(&s.out, 1 << 20);
        sse_init(&d, max);
        for (size_t at = 0; at < len && r == 0;) {
                size_t n = piece ? MIN(piece, len - at) : len - at;
                r = sse_feed(&d, text + at, n, on_event, &s);
                at += n;
        }
        if (r == 0)
                r = sse_finish(&d);
        sse_done(&d);
        *out = dynbuf_take(&s.out, NULL);
        if (count)
                *count = s.count;
        return r;
}

/* s with its control bytes as \xNN, for a one-line report (two buffers, used in turn). */
static const char *esc(const char *s) {
        static char bufs[2][512];
        static unsigned turn;
        char *b = bufs[turn++ % 2];
        size_t n = 0;
        for (; *s && n + 5 < sizeof(bufs[0]); s++)
                n += (unsigned char) *s < 0x20 ? (size_t) snprintf(b + n, 5, "\\x%02x", (unsigned char) *s)
                                               : (size_t) snprintf(b + n, 2, "%c", *s);
        b[n] = '\0';
        return b;
}

static void check_events(const char *text, const char *want, int want_end) {
        char *got = NULL;
        unsigned count = 0;
        int r = decode(text, strlen(text), 0, 1024, &got, &count);
        TEST_RESULT(r == want_end && strcmp(got, want) == 0, "decode(\"%s\") (got %d \"%s\")", esc(text), r, esc(got));
        free(got);
        /* Split at every position, and a byte at a time: the same events. */
        for (size_t cut = 1; cut < strlen(text); cut++) {
                sse_decoder d;
                seen s = {0};
                dynbuf_init(&s.out, 1 << 20);
                sse_init(&d, 1024);
                int k = sse_feed(&d, text, cut, on_event, &s);
                if (k == 0)
                        k = sse_feed(&d, text + cut, strlen(text) - cut, on_event, &s);
                if (k == 0)
                        k = sse_finish(&d);
                char *split = dynbuf_take(&s.out, NULL);
                if (k != want_end || strcmp(split, want) != 0)
                        TEST_RESULT(false, "split of \"%s\" at %zu (got %d \"%s\")", esc(text), cut, k, esc(split));
                free(split);
                sse_done(&d);
        }
        r = decode(text, strlen(text), 1, 1024, &got, NULL);
        TEST_RESULT(r == want_end && strcmp(got, want) == 0, "byte by byte (got \"%s\")", esc(got));
        free(got);
}

static void test_format(void) {
        check_events("data: a\n\n", "|a\x01", 0);
        check_events("data: a\r\n\r\n", "|a\x01", 0);
        check_events("data: a\r\rdata: b\r\r", "|a\x01|b\x01", 0);
        check_events("data: a\r\n\ndata: b\n\r\n", "|a\x01|b\x01", 0); /* mixed line ends */
        check_events("data: one\ndata: two\ndata:\ndata: three\n\n", "|one\ntwo\n\nthree\x01", 0);
        check_events("data:x\n\ndata:  x\n\n", "|x\x01| x\x01", 0); /* one space stripped, only one */
        check_events("data\n\n", "|\x01", 0);                       /* a field without ':' */
        check_events(": keep-alive\n\ndata: a\n: inside\n\n", "|a\x01", 0);
        check_events("id: 7\nretry: 10\nfoo: bar\n\n", "", 0); /* nothing to dispatch */
        check_events("id: 7\ndata: a\nretry: 10\n\n", "|a\x01", 0);
        check_events("event: ping\n\n", "ping|\x01", 0); /* a name alone is an event (as the SDKs) */
        check_events("event: a\nevent: b\ndata: x\n\n", "b|x\x01", 0);
        check_events("event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: x\ndata: 1\n\n",
                     "message_start|{\"type\":\"message_start\"}\x01x|1\x01", 0);
        check_events("data: a:b: c\n\n", "|a:b: c\x01", 0);
        check_events("data: caf\xc3\xa9 \xe2\x82\xac\n\n", "|caf\xc3\xa9 \xe2\x82\xac\x01", 0);
        check_events("\n\n\r\n\r", "", 0);
        check_events("data: [DONE]\n\n", "|[DONE]\x01", 0);
        /* The end of the stream. */
        check_events("data: a\n", "", 1);                /* the empty line never came */
        check_events("data: a\n\ndata: b", "|a\x01", 1); /* cut inside a line */
        check_events("data: a\n\nevent: x\n", "|a\x01", 1);
        check_events("data: a\n\n: a cut comm", "|a\x01", 0);
        check_events("data: a\r\n\r", "|a\x01", 0);
}

static void test_bound(void) {
        char *got = NULL;
        const char *big = "data: 0123456789abcdef\n\n";
        CHECK_EQ_INT(decode(big, strlen(big), 0, 16, &got, NULL), -E2BIG);
        free(got);
        CHECK_EQ_INT(decode(big, strlen(big), 3, 16, &got, NULL), -E2BIG);
        free(got);
        /* Many lines make one event over the bound too. */
        const char *lines = "data: 0123\ndata: 4567\ndata: 89ab\n\n";
        CHECK_EQ_INT(decode(lines, strlen(lines), 0, 20, &got, NULL), -E2BIG);
        free(got);
        /* The bound is per event: many events of 10 bytes each pass a bound of 16. */
        const char *many = "data: 0123\n\ndata: 4567\n\ndata: 89ab\n\n";
        CHECK_EQ_INT(decode(many, strlen(many), 0, 16, &got, NULL), 0);
        CHECK_EQ_STR(got, "|0123\x01|4567\x01|89ab\x01");
        free(got);
        /* The error is sticky. */
        sse_decoder d;
        seen s = {0};
        dynbuf_init(&s.out, 1024);
        sse_init(&d, 16);
        CHECK_EQ_INT(sse_feed(&d, big, strlen(big), on_event, &s), -E2BIG);
        CHECK_EQ_INT(sse_feed(&d, "data: a\n\n", 9, on_event, &s), -E2BIG);
        CHECK_EQ_INT(sse_finish(&d), -E2BIG);
        CHECK_EQ_INT(s.count, 0);
        sse_done(&d);
        dynbuf_free(&s.out);
        /* A long comment is not kept, but it counts. */
        CHECK_EQ_INT(decode(": 0123456789abcdef0123\n\ndata: a\n\n", 33, 0, 16, &got, NULL), -E2BIG);
        free(got);
}

static void test_handler_error(void) {
        sse_decoder d;
        seen s = {.fail_at = 2};
        const char *text = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
        dynbuf_init(&s.out, 1024);
        sse_init(&d, 1024);
        CHECK_EQ_INT(sse_feed(&d, text, strlen(text), on_event, &s), -ECANCELED);
        CHECK_EQ_INT(s.count, 2);
        CHECK_EQ_INT(sse_feed(&d, text, strlen(text), on_event, &s), -ECANCELED);
        CHECK_EQ_INT(s.count, 2);
        CHECK_EQ_INT(d.count, 2);
        sse_done(&d);
        dynbuf_free(&s.out);
}

/* The OpenAI transcript of model-apis.md §1.7 (shortened chunks) with splits inside "\r\n" and
 * a multi-byte character. */
static void test_splits(void) {
        const char *text =
                "data: {\"a\":\"\xe2\x82\xac\"}\r\n\r\ndata: {\"b\":\"\\u00e9\"}\r\n\r\ndata: [DONE]\r\n\r\n";
        size_t len = strlen(text);
        char *whole = NULL, *got = NULL;
        CHECK_EQ_INT(decode(text, len, 0, 1024, &whole, NULL), 0);
        CHECK_EQ_STR(whole, "|{\"a\":\"\xe2\x82\xac\"}\x01|{\"b\":\"\\u00e9\"}\x01|[DONE]\x01");
        for (size_t piece = 1; piece <= 7; piece++) {
                CHECK_EQ_INT(decode(text, len, piece, 1024, &got, NULL), 0);
                CHECK_EQ_STR(got, whole);
                free(got);
        }
        free(whole);
}

static int ids_event(void *ud, const sse_event *ev) {
        dynbuf *b = ud;
        dynbuf_addf(b, "[%s]", ev->id ? ev->id : "-");
        return 0;
}

/* id and retry: the last event ID persists across events and is the stream's at each event's
 * end (what a client resumes from); a cut event's id does not count; retry takes digits only. */
static void test_ids(void) {
        sse_decoder d;
        dynbuf b;
        dynbuf_init(&b, 4096);
        sse_init(&d, 4096);
        CHECK(sse_last_id(&d) == NULL && d.retry_ms == -1);
        const char *text = "data: a\n\n"                     /* no id yet */
                           "id: p1\ndata:\n\n"               /* a priming event: an id, empty data */
                           "event: message\ndata: b\n\n"     /* the id persists */
                           "retry: 1500\nid: 7\ndata: c\n\n" /* both */
                           "retry: 12x\n\n"                  /* not digits: ignored */
                           "id: e\0f\ndata: d\n\n"           /* a NUL: ignored */
                           "id: cut\ndata: e\n";             /* cut before its end */
        CHECK_EQ_INT(sse_feed(&d, text, strlen(text) + 1 + strlen("f\ndata: d\n\nid: cut\ndata: e\n"), ids_event, &b),
                     0);
        CHECK_EQ_STR(b.buf, "[-][p1][p1][7][7]");
        CHECK_EQ_STR(sse_last_id(&d), "7");
        CHECK(d.retry_ms == 1500);
        CHECK_EQ_INT(sse_finish(&d), 1);
        sse_done(&d);
        CHECK(sse_last_id(&d) == NULL);
        dynbuf_free(&b);
}

int main(void) {
        test_ids();
        test_format();
        test_bound();
        test_handler_error();
        test_splits();
        return test_done();
}
