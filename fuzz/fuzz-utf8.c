/* fuzz-utf8.c: repair always yields valid UTF-8 and leaves valid input unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *out = NULL;
        size_t len = 0;
        bool valid = utf8_is_valid((const char *) data, size);
        if (utf8_make_valid((const char *) data, size, &out, &len) < 0)
                return 0;
        if (!utf8_is_valid(out, len))
                abort();
        if (valid && (len != size || memcmp(out, data, size) != 0))
                abort();
        free(out);
        return 0;
}
