/* sbx-record-chain.c: plimsoll run records: records and their digests, the session chain, and
 * the audit log hull verify reads, each entry checked against its request and result. The
 * field orders follow the plimsoll spec (docs/API.md "Run records and the audit log"); every
 * value read from a message is checked for its ProtoJSON type first. */
#include "sbx-record.h"
#include "sbx-record-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-scan.h"
#include "macro.h"

/* ---- records ---- */

enum {
        RC_VERSION,
        RC_REQUEST,
        RC_RESULT,
        RC_PROVIDER,
        RC_ISOLATION,
        RC_ENVIRONMENT,
        RC_POLICY,
        RC_STARTED,
        RC_ENDED,
        RC_SESSION,
        RC_SEQUENCE,
        RC_PREVIOUS,
        RC_RECORD,
        RC_SOFTWARE,
        RC_RULE,
        RC_UNANSWERED,
        RC__N
};
static const rec_pj_field record_fields[RC__N] = {
        [RC_VERSION] = {"version", NULL},
        [RC_REQUEST] = {"requestSha256", "request_sha256"},
        [RC_RESULT] = {"resultSha256", "result_sha256"},
        [RC_PROVIDER] = {"provider", NULL},
        [RC_ISOLATION] = {"isolation", NULL},
        [RC_ENVIRONMENT] = {"environment", NULL},
        [RC_POLICY] = {"policy", NULL},
        [RC_STARTED] = {"startedUnixMs", "started_unix_ms"},
        [RC_ENDED] = {"endedUnixMs", "ended_unix_ms"},
        [RC_SESSION] = {"session", NULL},
        [RC_SEQUENCE] = {"sequence", NULL},
        [RC_PREVIOUS] = {"previousSha256", "previous_sha256"},
        [RC_RECORD] = {"recordSha256", "record_sha256"},
        [RC_SOFTWARE] = {"softwareIdentity", "software_identity"},
        [RC_RULE] = {"softwareRuleId", "software_rule_id"},
        [RC_UNANSWERED] = {"unanswered", NULL},
};

typedef struct str_view {
        const char *p;
        size_t n;
} str_view;

typedef struct record_view {
        int64_t version;
        str_view s[RC__N]; /* the string fields, by their RC_ index */
        int64_t started, ended;
        uint64_t sequence;
} record_view;

static bool view_eq(str_view v, const char *s) {
        return v.n == strlen(s) && memcmp(v.p, s, v.n) == 0;
}

static int record_parse(const json_t *rec, record_view *v, hull_error *e) {
        static const int strings[] = {RC_REQUEST,     RC_RESULT,   RC_PROVIDER, RC_ISOLATION,
                                      RC_ENVIRONMENT, RC_POLICY,   RC_SESSION,  RC_PREVIOUS,
                                      RC_RECORD,      RC_SOFTWARE, RC_RULE,     RC_UNANSWERED};
        char what[REC_FIELD_NAME_MAX];
        int r = rec_pj_check_message(rec, "the record", record_fields, RC__N, e);
        if (r < 0)
                return r;
        *v = (record_view){};
        r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_VERSION]), "record.version", 0, UINT32_MAX, &v->version, e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_STARTED]), "record.startedUnixMs", INT64_MIN,
                               INT64_MAX, &v->started, e);
        if (r >= 0)
                r = rec_pj_int(rec_pj_get(rec, &record_fields[RC_ENDED]), "record.endedUnixMs", INT64_MIN, INT64_MAX,
                               &v->ended, e);
        if (r >= 0)
                r = rec_pj_uint64(rec_pj_get(rec, &record_fields[RC_SEQUENCE]), "record.sequence", &v->sequence, e);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(strings); i++) {
                snprintf(what, sizeof(what), "record.%s", record_fields[strings[i]].camel);
                r = rec_pj_string(rec_pj_get(rec, &record_fields[strings[i]]), what, &v->s[strings[i]].p,
                                  &v->s[strings[i]].n, e);
        }
        if (r < 0)
                return r;
        if (v->version < 1 || v->version > 3)
                return hull_fail(e, -EINVAL, "record version %" PRId64 " is not 1, 2 or 3", v->version);
        return 0;
}

