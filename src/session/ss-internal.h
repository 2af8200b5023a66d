/* ss-internal.h: what the session core's files share: the manager and the session as they are,
 * and the helpers between the table (ss-table.c), the operations (ss-ops.c, ss-handles.c) and
 * the records (ss-record.c). Calls go one way: ss-ops.c and ss-table.c call ss-handles.c, which
 * calls ss-record.c (as ss-ops.c does); every file calls ss-base.c. Not a public interface. */
#pragma once

#include <pthread.h>

#include "dynbuf.h"
#include "hd-store.h"
#include "protojson.h"
#include "ss.h"

struct ss_session {
        ss_session *next;
        unsigned refs; /* the table's, plus one per thread using it */
        char id[PLIM_SESSION_ID_MAX + 1];
        char principal[SERVE_SHORT_STR_MAX];
        char owner[PLIM_OWNER_MAX + 1];
        char rule_id[REC_RULE_ID_SIZE];
        char environment[ENV_DESC_MAX]; /* what its records name as their environment */
        uint64_t opened_unix_ms, expires_unix_ms, expires_mono_ms;
        uint64_t idle_ms;
        uint64_t last_used_mono_ms;
        bool claimed;      /* a request named it since it opened */
        unsigned inflight; /* calls running or waiting */
        ss_end ended;
        char end_detail[PLIM_END_DETAIL_MAX];
        uint64_t ended_mono_ms;
        uint64_t calls_seen; /* the chain's count, readable under m->lock */
        pthread_mutex_t call;
        bool have_box;
        sbx_tier tier; /* SBX_TIER_CONTAINER or SBX_TIER_KERNEL */
        ss_box box;
        sbx_session sx;
        ss_chain chain;      /* under the call lock */
        json_t *call_record; /* the last record appended during the current call */
        char log_name[SERVE_SHORT_STR_MAX];
        rec_log_file log; /* log_name kept open, under the call lock */
        hd_store *store;  /* the session's handles; NULL without a store */
        int store_fd;
        char store_path[SBX_PATH_MAX];
        int net_log_fd;       /* the connection log the session keeps (a memfd), or -1 */
        uint64_t net_log_off; /* what ss_net_log_take handed out, under the call lock */
};

struct ss_manager {
        ss_config cfg;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        ss_session *head;
        unsigned opening;    /* ss_open calls between their admission and the table */
        bool stopping;       /* the reaper stops */
        bool stopping_opens; /* ss_shutdown was called: no more sessions open */
        bool reaper_running;
        pthread_t reaper;
        int audit_fd;                  /* -1: no audit logs */
        char stores_dir[SBX_PATH_MAX]; /* handles_dir/serve-PID, "" without handles */
        ss_session *grave;             /* sessions without references, to free outside the lock */
};

/* Workspace files as the sandbox user (see sbx_session_fs_enter). (ss-base.c) */
void ss_fs_enter(const ss_session *s);
void ss_fs_leave(void);

/* A line for the log (no-op without one). (ss-base.c) */
void ss_log(const ss_manager *m, dlog_level lvl, const char *fmt, ...) _printf_(3, 4);

/* Copy the store's files of the directory from_fd (regular files named <id>.json, .txt,
 * .sqlite, .bin and _manifest.json; no link followed, anything else left out) into to_fd, mode
 * 0444, replacing files of the same names. 0 or a negative errno.
 * (ss-handles.c) */
int ss_store_copy(int from_fd, int to_fd, hull_error *e);

/* After a call that had the exchange directory rel: adopt what the hull module saved, keep a
 * large emit as a handle, deliver publish requests as binary handles; notes (what happened, what
 * was refused) go to err, inline emits to out, the summaries of the handles made to the array made
 * (or NULL). The directory is removed when the call made it; when it did not (the common case)
 * this is one openat2 under the fs switch. (ss-handles.c) */
void ss_exchange_collect(ss_manager *m, ss_session *s, const char *rel, dynbuf *err, dynbuf *out, json_t *made);

/* Name the call's exchange directory when the session has a store; "" otherwise or on failure
 * (logged). Nothing is created: runtime/hull.py makes it on first use. rel has
 * HD_EXCHANGE_REL_SIZE bytes. (ss-handles.c) */
void ss_exchange_name(ss_manager *m, ss_session *s, char *rel);

/* Make and append the record of one of hull's operations (version 2 with result, or 3 with
 * unanswered set to a Connect code when result is NULL), chained; *ret_record (may be NULL) gets
 * a reference to it. Returns 0 or a negative errno with *e (the operation stands; it is only not
 * on the record). (ss-record.c) */
int ss_record_hull(ss_manager *m, ss_session *s, const char *operation, const json_t *request, const json_t *result,
                   const char *unanswered, uint64_t started_unix_ms, json_t **ret_record, hull_error *e);

/* ss_record_hull of a completed operation; a failure is logged (the operation stands). */
void ss_record_or_log(ss_manager *m, ss_session *s, const char *operation, const json_t *request, const json_t *result,
                      uint64_t started, json_t **ret_record);

/* Make and append the record of a cell run (plimsoll's cell kind, protocol 3), as ss_record_hull. */
int ss_record_cell(ss_manager *m, ss_session *s, const ss_cell_args *a, const ss_cell_output *o,
                   uint64_t started_unix_ms, json_t **ret_record, hull_error *e);
