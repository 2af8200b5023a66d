/* sbx-record.h: run records of the plimsoll protocol (protocol 3): the length-prefixed digest
 * encoding, the request, result and record digests computed from ProtoJSON messages, the session
 * chain, and hull's audit log of records (JSON lines, see docs/API.md).
 *
 * Every message is a jansson value as parsed from the wire or the log (lowerCamelCase or
 * snake_case names, 64-bit integers as numbers or strings, bytes as base64, enums by name or
 * number). Nothing here trusts its input: malformed messages are refused with -EINVAL and a
 * one-line reason in the hull_error; nothing prints. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"
#include "sha256.h"

#define REC_DIGEST_HEX_SIZE SHA256_HEX_SIZE
/* "exact:<identity>" or "approved:sha256:<hex>", and a NUL */
#define REC_RULE_ID_SIZE (sizeof("exact:") + REC_SOFTWARE_IDENTITY_MAX)

/* ---- The digest encoding ----
 * A value is its length as 8 bytes big-endian, then its bytes. A digest is SHA-256 over the
 * domain as a value, then each field as (name as a value, content as a value). Errors are
 * sticky: the field calls record the first one and rec_encoder_finish() returns it. */
typedef struct rec_encoder {
        sha256_ctx sha;
        uint64_t pending; /* bytes a streamed field still owes (rec_field_begin) */
        int err;
} rec_encoder;

/* Start a digest in domain. Returns 0 or -ENOMEM/-EIO; release with rec_encoder_done() always. */
int rec_encoder_init(rec_encoder *enc, const char *domain);
void rec_encoder_done(rec_encoder *enc);

void rec_field(rec_encoder *enc, const char *name, const void *content, size_t len);
void rec_field_str(rec_encoder *enc, const char *name, const char *s);
void rec_field_int(rec_encoder *enc, const char *name, int64_t v); /* decimal, '-' if negative */
void rec_field_uint(rec_encoder *enc, const char *name, uint64_t v);
void rec_field_bool(rec_encoder *enc, const char *name, bool v); /* "true" / "false" */
/* A field whose content arrives in pieces: declare its length, then write exactly that many
 * bytes with rec_field_write() (doubles with rec_field_write_double(), 8 bytes big-endian). */
void rec_field_begin(rec_encoder *enc, const char *name, uint64_t len);
void rec_field_write(rec_encoder *enc, const void *p, size_t n);
void rec_field_write_double(rec_encoder *enc, double v);

/* Finish: the lowercase hex digest, or the first error (-EINVAL when a streamed field got more
 * or fewer bytes than declared). */
int rec_encoder_finish(rec_encoder *enc, char ret[REC_DIGEST_HEX_SIZE]);

/* ---- Digests of messages ----
 * Each returns 0 and writes the hex digest to ret, or -EINVAL with *e saying which field of the
 * message is malformed (-ENOMEM/-EIO on resource failures). */

/* The request digest of a RunRequest or SessionRunRequest: domain plimsoll.run-request.v1 for
 * protocol < 2, .v2 (with the software rule) for protocol >= 2. traceId and sessionId are
 * accepted and never hashed. */
int rec_request_digest(const json_t *request, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);

/* The result digest (domain plimsoll.run-result.v1) of exactly one result of kind javascript,
 * project, module or cell: either a RunResponse or just {"<kind>": {...}}. Durations, advice and
 * the envelope's evidence fields are type-checked and not hashed. */
int rec_result_digest(const json_t *result, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);

/* The record digest (domain plimsoll.run-record.v<version>) of a RunRecord of version 1, 2 or 3;
 * recordSha256 itself is not hashed. */
int rec_record_digest(const json_t *record, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);

/* A RunRecord's fields; strings never NULL. */
typedef struct rec_record {
        uint32_t version; /* 2, or 3 for an unanswered call (1: protocol 1 only) */
        const char *request_sha256, *result_sha256, *provider, *isolation, *environment, *policy;
        uint64_t started_unix_ms, ended_unix_ms;
        const char *session; /* the fingerprint; "" for a single run */
        uint64_t sequence;   /* from 1 in a session; 0 for a single run */
        const char *previous_sha256, *record_sha256, *software_identity, *software_rule_id, *unanswered;
} rec_record;

/* rec_record_digest of the JSON rec_record_new makes of v, from v's fields without that JSON
 * (versions 1 to 3, else -EINVAL with *e). */
int rec_record_fields_digest(const rec_record *v, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);

/* The RunRecord of v as JSON, as the wire and the audit log carry it (every field present;
 * version 3 without resultSha256, versions 1 and 2 without unanswered; 64-bit integers as
 * strings) with its recordSha256. Returns 0 with *ret (the caller's) and the digest, or a
 * negative errno with *e. */
