/* fuzz-skill-pack.c: any bytes as SKILL.md parse or are refused with a message, and a name and a
 * description parsed are within their bounds and of their alphabet; the same bytes as a multipart
 * body (the first line its Content-Type) give parts that lie inside the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "skill-pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        skp_meta m;
        size_t body = 0;
        hull_error e = {0};
        int r = skp_frontmatter_parse((const char *) data, size, &m, &body, &e);
        if (r < 0 && !e.msg[0])
                abort();
        if (r == 0) {
                if (!m.name[0] || strlen(m.name) > SKILL_NAME_MAX || !m.description[0] ||
                    strlen(m.description) > SKILL_DESCRIPTION_MAX || body > size)
                        abort();
                for (const char *c = m.name; *c; c++)
                        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
                                abort();
        }
        const uint8_t *nl = memchr(data, '\n', size);
        if (!nl || nl - data > 200)
                return 0;
        char ct[201];
        memcpy(ct, data, (size_t) (nl - data));
        ct[nl - data] = '\0';
        const uint8_t *b = nl + 1;
        size_t bn = size - (size_t) (b - data), n = 0;
        static skp_part parts[8];
        e.msg[0] = '\0';
        r = skp_multipart_parse(ct, b, bn, parts, 8, &n, &e);
        if (r < 0 && !e.msg[0])
                abort();
        if (r == 0)
                for (size_t i = 0; i < n; i++)
                        if (parts[i].data < b || parts[i].data + parts[i].len > b + bn)
                                abort();
        return 0;
}
