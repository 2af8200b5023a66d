/* fuzz-html-text.c: HTML to text never crashes, always answers valid UTF-8 within its bound,
 * and says it truncated whenever the bound was reached. The first byte picks the bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "html-text.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        html_text t = {0};
        hull_error e = {0};
        size_t max = size ? 16 + (size_t) data[0] * 64 : 0;
        if (html_to_text((const char *) data, size, size > 1 && data[1] == 'L' ? "ISO-8859-1" : NULL, max, &t, &e) < 0)
                return 0; /* no libxml2, no memory */
        if (!t.text || strlen(t.text) != t.len || !utf8_is_valid(t.text, t.len) || (max && t.len > max))
                abort();
        if (t.title && (!utf8_is_valid(t.title, strlen(t.title)) || strlen(t.title) > HTML_TEXT_TITLE_MAX))
                abort();
        html_text_done(&t);
        return 0;
}
