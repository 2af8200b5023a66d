/* plimsoll.h: the plimsoll sandbox protocol 3 as hull serve speaks it (Connect, unary, JSON):
 * procedure routing, the request-ID rule, Connect errors with NotDispatched details, parsing and
 * bounding of Run requests, the protocol gate, the floor and software-rule checks, the broker
 * plan of a run, and the Describe and Run answers with their v2 run records. Pure: bytes in,
 * structures and bytes out, no I/O (see shared/reference/plimsoll-protocol.md). Three files:
 * plimsoll.c (errors, routing, IDs, the protobuf writer), plimsoll-parse.c (requests, admission,
 * the plan), plimsoll-answer.c (answers, records, the chain). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker-msg.h"
#include "limits.h"
#include "macro.h"
#include "protojson.h"
#include "sbx-record.h"

#define PLIM_PROTOCOL 3U
#define PLIM_SERVICE_PATH "/plimsoll.v1.SandboxService/"
#define PLIM_REQUEST_ID_HEADER "Plimsoll-Request-Id"
#define PLIM_NOT_DISPATCHED_HEADER "Plimsoll-Not-Dispatched"
#define PLIM_REQUEST_ID_LEN 32U

/* Connect error codes. */
typedef enum plim_code {
        PLIM_CODE_CANCELED,
        PLIM_CODE_UNKNOWN,
        PLIM_CODE_INVALID_ARGUMENT,
        PLIM_CODE_DEADLINE_EXCEEDED,
        PLIM_CODE_NOT_FOUND,
        PLIM_CODE_ALREADY_EXISTS,
        PLIM_CODE_PERMISSION_DENIED,
        PLIM_CODE_RESOURCE_EXHAUSTED,
        PLIM_CODE_FAILED_PRECONDITION,
        PLIM_CODE_ABORTED,
        PLIM_CODE_OUT_OF_RANGE,
        PLIM_CODE_UNIMPLEMENTED,
        PLIM_CODE_INTERNAL,
        PLIM_CODE_UNAVAILABLE,
        PLIM_CODE_DATA_LOSS,
        PLIM_CODE_UNAUTHENTICATED,
        _PLIM_CODE_MAX,
} plim_code;

/* NotDispatched reasons (the proto's enum values). NONE: the error may follow execution. */
typedef enum plim_reason {
        PLIM_REASON_NONE = 0,
        PLIM_REASON_REQUEST = 1,
        PLIM_REASON_PERMISSION = 2,
        PLIM_REASON_PROTOCOL = 3,
        PLIM_REASON_UNSUPPORTED = 4,
        PLIM_REASON_ISOLATION = 5,
        PLIM_REASON_CAPACITY = 6,
        PLIM_REASON_ENVIRONMENT = 7,
        _PLIM_REASON_MAX,
} plim_reason;

/* Why a session ended (the proto's enum SessionEnd); UNSPECIFIED: it is open. */
typedef enum plim_session_end {
        PLIM_SESSION_END_UNSPECIFIED = 0,
        PLIM_SESSION_END_CLOSED = 1,
        PLIM_SESSION_END_EXPIRED = 2,
        PLIM_SESSION_END_DISK_EXCEEDED = 3,
        PLIM_SESSION_END_MAIN_PROCESS_ENDED = 4,
        PLIM_SESSION_END_BOUNDARY_FAILED = 5,
        PLIM_SESSION_END_SANDBOX_CHANGED = 6,
        PLIM_SESSION_END_SHUTDOWN = 7,
        PLIM_SESSION_END_REPLACED = 8,
        PLIM_SESSION_END_NOT_FOUND = 9,
        PLIM_SESSION_END_UNCLAIMED = 10,
        _PLIM_SESSION_END_MAX,
} plim_session_end;

/* "SESSION_END_CLOSED", ...; "SESSION_END_UNSPECIFIED" for anything out of range. */
const char *plim_session_end_to_string(plim_session_end e);

