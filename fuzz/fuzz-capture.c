/* fuzz-capture.c: the head/tail capture against a simple model (keep everything, then cut). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 2)
                return 0;
        size_t limit = (size_t) data[0] + 1, chunk = (size_t) data[1] % 17 + 1;
        data += 2;
        size -= 2;
        capture c;
        if (capture_init(&c, limit) < 0)
                return 0;
        for (size_t i = 0; i < size; i += chunk)
                capture_append(&c, data + i, chunk < size - i ? chunk : size - i);
        char *out = NULL;
        size_t len = 0;
        if (capture_contents(&c, &out, &len) < 0)
                abort();
        size_t head = limit - limit / 2, tail = limit / 2;
        if (size <= limit) {
                if (len != size || memcmp(out, data, size) != 0)
                        abort();
        } else {
                if (len != head + tail || memcmp(out, data, head) != 0 ||
                    memcmp(out + head, data + size - tail, tail) != 0 || capture_dropped(&c) != size - len)
                        abort();
        }
        free(out);
        capture_done(&c);
        return 0;
}
