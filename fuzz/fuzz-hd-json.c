/* fuzz-hd-json.c: the JSON scanner never crashes, agrees with jansson on validity (for
 * shallow input) and its shape, when it accepts, is an object with a "type". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hd-json.h"

static int count_element(const char *p, size_t n, void *userdata) {
        (void) p;
        (void) n;
        (*(size_t *) userdata)++;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *shape = NULL;
        size_t elements = 0;
        int r = hd_json_scan((const char *) data, size, &shape, count_element, &elements, NULL);
        if (r == 0) {
                if (!json_is_object(shape) || !json_is_string(json_object_get(shape, "type")))
                        abort();
                json_t *len = json_object_get(shape, "length");
                if (json_is_integer(len) && (size_t) json_integer_value(len) != elements)
                        abort();
        }
        json_decref(shape);
        /* jansson must agree when it can decide (it stops at depth 2048; NUL in strings allowed;
         * but a raw NUL byte ends its input, where the scanner sees trailing garbage) */
        if (memchr(data, 0, size))
                return 0;
        json_error_t err;
        json_t *j = json_loadb((const char *) data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (j && r != 0 && r != -ELOOP)
                abort();
        json_decref(j);
        return 0;
}