static int record_view_digest(const record_view *v, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        _cleanup_(rec_encoder_done) rec_encoder enc = {};
        char domain[REC_FIELD_NAME_MAX];
        snprintf(domain, sizeof(domain), "plimsoll.run-record.v%" PRId64, v->version);
        int r = rec_encoder_init(&enc, domain);
        if (r < 0)
                return hull_fail(e, r, "run records: cannot start a SHA-256 digest");
#define S(name, i) rec_field(&enc, name, v->s[i].p, v->s[i].n)
        S("request_sha256", RC_REQUEST);
        S("result_sha256", RC_RESULT);
        if (v->version == 3)
                S("unanswered", RC_UNANSWERED);
        S("provider", RC_PROVIDER);
        S("isolation", RC_ISOLATION);
        S("environment", RC_ENVIRONMENT);
        S("policy", RC_POLICY);
        if (v->version >= 2) {
                S("software_identity", RC_SOFTWARE);
                S("software_rule_id", RC_RULE);
        }
        rec_field_int(&enc, "started_unix_ms", v->started);
        rec_field_int(&enc, "ended_unix_ms", v->ended);
        S("session", RC_SESSION);
        rec_field_uint(&enc, "sequence", v->sequence);
        S("previous_sha256", RC_PREVIOUS);
#undef S
        r = rec_encoder_finish(&enc, ret);
        if (r < 0)
                return hull_fail(e, r, "run records: the record digest failed");
        return 0;
}

static json_t *int64_string(int64_t v) {
        return json_sprintf("%" PRId64, v);
}

int rec_record_new(const rec_record *v, json_t **ret, char ret_sha256[REC_DIGEST_HEX_SIZE], hull_error *e) {
        char sha[REC_DIGEST_HEX_SIZE];
        json_auto_t *o = json_pack("{s:i, s:s}", "version", (int) v->version, "requestSha256", v->request_sha256);
        if (!o ||
            (v->version == 3 ? json_object_set_new(o, "unanswered", json_string(v->unanswered))
                             : json_object_set_new(o, "resultSha256", json_string(v->result_sha256))) < 0 ||
            json_object_set_new(o, "provider", json_string(v->provider)) < 0 ||
            json_object_set_new(o, "isolation", json_string(v->isolation)) < 0 ||
            json_object_set_new(o, "environment", json_string(v->environment)) < 0 ||
            json_object_set_new(o, "policy", json_string(v->policy)) < 0 ||
            json_object_set_new(o, "startedUnixMs", int64_string((int64_t) v->started_unix_ms)) < 0 ||
            json_object_set_new(o, "endedUnixMs", int64_string((int64_t) v->ended_unix_ms)) < 0 ||
            json_object_set_new(o, "session", json_string(v->session)) < 0 ||
            json_object_set_new(o, "sequence", json_sprintf("%" PRIu64, v->sequence)) < 0 ||
            json_object_set_new(o, "previousSha256", json_string(v->previous_sha256)) < 0 ||
            json_object_set_new(o, "softwareIdentity", json_string(v->software_identity)) < 0 ||
            json_object_set_new(o, "softwareRuleId", json_string(v->software_rule_id)) < 0)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        int r = rec_record_fields_digest(v, sha, e);
        if (r < 0)
                return r;
        if (json_object_set_new(o, "recordSha256", json_string(sha)) < 0)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        memcpy(ret_sha256, sha, sizeof(sha));
        *ret = TAKE_PTR(o);
        return 0;
}

int rec_record_digest(const json_t *record, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        record_view v;
        int r = record_parse(record, &v, e);
        if (r < 0)
                return r;
        return record_view_digest(&v, ret, e);
}

static str_view view_of(const char *s) {
        return (str_view){s, strlen(s)};
}

int rec_record_fields_digest(const rec_record *v, char ret[REC_DIGEST_HEX_SIZE], hull_error *e) {
        if (v->version < 1 || v->version > 3)
                return hull_fail(e, -EINVAL, "record version %" PRIu32 " is not 1, 2 or 3", v->version);
        /* What record_parse gives for rec_record_new's JSON: the field a version leaves out is "". */
        record_view rv = {.version = v->version,
                          .started = (int64_t) v->started_unix_ms,
                          .ended = (int64_t) v->ended_unix_ms,
                          .sequence = v->sequence};
        rv.s[RC_REQUEST] = view_of(v->request_sha256);
        rv.s[RC_RESULT] = view_of(v->version == 3 ? "" : v->result_sha256);
        rv.s[RC_UNANSWERED] = view_of(v->version == 3 ? v->unanswered : "");
        rv.s[RC_PROVIDER] = view_of(v->provider);
        rv.s[RC_ISOLATION] = view_of(v->isolation);
        rv.s[RC_ENVIRONMENT] = view_of(v->environment);
        rv.s[RC_POLICY] = view_of(v->policy);
        rv.s[RC_SESSION] = view_of(v->session);
        rv.s[RC_PREVIOUS] = view_of(v->previous_sha256);
        rv.s[RC_SOFTWARE] = view_of(v->software_identity);
        rv.s[RC_RULE] = view_of(v->software_rule_id);
        return record_view_digest(&rv, ret, e);
}

int rec_fingerprint(const char *session_id, size_t len, char ret[REC_DIGEST_HEX_SIZE]) {
        return sha256_hex(session_id, len, ret);
}

