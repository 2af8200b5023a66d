/* fuzz-schema.c: the tool-input validator on arbitrary schemas and values. Input: SCHEMA '\n'
 * VALUE, both JSON (a schema alone is also checked against itself as a value). Whatever the
 * input, a schema the checker accepts validates any value without crashing, and a refusal always
 * says something, in at most SCHEMA_ERRORS_MAX lines and a count. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

static void validate(const json_t *schema, const json_t *value) {
        char *out = NULL;
        int r = schema_validate(schema, value, "input", &out);
        if (r == 0) {
                if (out)
                        abort(); /* nothing is handed back on success */
                return;
        }
        if (r != -EINVAL && r != -ENOMEM)
                abort();
        if (r == -EINVAL) {
                size_t lines = 1;
                if (!out || !out[0])
                        abort();
                for (const char *c = out; *c; c++)
                        lines += *c == '\n';
                if (lines > SCHEMA_ERRORS_MAX + 1 || strlen(out) > SCHEMA_ERRORS_BYTES_MAX + 64)
                        abort();
        }
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data;
        const char *nl = memchr(p, '\n', size);
        size_t slen = nl ? (size_t) (nl - p) : size;
        json_t *schema = json_loadb(p, slen, JSON_DECODE_ANY, NULL);
        json_t *value = nl ? json_loadb(nl + 1, size - slen - 1, JSON_DECODE_ANY, NULL) : NULL;
        hull_error e = {0};
        if (schema) {
                if (schema_check(schema, &e) == 0) {
                        validate(schema, schema);
                        if (value)
                                validate(schema, value);
                } else if (e.err >= 0 || !e.msg[0])
                        abort();
        }
        json_decref(schema);
        json_decref(value);
        return 0;
}
