/* fuzz-env-spec.c: any bytes parse as an environment's spec or are refused with a message; a
 * parsed spec survives its JSON form and has a canonical package spec. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "env-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        env_spec s = {0}, s2 = {0};
        hull_error e = {0};
        if (env_spec_parse((const char *) data, size, &s, &e) < 0) {
                if (!e.msg[0])
                        abort();
                env_spec_done(&s);
                return 0;
        }
        json_t *j = env_spec_to_json(&s);
        if (!j || env_spec_from_json(j, &s2, &e) < 0)
                abort();
        json_t *j2 = env_spec_to_json(&s2);
        if (!j2 || !json_equal(j, j2))
                abort();
        char *canon = NULL;
        if (env_spec_packages_canonical(&s, &canon) < 0)
                abort();
        free(canon);
        json_decref(j);
        json_decref(j2);
        env_spec_done(&s);
        env_spec_done(&s2);
        return 0;
}
