/* fuzz-doc-answer.c: hull-docread's answer as hull reads it (src/tools/tool-doc-answer.c), from a
 * parser that a hostile document may have taken over. Whatever the bytes: the load and the check
 * never crash, an accepted answer has its text as a string, and a message cleaned for showing is
 * valid UTF-8 without control characters, at most 400 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tool-doc-answer.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *a = doc_answer_load((const char *) data, size);
        if (a) {
                const char *why = doc_answer_check(a);
                if (!why && !json_is_string(json_object_get(a, "text")))
                        abort();
                if (why && !why[0])
                        abort();
                json_decref(a);
        }
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        char buf[512];
        doc_clean_message(s, buf, sizeof(buf));
        size_t n = strlen(buf);
        if (n > 400 || !utf8_is_valid(buf, n))
                abort();
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) buf[i] < 0x20 || buf[i] == 0x7f)
                        abort();
        char tiny[3];
        doc_clean_message(s, tiny, sizeof(tiny));
        if (strlen(tiny) > 2 || !utf8_is_valid(tiny, strlen(tiny)))
                abort();
        free(s);
        return 0;
}