static int cmp_strp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int rec_software_rule_id(const json_t *rule, char ret[REC_RULE_ID_SIZE], hull_error *e) {
        if (json_is_null(rule))
                rule = NULL;
        if (rule) {
                int r = rec_pj_check_message(rule, "the software rule", rec_rule_fields, RULE__N, e);
                if (r < 0)
                        return r;
                const char *mode;
                size_t mode_len;
                r = rec_pj_string(rec_pj_get(rule, &rec_rule_fields[RULE_MODE]), "softwareRule.mode", &mode, &mode_len,
                                  e);
                if (r < 0)
                        return r;
        }
        const json_t *ids = rule ? rec_pj_get(rule, &rec_rule_fields[RULE_IDENTITIES]) : NULL;
        int r = rec_pj_array(ids, "softwareRule.identities", e);
        if (r < 0)
                return r;
        size_t n = json_array_size(ids);
        if (n > REC_SOFTWARE_IDENTITIES_MAX)
                return hull_fail(e, -EINVAL, "the software rule has %zu identities, more than %u", n,
                                 REC_SOFTWARE_IDENTITIES_MAX);
        const char *sorted[REC_SOFTWARE_IDENTITIES_MAX];
        for (size_t i = 0; i < n; i++) {
                const json_t *id = json_array_get(ids, i);
                if (!json_is_string(id))
                        return hull_fail(e, -EINVAL, "softwareRule.identities has an element that is not a string");
                size_t len = json_string_length(id);
                if (len == 0 || len > REC_SOFTWARE_IDENTITY_MAX || strlen(json_string_value(id)) != len)
                        return hull_fail(e, -EINVAL, "a software identity must be 1 to %u bytes without NUL",
                                         REC_SOFTWARE_IDENTITY_MAX);
                sorted[i] = json_string_value(id);
        }
        qsort(sorted, n, sizeof(sorted[0]), cmp_strp);
        size_t unique = 0;
        for (size_t i = 0; i < n; i++)
                if (unique == 0 || strcmp(sorted[unique - 1], sorted[i]) != 0)
                        sorted[unique++] = sorted[i];
        if (unique == 0) {
                ret[0] = '\0';
                return 0;
        }
        if (unique == 1) {
                snprintf(ret, REC_RULE_ID_SIZE, "exact:%s", sorted[0]);
                return 0;
        }
        _cleanup_sha256_ sha256_ctx sha = {};
        char hex[SHA256_HEX_SIZE];
        r = sha256_init(&sha);
        for (size_t i = 0; r >= 0 && i < unique; i++) {
                if (i > 0)
                        r = sha256_update(&sha, "", 1); /* the zero byte between identities */
                if (r >= 0)
                        r = sha256_update(&sha, sorted[i], strlen(sorted[i]));
        }
        if (r >= 0)
                r = sha256_final_hex(&sha, hex);
        if (r < 0)
                return hull_fail(e, r, "run records: the software rule digest failed");
        snprintf(ret, REC_RULE_ID_SIZE, "approved:sha256:%s", hex);
        return 0;
}

/* ---- the chain ---- */

void rec_chain_init(rec_chain *c) {
        *c = (rec_chain){.found_index = SIZE_MAX};
}

static void chain_break(rec_chain *c, size_t index, rec_break b) {
        if (c->brk != REC_BREAK_NONE)
                return;
        c->brk = b;
        c->brk_index = index;
}

void rec_chain_push_unreadable(rec_chain *c) {
        chain_break(c, c->n++, REC_BREAK_MALFORMED);
}

static bool digest_or_empty(str_view v) {
        return v.n == 0 || sha256_hex_is_valid(v.p, v.n);
}

/* Place one well-formed record in the chain (the chain is not broken yet). */
static void chain_step(rec_chain *c, size_t index, const record_view *v) {
        const str_view session = v->s[RC_SESSION], previous = v->s[RC_PREVIOUS], stated = v->s[RC_RECORD];
        int family = v->version == 1 ? 1 : 2;

        if (index == 0) { /* the first record says what the log is: single runs or one session */
                c->single = session.n == 0;
                memcpy(c->session, session.p, session.n);
                c->session[session.n] = '\0';
                c->family = family;
        }
        if (family != c->family) {
                chain_break(c, index, REC_BREAK_VERSION);
                c->brk_got = (uint64_t) v->version;
                return;
        }
        if (c->single ? session.n != 0 : !view_eq(session, c->session)) {
                chain_break(c, index, REC_BREAK_SESSION);
                memcpy(c->brk_value, session.p, session.n);
                c->brk_value[session.n] = '\0';
                return;
        }
        if (!c->single) {
                uint64_t expected = c->calls + 1;
                if (v->sequence != expected) {
                        chain_break(c, index, v->sequence > expected ? REC_BREAK_GAP : REC_BREAK_REPEAT);
                        c->brk_expected = expected;
                        c->brk_got = v->sequence;
                        return;
                }
                if (!view_eq(previous, c->calls == 0 ? "" : c->last)) {
                        chain_break(c, index, REC_BREAK_PREVIOUS);
                        memcpy(c->brk_value, previous.p, previous.n);
                        c->brk_value[previous.n] = '\0';
                        return;
                }
        }
        c->calls++;
        size_t n = MIN(stated.n, (size_t) REC_DIGEST_HEX_SIZE - 1);
        memcpy(c->last, stated.p, n);
        c->last[n] = '\0';
}