/* A refusal or failure as the client will read it. The fields after message are further error
 * details; plim_fail() clears them, so a plim_error is always whole after it. */
typedef struct plim_error {
        plim_code code;
        plim_reason reason;
        bool before_handler; /* the body could not be read as a message at all */
        char message[HULL_ERROR_MSG_MAX];
        plim_session_end session_end;                 /* not UNSPECIFIED: a SessionEnded detail */
        char session_end_detail[PLIM_END_DETAIL_MAX]; /* its detail string */
        char unanswered[PLIM_UNANSWERED_DETAIL_MAX];  /* base64 (unpadded) of an UnansweredCall, "" none */
} plim_error;

/* Fill *f and return -1, so `return plim_fail(f, ...)` refuses in one step. */
int plim_fail(plim_error *f, plim_code code, plim_reason reason, const char *fmt, ...) _printf_(4, 5);

/* Add a plimsoll.v1.SessionEnded {reason, detail} detail to *f (detail may be NULL; cut at
 * PLIM_END_DETAIL_MAX - 1 bytes on a UTF-8 boundary). */
void plim_error_session_ended(plim_error *f, plim_session_end end, const char *detail);

/* The refusal of a call naming no session this caller has: not_found + NotDispatched(request) +
 * SessionEnded NOT_FOUND. The ID is never repeated in the message (it is a capability).
 * Returns -1. */
int plim_fail_session_not_found(plim_error *f);

/* The refusal of a call on a session that has ended: failed_precondition +
 * NotDispatched(request) + SessionEnded {end, detail}. Returns -1. */
int plim_fail_session_ended(plim_error *f, plim_session_end end, const char *detail);

const char *plim_code_to_string(plim_code c);     /* "invalid_argument" */
unsigned plim_code_http_status(plim_code c);      /* Connect's mapping: 400, 401, ... */
const char *plim_reason_to_string(plim_reason r); /* "request", ...; "" for NONE */

/* The Connect error body: {"code","message","details":[...]}: NotDispatched when there is a
 * reason, then SessionEnded, then UnansweredCall when *f carries them; no "details" without any.
 * Returns 0 with a new NUL-terminated buffer (the caller frees) or -ENOMEM. */
int plim_error_json(const plim_error *f, char **ret, size_t *ret_len);

/* True when path[0..len) is "" or clean "/segment"s (none empty, "." or ".."): the base-URL
 * prefix a route may have (shared with hullapi.c). */
bool plim_path_prefix_is_clean(const char *path, size_t len);

/* True when s is exactly 32 lowercase hex digits: only such an ID is echoed. */
bool plim_request_id_is_valid(const char *s);

typedef enum plim_procedure {
        PLIM_PROC_NONE,    /* not under the service path at all */
        PLIM_PROC_UNKNOWN, /* under it, but not a procedure this daemon knows */
        PLIM_PROC_DESCRIBE,
        PLIM_PROC_RUN,
        PLIM_PROC_OPEN_SESSION,
        PLIM_PROC_SESSION_RUN,
        PLIM_PROC_CLOSE_SESSION,
} plim_procedure;

/* The procedure a URL path names: "{prefix}/plimsoll.v1.SandboxService/{Method}", exactly, where
 * the prefix is "" or clean "/segment"s (none empty, "." or ".."): NONE otherwise; UNKNOWN when
 * the method is not one this daemon knows. */
plim_procedure plim_procedure_from_path(const char *path);
const char *plim_procedure_to_string(plim_procedure p);

/* True for "application/json", any case, optionally followed by ";" and parameters. */
bool plim_content_type_is_json(const char *content_type);

typedef enum plim_kind {
        PLIM_KIND_NONE,
        PLIM_KIND_JAVASCRIPT,
        PLIM_KIND_PROJECT,
        PLIM_KIND_MODULE,
        PLIM_KIND_CELL,
} plim_kind;

const char *plim_kind_to_string(plim_kind k); /* "javascript", ...; "" for NONE */