int rec_record_new(const rec_record *v, json_t **ret, char ret_sha256[REC_DIGEST_HEX_SIZE], hull_error *e);

/* ---- hull's record kinds ----
 * The workspace operations plimsoll has no message for: "exec", "write", "edit", "hydrate",
 * "add_input"; and the read-only tool calls hull mcp answers: "read", "glob", "grep",
 * "inspect_handle", "query_handle" (request: the call's arguments as received, each given one
 * hashed; result: what the call answered, {text, isError, handles: [ids]}). Their records are
 * RunRecords (version 2, or 3 unanswered) whose request and result digests follow hull's rules
 * (domains hull.workspace-request.v1 and hull.workspace-result.v1; fields in docs/API.md). The
 * audit log marks their entries with "operation". */
bool rec_hull_operation_is_valid(const char *operation);
/* One of the read-only kinds (read, glob, grep, inspect_handle, query_handle)? */
bool rec_hull_operation_is_read_only(const char *operation);
/* The digests of one operation's request and result as ProtoJSON messages. Returns 0 with the hex
 * digest, or -EINVAL (an unknown operation, a malformed message) with *e. */
int rec_hull_request_digest(const char *operation, const json_t *request, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);
int rec_hull_result_digest(const char *operation, const json_t *result, char ret[REC_DIGEST_HEX_SIZE], hull_error *e);

/* The session fingerprint: SHA-256 of the session ID's bytes. Returns 0, -ENOMEM or -EIO. */
int rec_fingerprint(const char *session_id, size_t len, char ret[REC_DIGEST_HEX_SIZE]);

/* The softwareRuleId of a SoftwareRule (NULL or JSON null: no rule): "" without identities,
 * "exact:<identity>" with one unique identity, else "approved:sha256:<hex of the unique
 * identities sorted bytewise, joined by a zero byte>". -EINVAL for a malformed rule, more than
 * REC_SOFTWARE_IDENTITIES_MAX identities, or one over REC_SOFTWARE_IDENTITY_MAX bytes. */
int rec_software_rule_id(const json_t *rule, char ret[REC_RULE_ID_SIZE], hull_error *e);

/* ---- The chain of a session's records ----
 * Push the records of one log in order. Each record's own digest is recomputed (a mismatch is
 * reported for that record and does not break the chain: the chain links through the digests
 * the records state). The chain itself breaks at the first record that names another session,
 * is out of sequence, or does not name the record before it; after that it is only watched for
 * the missing call, to tell a gap from a reordering. A log of single runs (no session) has no
 * chain: each record must then have no session, sequence 0 and no previousSha256. */
typedef enum rec_break {
        REC_BREAK_NONE = 0,
        REC_BREAK_MALFORMED, /* the record could not be read (or is not a record) */
        REC_BREAK_SESSION,   /* names another session than the chain's first record */
        REC_BREAK_GAP,       /* a call is missing: its sequence number never appears */
        REC_BREAK_ORDER,     /* a call comes before one that precedes it (reordered) */
        REC_BREAK_REPEAT,    /* a sequence number comes again (a repeated or replayed call) */
        REC_BREAK_PREVIOUS,  /* previousSha256 is not the digest of the record before it */
        REC_BREAK_VERSION,   /* a version 1 record mixed with version 2/3 ones */
} rec_break;

typedef struct rec_chain {
        size_t n;                          /* records pushed */
        uint64_t calls;                    /* records accepted into the chain */
        bool single;                       /* the log holds single runs, not a session */
        int family;                        /* 1 for version 1 records, 2 for 2/3; 0 unset */
        char session[REC_DIGEST_HEX_SIZE]; /* the session fingerprint ("" for single runs) */
        char last[REC_DIGEST_HEX_SIZE];    /* recordSha256 of the last accepted record */
        /* The first break, when brk != REC_BREAK_NONE. */
        rec_break brk;
        size_t brk_index;                    /* 0-based: which pushed record broke it */
        uint64_t brk_expected, brk_got;      /* sequence numbers (or the version) of the break */
        char brk_value[REC_DIGEST_HEX_SIZE]; /* the session or previousSha256 the record named */
        size_t found_index;                  /* where brk_expected turned up later, or SIZE_MAX */
        bool finished;
} rec_chain;

void rec_chain_init(rec_chain *c);

/* Push one RunRecord. Returns 0 when its digest holds, 1 when recordSha256 does not match its
 * fields (*e says so), or -EINVAL when it is malformed (*e says why; the chain breaks there with
 * REC_BREAK_MALFORMED). Chain breaks are not returned: see c->brk after rec_chain_finish(). */