int rec_chain_push(rec_chain *c, const json_t *record, hull_error *e) {
        size_t index = c->n++;
        record_view v;
        char digest[REC_DIGEST_HEX_SIZE];
        int r = record_parse(record, &v, e);
        if (r >= 0) {
                const str_view session = v.s[RC_SESSION], previous = v.s[RC_PREVIOUS];
                if (!digest_or_empty(session))
                        r = hull_fail(e, -EINVAL, "record.session is not a SHA-256 fingerprint");
                else if (!digest_or_empty(previous))
                        r = hull_fail(e, -EINVAL, "record.previousSha256 is not a SHA-256 digest");
                else if (session.n == 0 && (v.sequence != 0 || previous.n != 0))
                        r = hull_fail(e, -EINVAL,
                                      "a record without a session has sequence %" PRIu64 " or a previousSha256",
                                      v.sequence);
                else if (session.n != 0 && v.sequence == 0)
                        r = hull_fail(e, -EINVAL, "a record of a session has sequence 0");
        }
        if (r < 0) {
                chain_break(c, index, REC_BREAK_MALFORMED);
                return r;
        }
        r = record_view_digest(&v, digest, e);
        if (r < 0)
                return r;

        if (c->brk == REC_BREAK_NONE)
                chain_step(c, index, &v);
        else if (c->brk == REC_BREAK_GAP && !c->finished && c->found_index == SIZE_MAX &&
                 view_eq(v.s[RC_SESSION], c->session) && v.sequence == c->brk_expected)
                c->found_index = index;

        if (!view_eq(v.s[RC_RECORD], digest)) {
                char pb[PRINTABLE_SIZE];
                hull_fail(e, -EBADMSG,
                          "record digest mismatch (tampered?): recordSha256 is %s, its fields give %.16s...",
                          short_digest(v.s[RC_RECORD].p, v.s[RC_RECORD].n, pb), digest);
                return 1;
        }
        return 0;
}

rec_break rec_chain_finish(rec_chain *c) {
        if (!c->finished && c->brk == REC_BREAK_GAP && c->found_index != SIZE_MAX)
                c->brk = REC_BREAK_ORDER;
        c->finished = true;
        return c->brk;
}

const char *rec_break_to_string(rec_break b) {
        switch (b) {
        case REC_BREAK_NONE:
                return "none";
        case REC_BREAK_MALFORMED:
                return "unreadable record";
        case REC_BREAK_SESSION:
                return "wrong session";
        case REC_BREAK_GAP:
                return "gap in the sequence";
        case REC_BREAK_ORDER:
                return "records out of order";
        case REC_BREAK_REPEAT:
                return "repeated call";
        case REC_BREAK_PREVIOUS:
                return "wrong previous record";
        case REC_BREAK_VERSION:
                return "mixed record versions";
        }
        return "unknown";
}

void rec_chain_describe(const rec_chain *c, char *buf, size_t size) {
        switch (c->brk) {
        case REC_BREAK_NONE:
                snprintf(buf, size, "the chain holds");
                break;
        case REC_BREAK_MALFORMED:
                snprintf(buf, size, "the chain breaks here: no readable record");
                break;
        case REC_BREAK_SESSION:
                if (c->single)
                        snprintf(buf, size, "wrong session: a call of session %.16s... in a log of single runs",
                                 c->brk_value);
                else if (c->brk_value[0] == '\0')
                        snprintf(buf, size, "wrong session: a single run in the log of session %.16s...", c->session);
                else
                        snprintf(buf, size,
                                 "wrong session: names session %.16s..., not %.16s... of the records before it",
                                 c->brk_value, c->session);
                break;
        case REC_BREAK_GAP:
                snprintf(buf, size,
                         "gap in the sequence: sequence %" PRIu64 " where %" PRIu64 " was expected; call %" PRIu64
                         " is missing",
                         c->brk_got, c->brk_expected, c->brk_expected);
                break;
        case REC_BREAK_ORDER:
                snprintf(buf, size,
                         "records out of order: sequence %" PRIu64 " where %" PRIu64 " was expected; call %" PRIu64
                         " comes later, at line %zu",
                         c->brk_got, c->brk_expected, c->brk_expected, c->found_index + 1);
                break;
        case REC_BREAK_REPEAT:
                snprintf(buf, size, "repeated call: sequence %" PRIu64 " again where %" PRIu64 " was expected",
                         c->brk_got, c->brk_expected);
                break;
        case REC_BREAK_PREVIOUS:
                if (c->calls == 0)
                        snprintf(buf, size, "wrong previous record: call 1 names previousSha256 %.16s...",
                                 c->brk_value);
                else
                        snprintf(buf, size,
                                 "wrong previous record: previousSha256 is %.16s..., the record before it is %.16s...",
                                 c->brk_value[0] ? c->brk_value : "(empty)", c->last);
                break;
        case REC_BREAK_VERSION:
                snprintf(buf, size, "mixed record versions: a version %" PRIu64 " record among version %s records",
                         c->brk_got, c->family == 1 ? "1" : "2 and 3");
                break;
        }
}

