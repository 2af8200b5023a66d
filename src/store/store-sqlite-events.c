/* store-sqlite-events.c: the SQLite backend's event log of each session (a sequence per session,
 * the next one read and written in the append's transaction) and each session's conversation. */
#include "store-sqlite-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"

static int last_seq(sqlt_store *s, const char *session_id, int64_t *ret, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_LAST_SEQ, "SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?1",
                                 &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

/* The events appended inside the caller's transaction; *ret_first the first one's seq. */
static int append_in_tx(sqlt_store *s, const char *session_id, json_t *const *events, size_t n, char **texts,
                        int64_t *ret_first, hull_error *e) {
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        int64_t seq;
        if ((r = last_seq(s, session_id, &seq, e)) < 0)
                return r;
        int64_t first = seq + 1;
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        r = sqlt_prep_cached(
                s, CACHED_EVENT_INSERT,
                "INSERT INTO events (session_id, seq, id, type, processed_ms, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &st, e);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                store_event_cols c;
                if ((r = store_read_event(events[i], i, &c, e)) < 0)
                        return r;
                _cleanup_free_ char *body = NULL;
                if ((r = store_dump(events[i], "an event", &body, e)) < 0)
                        return r;
                sqlite3_reset(st);
                int rc = sqlt_bind_text(st, 1, session_id);
                rc = rc ?: sqlite3_bind_int64(st, 2, first + (int64_t) i);
                rc = rc ?: sqlt_bind_text(st, 3, c.id);
                rc = rc ?: sqlt_bind_text(st, 4, c.type);
                rc = rc ?: (c.processed ? sqlite3_bind_int64(st, 5, c.processed_ms) : sqlite3_bind_null(st, 5));
                rc = rc ?: sqlt_bind_text(st, 6, body);
                if (rc)
                        return sqlt_bind_fail(s, rc, e);
                rc = sqlite3_step(st);
                if ((rc & 0xff) == SQLITE_CONSTRAINT)
                        return hull_fail(e, -EEXIST, "store: an event with id %s exists (nothing was appended)", c.id);
                if (rc != SQLITE_DONE)
                        return sqlt_fail(s->db, rc, "cannot append events", e);
                if (texts)
                        texts[i] = TAKE_PTR(body);
        }
        *ret_first = first;
        return 0;
}

static int conversation_put_locked(sqlt_store *s, const char *session_id, const char *body, hull_error *e);
static int conversation_append_locked(sqlt_store *s, const char *session_id, const char *tail, hull_error *e);

/* The events appended and, with c, the session object's update, in one transaction; with conv,
 * the conversation too, unless it cannot be (conv->result once committed: a conversation that
 * could not be written does not keep the events from being appended). */
static int append_tx(store *base, const char *session_id, json_t *const *events, size_t n, const store_cols *c,
                     const char *body, store_conv_write *conv, char **ret_texts, int64_t *ret_first_seq,
                     hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r, cr = 0;
        int64_t first = 0;
        _cleanup_tx_ sqlt_tx t = {0};
        if ((r = sqlt_tx_begin(s, &t, e)) == 0 &&
            (r = append_in_tx(s, session_id, events, n, ret_texts, &first, e)) == 0 &&
            (!c || (r = sqlt_update_locked(s, STORE_SESSION, c, body, e)) == 0) && conv) {
                hull_error ce = {0}; /* a failed statement is undone alone; the transaction goes on */
                cr = conv->append ? conversation_append_locked(s, session_id, conv->text, &ce)
                                  : conversation_put_locked(s, session_id, conv->text, &ce);
        }
        if (r < 0 || (r = sqlt_tx_commit(&t, e)) < 0) {
                for (size_t i = 0; ret_texts && i < n; i++) { /* nothing written: nothing given */
                        free(ret_texts[i]);
                        ret_texts[i] = NULL;
                }
                return r;
        }
        if (conv)
                conv->result = cr;
        if (ret_first_seq)
                *ret_first_seq = first;
        return 0;
}

int sqlt_events_append(store *base, const char *session_id, json_t *const *events, size_t n, int64_t *ret_first_seq,
                       hull_error *e) {
        return append_tx(base, session_id, events, n, NULL, NULL, NULL, NULL, ret_first_seq, e);
}

int sqlt_events_append_object(store *base, const char *session_id, json_t *const *events, size_t n, const store_cols *c,
                              const char *body, store_conv_write *conv, char **ret_texts, int64_t *ret_first_seq,
                              hull_error *e) {
        return append_tx(base, session_id, events, n, c, body, conv, ret_texts, ret_first_seq, e);
}

int sqlt_events_set_processed(store *base, const char *session_id, const char *event_id, const char *processed_at,
                              int64_t processed_ms, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_EVENT_PROCESSED,
                                 "UPDATE events SET processed_ms = ?3, body = json_set(body, '$.processed_at', ?4)"
                                 " WHERE session_id = ?1 AND id = ?2",
                                 &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        rc = rc ?: sqlt_bind_text(st, 2, event_id);
        rc = rc ?: sqlite3_bind_int64(st, 3, processed_ms);
        rc = rc ?: sqlt_bind_text(st, 4, processed_at);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot update an event", e)) < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
        return 0;
}

int sqlt_events_last_seq(store *base, const char *session_id, int64_t *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        return last_seq(s, session_id, ret, e);
}

int sqlt_events_seq_of(store *base, const char *session_id, const char *event_id, int64_t *ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = sqlt_prep(s, "SELECT seq FROM events WHERE session_id = ?1 AND id = ?2", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        rc = rc ?: sqlt_bind_text(st, 2, event_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return hull_fail(e, -ENOENT, "store: no event %s in session %s", event_id, session_id);
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read", e);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

/* ---- conversations ---- */

/* The conversation's upsert, in the caller's lock (and transaction, when it has one). */
static int conversation_put_locked(sqlt_store *s, const char *session_id, const char *body, hull_error *e) {
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_CONVERSATION_PUT,
                                 "INSERT INTO conversations (session_id, body) VALUES (?1, ?2)"
                                 " ON CONFLICT (session_id) DO UPDATE SET body = excluded.body",
                                 &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        rc = rc ?: sqlt_bind_text(st, 2, body);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        return sqlt_step_done(s, st, "cannot keep a conversation", e);
}

int sqlt_conversation_put(store *base, const char *session_id, const char *body, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r = sqlt_session_exists(s, session_id, e);
        return r < 0 ? r : conversation_put_locked(s, session_id, body, e);
}

int sqlt_conversation_get(store *base, const char *session_id, json_t **ret, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        int r;
        if ((r = sqlt_session_exists(s, session_id, e)) < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = sqlt_prep(s, "SELECT body FROM conversations WHERE session_id = ?1", &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret = NULL;
                return 0;
        }
        if (rc != SQLITE_ROW)
                return sqlt_fail(s->db, rc, "cannot read a conversation", e);
        _cleanup_stmt_ sqlite3_stmt *ps = NULL;
        r = sqlt_prep(s, "SELECT body FROM conversation_parts WHERE session_id = ?1 ORDER BY idx", &ps, e);
        if (r < 0)
                return r;
        if ((rc = sqlt_bind_text(ps, 1, session_id)))
                return sqlt_bind_fail(s, rc, e);
        rc = sqlite3_step(ps);
        if (rc == SQLITE_DONE) /* nothing appended since the last full text */
                return sqlt_load_column(st, 0, "a conversation", ret, e);
        /* the parts one run of ",message" texts (each part's text lives only until the next step) */
        _cleanup_dynbuf_ dynbuf parts;
        dynbuf_init(&parts, STORE_OBJECT_BYTES_MAX);
        for (; rc == SQLITE_ROW; rc = sqlite3_step(ps)) {
                int q = dynbuf_add(&parts, sqlite3_column_text(ps, 0), (size_t) sqlite3_column_bytes(ps, 0));
                if (q < 0)
                        return q == -ENOMEM ? hull_err(e, -ENOMEM, "store: out of memory")
                                            : hull_fail(e, -EBADMSG, "store: a kept conversation is too long");
        }
        if (rc != SQLITE_DONE)
                return sqlt_fail(s->db, rc, "cannot read a conversation", e);
        return store_conversation_join((const char *) sqlite3_column_text(st, 0), (size_t) sqlite3_column_bytes(st, 0),
                                       parts.buf ? parts.buf : "", parts.len, ret, e);
}

int sqlt_conversation_append(store *base, const char *session_id, const char *tail, hull_error *e) {
        sqlt_store *s = sqlt_of(base);
        LOCKED(s);
        return conversation_append_locked(s, session_id, tail, e);
}

/* The parts' insert, in the caller's lock (and transaction, when it has one). */
static int conversation_append_locked(sqlt_store *s, const char *session_id, const char *tail, hull_error *e) {
        /* cached: prepared once, not at each turn's end (its parse was ~2% of a turn's CPU) */
        _cleanup_(sqlt_stmt_resetp) sqlite3_stmt *st = NULL;
        int r = sqlt_prep_cached(s, CACHED_CONVERSATION_APPEND,
                                 "INSERT INTO conversation_parts (session_id, idx, body)"
                                 " SELECT session_id, 1 + (SELECT COALESCE(MAX(idx), 0) FROM conversation_parts"
                                 " WHERE session_id = ?1), ?2 FROM conversations WHERE session_id = ?1",
                                 &st, e);
        if (r < 0)
                return r;
        int rc = sqlt_bind_text(st, 1, session_id);
        rc = rc ?: sqlt_bind_text(st, 2, tail);
        if (rc)
                return sqlt_bind_fail(s, rc, e);
        if ((r = sqlt_step_done(s, st, "cannot add to a conversation", e)) < 0)
                return r;
        return sqlite3_changes(s->db) == 0
                       ? hull_fail(e, -ENOENT, "store: session %s keeps no conversation", session_id)
                       : 0;
}
