/* fuzz-skill-pack.c: any bytes as SKILL.md parse or are refused with a message, and a name and a
 * description parsed are within their bounds and of their alphabet; the same bytes as a multipart
 * body (the first line its Content-Type), read by skp_form_read over multipart.h, give at most
 * the parts allowed, whose bytes together are no more than the body's, or are refused with a
 * message. */
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
        skp_form f = {0};
        e.msg[0] = '\0';
        r = skp_form_read(ct, b, bn, 8, &f, &e);
        if (r < 0 && (!e.msg[0] || f.parts || f.bytes))
                abort();
        if (r == 0) {
                if (f.n > 8)
                        abort();
                for (size_t i = 0; i < f.n; i++) {
                        n += f.parts[i].len;
                        if (f.parts[i].data < f.bytes || f.parts[i].data + f.parts[i].len > f.bytes + bn ||
                            !f.parts[i].name[0])
                                abort();
                }
                if (n > bn)
                        abort();
        }
        skp_form_done(&f);
        return 0;
}