int rec_chain_verify(const json_t *const *records, size_t n, rec_chain *ret, size_t *ret_index, hull_error *e) {
        size_t first = SIZE_MAX;
        hull_error err = {};
        rec_chain_init(ret);
        for (size_t i = 0; i < n; i++) {
                int r = rec_chain_push(ret, records[i], &err);
                if (r < 0 && r != -EINVAL)
                        return hull_fail(e, r, "%s", err.msg);
                if (r != 0 && first == SIZE_MAX) {
                        first = i;
                        if (e)
                                *e = err;
                }
        }
        rec_chain_finish(ret);
        if (ret->brk != REC_BREAK_NONE && ret->brk_index < first) {
                first = ret->brk_index;
                if (e) {
                        rec_chain_describe(ret, e->msg, sizeof(e->msg));
                        e->err = -EBADMSG;
                }
        }
        if (first == SIZE_MAX)
                return 0;
        *ret_index = first;
        return 1;
}

/* ---- the audit log ---- */

static int entry_shape(const json_t *entry, const json_t **ret_record, const json_t **ret_request,
                       const json_t **ret_result, const char **ret_operation, hull_error *e) {
        static const rec_pj_field entry_fields[] = {
                {"record", NULL}, {"request", NULL}, {"result", NULL}, {"operation", NULL}};
        char pb[PRINTABLE_SIZE];
        int r = rec_pj_check_message(entry, "the log entry", entry_fields, ELEMENTSOF(entry_fields), e);
        if (r < 0)
                return r;
        *ret_record = rec_pj_get(entry, &entry_fields[0]);
        *ret_request = rec_pj_get(entry, &entry_fields[1]);
        *ret_result = rec_pj_get(entry, &entry_fields[2]);
        const json_t *op = rec_pj_get(entry, &entry_fields[3]);
        *ret_operation = NULL;
        if (op && (!json_is_string(op) || !rec_hull_operation_is_valid(json_string_value(op))))
                return hull_fail(e, -EINVAL, "the log entry's operation %s is not one of hull's record kinds",
                                 json_is_string(op) ? printable(json_string_value(op), json_string_length(op), pb)
                                                    : "(not a string)");
        if (op)
                *ret_operation = json_string_value(op);
        if (!json_is_object(*ret_record))
                return hull_fail(e, -EINVAL, "the log entry has no record object");
        if (!json_is_object(*ret_request))
                return hull_fail(e, -EINVAL, "the log entry has no request object");
        if (*ret_result && !json_is_object(*ret_result))
                return hull_fail(e, -EINVAL, "the log entry's result is not an object");
        return 0;
}

int rec_log_entry_new(const char *operation, const json_t *record, const json_t *request, const json_t *result,
                      json_t **ret, hull_error *e) {
        if (!json_is_object(record) || !json_is_object(request) || (result && !json_is_object(result)))
                return hull_fail(e, -EINVAL, "run records: a log entry needs a record and a request object");
        if (operation && !rec_hull_operation_is_valid(operation))
                return hull_fail(e, -EINVAL, "run records: '%s' is not one of hull's record kinds", operation);
        /* References, not copies: the entry is serialised and dropped (a deep copy of the three
         * was a tenth of the cell's record); the request is a shallow copy, for the key it drops. */
        json_auto_t *req = json_copy((json_t *) request);
        json_auto_t *o = json_object();
        if (!req || !o)
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        (void) json_object_del(req, "sessionId");
        (void) json_object_del(req, "session_id");
        if (json_object_set(o, "record", (json_t *) record) < 0 || json_object_set(o, "request", req) < 0 ||
            (result && json_object_set(o, "result", (json_t *) result) < 0) ||
            (operation && json_object_set_new(o, "operation", json_string(operation)) < 0))
                return hull_fail(e, -ENOMEM, "run records: out of memory");
        *ret = TAKE_PTR(o);
        return 0;
}

