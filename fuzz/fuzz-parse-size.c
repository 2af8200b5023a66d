/* fuzz-parse-size.c: every CLI value parser on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        uint64_t v;
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        (void) parse_uint64(s, 0, UINT64_MAX, &v);
        if (parse_size(s, 0, UINT64_MAX, &v) == 0 && strchr(s, '-'))
                abort(); /* a negative size must never parse */
        (void) parse_duration_ms(s, 1, 86400000, &v);
        (void) parse_cpus(s, 1024, &v);
        (void) parse_env_assignment(s, 64);
        free(s);
        return 0;
}
