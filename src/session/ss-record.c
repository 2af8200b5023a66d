/* ss-record.c: a session's chain of run records and its audit log. Every record, whoever made
 * it, goes through ss_record_append: it must be the chain's next, it is appended to
 * session-<fingerprint>.jsonl in the audit directory, and the chain advances. The core makes the
 * records of hull's own kinds (ss_record_hull; ss_record_read_only for a face's read-only calls)
 * and of cells run for faces that have no record rules of their own (ss_record_cell: plimsoll's
 * cell kind, protocol 3). */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ss-internal.h"
#include "time-util.h"

int ss_record_append(ss_manager *m, ss_session *s, const char *operation, const json_t *record, const json_t *request,
                     const json_t *result) {
        const char *sha = json_string_value(json_object_get(record, "recordSha256"));
        const char *seq = json_string_value(json_object_get(record, "sequence"));
        char want[32];
        snprintf(want, sizeof(want), "%" PRIu64, s->chain.calls + 1);
        if (!sha || strlen(sha) != REC_DIGEST_HEX_SIZE - 1 || !seq || strcmp(seq, want) != 0)
                return -EINVAL;
        if (m->audit_fd >= 0) {
                json_t *entry = NULL;
                hull_error e = {0};
                if (rec_log_entry_new(operation, record, request, result, &entry, &e) < 0 ||
                    rec_log_append_kept(m->audit_fd, s->log_name, &s->log, entry, 0, &e) < 0) {
                        char clean[HULL_ERROR_MSG_MAX];
                        ss_log(m, DLOG_ERROR, "event=audit-log-failed log=%s error=\"%s\"", s->log_name,
                               dlog_clean(e.msg, clean, sizeof(clean)));
                }
                json_decref(entry);
        }
        s->chain.calls++;
        memcpy(s->chain.last_sha256, sha, REC_DIGEST_HEX_SIZE);
        json_decref(s->call_record);
        s->call_record = json_incref((json_t *) record);
        return 0;
}

const json_t *ss_call_record(ss_session *s) {
        return s->call_record;
}

/* A record of the session's next call over the given digests, appended. */
static int record_chained(ss_manager *m, ss_session *s, const char *operation, const char *request_sha,
                          const char *result_sha, const char *unanswered, const json_t *request, const json_t *result,
                          uint64_t started_unix_ms, json_t **ret_record, hull_error *e) {
        char sha[REC_DIGEST_HEX_SIZE];
        const char *kev = m->cfg.kernel_evidence ? atomic_load(m->cfg.kernel_evidence) : NULL;
        rec_record v = {
                .version = unanswered ? 3 : 2,
                .request_sha256 = request_sha,
                .result_sha256 = unanswered ? "" : result_sha,
                .provider = m->cfg.provider ? m->cfg.provider : "hull",
                .isolation = s->tier == SBX_TIER_KERNEL ? "kernel"
                             : m->cfg.isolation         ? m->cfg.isolation
                                                        : "container",
                .environment = s->environment,
                .policy = s->tier == SBX_TIER_KERNEL && kev ? kev : "",
                .started_unix_ms = started_unix_ms,
                .ended_unix_ms = now_unix_ms(),
                .session = s->chain.session,
                .sequence = s->chain.calls + 1,
                .previous_sha256 = s->chain.last_sha256,
                .record_sha256 = "",
                .software_identity = "",
                .software_rule_id = s->rule_id,
                .unanswered = unanswered ? unanswered : "",
        };
        json_t *record = NULL;
        int r = rec_record_new(&v, &record, sha, e);
        if (r < 0)
                return r;
        r = ss_record_append(m, s, operation, record, request, unanswered ? NULL : result);
        if (r < 0) {
                json_decref(record);
                return hull_err(e, r, "the record is not the chain's next");
        }
        if (ret_record)
                *ret_record = record;
        else
                json_decref(record);
        return 0;
}

int ss_record_hull(ss_manager *m, ss_session *s, const char *operation, const json_t *request, const json_t *result,
                   const char *unanswered, uint64_t started_unix_ms, json_t **ret_record, hull_error *e) {
        char req_sha[REC_DIGEST_HEX_SIZE], res_sha[REC_DIGEST_HEX_SIZE] = "";
        int r = rec_hull_request_digest(operation, request, req_sha, e);
        if (r >= 0 && !unanswered)
                r = rec_hull_result_digest(operation, result, res_sha, e);
        if (r < 0)
                return r;
        return record_chained(m, s, operation, req_sha, res_sha, unanswered, request, result, started_unix_ms,
                              ret_record, e);
}

int ss_record_read_only(ss_manager *m, ss_session *s, const char *operation, const json_t *request,
                        const json_t *result, const char *unanswered, uint64_t started_unix_ms, json_t **ret_record,
                        hull_error *e) {
        if (!operation || !rec_hull_operation_is_read_only(operation))
                return hull_fail(e, -EINVAL, "run records: '%s' is not one of hull's read-only kinds",
                                 operation ? operation : "(none)");
        if (!unanswered && !result)
                return hull_fail(e, -EINVAL, "run records: an answered %s call needs its result", operation);
        return ss_record_hull(m, s, operation, request, result, unanswered, started_unix_ms, ret_record, e);
}

int ss_record_cell(ss_manager *m, ss_session *s, const ss_cell_args *a, const ss_cell_output *o,
                   uint64_t started_unix_ms, json_t **ret_record, hull_error *e) {
        char req_sha[REC_DIGEST_HEX_SIZE], res_sha[REC_DIGEST_HEX_SIZE];
        json_auto_t *files = json_array();
        for (size_t i = 0; files && i < a->n_files; i++)
                if (json_array_append_new(files, json_pack("{s:s, s:o}", "path", a->files[i].path, "content",
                                                           pj_new_bytes(a->files[i].content, a->files[i].len))) < 0)
                        return hull_err(e, -ENOMEM, "out of memory");
        json_auto_t *request =
                files ? json_pack("{s:i, s:{s:s, s:s%, s:O}}", "protocol", 3, "cell", "language",
                                  sbx_lang_to_string(a->lang), "code", a->code, a->code_len, "files", files)
                      : NULL;
        json_auto_t *result = json_pack(
                "{s:{s:o, s:o, s:i, s:b, s:b, s:b, s:b, s:b}}", "cell", "stdout", pj_new_bytes(o->o.out, o->o.out_len),
                "stderr", pj_new_bytes(o->o.err, o->o.err_len), "exitCode", o->o.exit_code, "timedOut", o->o.timed_out,
                "stdoutTruncated", o->o.out_truncated, "stderrTruncated", o->o.err_truncated, "interpreterStarted",
                o->interpreter_started, "interpreterEnded", o->interpreter_ended);
        if (!request || !result)
                return hull_err(e, -ENOMEM, "out of memory");
        int r = rec_request_digest(request, req_sha, e);
        if (r >= 0)
                r = rec_result_digest(result, res_sha, e);
        if (r < 0)
                return r;
        return record_chained(m, s, NULL, req_sha, res_sha, NULL, request, result, started_unix_ms, ret_record, e);
}

void ss_record_or_log(ss_manager *m, ss_session *s, const char *operation, const json_t *request, const json_t *result,
                      uint64_t started, json_t **ret_record) {
        hull_error re = {0};
        if (!request || !result || ss_record_hull(m, s, operation, request, result, NULL, started, ret_record, &re) < 0)
                ss_log(m, DLOG_ERROR, "event=record-failed session=%.12s operation=%s error=\"%s\"", s->chain.session,
                       operation, request && result ? re.msg : "out of memory");
}
