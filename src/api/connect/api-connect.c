/* api-connect.c: see api-connect.h. */
#include "api-connect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

#define NOTHING_RAN "; nothing ran"

/* ---- Connect ---- */

void api_connect_error(http_req *r, const plim_error *f, const char *not_dispatched, unsigned status_override) {
        api_connect *c = http_req_data(r);
        char *body;
        size_t len;
        metrics_refusal(c->metrics, f->reason);
        http_req_note(r, "code=%s%s%s", plim_code_to_string(f->code), f->reason ? " not_dispatched=" : "",
                      plim_reason_to_string(f->reason));
        if (plim_error_json(f, &body, &len) < 0)
                return; /* no answer: the connection closes */
        if (not_dispatched && http_answer_header(r, PLIM_NOT_DISPATCHED_HEADER, not_dispatched) < 0) {
                free(body);
                return;
        }
        (void) http_answer(r, status_override ? status_override : plim_code_http_status(f->code), "application/json",
                           body, len);
}

void api_connect_refuse(http_req *r, plim_code code, plim_reason reason, const char *not_dispatched,
                        unsigned status_override, const char *msg) {
        plim_error f;
        plim_fail(&f, code, reason, "%s", msg);
        api_connect_error(r, &f, not_dispatched, status_override);
}

static void connect_begin(http_req *r) {
        unsigned n;
        const char *rid = http_req_header(r, PLIM_REQUEST_ID_HEADER, &n);
        if (rid && plim_request_id_is_valid(rid)) { /* echoed on every answer, errors included */
                http_req_set_id(r, rid);
                (void) http_answer_header(r, PLIM_REQUEST_ID_HEADER, rid);
        }
}

static void connect_refuse(http_req *r, http_refusal why, unsigned status, const char *msg) {
        char text[HULL_ERROR_MSG_MAX];
        if (why == HTTP_REFUSAL_NOT_FOUND) {
                const char *path = http_req_path(r);
                bool known_service = plim_procedure_from_path(path) == PLIM_PROC_UNKNOWN ||
                                     hull_api_procedure_from_path(path) == HULL_API_UNKNOWN;
                msg = known_service ? "hull serve has no such procedure" : msg;
        }
        snprintf(text, sizeof(text), "%s" NOTHING_RAN, msg);
        switch (why) {
        case HTTP_REFUSAL_NOT_FOUND:
                api_connect_refuse(r, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "unsupported", 404, text);
                return;
        case HTTP_REFUSAL_METHOD:
                api_connect_refuse(r, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_REQUEST, "request", 405, text);
                return;
        case HTTP_REFUSAL_BAD_HEAD:
        case HTTP_REFUSAL_TOO_LARGE: /* Connect's status for invalid_argument: 400 */
                api_connect_refuse(r, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0, text);
                return;
        case HTTP_REFUSAL_UNAUTHENTICATED:
                api_connect_refuse(r, PLIM_CODE_UNAUTHENTICATED, PLIM_REASON_PERMISSION, NULL, 0, text);
                return;
        case HTTP_REFUSAL_FORBIDDEN:
                api_connect_refuse(r, PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_PERMISSION, NULL, 0, text);
                return;
        case HTTP_REFUSAL_BUSY:
                api_connect_refuse(r, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, NULL, 0, text);
                return;
        case HTTP_REFUSAL_STOPPING:
                api_connect_refuse(r, PLIM_CODE_UNAVAILABLE, PLIM_REASON_CAPACITY, NULL, 0, text);
                return;
        case _HTTP_REFUSAL_MAX:
                break;
        }
        api_connect_refuse(r, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, NULL, status, text);
}

const http_api api_connect_api = {
        .name = "connect",
        .begin = connect_begin,
        .refuse = connect_refuse,
};

int api_connect_head(http_req *r) {
        unsigned n;
        if (!plim_content_type_is_json(http_req_header(r, "Content-Type", NULL))) {
                api_connect_refuse(r, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0,
                                   "the body must be Content-Type: application/json" NOTHING_RAN);
                return 1;
        }
        const char *enc = http_req_header(r, "Content-Encoding", &n);
        if (n > 1 || (enc && strcasecmp(enc, "identity") != 0)) {
                api_connect_refuse(r, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "request", 0,
                                   "compressed bodies are not accepted (send Content-Encoding: identity)" NOTHING_RAN);
                return 1;
        }
        return 0;
}

void api_connect_session_answer(http_req *r, hs_answer *a) {
        api_connect *c = http_req_data(r);
        if (a->ok)
                (void) http_answer(r, 200, "application/json", TAKE_PTR(a->body), a->len);
        else {
                free(TAKE_PTR(a->body));
                if (a->f.code == PLIM_CODE_INTERNAL && a->f.reason == PLIM_REASON_NONE && !a->f.unanswered[0]) {
                        char clean[HULL_ERROR_MSG_MAX];
                        dlog_log(c->log, DLOG_ERROR, "event=session-failed id=%s error=\"%s\"", http_req_id(r),
                                 dlog_clean(a->f.message, clean, sizeof(clean)));
                }
                api_connect_error(r, &a->f, a->f.before_handler ? "request" : NULL, 0);
        }
        if (a->note[0])
                http_req_note(r, "%s", a->note);
}
