/* sse.h: a decoder of server-sent events (the text/event-stream format), as the model providers'
 * streamed answers need it and as both official SDKs decode it: pure (bytes in, events out to a
 * handler, no I/O), resumable (bytes may be fed in any split: inside a line, inside "\r\n",
 * inside a UTF-8 sequence), bounded (one event's bytes on the wire at most the max given at
 * init; beyond it a clean -E2BIG). Fuzzed: fuzz/fuzz-sse.c.
 *
 * The format: lines end with "\n", "\r\n" or "\r"; an empty line ends an event. A line starting
 * with ':' is a comment. "field:value" has the value after the first ':', one leading space
 * stripped; a line without ':' is a field with an empty value. "event" sets the event's name;
 * each "data" appends a line to its data (several joined with "\n"); "id" sets the last event ID
 * buffer (one with a NUL is ignored), which persists across events and becomes the stream's last
 * event ID at each event's end (sse_last_id: what a client resumes from with Last-Event-ID);
 * "retry" (ASCII digits only) sets retry_ms; any other field is ignored. An event is dispatched only at the empty line
 * that ends it, and only if it had a "data" or an "event" line. Bytes are passed through as they are (no UTF-8 check:
 * the consumer parses the data as JSON). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "dynbuf.h"

typedef struct sse_event {
        const char *name; /* the "event" field's value, "" when none; NUL-terminated */
        size_t name_len;
        const char *data; /* the data lines joined with "\n", "" when none; NUL-terminated */
        size_t data_len;
        const char *id; /* the stream's last event ID with this event; NULL when no id was seen */
        size_t id_len;
} sse_event;

/* Called for each event; ev and its strings are valid only during the call. Returns 0 to go on,
 * or a negative errno that stops the decoder (sse_feed returns it, and so does every later call). */
typedef int (*sse_handler)(void *ud, const sse_event *ev);

typedef struct sse_decoder {
        dynbuf line;    /* the current line, without its end */
        dynbuf data;    /* the pending event's data */
        dynbuf name;    /* the pending event's name */
        dynbuf id;      /* the last event ID buffer (the latest "id" field) */
        dynbuf last_id; /* the stream's last event ID (the buffer at the last event's end) */
        long retry_ms;  /* the latest "retry" field's value; -1: none */
        bool has_id, has_last_id;
        size_t event_bytes;  /* bytes of the pending event seen, line ends included */
        size_t event_max;    /* their bound */
        unsigned long count; /* events dispatched */
        bool has_data, has_name;
        bool after_cr; /* the last byte was '\r': a '\n' right after it ends nothing more */
        bool skipping; /* the current line is a comment: its bytes are not kept */
        int error;     /* sticky: the first error */
} sse_decoder;

/* An empty decoder whose events may be at most event_max bytes on the wire. Allocates nothing. */
void sse_init(sse_decoder *d, size_t event_max);

/* Free what the decoder holds; it is empty again (same bound). */
void sse_done(sse_decoder *d);

/* Decode n more bytes, calling h for each event they complete. Returns 0, -E2BIG when an event
 * is over the bound, -ENOMEM, or the handler's error; after an error nothing more is decoded and
 * the same error is returned again. */
int sse_feed(sse_decoder *d, const void *p, size_t n, sse_handler h, void *ud);

/* The end of the stream. Returns 0 when it ended cleanly (between events), 1 when an event (or a
 * line) was pending without the empty line that ends it (the SDKs drop it, and so does this:
 * the caller decides whether the stream was cut), or the sticky error. */
int sse_finish(sse_decoder *d);

/* The stream's last event ID so far (set at the end of an event that carried or followed an
 * "id" field), NUL-terminated; NULL when none. Valid until the next sse_feed or sse_done. */
const char *sse_last_id(const sse_decoder *d);
