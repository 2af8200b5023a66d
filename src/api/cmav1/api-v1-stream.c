/* api-v1-stream.c: see api-v1-stream.h. The /v1 event stream's side of the engine's watch: each
 * event framed for SSE and queued on the answer's http_sse, the room the engine's pump waits for,
 * and the stream's end. */
#include "api-v1-stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dynbuf.h"
#include "limits.h"
#include "macro.h"

static const char ping_frame[] = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

typedef struct stream {
        http_sse *sse;
        atomic_size_t need; /* bytes the frame that did not fit needs (the pump waits for them) */
} stream;

/* A frame that cannot be made (over SERVE_SSE_QUEUE_MAX) is -E2BIG: the engine drops it. */
static int stream_deliver(void *ud, int64_t seq, const json_t *ev, const char *json_text, size_t len) {
        stream *st = ud;
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type)
                return -E2BIG;
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, SERVE_SSE_QUEUE_MAX);
        int r = seq > 0 ? dynbuf_addf(&b, "id: %" PRId64 "\n", seq) : 0;
        if (r >= 0)
                r = dynbuf_addf(&b, "event: %s\ndata: ", type);
        if (r >= 0)
                r = dynbuf_add(&b, json_text, len);
        if (r >= 0)
                r = dynbuf_add(&b, "\n\n", 2);
        if (r < 0)
                return r;
        r = http_sse_send_raw(st->sse, b.buf, b.len);
        if (r == -EAGAIN)
                atomic_store(&st->need, b.len);
        return r;
}

static int stream_wait(void *ud, uint64_t timeout_ms) {
        stream *st = ud;
        return http_sse_wait(st->sse, atomic_load(&st->need), timeout_ms);
}

static void stream_close(void *ud, bool cut) {
        stream *st = ud;
        http_sse_close(st->sse);
        free(st);
}

static const v1_watch_ops stream_ops = {.deliver = stream_deliver, .wait = stream_wait, .close = stream_close};

int api_v1_stream(v1_engine *g, const char *session_id, int64_t after_seq, bool deltas, http_sse *sse, v1_err *err) {
        stream *st = calloc(1, sizeof(*st));
        if (!st) {
                http_sse_close(sse);
                return v1_fail(err, 500, "", "out of memory");
        }
        st->sse = sse;
        http_sse_set_keepalive(sse, ping_frame);
        v1_watch_opts o = {.after_seq = after_seq < 0 ? V1_WATCH_LIVE : after_seq, .deltas = deltas};
        return v1_engine_watch(g, session_id, &stream_ops, st, &o, NULL, NULL, NULL, err);
}
