/* fuzz-plimsoll-session.c: the session parsers (OpenSession, SessionRun, CloseSession) on
 * arbitrary bytes, and what follows a successful SessionRun parse: admission and a chained answer
 * with its record (which must always succeed), and an UnansweredCall error (which must fit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker-msg.h"
#include "plimsoll.h"

static void check_error(const plim_error *f) {
        if (f->reason >= _PLIM_REASON_MAX || strlen(f->message) >= sizeof(f->message) ||
            f->session_end >= _PLIM_SESSION_END_MAX)
                abort();
        char *s;
        size_t n;
        if (plim_error_json(f, &s, &n) != 0)
                abort();
        free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const plim_evidence ev = {.sandbox = "hull",
                                         .isolation = "container",
                                         .javascript = true,
                                         .python = true,
                                         .memory_bytes = 1 << 29,
                                         .pids = 256,
                                         .sessions = true,
                                         .session_python = true,
                                         .session_javascript = true};
        const char *body = (const char *) data;
        plim_open_request o;
        plim_request r;
        plim_error f;
        char id[PLIM_SESSION_ID_MAX + 1];

        if (plim_open_parse(body, size, &o, &f) == 0) {
                if (o.protocol != PLIM_PROTOCOL || strlen(o.owner) > PLIM_OWNER_MAX)
                        abort();
                (void) plim_open_admit(&o, &ev, &f);
                plim_open_request_done(&o);
        } else
                check_error(&f);
        if (plim_close_parse(body, size, id, &f) == 0) {
                plim_chain c;
                if (plim_chain_init(&c, id) != 0)
                        abort(); /* every ID the parser takes is one a chain can start from */
        } else
                check_error(&f);

        if (plim_session_run_parse(body, size, &r, &f) < 0) {
                check_error(&f);
                return 0;
        }
        if (r.protocol != PLIM_PROTOCOL || !r.session_id ||
            (r.kind != PLIM_KIND_JAVASCRIPT && r.kind != PLIM_KIND_PROJECT && r.kind != PLIM_KIND_CELL))
                abort();
        (void) plim_run_admit(&r, &ev, &f);
        plim_chain chain;
        if (plim_chain_init(&chain, r.session_id) != 0)
                abort();
        sbx_step_result step = {.out = (char *) "", .err = (char *) ""};
        sbx_plan_result res = {.outcome = SBX_PLAN_COMPLETED, .detail = (char *) "", .steps = &step, .n_steps = 1};
        plim_cell_result cell = {.out = "", .err = ""};
        plim_call_record rec;
        char *answer;
        size_t len;
        /* A parsed request always gets a chained answer with its record. */
        if (plim_session_run_answer(&r, &res, &cell, &ev, &chain, 1, 2, PLIM_SESSION_END_UNSPECIFIED, NULL, &answer,
                                    &len, &rec, &f) != 0)
                abort();
        free(answer);
        plim_chain_advance(&chain, &rec);
        plim_call_record_done(&rec);
        plim_fail(&f, PLIM_CODE_DEADLINE_EXCEEDED, PLIM_REASON_NONE, "deadline");
        if (plim_unanswered_error(&r, &ev, &chain, 3, 4, &f, &rec) != 0)
                abort();
        check_error(&f);
        plim_call_record_done(&rec);
        plim_request_done(&r);
        return 0;
}
