/* plimsoll-answer.c: plimsoll protocol 3's answers (see plimsoll.h): Describe, Run and the
 * session procedures, each with its run record (v2 for an answered call, v3 for an unanswered
 * one; digests from sbx-record), and the chain of a session's records. */
#include "plimsoll.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"
#include "parse-util.h"
#include "plimsoll-internal.h"
#include "sbx-record.h"
#include "ss.h"

/* ---- answers ---- */

static bool set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0;
}

static uint32_t max_timeout(bool supported) {
        return supported ? PLIM_TIMEOUT_MS_MAX : 0;
}

int plim_describe_json(const plim_evidence *ev, char **ret, size_t *ret_len) {
        json_t *langs = json_array();
        if (!langs)
                return -ENOMEM;
        if ((ev->javascript && json_array_append_new(langs, json_string("javascript")) < 0) ||
            (ev->python && json_array_append_new(langs, json_string("python")) < 0)) {
                json_decref(langs);
                return -ENOMEM;
        }
        json_t *o = json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:{s:I, s:[]}, s:{s:I, s:o}, s:{s:I, s:I}, s:b}",
                              "sandbox", ev->sandbox, "isolation", ev->isolation, "supportsProject", 1,
                              "supportsJavascriptGrants", 0, "supportsProjectGrants", 0, "supportsModule", 0,
                              "protocol", (int) PLIM_PROTOCOL, "javascriptEnvironment", "maxTimeoutMs",
                              (json_int_t) max_timeout(ev->javascript), "languages", "projectEnvironment",
                              "maxTimeoutMs", (json_int_t) max_timeout(true), "languages", langs, "resources",
                              "memoryMb", (json_int_t) (ev->memory_bytes >> 20), "pids", (json_int_t) ev->pids,
                              "supportsSessions", ev->sessions);
        /* The kernel tier's provider evidence (runsc's version and platform) as Describe's policy. */
        if (o && ev->kernel_evidence && !set(o, "policy", json_string(ev->kernel_evidence))) {
                json_decref(o);
                return -ENOMEM;
        }
        if (o && ev->javascript) {
                json_t *js = json_object_get(json_object_get(o, "javascriptEnvironment"), "languages");
                if (json_array_append_new(js, json_string("javascript")) < 0) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        if (o && ev->sessions) {
                /* The session fields, as numbers: ProtoJSON readers take numbers for every integer
                 * type, strings only for 64-bit ones, and these fit in 32 bits. */
                json_t *cells = json_array();
                if (!cells || (ev->session_javascript && json_array_append_new(cells, json_string("javascript")) < 0) ||
                    (ev->session_python && json_array_append_new(cells, json_string("python")) < 0) ||
                    !set(o, "sessionLifetimeMs",
                         json_integer((json_int_t) MIN(ev->session_lifetime_ms, (uint64_t) UINT32_MAX))) ||
                    !set(o, "sessionIdleTimeoutMs",
                         json_integer((json_int_t) MIN(ev->session_idle_timeout_ms, (uint64_t) UINT32_MAX))) ||
                    !set(o, "sessionEnvironment",
                         json_pack("{s:I, s:o}", "maxTimeoutMs", (json_int_t) PLIM_TIMEOUT_MS_MAX, "languages",
                                   cells)) ||
                    (ev->max_sessions_per_caller &&
                     !set(o, "maxSessionsPerCaller", json_integer(ev->max_sessions_per_caller))) ||
                    (ev->max_sessions_per_owner &&
                     !set(o, "maxSessionsPerOwner", json_integer(ev->max_sessions_per_owner)))) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        return plim_json_dump(o, ret, ret_len);
}

static json_t *stream_result(const sbx_step_result *s) {
        json_t *o = json_object();
        if (!o || !set(o, "stdout", plim_json_base64(s->out, s->out_len)) ||
            !set(o, "stderr", plim_json_base64(s->err, s->err_len)) || !set(o, "exitCode", json_integer(s->status)) ||
            !set(o, "timedOut", json_boolean(s->flags & SBX_STEP_TIMED_OUT)) ||
            !set(o, "stdoutTruncated", json_boolean(s->flags & SBX_STEP_OUT_TRUNCATED)) ||
            !set(o, "stderrTruncated", json_boolean(s->flags & SBX_STEP_ERR_TRUNCATED))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static json_t *project_result(const plim_request *r, const sbx_plan_result *res) {
        static const char *const outcomes[] = {
                [SBX_PLAN_COMPLETED] = "PROJECT_OUTCOME_COMPLETED",
                [SBX_PLAN_SETUP_FAILED] = "PROJECT_OUTCOME_SETUP_FAILED",
                [SBX_PLAN_TIMED_OUT] = "PROJECT_OUTCOME_TIMED_OUT",
        };
        json_t *o = json_object(), *steps = json_array(), *arts = json_array();
        if (!o || !steps || !arts)
                goto fail;
        for (uint32_t i = 0; i < res->n_steps && i < r->n_steps; i++) {
                json_t *s = stream_result(&res->steps[i]);
                if (!s || !set(s, "command", json_string(r->steps[i])) ||
                    !set(s, "durationMs", plim_json_int64_string((int64_t) (res->steps[i].wall_us / 1000))) ||
                    json_array_append_new(steps, s) < 0) {
                        json_decref(s);
                        goto fail;
                }
        }
        for (uint32_t i = 0; i < res->n_artifacts; i++) {
                json_t *a = json_object();
                if (!a || !set(a, "path", json_string(res->artifacts[i].path)) ||
                    !set(a, "content", plim_json_base64(res->artifacts[i].data, res->artifacts[i].len)) ||
                    json_array_append_new(arts, a) < 0) {
                        json_decref(a);
                        goto fail;
                }
        }
        const char *detail = res->outcome == SBX_PLAN_COMPLETED ? "" : res->detail;
        if (!set(o, "steps", TAKE_PTR(steps)) || !set(o, "outcome", json_string(outcomes[res->outcome])) ||
            !set(o, "artifacts", TAKE_PTR(arts)) || !set(o, "outcomeDetail", json_string(detail ? detail : "")) ||
            !set(o, "artifactsTruncated", json_boolean(res->artifacts_truncated)))
                goto fail;
        return o;
fail:
        json_decref(o);
        json_decref(steps);
        json_decref(arts);
        return NULL;
}

/* ---- records ---- */

/* The RunRecord as JSON, as the wire and the audit log carry it: every field present (version 3
 * without resultSha256, versions 1 and 2 without unanswered), int64 and uint64 as strings. */
static json_t *record_json(const plim_record *v) {
        json_t *o = json_pack("{s:i, s:s}", "version", (int) v->version, "requestSha256", v->request_sha256);
        if (!o)
                return NULL;
        if (!(v->version == 3 ? set(o, "unanswered", json_string(v->unanswered))
                              : set(o, "resultSha256", json_string(v->result_sha256))) ||
            !set(o, "provider", json_string(v->provider)) || !set(o, "isolation", json_string(v->isolation)) ||
            !set(o, "environment", json_string(v->environment)) || !set(o, "policy", json_string(v->policy)) ||
            !set(o, "startedUnixMs", plim_json_int64_string((int64_t) v->started_unix_ms)) ||
            !set(o, "endedUnixMs", plim_json_int64_string((int64_t) v->ended_unix_ms)) ||
            !set(o, "session", json_string(v->session)) || !set(o, "sequence", plim_json_uint64_string(v->sequence)) ||
            !set(o, "previousSha256", json_string(v->previous_sha256)) ||
            !set(o, "softwareIdentity", json_string(v->software_identity)) ||
            !set(o, "softwareRuleId", json_string(v->software_rule_id))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* Fill v for request r answered by ev: single runs (chain NULL) have no session fields; a session
 * call is the chain's next one. */
static void record_init(plim_record *v, uint32_t version, const plim_request *r, const plim_evidence *ev,
                        const plim_chain *chain, uint64_t received, uint64_t ended) {
        *v = (plim_record){
                .version = version,
                .request_sha256 = r->request_sha256,
                .result_sha256 = "",
                .provider = ev->sandbox,
                .isolation = ev->isolation,
                .environment = ev->environment ? ev->environment : "",
                .policy = ev->policy ? ev->policy : "",
                .started_unix_ms = received,
                .ended_unix_ms = ended,
                .session = chain ? chain->session : "",
                .sequence = chain ? chain->calls + 1 : 0,
                .previous_sha256 = chain ? chain->last_sha256 : "",
                .record_sha256 = "",
                .software_identity = "",
                .software_rule_id = r->software_rule_id,
                .unanswered = "",
        };
}

/* Make the record of v (its digest into ret_sha256), as a new JSON object. */
static int record_make(const plim_record *v, char ret_sha256[REC_DIGEST_HEX_SIZE], json_t **ret, plim_error *f) {
        hull_error e = {0};
        json_t *record = record_json(v);
        if (!record)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (rec_record_fields_digest(v, ret_sha256, &e) < 0 || !set(record, "recordSha256", json_string(ret_sha256))) {
                json_decref(record);
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s",
                                 e.msg[0] ? e.msg : "out of memory");
        }
        *ret = record;
        return 0;
}

/* The version 2 record of an answer: digests of the request as received and of the result as it
 * will be sent, the evidence, the times, the session fields (empty for a single run), then its
 * own digest. Sets answer.record; returns the record digest in ret_sha256. */
static int record_fill(const plim_request *r, json_t *answer, const plim_evidence *ev, const plim_chain *chain,
                       uint64_t received, uint64_t ended, char ret_sha256[REC_DIGEST_HEX_SIZE], plim_error *f) {
        char res[REC_DIGEST_HEX_SIZE];
        hull_error e = {0};
        plim_record v;
        json_t *record;
        if (rec_result_digest(answer, res, &e) < 0)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s", e.msg);
        record_init(&v, 2, r, ev, chain, received, ended);
        v.result_sha256 = res;
        if (record_make(&v, ret_sha256, &record, f) < 0)
                return -1;
        if (!set(answer, "record", record))
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        return 0;
}

/* ---- answers ---- */

/* The error for a broker result that is not an answer, or 0 when it is one. */
static int outcome_check(const sbx_plan_result *res, plim_error *f) {
        switch ((sbx_plan_outcome) res->outcome) {
        case SBX_PLAN_NOT_STARTED:
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                 "the run was not started: %s" NOTHING_RAN, res->detail ? res->detail : "");
        case SBX_PLAN_CANCELLED:
                return plim_fail(
                        f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_NONE,
                        "the run was stopped because hull serve is shutting down (%s); it may have run in part",
                        res->detail ? res->detail : "");
        case SBX_PLAN_ERROR:
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox failed: %s",
                                 res->detail ? res->detail : "");
        case SBX_PLAN_SETUP_FAILED:
        case SBX_PLAN_COMPLETED:
        case SBX_PLAN_TIMED_OUT:
                return 0;
        }
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox gave an unknown outcome %" PRIu32,
                         res->outcome);
}

static json_t *cell_result(const plim_cell_result *c) {
        json_t *o = json_object();
        if (!o || !set(o, "stdout", plim_json_base64(c->out, c->out_len)) ||
            !set(o, "stderr", plim_json_base64(c->err, c->err_len)) ||
            !set(o, "exitCode", json_integer(c->exit_code)) || !set(o, "timedOut", json_boolean(c->timed_out)) ||
            !set(o, "stdoutTruncated", json_boolean(c->out_truncated)) ||
            !set(o, "stderrTruncated", json_boolean(c->err_truncated)) ||
            !set(o, "interpreterStarted", json_boolean(c->interpreter_started)) ||
            !set(o, "interpreterEnded", json_boolean(c->interpreter_ended))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* The RunResponse of r (without its record): from res for javascript and project, from cell for
 * a cell. Returns 0 with *ret, -1 with *f (not an answer), or -ENOMEM. */
static int run_response(const plim_request *r, const sbx_plan_result *res, const plim_cell_result *cell,
                        const plim_evidence *ev, json_t **ret, plim_error *f) {
        json_t *result;
        uint64_t duration;
        if (r->kind == PLIM_KIND_CELL) {
                if (!cell)
                        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the cell has no result");
                result = cell_result(cell);
                duration = cell->wall_us / 1000;
        } else {
                if (!res)
                        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run has no result");
                if (outcome_check(res, f) < 0)
                        return -1;
                if (r->kind == PLIM_KIND_JAVASCRIPT) {
                        if (res->n_steps != 1)
                                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                                                 "the sandbox did not run the code: %s",
                                                 res->detail ? res->detail : "");
                        result = stream_result(&res->steps[0]);
                } else
                        result = project_result(r, res);
                duration = res->ended_unix_ms >= res->started_unix_ms ? res->ended_unix_ms - res->started_unix_ms : 0;
        }
        json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s}", "sandbox", ev->sandbox, "isolation", ev->isolation,
                              "durationMs", plim_json_int64_string((int64_t) duration), "softwareIdentity", "",
                              "environment", ev->environment ? ev->environment : "");
        if (!o || !set(o, plim_kind_to_string(r->kind), result)) {
                json_decref(o);
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

/* hull's extension of a RunResponse, beside its record (outside every digest): a limited
 * network's connection log (ss_net_log_json). Nothing when log is NULL (no limited network). */
static int add_net_log(json_t *run, const char *log, size_t len) {
        if (!log)
                return 0;
        json_t *a = ss_net_log_json(log, len);
        return a && json_object_set_new(run, "hullNetworkLog", a) == 0 ? 0 : -ENOMEM;
}

int plim_run_answer(const plim_request *r, const sbx_plan_result *res, const plim_evidence *ev,
                    uint64_t received_unix_ms, uint64_t ended_unix_ms, char **ret, size_t *ret_len, plim_error *f) {
        char digest[REC_DIGEST_HEX_SIZE];
        json_t *o;
        if (r->kind == PLIM_KIND_CELL)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "a cell is answered only in a session");
        int q = run_response(r, res, NULL, ev, &o, f);
        if (q < 0)
                return q;
        if (record_fill(r, o, ev, NULL, received_unix_ms, ended_unix_ms, digest, f) < 0) {
                json_decref(o);
                return -1;
        }
        if (add_net_log(o, res->net_log, res->net_log_len) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        return plim_json_dump(o, ret, ret_len);
}

/* ---- sessions ---- */

int plim_chain_init(plim_chain *c, const char *session_id) {
        if (!plim_session_id_is_valid(session_id, strlen(session_id)))
                return -EINVAL;
        plim_chain n = {.calls = 0};
        int q = rec_fingerprint(session_id, strlen(session_id), n.session);
        if (q < 0)
                return q;
        *c = n;
        return 0;
}

void plim_call_record_done(plim_call_record *c) {
        json_decref(c->record);
        json_decref(c->request);
        json_decref(c->result);
        *c = (plim_call_record){0};
}

void plim_chain_advance(plim_chain *chain, const plim_call_record *c) {
        chain->calls = c->sequence;
        memcpy(chain->last_sha256, c->record_sha256, sizeof(chain->last_sha256));
}

int plim_open_answer(const char *session_id, const plim_evidence *ev, uint64_t expires_unix_ms,
                     uint32_t idle_timeout_ms, char **ret, size_t *ret_len) {
        plim_chain c;
        int q = plim_chain_init(&c, session_id);
        if (q < 0)
                return q;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:s}", "sessionId", session_id, "session", c.session,
                              "sandbox", ev->sandbox, "isolation", plim_session_tier(ev), "expiresUnixMs",
                              plim_json_int64_string((int64_t) expires_unix_ms), "idleTimeoutMs",
                              (json_int_t) idle_timeout_ms, "softwareIdentity", "");
        return plim_json_dump(o, ret, ret_len);
}