/* The entry as one checked line ending in '\n' into *ret_line (the caller's) and *ret_len. */
static int log_line(const json_t *entry, char **ret_line, size_t *ret_len, hull_error *e) {
        const json_t *record, *request, *result;
        const char *operation;
        int r = entry_shape(entry, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        if (json_object_get(request, "sessionId") || json_object_get(request, "session_id"))
                return hull_fail(e, -EINVAL, "run records: a log entry must not hold the session ID (a capability)");
        _cleanup_free_ char *line = json_dumps(entry, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (!line)
                return hull_fail(e, -ENOMEM, "run records: cannot serialise the log entry");
        size_t len = strlen(line);
        if (len > REC_LOG_LINE_MAX)
                return hull_fail(e, -E2BIG, "run records: the log entry is %zu bytes, more than %llu", len,
                                 (unsigned long long) REC_LOG_LINE_MAX);
        int q = json_prescan(line, len, REC_JSON_DEPTH_MAX, REC_LOG_LINE_VALUES_MAX);
        if (q == -ELOOP)
                return hull_fail(e, -EINVAL, "run records: the log entry nests deeper than %u", REC_JSON_DEPTH_MAX);
        if (q < 0)
                return hull_fail(e, -E2BIG, "run records: the log entry holds more than %u JSON values",
                                 REC_LOG_LINE_VALUES_MAX);
        line[len++] = '\n'; /* replaces the NUL; the length is what is written */
        *ret_line = TAKE_PTR(line);
        *ret_len = len;
        return 0;
}

static int log_open(int dirfd, const char *path, rec_log_file *f, hull_error *e) {
        _cleanup_close_ int fd =
                openat(dirfd, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return hull_err(e, negative_errno(), "run records: cannot open the audit log '%s'", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, negative_errno(), "run records: cannot stat the audit log '%s'", path);
        if (!S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "run records: the audit log '%s' is not a regular file", path);
        *f = (rec_log_file){.fd = TAKE_FD(fd), .dev = st.st_dev, .ino = st.st_ino};
        return 0;
}

static int log_write(int fd, const char *line, size_t len, unsigned flags, const char *path, hull_error *e) {
        for (size_t done = 0; done < len;) {
                ssize_t n = write(fd, line + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return hull_err(e, negative_errno(), "run records: cannot append to the audit log '%s'", path);
                }
                done += (size_t) n;
        }
        if ((flags & REC_LOG_SYNC) && fdatasync(fd) < 0)
                return hull_err(e, negative_errno(), "run records: cannot sync the audit log '%s'", path);
        return 0;
}

int rec_log_append(int dirfd, const char *path, const json_t *entry, unsigned flags, hull_error *e) {
        _cleanup_free_ char *line = NULL;
        size_t len = 0;
        int r = log_line(entry, &line, &len, e);
        if (r < 0)
                return r;
        rec_log_file f;
        r = log_open(dirfd, path, &f, e);
        if (r < 0)
                return r;
        r = log_write(f.fd, line, len, flags, path, e);
        safe_close(f.fd);
        return r;
}

void rec_log_file_done(rec_log_file *f) {
        f->fd = safe_close(f->fd);
}

int rec_log_append_kept(int dirfd, const char *path, rec_log_file *f, const json_t *entry, unsigned flags,
                        hull_error *e) {
        _cleanup_free_ char *line = NULL;
        size_t len = 0;
        int r = log_line(entry, &line, &len, e);
        if (r < 0)
                return r;
        /* The kept fd while the name still names its file, a regular one: the same device and
         * inode (the open fd keeps that inode from being reused). Else (removed, replaced, a
         * link put there) opened anew with every check, as an open per append would. */
        struct stat st;
        if (f->fd >= 0 && (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
                           st.st_dev != f->dev || st.st_ino != f->ino))
                rec_log_file_done(f);
        if (f->fd < 0 && (r = log_open(dirfd, path, f, e)) < 0)
                return r;
        return log_write(f->fd, line, len, flags, path, e);
}

int rec_log_parse_line(const char *line, size_t len, json_t **ret, hull_error *e) {
        char pb[PRINTABLE_SIZE];
        const json_t *record, *request, *result;
        const char *operation;
        json_error_t jerr;
        if (len > REC_LOG_LINE_MAX)
                return hull_fail(e, -E2BIG, "the line is longer than %llu bytes",
                                 (unsigned long long) REC_LOG_LINE_MAX);
        /* Counted before parsing: each value costs the parser far more than its bytes (review
         * 2.3: one 60 MiB line of {} took 4.8 GB). */
        int q = json_prescan(line, len, REC_JSON_DEPTH_MAX, REC_LOG_LINE_VALUES_MAX);
        if (q == -ELOOP)
                return hull_fail(e, -EINVAL, "the line nests deeper than %u", REC_JSON_DEPTH_MAX);
        if (q < 0)
                return hull_fail(e, -E2BIG, "the line holds more than %u JSON values", REC_LOG_LINE_VALUES_MAX);
        json_auto_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!j)
                return hull_fail(e, -EINVAL, "not valid JSON (truncated or garbage?): %s at column %d",
                                 printable(jerr.text, strlen(jerr.text), pb), jerr.column);
        int r = entry_shape(j, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

/* Isolation tiers in order of strength; an unknown or empty tier meets no floor. */
static int tier_rank(const char *s, size_t len) {
        static const char *const tiers[] = {"none", "process", "container", "kernel", "vm"};
        for (size_t i = 0; i < ELEMENTSOF(tiers); i++)
                if (len == strlen(tiers[i]) && memcmp(s, tiers[i], len) == 0)
                        return (int) i;
        return -1;
}

static bool is_connect_code(str_view v) {
        static const char *const codes[] = {
                "canceled",        "unknown",           "invalid_argument",   "deadline_exceeded",   "not_found",
                "already_exists",  "permission_denied", "resource_exhausted", "failed_precondition", "aborted",
                "out_of_range",    "unimplemented",     "internal",           "unavailable",         "data_loss",
                "unauthenticated",
        };
        for (size_t i = 0; i < ELEMENTSOF(codes); i++)
                if (view_eq(v, codes[i]))
                        return true;
        return false;
}

/* Compare a string field of a RunResponse envelope with the record's. */
static int envelope_matches(const json_t *res, int rs, const record_view *v, int rc, hull_error *e) {
        const json_t *f = rec_pj_get(res, &rec_response_fields[rs]);
        if (!f)
                return 0;
        if (json_string_length(f) != v->s[rc].n || memcmp(json_string_value(f), v->s[rc].p, v->s[rc].n) != 0)
                return hull_fail(e, -EBADMSG, "the response's %s differs from the record's %s",
                                 rec_response_fields[rs].camel, record_fields[rc].camel);
        return 0;
}

/* An entry of one of hull's record kinds: its digests by hull's rules; version 2 with a result,
 * or 3 (unanswered) without one; in a session. The software rule is the session's, which the
 * request does not carry: not checked here. */
static int hull_entry_check(const char *operation, const record_view *v, const json_t *request, const json_t *result,
                            hull_error *e) {
        char digest[REC_DIGEST_HEX_SIZE], pb[PRINTABLE_SIZE];
        int r = rec_hull_request_digest(operation, request, digest, e);
        if (r < 0)
                return r;
        if (!view_eq(v->s[RC_REQUEST], digest))
                return hull_fail(e, -EBADMSG,
                                 "request digest mismatch (tampered?): the record states %s, the %s request gives "
                                 "%.16s...",
                                 short_digest(v->s[RC_REQUEST].p, v->s[RC_REQUEST].n, pb), operation, digest);
        if (v->version == 1)
                return hull_fail(e, -EBADMSG, "a version 1 record for hull's %s (hull's kinds have 2 or 3)", operation);
        if (v->s[RC_SESSION].n == 0)
                return hull_fail(e, -EBADMSG, "a %s record outside a session", operation);
        if (v->version == 3) {
                if (result || v->s[RC_RESULT].n != 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a result");
                if (!is_connect_code(v->s[RC_UNANSWERED]))
                        return hull_fail(e, -EBADMSG,
                                         "a version 3 record whose unanswered '%s' is not a Connect error code",
                                         printable(v->s[RC_UNANSWERED].p, v->s[RC_UNANSWERED].n, pb));
                return 0;
        }
        if (v->s[RC_UNANSWERED].n != 0)
                return hull_fail(e, -EBADMSG, "a version 2 record names unanswered, which its digest does not cover");
        if (!result)
                return hull_fail(e, -EBADMSG, "a version 2 %s record without a result", operation);
        r = rec_hull_result_digest(operation, result, digest, e);
        if (r < 0)
                return r;
        if (!view_eq(v->s[RC_RESULT], digest))
                return hull_fail(e, -EBADMSG,
                                 "result digest mismatch (tampered?): the record states %s, the %s result gives "
                                 "%.16s...",
                                 short_digest(v->s[RC_RESULT].p, v->s[RC_RESULT].n, pb), operation, digest);
        return 0;
}

int rec_entry_check(const json_t *entry, hull_error *e) {
        const json_t *record, *request, *result;
        const char *operation;
        record_view v;
        rec_request_info info;
        char digest[REC_DIGEST_HEX_SIZE], rule_id[REC_RULE_ID_SIZE], pb[PRINTABLE_SIZE], pb2[PRINTABLE_SIZE];
        int kind = 0, r;

        r = entry_shape(entry, &record, &request, &result, &operation, e);
        if (r < 0)
                return r;
        r = record_parse(record, &v, e);
        if (r < 0)
                return r;
        if (operation)
                return hull_entry_check(operation, &v, request, result, e);
        r = rec_request_digest_info(request, digest, &info, e);
        if (r < 0)
                return r;
        if (!view_eq(v.s[RC_REQUEST], digest))
                return hull_fail(
                        e, -EBADMSG,
                        "request digest mismatch (tampered?): the record states %s, the request gives %.16s...",
                        short_digest(v.s[RC_REQUEST].p, v.s[RC_REQUEST].n, pb), digest);
        if (info.protocol >= 2 && v.version == 1)
                return hull_fail(e, -EBADMSG,
                                 "a version 1 record for a protocol %" PRIu32
                                 " request (version 1 is for protocol 1 only)",
                                 info.protocol);
        if (info.protocol < 2 && v.version != 1)
                return hull_fail(e, -EBADMSG, "a version %" PRId64 " record for a protocol %" PRIu32 " request",
                                 v.version, info.protocol);

        if (v.version == 3) {
                if (result)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a result");
                if (v.s[RC_RESULT].n != 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) with a resultSha256");
                if (!is_connect_code(v.s[RC_UNANSWERED]))
                        return hull_fail(e, -EBADMSG,
                                         "a version 3 record whose unanswered '%s' is not a Connect error code",
                                         printable(v.s[RC_UNANSWERED].p, v.s[RC_UNANSWERED].n, pb));
                if (v.s[RC_SESSION].n == 0)
                        return hull_fail(e, -EBADMSG, "a version 3 record (an unanswered call) outside a session");
        } else {
                if (v.s[RC_UNANSWERED].n != 0)
                        return hull_fail(e, -EBADMSG,
                                         "a version %" PRId64
                                         " record names unanswered '%s', which its digest does not cover",
                                         v.version, printable(v.s[RC_UNANSWERED].p, v.s[RC_UNANSWERED].n, pb));
                if (!result)
                        return hull_fail(e, -EBADMSG, "a version %" PRId64 " record without a result", v.version);
                r = rec_result_digest_kind(result, digest, &kind, e);
                if (r < 0)
                        return r;
                if (!view_eq(v.s[RC_RESULT], digest))
                        return hull_fail(
                                e, -EBADMSG,
                                "result digest mismatch (tampered?): the record states %s, the result gives %.16s...",
                                short_digest(v.s[RC_RESULT].p, v.s[RC_RESULT].n, pb), digest);
                if (kind != info.kind)
                        return hull_fail(e, -EBADMSG, "a %s result for a %s request", rec_kinds[kind - 1],
                                         info.kind ? rec_kinds[info.kind - 1] : "payload-less");
        }

        if (v.version == 1) {
                if (v.s[RC_SOFTWARE].n != 0 || v.s[RC_RULE].n != 0)
                        return hull_fail(e, -EBADMSG,
                                         "a version 1 record carries software fields, which its digest does not cover");
        } else {
                r = rec_software_rule_id(info.rule, rule_id, e);
                if (r < 0)
                        return r;
                if (!view_eq(v.s[RC_RULE], rule_id))
                        return hull_fail(e, -EBADMSG, "softwareRuleId '%s' is not the request's rule ('%s')",
                                         printable(v.s[RC_RULE].p, v.s[RC_RULE].n, pb),
                                         printable(rule_id, strlen(rule_id), pb2));
                const json_t *ids = info.rule ? rec_pj_get(info.rule, &rec_rule_fields[RULE_IDENTITIES]) : NULL;
                bool in_rule = json_array_size(ids) == 0;
                for (size_t i = 0; !in_rule && i < json_array_size(ids); i++) {
                        const json_t *id = json_array_get(ids, i);
                        in_rule = json_string_length(id) == v.s[RC_SOFTWARE].n &&
                                  memcmp(json_string_value(id), v.s[RC_SOFTWARE].p, v.s[RC_SOFTWARE].n) == 0;
                }
                if (!in_rule)
                        return hull_fail(e, -EBADMSG, "softwareIdentity '%s' is not in the request's software rule",
                                         printable(v.s[RC_SOFTWARE].p, v.s[RC_SOFTWARE].n, pb));
        }

        if (info.floor_len != 0) {
                int floor = tier_rank(info.floor, info.floor_len),
                    tier = tier_rank(v.s[RC_ISOLATION].p, v.s[RC_ISOLATION].n);
                if (floor <= 0)
                        return hull_fail(e, -EBADMSG,
                                         "the request's minimumIsolation '%s' is not a floor a daemon accepts",
                                         printable(info.floor, info.floor_len, pb));
                if (tier < floor)
                        return hull_fail(e, -EBADMSG, "the record's isolation '%s' is below the request's floor '%s'",
                                         printable(v.s[RC_ISOLATION].p, v.s[RC_ISOLATION].n, pb),
                                         printable(info.floor, info.floor_len, pb2));
        }

        if (result) {
                r = envelope_matches(result, RS_SANDBOX, &v, RC_PROVIDER, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_ISOLATION, &v, RC_ISOLATION, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_ENVIRONMENT, &v, RC_ENVIRONMENT, e);
                if (r >= 0)
                        r = envelope_matches(result, RS_SOFTWARE, &v, RC_SOFTWARE, e);
                if (r < 0)
                        return r;
                const json_t *inner = rec_pj_get(result, &rec_response_fields[RS_RECORD]);
                if (inner && !json_equal((json_t *) inner, (json_t *) record))
                        return hull_fail(e, -EBADMSG, "the response's record differs from the logged record");
        }
        return 0;
}