typedef struct plim_file {
        const char *path, *content; /* content may hold NULs */
        size_t content_len;
} plim_file;

/* A parsed Run or SessionRun request. Strings point into root, which the request owns. */
typedef struct plim_request {
        json_t *root;
        uint32_t protocol;
        const char *minimum_isolation; /* raw, "" when absent */
        const char *trace_id;          /* NULL when absent or dropped */
        bool trace_id_dropped;         /* one was sent and did not match [A-Za-z0-9._:-]{1,64} */
        int32_t timeout_ms;            /* raw, as sent */
        uint32_t effective_timeout_ms; /* defaulted and clamped */
        bool has_software_rule;        /* a non-empty rule was sent */
        const char *session_id;        /* SessionRun: 1 to PLIM_SESSION_ID_MAX of [0-9a-f]; NULL for Run */
        plim_kind kind;
        const char *cell_language; /* cell: "python" or "javascript" */
        const char *code;          /* javascript or cell */
        size_t code_len;
        const char *grant_profile; /* javascript or project; "" when absent */
        plim_file *files;          /* project or cell */
        size_t n_files;
        const char **steps;
        size_t n_steps;
        const char **artifacts;
        size_t n_artifacts;
        char request_sha256[REC_DIGEST_HEX_SIZE]; /* the record's digest of the request */
        char software_rule_id[REC_RULE_ID_SIZE];  /* the record's softwareRuleId */
        /* Run: hull's extension hullEnvironment, a `hull env` name ([a-z0-9._-], 1 to ENV_NAME_MAX - 1
         * bytes); "" when absent and always for SessionRun. Not plimsoll's: the parser takes it out
         * of root, so the record (its digests) is the plimsoll request's. */
        char environment[ENV_NAME_MAX];
} plim_request;

/* Parse and bound a Run request body: strict JSON (duplicate keys refused), at most
 * PLIM_JSON_DEPTH_MAX deep with at most PLIM_JSON_VALUES_MAX values (both counted before
 * parsing), the protocol gate first (missing: invalid_argument + protocol,
 * another number: unimplemented + protocol, both before the payload is read), then every
 * field against the limits; a module payload is unimplemented + unsupported and a cell is
 * invalid_argument + request. Unknown fields, at any level, and a sessionId are invalid_argument
 * + request; so is a request whose record digests cannot be made (they are made here, before
 * anything runs, and kept in *ret). Returns 0 with *ret (free with plim_request_done) or -1 with *f. */
int plim_run_parse(const char *body, size_t len, plim_request *ret, plim_error *f);
void plim_request_done(plim_request *r);

/* For the session procedures on a daemon that serves no sessions: a JSON object, the protocol
 * gate, then unimplemented + unsupported. Always returns -1 with *f. */
int plim_session_refuse(const char *body, size_t len, plim_procedure p, plim_error *f);

/* Parse a SessionRunRequest: everything plim_run_parse() does for the envelope (prescan, strict
 * JSON, the protocol gate first, unknown fields refused, floor, traceId, timeoutMs, softwareRule,
 * the digests), plus sessionId and exactly one of javascript, project or cell (module:
 * unimplemented + unsupported). A missing or empty sessionId, or one that is not a string, is
 * invalid_argument + request; a string that is not 1 to PLIM_SESSION_ID_MAX of [0-9a-f] names
 * no session: plim_fail_session_not_found(). A cell has language "python" or "javascript", code
 * (1 byte to PLIM_CODE_MAX, no NUL) and files (the project's file rules). request_sha256 is the
 * plimsoll.run-request.v2 digest of the message, sessionId and traceId not hashed. Returns 0 with
 * *ret (free with plim_request_done) or -1 with *f. */
int plim_session_run_parse(const char *body, size_t len, plim_request *ret, plim_error *f);