int plim_session_run_answer(const plim_request *r, const sbx_plan_result *res, const plim_cell_result *cell,
                            const plim_evidence *ev, const plim_chain *chain, uint64_t received_unix_ms,
                            uint64_t ended_unix_ms, plim_session_end ended, const char *end_detail, char **ret,
                            size_t *ret_len, plim_call_record *ret_record, plim_error *f) {
        plim_call_record c = {.sequence = chain->calls + 1};
        json_t *run, *o = NULL;
        int q = run_response(r, res, cell, ev, &run, f);
        if (q < 0)
                return q;
        if (record_fill(r, run, ev, chain, received_unix_ms, ended_unix_ms, c.record_sha256, f) < 0) {
                json_decref(run);
                return -1;
        }
        if ((cell ? add_net_log(run, cell->net_log, cell->net_log_len)
                  : add_net_log(run, res ? res->net_log : NULL, res ? res->net_log_len : 0)) < 0) {
                json_decref(run);
                return -ENOMEM;
        }
        c.record = json_incref(json_object_get(run, "record"));
        c.request = json_incref(r->root);
        c.result = json_pack("{s:O}", plim_kind_to_string(r->kind), json_object_get(run, plim_kind_to_string(r->kind)));
        o = json_pack("{s:o}", "run", run);
        if (!o || !c.result)
                goto oom;
        if (ended > PLIM_SESSION_END_UNSPECIFIED && ended < _PLIM_SESSION_END_MAX) {
                char detail[PLIM_END_DETAIL_MAX];
                plim_copy_utf8(detail, sizeof(detail), end_detail ? end_detail : "");
                if (!set(o, "ended", json_string(plim_session_end_to_string(ended))) ||
                    (detail[0] && !set(o, "endDetail", json_string(detail))))
                        goto oom;
        }
        q = plim_json_dump(TAKE_PTR(o), ret, ret_len);
        if (q < 0)
                goto oom;
        *ret_record = c;
        return 0;
oom:
        json_decref(o);
        plim_call_record_done(&c);
        return -ENOMEM;
}

