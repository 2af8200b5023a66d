/* fuzz-hullapi.c: every parser of hull's Workspace and Sessions API on the same arbitrary bytes;
 * a parsed request must be within its documented bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hullapi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        for (int p = HULL_API_EXEC; p < _HULL_API_PROCEDURE_MAX; p++) {
                hull_api_request r;
                plim_error f;
                if (hull_api_parse((hull_api_procedure) p, (const char *) data, size, &r, &f) < 0) {
                        if (f.reason >= _PLIM_REASON_MAX || strlen(f.message) >= sizeof(f.message))
                                abort();
                        continue;
                }
                if (r.procedure != (hull_api_procedure) p || (p != HULL_API_SESSIONS_LIST && !r.session_id))
                        abort();
                if (r.exec.timeout_ms > PLIM_TIMEOUT_MS_MAX || r.exec.n_env > HULL_API_ENV_MAX ||
                    r.read.limit > WS_READ_MAX_BYTES || r.write.content_len > WS_WRITE_MAX_BYTES ||
                    r.grep.max_matches > WS_GREP_MATCHES_MAX || (p == HULL_API_EDIT && r.edit.old_len == 0) ||
                    (p == HULL_API_EXEC && (!r.exec.command || strlen(r.exec.command) == 0)))
                        abort();
                hull_api_request_done(&r);
        }
        return 0;
}