/* A parsed OpenSessionRequest; strings point into root, which it owns. */
typedef struct plim_open_request {
        json_t *root;
        uint32_t protocol;
        const char *minimum_isolation; /* raw, "" when absent */
        const char *trace_id;          /* NULL when absent or dropped */
        bool trace_id_dropped;
        uint32_t lifetime_ms;     /* 0: the daemon's default; may only shorten it */
        uint32_t idle_timeout_ms; /* 0: the daemon's default; may only shorten it */
        bool has_software_rule;
        char software_rule_id[REC_RULE_ID_SIZE]; /* every call of the session must carry this rule */
        bool python, javascript;                 /* languages[]: the warm-pool hint */
        const char *owner;                       /* "" when absent */
        const char *environment;                 /* hull's extension hullEnvironment: a `hull env` name, "" when
                                                  * absent ([a-z0-9._-], 1 to ENV_NAME_MAX - 1 bytes) */
} plim_open_request;

/* Parse an OpenSessionRequest with the bounds and order of plim_run_parse(): the protocol gate,
 * unknown fields, floor, traceId, lifetimeMs and idleTimeoutMs (uint32), softwareRule (the Run
 * rules), languages[] (at most PLIM_LANGUAGES_MAX of "python"/"javascript", no repeat), owner
 * ([A-Za-z0-9._:-]{1,PLIM_OWNER_MAX}), hull's extension hullEnvironment (an environment's
 * name); a bad value is invalid_argument + request. Returns 0 with
 * *ret (free with plim_open_request_done) or -1 with *f. */
int plim_open_parse(const char *body, size_t len, plim_open_request *ret, plim_error *f);
void plim_open_request_done(plim_open_request *r);

/* Parse a CloseSessionRequest {protocol, sessionId}: the protocol gate, unknown fields, the
 * sessionId rules of plim_session_run_parse(). Returns 0 with the ID in ret_session_id, or -1
 * with *f. */
int plim_close_parse(const char *body, size_t len, char ret_session_id[PLIM_SESSION_ID_MAX + 1], plim_error *f);

/* For Describe: the body must be empty or a JSON object of at most PLIM_DESCRIBE_BODY_MAX bytes
 * (a longer one is refused unparsed) with the rules of the other procedures: a `protocol` it
 * states passes the protocol gate (absent is fine: Describe is where a client learns it), any
 * other field is unknown (invalid_argument + request). Returns 0 or -1 with *f. */
int plim_describe_parse(const char *body, size_t len, plim_error *f);

/* What this daemon states about itself and checks requests against. */
typedef struct plim_evidence {
        const char *sandbox;   /* provider name: "hull" */
        const char *isolation; /* the highest tier of single runs: "kernel" or "container" */
        bool javascript;       /* /usr/bin/node exists on the host */
        bool python;           /* /usr/bin/python3 exists on the host */
        uint64_t memory_bytes; /* per run */
        uint64_t pids;
        /* The tier sessions get (NULL: isolation); the kernel tier's provider evidence, "gVisor
         * runsc VERSION, platform P" (NULL: no kernel tier; isolation is "kernel" only when runsc
         * passed its self-check at start); per call, the record's policy (a kernel run's
         * evidence; NULL: ""). */
        const char *session_isolation;
        const char *kernel_evidence;
        const char *kernel_platform; /* the runsc platform the check chose (NULL or "": runsc's default) */
        const char *policy;
        /* Sessions: Describe states supportsSessions and these only when sessions is true. */
        bool sessions;
        bool session_python, session_javascript; /* the languages a cell may use */
        uint64_t session_lifetime_ms, session_idle_timeout_ms;
        uint32_t max_sessions_per_caller, max_sessions_per_owner; /* 0: not stated */
        /* Sessions of the kernel tier can be opened (runsc is there and hull runs as root): an
         * OpenSession whose floor is "kernel" gets one gVisor sandbox (sbx_session_start). */
        bool kernel_sessions;
        /* RunResponse.environment and RunRecord.environment: a hullEnvironment's description
         * (env_describe), set on a per-call copy; NULL: "". */
        const char *environment;
} plim_evidence;