int plim_unanswered_error(const plim_request *r, const plim_evidence *ev, const plim_chain *chain,
                          uint64_t received_unix_ms, uint64_t ended_unix_ms, plim_error *f,
                          plim_call_record *ret_record) {
        plim_call_record c = {.sequence = chain->calls + 1};
        plim_record v;
        plim_error g;
        if (f->reason != PLIM_REASON_NONE)
                return -EINVAL;
        record_init(&v, 3, r, ev, chain, received_unix_ms, ended_unix_ms);
        v.unanswered = plim_code_to_string(f->code);
        if (record_make(&v, c.record_sha256, &c.record, &g) < 0)
                return -ENOMEM;
        v.record_sha256 = c.record_sha256;
        int q = plim_error_unanswered(f, &v);
        if (q < 0) {
                plim_call_record_done(&c);
                return q;
        }
        c.request = json_incref(r->root);
        *ret_record = c;
        return 0;
}

int plim_error_unanswered(plim_error *f, const plim_record *v) {
        /* UnansweredCall { record = 1 (RunRecord) } */
        uint8_t inner[PLIM_UNANSWERED_DETAIL_MAX / 2], outer[PLIM_UNANSWERED_DETAIL_MAX / 2];
        plim_pb a, b;
        plim_pb_init(&a, inner, sizeof(inner));
        plim_pb_run_record(&a, v);
        plim_pb_init(&b, outer, sizeof(outer));
        if (a.err == 0)
                plim_pb_bytes(&b, 1, inner, a.len);
        if (a.err < 0 || b.err < 0 ||
            base64_encode_to(f->unanswered, sizeof(f->unanswered), outer, b.len, false, NULL) < 0)
                return -ENOBUFS;
        return 0;
}

