/* fuzz-plimsoll.c: the Run request parser on arbitrary bytes, and what follows a successful
 * parse: admission, the broker plan (which must always be a valid broker message) and an answer
 * with its record, which must always succeed. The session and Describe parsers get the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker-msg.h"
#include "plimsoll.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const plim_evidence ev = {.sandbox = "hull",
                                         .isolation = "container",
                                         .javascript = true,
                                         .python = true,
                                         .memory_bytes = 1 << 29,
                                         .pids = 256};
        const char *body = (const char *) data;
        plim_request r;
        plim_error f;
        (void) plim_describe_parse(body, size, &f);
        (void) plim_session_refuse(body, size, PLIM_PROC_SESSION_RUN, &f);
        if (plim_run_parse(body, size, &r, &f) < 0) {
                if (f.reason >= _PLIM_REASON_MAX || strlen(f.message) >= sizeof(f.message))
                        abort();
                return 0;
        }
        if (r.protocol != PLIM_PROTOCOL || (r.kind != PLIM_KIND_JAVASCRIPT && r.kind != PLIM_KIND_PROJECT))
                abort();
        (void) plim_run_admit(&r, &ev, &f);
        sbx_plan plan;
        if (plim_plan(&r, &ev, &plan) == 0) {
                char *buf;
                size_t len;
                if (brk_plan_encode(&plan, &buf, &len) != 0)
                        abort(); /* every parsed request is within the broker's bounds */
                free(buf);
                sbx_step_result step = {.out = (char *) "", .err = (char *) ""};
                sbx_plan_result res = {
                        .outcome = SBX_PLAN_COMPLETED, .detail = (char *) "", .steps = &step, .n_steps = 1};
                char *answer;
                /* A parsed request always gets an answer with its record: the parser and the
                 * record's digest must refuse the same requests. */
                if (plim_run_answer(&r, &res, &ev, 1, 2, &answer, &len, &f) != 0)
                        abort();
                free(answer);
                plim_plan_done(&plan);
        }
        plim_request_done(&r);
        return 0;
}