/* Check a parsed request against this daemon: the floor against our tier (failed_precondition
 * + isolation), a software rule (failed_precondition + environment: hull states no software
 * identity, so no rule can be met), a grant profile (permission_denied + permission), and the
 * engine a payload needs (unimplemented + unsupported; a cell needs its language among the
 * session languages). Returns 0 or -1 with *f. */
int plim_run_admit(const plim_request *r, const plim_evidence *ev, plim_error *f);

/* The same checks for an OpenSessionRequest, after sessions themselves (none: unimplemented +
 * unsupported). Returns 0 or -1 with *f. */
int plim_open_admit(const plim_open_request *r, const plim_evidence *ev, plim_error *f);

/* An admitted OpenSessionRequest gets a kernel-tier session (one gVisor sandbox): its floor is
 * "kernel" (or the sessions' tier is) and ev->kernel_sessions. */
bool plim_open_kernel(const plim_open_request *r, const plim_evidence *ev);

/* argv of a node waiting on its stdin for a javascript run's code (see plimsoll-parse.c). */
extern const char *const plim_js_warm_argv[];

/* The broker request for an admitted run: javascript writes main.mjs and runs
 * `/usr/bin/node main.mjs`; a project writes its files and runs each step as `sh -c STEP`,
 * stopping at the first failing one. Strings are borrowed from r; free with plim_plan_done (which
 * also frees the plan's own layer_dir and net_hosts, the caller's, set after plim_plan).
 * Returns 0 or -ENOMEM. */
int plim_plan(const plim_request *r, const plim_evidence *ev, sbx_plan *ret);
void plim_plan_done(sbx_plan *p);

/* The tier a single run r gets on this daemon: "kernel" when it asks for that floor (admission
 * has checked the daemon offers it), else "container" (the faster start) unless the daemon
 * offers nothing stronger than a weaker tier. */
const char *plim_run_tier(const plim_request *r, const plim_evidence *ev);

/* The tier sessions get: ev->session_isolation, or ev->isolation. */
const char *plim_session_tier(const plim_evidence *ev);

/* The DescribeResponse. Returns 0 with a new buffer or -ENOMEM. */
int plim_describe_json(const plim_evidence *ev, char **ret, size_t *ret_len);

/* The RunResponse for a run the broker carried out (outcome completed, timed out or setup
 * failed), with its version 2 record (request, result and record digests, empty session
 * fields). A result that is not an answer (not started, cancelled, an infrastructure error)
 * becomes an error: -1 with *f (a NotDispatched reason only when nothing ran). Returns 0 with
 * *ret (JSON, the caller frees), -1 with *f, or -ENOMEM. */
int plim_run_answer(const plim_request *r, const sbx_plan_result *res, const plim_evidence *ev,
                    uint64_t received_unix_ms, uint64_t ended_unix_ms, char **ret, size_t *ret_len, plim_error *f);

/* ---- sessions: answers, records and the chain ---- */

/* Where a session's chain stands: the fingerprint, the calls recorded, the last record digest
 * ("" before the first call). The caller keeps one per session and advances it with every
 * record an answer or an UnansweredCall hands back. */
typedef struct plim_chain {
        char session[REC_DIGEST_HEX_SIZE];
        uint64_t calls;
        char last_sha256[REC_DIGEST_HEX_SIZE];
} plim_chain;

/* Start the chain of session_id (its fingerprint, no calls). Returns 0, -EINVAL (not a
 * sessionId plim_session_run_parse() would accept) or -ENOMEM/-EIO. */
int plim_chain_init(plim_chain *c, const char *session_id);

/* The record of one session call, for the audit log: rec_log_entry_new(record, request, result).
 * Each json_t is the caller's after success; free all with plim_call_record_done. */
typedef struct plim_call_record {
        char record_sha256[REC_DIGEST_HEX_SIZE];
        uint64_t sequence; /* the call's number, from 1 */
        json_t *record;    /* the RunRecord (version 2, or 3 for an unanswered call) */
        json_t *request;   /* the request as received (its sessionId is dropped by rec_log_entry_new) */
        json_t *result;    /* {"<kind>": {...}}; NULL for a version 3 record */
} plim_call_record;
void plim_call_record_done(plim_call_record *c);

