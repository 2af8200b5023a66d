/* json-str.c: JSON strings written a run at a time (json-str.h). */
#include "json-str.h"

void json_str_put(FILE *out, const char *s, size_t len) {
        putc_unlocked('"', out);
        size_t run = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c >= 0x20 && c != '"' && c != '\\')
                        continue;
                fwrite_unlocked(s + run, 1, i - run, out);
                run = i + 1;
                switch (c) {
                case '"':
                        fputs_unlocked("\\\"", out);
                        break;
                case '\\':
                        fputs_unlocked("\\\\", out);
                        break;
                case '\b':
                        fputs_unlocked("\\b", out);
                        break;
                case '\f':
                        fputs_unlocked("\\f", out);
                        break;
                case '\n':
                        fputs_unlocked("\\n", out);
                        break;
                case '\r':
                        fputs_unlocked("\\r", out);
                        break;
                case '\t':
                        fputs_unlocked("\\t", out);
                        break;
                default:
                        fprintf(out, "\\u%04X", c);
                }
        }
        fwrite_unlocked(s + run, 1, len - run, out);
        putc_unlocked('"', out);
}