/* A 64-bit field of a record as hull writes them (decimal strings). */
static uint64_t record_u64(const json_t *rec, const char *name) {
        const char *s = json_string_value(json_object_get(rec, name));
        uint64_t v = 0;
        return s && parse_uint64(s, 0, UINT64_MAX, &v) == 0 ? v : 0;
}

int plim_record_from_json(const json_t *rec, plim_record *ret) {
#define S(name) (json_string_value(json_object_get(rec, name)) ?: "")
        json_int_t version = json_integer_value(json_object_get(rec, "version"));
        if (!json_is_object(rec) || version < 1 || version > 3)
                return -EINVAL;
        *ret = (plim_record){
                .version = (uint32_t) version,
                .request_sha256 = S("requestSha256"),
                .result_sha256 = S("resultSha256"),
                .provider = S("provider"),
                .isolation = S("isolation"),
                .environment = S("environment"),
                .policy = S("policy"),
                .started_unix_ms = record_u64(rec, "startedUnixMs"),
                .ended_unix_ms = record_u64(rec, "endedUnixMs"),
                .session = S("session"),
                .sequence = record_u64(rec, "sequence"),
                .previous_sha256 = S("previousSha256"),
                .record_sha256 = S("recordSha256"),
                .software_identity = S("softwareIdentity"),
                .software_rule_id = S("softwareRuleId"),
                .unanswered = S("unanswered"),
        };
#undef S
        return 0;
}

int plim_close_answer(const char *fingerprint, uint64_t calls, const char *last_record_sha256, plim_session_end ended,
                      char **ret, size_t *ret_len) {
        json_t *o = json_pack("{s:s, s:o, s:s, s:s}", "session", fingerprint, "calls", plim_json_uint64_string(calls),
                              "lastRecordSha256", last_record_sha256 ? last_record_sha256 : "", "ended",
                              plim_session_end_to_string(ended));
        return plim_json_dump(o, ret, ret_len);
}