/* Count the call c records: calls = its sequence, last_sha256 = its digest. */
void plim_chain_advance(plim_chain *chain, const plim_call_record *c);

/* The OpenSessionResponse {sessionId, session (the fingerprint), sandbox, isolation,
 * expiresUnixMs (string), idleTimeoutMs, softwareIdentity}. Returns 0 with *ret (JSON, the
 * caller frees), -EINVAL (a malformed session_id) or -ENOMEM. */
int plim_open_answer(const char *session_id, const plim_evidence *ev, uint64_t expires_unix_ms,
                     uint32_t idle_timeout_ms, char **ret, size_t *ret_len);

/* What a cell did (exit code 0 ran, 1 raised, 124 deadline). */
typedef struct plim_cell_result {
        int exit_code;
        bool timed_out;
        const char *out, *err; /* raw bytes */
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
        bool interpreter_started; /* the interpreter was fresh for this cell */
        bool interpreter_ended;   /* it is gone after this cell */
        uint64_t wall_us;
        const char *net_log; /* hull's extension: connection log lines (sbx_plan_result's); NULL none */
        size_t net_log_len;
} plim_cell_result;

/* The SessionRunResponse {"run": RunResponse, "ended", "endDetail"} ("ended" and "endDetail"
 * only when ended is not UNSPECIFIED) for the call r, from res (javascript, project: as
 * plim_run_answer) or cell (a cell). Its record is version 2 and chained: session = the chain's
 * fingerprint, sequence = chain->calls + 1, previousSha256 = chain->last_sha256. A sbx_plan_result
 * that is not an answer is -1 with *f as in plim_run_answer; when f->reason is NONE the call may
 * have run, and the caller answers with plim_unanswered_error(). Returns 0 with *ret (JSON, the
 * caller frees) and *ret_record (advance the chain with it), -1 with *f, or -ENOMEM. */
int plim_session_run_answer(const plim_request *r, const sbx_plan_result *res, const plim_cell_result *cell,
                            const plim_evidence *ev, const plim_chain *chain, uint64_t received_unix_ms,
                            uint64_t ended_unix_ms, plim_session_end ended, const char *end_detail, char **ret,
                            size_t *ret_len, plim_call_record *ret_record, plim_error *f);

/* Turn *f (a failure without a NotDispatched reason: the call may have run, e.g. internal or
 * deadline_exceeded, set with plim_fail) into the answer of a session call that is counted: add
 * a plimsoll.v1.UnansweredCall {record = 1} detail holding the version 3 record of r (no
 * resultSha256, unanswered = f's Connect code) chained as plim_session_run_answer() does.
 * Returns 0 with *ret_record (advance the chain with it), -EINVAL (f carries a reason: nothing
 * ran, nothing is counted), -ENOBUFS (the record does not fit PLIM_UNANSWERED_DETAIL_MAX) or
 * -ENOMEM. */
int plim_unanswered_error(const plim_request *r, const plim_evidence *ev, const plim_chain *chain,
                          uint64_t received_unix_ms, uint64_t ended_unix_ms, plim_error *f,
                          plim_call_record *ret_record);

/* The CloseSessionResponse {session, calls (string), lastRecordSha256, ended}. Returns 0 with
 * *ret or -ENOMEM. */
int plim_close_answer(const char *fingerprint, uint64_t calls, const char *last_record_sha256, plim_session_end ended,
                      char **ret, size_t *ret_len);

/* ---- the protobuf of the binary error details (pure, bounded) ---- */

/* A protobuf writer into a fixed buffer; errors are sticky (-ENOBUFS). Proto3: a varint field of
 * 0 and an empty length-delimited field are not written. */
typedef struct plim_pb {
        uint8_t *buf;
        size_t size, len;
        int err;
} plim_pb;

