/* plimsoll.h: the plimsoll sandbox protocol 3 as hull serve speaks it (Connect, unary, JSON):
 * procedure routing, the request-ID rule, Connect errors with NotDispatched details, parsing and
 * bounding of Run requests, the protocol gate, the floor and software-rule checks, the broker
 * plan of a run, and the Describe and Run answers with their v2 run records. Pure: bytes in,
 * structures and bytes out, no I/O (see shared/reference/plimsoll-protocol.md). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker-msg.h"
#include "limits.h"
#include "macro.h"
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

/* A refusal or failure as the client will read it. */
typedef struct plim_error {
        plim_code code;
        plim_reason reason;
        bool before_handler; /* the body could not be read as a message at all */
        char message[HULL_ERROR_MSG_MAX];
} plim_error;

/* Fill *f and return -1, so `return plim_fail(f, ...)` refuses in one step. */
int plim_fail(plim_error *f, plim_code code, plim_reason reason, const char *fmt, ...) _printf_(4, 5);

const char *plim_code_to_string(plim_code c);     /* "invalid_argument" */
unsigned plim_code_http_status(plim_code c);      /* Connect's mapping: 400, 401, ... */
const char *plim_reason_to_string(plim_reason r); /* "request", ...; "" for NONE */

/* The Connect error body: {"code","message","details":[NotDispatched]} (details only with a
 * reason). Returns 0 with a new NUL-terminated buffer (the caller frees) or -ENOMEM. */
int plim_error_json(const plim_error *f, char **ret, size_t *ret_len);

/* True when s is exactly 32 lowercase hex digits: only such an ID is echoed. */
bool plim_request_id_is_valid(const char *s);

typedef enum plim_procedure {
        PLIM_PROC_NONE,        /* not under the service path at all */
        PLIM_PROC_UNKNOWN,     /* under it, but not a procedure this daemon knows */
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

/* A parsed Run request. Strings point into root, which the request owns. */
typedef struct plim_request {
        json_t *root;
        uint32_t protocol;
        const char *minimum_isolation; /* raw, "" when absent */
        const char *trace_id;          /* NULL when absent or dropped */
        bool trace_id_dropped;         /* one was sent and did not match [A-Za-z0-9._:-]{1,64} */
        int32_t timeout_ms;            /* raw, as sent */
        uint32_t effective_timeout_ms; /* defaulted and clamped */
        bool has_software_rule;        /* a non-empty rule was sent */
        plim_kind kind;
        const char *code;              /* javascript */
        size_t code_len;
        const char *grant_profile;     /* javascript or project; "" when absent */
        plim_file *files;              /* project */
        size_t n_files;
        const char **steps;
        size_t n_steps;
        const char **artifacts;
        size_t n_artifacts;
        char request_sha256[REC_DIGEST_HEX_SIZE];  /* the record's digest of the request */
        char software_rule_id[REC_RULE_ID_SIZE];   /* the record's softwareRuleId */
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

/* For the session procedures, which this daemon does not serve yet: a JSON object, the protocol
 * gate, then unimplemented + unsupported. Always returns -1 with *f. */
int plim_session_refuse(const char *body, size_t len, plim_procedure p, plim_error *f);

/* For Describe: the body must be a JSON object (or empty) of at most PLIM_DESCRIBE_BODY_MAX
 * bytes (a longer one is refused unparsed). Returns 0 or -1 with *f. */
int plim_describe_parse(const char *body, size_t len, plim_error *f);

/* What this daemon states about itself and checks requests against. */
typedef struct plim_evidence {
        const char *sandbox;   /* provider name: "hull" */
        const char *isolation; /* the tier every run gets: "container" */
        bool javascript;       /* /usr/bin/node exists on the host */
        bool python;           /* /usr/bin/python3 exists on the host */
        uint64_t memory_bytes; /* per run */
        uint64_t pids;
} plim_evidence;

/* Check a parsed request against this daemon: the floor against our tier (failed_precondition
 * + isolation), a software rule (failed_precondition + environment: hull states no software
 * identity, so no rule can be met), a grant profile (permission_denied + permission), and the
 * engine a payload needs (unimplemented + unsupported). Returns 0 or -1 with *f. */
int plim_run_admit(const plim_request *r, const plim_evidence *ev, plim_error *f);

/* The broker request for an admitted run: javascript writes main.mjs and runs
 * `/usr/bin/node main.mjs`; a project writes its files and runs each step as `sh -c STEP`,
 * stopping at the first failing one. Strings are borrowed from r; free with plim_plan_done.
 * Returns 0 or -ENOMEM. */
int plim_plan(const plim_request *r, const plim_evidence *ev, brk_request *ret);
void plim_plan_done(brk_request *p);

/* The DescribeResponse. Returns 0 with a new buffer or -ENOMEM. */
int plim_describe_json(const plim_evidence *ev, char **ret, size_t *ret_len);

/* The RunResponse for a run the broker carried out (outcome completed, timed out or setup
 * failed), with its version 2 record (request, result and record digests, empty session
 * fields). A result that is not an answer (not started, cancelled, an infrastructure error)
 * becomes an error: -1 with *f (a NotDispatched reason only when nothing ran). Returns 0 with
 * *ret (JSON, the caller frees), -1 with *f, or -ENOMEM. */
int plim_run_answer(const plim_request *r, const brk_result *res, const plim_evidence *ev, uint64_t received_unix_ms,
                    uint64_t ended_unix_ms, char **ret, size_t *ret_len, plim_error *f);