int rec_chain_push(rec_chain *c, const json_t *record, hull_error *e);

/* Count a log line that held no readable record: the chain breaks there (if not yet broken). */
void rec_chain_push_unreadable(rec_chain *c);

/* Settle the break: a sequence number that came early is a reordering when the missing one
 * turned up later, a gap otherwise. Returns c->brk. */
rec_break rec_chain_finish(rec_chain *c);

/* One line saying what broke, e.g. "sequence 5 where 4 was expected: call 4 is missing (gap)".
 * Needs rec_chain_finish() first. */
void rec_chain_describe(const rec_chain *c, char *buf, size_t size);

const char *rec_break_to_string(rec_break b);

/* Verify a whole sequence of records: init, push each, finish. Returns 0 when every digest and
 * the chain hold; 1 otherwise, with *ret_index the first offending record and *e saying what
 * (a digest mismatch or a malformed record that comes before the chain's break wins). *ret
 * holds the chain either way. Negative only on resource failures. */
int rec_chain_verify(const json_t *const *records, size_t n, rec_chain *ret, size_t *ret_index, hull_error *e);

/* ---- The audit log ----
 * One JSON object per line: {"record": RunRecord, "request": the request as received without
 * its sessionId, "result": {"<kind>": {...}}} ("result" absent for a version 3 record); an entry
 * of one of hull's record kinds also has "operation" (and its request and result are that
 * operation's messages). */

/* Build a log entry (operation NULL for plimsoll's kinds). The request is copied (shallow)
 * without sessionId/session_id (a capability that is never recorded); result may be NULL
 * (version 3). The entry holds references to record, result and the request's values, not
 * copies: change neither while it lives (json_deep_copy it to change it). Returns 0 or
 * -EINVAL/-ENOMEM; *ret is the caller's (json_decref). */
int rec_log_entry_new(const char *operation, const json_t *record, const json_t *request, const json_t *result,
                      json_t **ret, hull_error *e);

enum {
        REC_LOG_SYNC = 1 << 0, /* fdatasync the log after the line is written */
};

/* Append entry as one line to path (relative to dirfd, or AT_FDCWD), created 0600 when missing,
 * opened O_APPEND|O_CLOEXEC|O_NOFOLLOW, written with one write where the kernel allows. Refuses
 * (-EINVAL) an entry without record/request, with a sessionId, over REC_LOG_LINE_MAX bytes,
 * nested deeper than REC_JSON_DEPTH_MAX or holding over REC_LOG_LINE_VALUES_MAX values. Returns 0 or a negative errno
 * with *e. */
int rec_log_append(int dirfd, const char *path, const json_t *entry, unsigned flags, hull_error *e);

/* An audit log kept open between appends (a session's): fd -1 when none. */
typedef struct rec_log_file {
        int fd;
        dev_t dev;
        ino_t ino;
} rec_log_file;

#define REC_LOG_FILE_INIT ((rec_log_file){.fd = -1})

/* rec_log_append through *f: the same checks and the same line, but the file stays open in *f
 * while path still names it (one fstatat per append instead of openat, fstat and close); a log
 * removed, replaced or made a link beside the daemon is opened anew with rec_log_append's checks.
 * The caller serialises the appends to one *f. Returns 0 or a negative errno with *e; *f stays
 * valid either way (rec_log_file_done closes it). */
int rec_log_append_kept(int dirfd, const char *path, rec_log_file *f, const json_t *entry, unsigned flags,
                        hull_error *e);
void rec_log_file_done(rec_log_file *f);

/* Parse one log line (without its newline): at most REC_LOG_LINE_MAX bytes,
 * REC_JSON_DEPTH_MAX deep and REC_LOG_LINE_VALUES_MAX values (counted before parsing), strict JSON (duplicate keys
 * refused, \u0000 allowed in strings), an object with "record", "request" and an optional "result". Returns 0 with *ret
 * the caller's, or -EINVAL/-E2BIG/-ENOMEM with *e. */
int rec_log_parse_line(const char *line, size_t len, json_t **ret, hull_error *e);

/* Check a log entry against its record: the request digest, the result digest (or, for a
 * version 3 record, that there is no result and `unanswered` names a known code), the result's
 * kind against the request's, the record version against the protocol, the softwareRuleId
 * against the request's rule, fields the record's version does not cover left empty, the
 * record's tier against the request's floor, and a RunResponse envelope (when the result is
 * one) against the record. Does not check the record's own digest or its place in the chain
 * (rec_chain_push). Returns 0 when everything holds, -EBADMSG when something does not, -EINVAL
 * when the entry is malformed; *e says what. */
int rec_entry_check(const json_t *entry, hull_error *e);