void plim_pb_init(plim_pb *b, uint8_t *buf, size_t size);
void plim_pb_varint(plim_pb *b, uint32_t field, uint64_t v);             /* wire type 0 */
void plim_pb_bytes(plim_pb *b, uint32_t field, const void *p, size_t n); /* wire type 2 */
void plim_pb_string(plim_pb *b, uint32_t field, const char *s);

/* A RunRecord's fields (sbx-record.h's). */
typedef rec_record plim_record;

/* Add a plimsoll.v1.UnansweredCall {record = 1} detail holding v to *f. Returns 0 or -ENOBUFS
 * (the record does not fit PLIM_UNANSWERED_DETAIL_MAX). */
int plim_error_unanswered(plim_error *f, const plim_record *v);

/* The fields of a RunRecord as hull writes it (JSON; 64-bit integers as strings), borrowed from
 * rec. Returns 0 or -EINVAL (not a record). */
int plim_record_from_json(const json_t *rec, plim_record *ret);

/* Encode a RunRecord (field numbers as in the reference's table) into b. */
void plim_pb_run_record(plim_pb *b, const plim_record *r);

/* ---- JSON helpers shared with hullapi.c (Connect/ProtoJSON conventions) ---- */

/* The body as a JSON object: at most SERVE_BODY_MAX bytes, prescanned (PLIM_JSON_DEPTH_MAX,
 * PLIM_JSON_VALUES_MAX), strict (duplicate keys refused, \u0000 allowed). Returns 0 with *ret
 * (the caller's) or -1 with *f (before_handler set). */
int plim_body_parse(const char *body, size_t len, json_t **ret, plim_error *f);

/* Refuse (invalid_argument + request) any field of o not among names. where names o. */
int plim_only_fields(const json_t *o, const char *where, const char *const *names, size_t n, plim_error *f);

/* A string field by either spelling (null: absent → "" and 0). Over max bytes is refused;
 * with ret_len NULL a NUL inside is refused too. Returns 0 or -1 with *f. */
int plim_get_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max,
                    const char **ret, size_t *ret_len, plim_error *f);

/* An integer field (a JSON integer or a decimal string) within [min, max]; absent: 0. */
int plim_get_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
                 int64_t *ret, plim_error *f);

/* An unsigned 64-bit integer field (a JSON integer or a decimal string); absent: 0. */
int plim_get_uint64(const json_t *o, const char *camel, const char *snake, uint64_t *ret, plim_error *f);

/* A boolean field; absent: false. */
int plim_get_bool(const json_t *o, const char *camel, const char *snake, bool *ret, plim_error *f);

/* The sessionId field of a session request: missing, empty or not a string is invalid_argument
 * + request; a string that is not 1 to PLIM_SESSION_ID_MAX of [0-9a-f] is
 * plim_fail_session_not_found(). Returns 0 with *ret (borrowed from o) or -1 with *f. */
int plim_get_session_id(const json_t *o, const char **ret, plim_error *f);

/* A bytes field: standard or URL-safe base64, padded or not (no whitespace, no garbage). Decoded
 * into a new buffer (the caller frees; NUL-terminated, not counted) of at most max bytes. Absent:
 * *ret = NULL, *ret_len = 0. Returns 0 or -1 with *f (invalid_argument + request). */
int plim_get_bytes(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, void **ret,
                   size_t *ret_len, plim_error *f);

/* New JSON values: standard padded base64 of bytes, an int64 as a decimal string. NULL on
 * failure. (src/shared/protojson's writers.) */
static inline json_t *plim_json_base64(const void *p, size_t n) {
        return pj_new_bytes(p, n);
}
static inline json_t *plim_json_int64_string(int64_t v) {
        return pj_new_int64(v);
}
static inline json_t *plim_json_uint64_string(uint64_t v) {
        return pj_new_uint64(v);
}

/* json_dumps(o) compactly, then json_decref(o) (o may be NULL: -ENOMEM). */
int plim_json_dump(json_t *o, char **ret, size_t *ret_len);
