/* tool-run.h: one tool call, run the one way hull runs them, for the agent loop (agent.c) and hull
 * mcp's server (src/mcp/mcp-server.c). tool_run_validate checks the arguments against the tool's
 * schema; tool_run_call then runs the call: the session claimed (ss_call_begin) for a tool that
 * needs it, a watcher (watch.h) that turns the interrupt, the deadline and the caller's own stop
 * into the tool's cancel fd and reports progress to the caller's sink, the tool run, a failure
 * worded for the reader, the result shaped by the spill middleware (spill.h: big results become
 * handles), a read-only call put on the session's record (ss_record_read_only) when the caller
 * asks, and the claim released. The caller announces and answers the call its own way. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "spill.h"
#include "tool.h"

/* What a call answers when its result could not be kept (out of memory). */
#define TOOL_RUN_LOST_TEXT "(the result was lost: out of memory)"

/* How a tool's own progress notes (tool_ctx.progress) reach the reports. */
typedef enum tool_run_notes {
        /* A note goes with one report: at once when one is due, else (at most BUS_NOTE_MAX bytes)
         * with the next tick's (the agent loop's hull.tool_progress). */
        TOOL_RUN_NOTE_NEXT,
        /* The last note goes with every report after it (hull mcp's notifications/progress). */
        TOOL_RUN_NOTE_KEEP,
} tool_run_notes;

/* The caller's side of one call. Everything is borrowed for the call. */
typedef struct tool_run_ctx {
        ss_manager *ss;
        ss_session *session;          /* for a tool with needs_session; NULL: such a tool gets an error result */
        const atomic_bool *interrupt; /* set (by another thread): the call ends; NULL: never */
        uint64_t deadline_mono_ms;    /* a bound over the tool's own timeout (a turn's wall clock); 0: none */
        uint64_t spill_bytes;         /* spill_shape's threshold; 0: AGENT_SPILL_BYTES_DEFAULT */
        /* A watch the caller keeps across its calls (watch_init'd; one call at a time): its thread
         * and fd serve this call. NULL: a watch is made for this call alone. */
        struct watch *watch;
        const char *who;     /* the caller in its own failures' words: "agent", "mcp" */
        const char *stopped; /* a call the interrupt ended "was <stopped>": "interrupted", "cancelled" */
        bool take_net_log;   /* the session's connections during the call into res->net_log */
        bool record;         /* a read-only tool's call (tool_def.record_kind) goes on the record */
        /* Asked every watch tick (without the lock): true ends the call as the interrupt does (the
         * caller sets its interrupt too, for the wording). NULL: never. */
        bool (*should_fire)(void *ud);
        /* Told the call's cancel fd once the watch has it, and -1 before it closes: another thread
         * may write to it to end the call. NULL: not told. */
        void (*cancel_fd)(void *ud, int fd);
        /* For the record (record): did the reader cancel the call? It is then recorded as not
         * answered ("canceled"). NULL: never. */
        bool (*cancelled)(void *ud);
        /* Progress: at most one report every progress_ms (elapsed: since the call started; note:
         * the tool's, or NULL). Called from the watch thread or the tool's, never two at once.
         * Returns whether it reported (false: the next is due as if none was). NULL: none. */
        bool (*progress)(void *ud, uint64_t elapsed_ms, const char *note);
        uint64_t progress_ms;
        tool_run_notes notes;
        void *ud;
        /* Called after a tool that needs the session ran, while the call still holds it, with the
         * result the reader will see (it may add to res->text). NULL: none. */
        void (*after)(void *after_ud, ss_manager *ss, ss_session *s, call_result *res);
        void *after_ud;
} tool_run_ctx;

/* What tool_run_call did about the record. */
typedef struct tool_run_record {
        bool made;      /* the call went on the record (or failed to: error) */
        bool cancelled; /* ... as cancelled by the reader: it is not to be answered */
        int error;      /* 0, or the negative errno of a record that could not be made, with e */
        hull_error e;
} tool_run_record;

/* The deadline of a call of d, in ms: its timeout_ms, or AGENT_TOOL_TIMEOUT_MS. */
uint64_t tool_run_timeout(const tool_def *d);

/* Check input against schema (the tool's input_schema, parsed; where: the input's name in the
 * problems, "input" or "arguments"). Returns 0 when it matches, or -EINVAL with *res an error
 * result for the reader ("invalid arguments for NAME; it did not run:" and the problems). */
int tool_run_validate(const json_t *schema, const json_t *input, const char *where, const char *name, call_result *res);

/* Run a call of d (not a client tool) with input (validated). *res (zeroed by the caller; freed
 * with call_result_done) gets what the reader sees: the shaped result, or an error result saying
 * why the call could not run, was interrupted, timed out or failed. *ret_record (or NULL) says
 * what became of the record. */
void tool_run_call(const tool_run_ctx *c, const tool_def *d, const json_t *input, call_result *res,
                   tool_run_record *ret_record);
