/* fuzz-broker-msg.c: the broker's message decoders on arbitrary bytes (the first byte picks
 * request or result). Whatever decodes must encode back to exactly the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker-msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf;
        size_t len;
        if (size < 1)
                return 0;
        if (data[0] & 1) {
                sbx_plan r;
                if (brk_plan_decode(data + 1, size - 1, &r) == 0) {
                        if (brk_plan_encode(&r, &buf, &len) != 0 || len != size - 1 || memcmp(buf, data + 1, len) != 0)
                                abort();
                        free(buf);
                        sbx_plan_done(&r);
                }
        } else {
                sbx_plan_result r;
                if (brk_plan_result_decode(data + 1, size - 1, &r) == 0) {
                        if (brk_plan_result_encode(&r, &buf, &len) != 0 || len != size - 1 ||
                            memcmp(buf, data + 1, len) != 0)
                                abort();
                        free(buf);
                        sbx_plan_result_done(&r);
                }
        }
        return 0;
}
