/* sse.c: the server-sent events decoder (see sse.h). A line is collected across feeds in a
 * dynbuf and handled at its end; a comment line is skipped without being kept. */
#include "sse.h"

#include <errno.h>
#include <string.h>

void sse_init(sse_decoder *d, size_t event_max) {
        *d = (sse_decoder){.event_max = event_max};
        dynbuf_init(&d->line, event_max);
        dynbuf_init(&d->data, event_max);
        dynbuf_init(&d->name, event_max);
        dynbuf_init(&d->id, event_max);
        dynbuf_init(&d->last_id, event_max);
        d->retry_ms = -1;
}

void sse_done(sse_decoder *d) {
        dynbuf_free(&d->line);
        dynbuf_free(&d->data);
        dynbuf_free(&d->name);
        dynbuf_free(&d->id);
        dynbuf_free(&d->last_id);
        sse_init(d, d->event_max);
}

static int fail(sse_decoder *d, int r) {
        d->error = r;
        return r;
}

static void forget_event(sse_decoder *d) {
        dynbuf_reset(&d->data);
        dynbuf_reset(&d->name);
        d->has_data = d->has_name = false;
        d->event_bytes = 0;
}

static int dispatch(sse_decoder *d, sse_handler h, void *ud) {
        /* the event's end sets the stream's last event ID from the buffer, dispatched or not */
        if (d->has_id) {
                dynbuf_reset(&d->last_id);
                if (dynbuf_add(&d->last_id, d->id.buf ? d->id.buf : "", d->id.len) < 0)
                        return -ENOMEM;
                d->has_last_id = true;
        }
        sse_event ev = {
                .id = d->has_last_id ? (d->last_id.buf ? d->last_id.buf : "") : NULL,
                .id_len = d->last_id.len,
                .name = d->name.buf ? d->name.buf : "",
                .name_len = d->name.len,
                .data = d->data.buf ? d->data.buf : "",
                .data_len = d->data.len,
        };
        int r = 0;
        if (d->has_data || d->has_name) {
                d->count++;
                r = h(ud, &ev);
        }
        forget_event(d);
        return r;
}

/* The line in d->line is complete. */
static int end_line(sse_decoder *d, sse_handler h, void *ud) {
        const char *p = d->line.buf ? d->line.buf : "";
        size_t n = d->line.len, field_len = n;
        const char *value = p + n;
        int r = 0;

        if (d->skipping) {
                d->skipping = false;
                return 0;
        }
        if (n == 0)
                return dispatch(d, h, ud);
        const char *colon = memchr(p, ':', n);
        if (colon) {
                field_len = (size_t) (colon - p);
                value = colon + 1;
                if (value < p + n && *value == ' ')
                        value++;
        }
        size_t value_len = (size_t) (p + n - value);
        if (field_len == 4 && memcmp(p, "data", 4) == 0) {
                if (d->has_data)
                        r = dynbuf_add(&d->data, "\n", 1);
                if (r == 0)
                        r = dynbuf_add(&d->data, value, value_len);
                d->has_data = true;
        } else if (field_len == 5 && memcmp(p, "event", 5) == 0) {
                dynbuf_reset(&d->name);
                r = dynbuf_add(&d->name, value, value_len);
                d->has_name = true;
        } else if (field_len == 2 && memcmp(p, "id", 2) == 0) {
                if (!memchr(value, '\0', value_len)) { /* the spec: an id with a NUL is ignored */
                        dynbuf_reset(&d->id);
                        r = dynbuf_add(&d->id, value, value_len);
                        d->has_id = true;
                }
        } else if (field_len == 5 && memcmp(p, "retry", 5) == 0) {
                long ms = 0;
                bool digits = value_len > 0 && value_len <= 9;
                for (size_t i = 0; i < value_len && digits; i++) {
                        digits = value[i] >= '0' && value[i] <= '9';
                        ms = ms * 10 + (value[i] - '0');
                }
                if (digits)
                        d->retry_ms = ms;
        }
        /* unknown fields: ignored. */
        dynbuf_reset(&d->line);
        return r;
}

int sse_feed(sse_decoder *d, const void *p, size_t n, sse_handler h, void *ud) {
        const char *s = p, *end = s + n;
        int r;

        if (d->error)
                return d->error;
        while (s < end) {
                if (d->after_cr) {
                        d->after_cr = false;
                        if (*s == '\n') {
                                s++;
                                continue;
                        }
                }
                const char *q = s;
                while (q < end && *q != '\n' && *q != '\r')
                        q++;
                size_t len = (size_t) (q - s);
                if (len > d->event_max - d->event_bytes)
                        return fail(d, -E2BIG);
                d->event_bytes += len;
                if (len > 0 && !d->skipping && d->line.len == 0 && *s == ':')
                        d->skipping = true;
                if (!d->skipping) {
                        r = dynbuf_add(&d->line, s, len);
                        if (r < 0)
                                return fail(d, r);
                }
                if (q == end)
                        break;
                d->after_cr = *q == '\r';
                s = q + 1;
                r = end_line(d, h, ud);
                dynbuf_reset(&d->line);
                if (r < 0)
                        return fail(d, r);
        }
        return 0;
}

int sse_finish(sse_decoder *d) {
        if (d->error)
                return d->error;
        return d->line.len > 0 || d->has_data || d->has_name ? 1 : 0; /* a cut comment is no loss */
}

const char *sse_last_id(const sse_decoder *d) {
        return d->has_last_id ? (d->last_id.buf ? d->last_id.buf : "") : NULL;
}
