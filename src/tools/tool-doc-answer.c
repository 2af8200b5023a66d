/* tool-doc-answer.c: hull-docread's answer, read and judged (tool-doc-answer.h). Pure. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "limits.h"
#include "macro.h"
#include "tool-doc-answer.h"
#include "utf8.h"

static bool str_ok(const json_t *v, size_t min, size_t max) {
        return json_is_string(v) && json_string_length(v) >= min && json_string_length(v) <= max;
}

static bool int_ok(const json_t *v, json_int_t min, json_int_t max) {
        return json_is_integer(v) && json_integer_value(v) >= min && json_integer_value(v) <= max;
}

/* Does every member of o have a name in keys? */
static bool only_keys(const json_t *o, const char *const *keys, size_t n) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) o, k, v) {
                size_t i = 0;
                while (i < n && strcmp(keys[i], k) != 0)
                        i++;
                if (i == n)
                        return false;
        }
        return true;
}

const char *doc_answer_check(const json_t *a) {
        static const char *const top[] = {"format", "pages",    "pages_read", "ocr",
                                          "text",   "headings", "tables",     "notes"};
        static const char *const formats[] = {"pdf", "docx", "xlsx",     "pptx", "odt",  "ods",
                                              "odp", "html", "markdown", "text", "image"};
        static const char *const hk[] = {"level", "text", "page"};
        static const char *const tk[] = {"name", "page", "rows", "cols", "csv"};
        if (!json_is_object(a) || !only_keys(a, top, ELEMENTSOF(top)))
                return "not an object of the parser's members";
        const char *f = json_string_value(json_object_get(a, "format"));
        size_t i = 0;
        while (f && i < ELEMENTSOF(formats) && strcmp(formats[i], f) != 0)
                i++;
        if (!f || i == ELEMENTSOF(formats))
                return "an unknown format";
        if (!int_ok(json_object_get(a, "pages"), 0, INT32_MAX) ||
            !int_ok(json_object_get(a, "pages_read"), 0, DOCREAD_PAGES_MAX) ||
            !json_is_boolean(json_object_get(a, "ocr")) || !str_ok(json_object_get(a, "text"), 0, DOCREAD_TEXT_MAX))
                return "pages, pages_read, ocr or text out of bounds";
        json_t *hs = json_object_get(a, "headings"), *ts = json_object_get(a, "tables"),
               *ns = json_object_get(a, "notes");
        if (!json_is_array(hs) || json_array_size(hs) > DOCREAD_HEADINGS_MAX || !json_is_array(ts) ||
            json_array_size(ts) > DOCREAD_TABLES_MAX || !json_is_array(ns) ||
            json_array_size(ns) > DOCREAD_HEADINGS_MAX)
                return "headings, tables or notes out of bounds";
        json_t *v;
        json_array_foreach(hs, i, v) {
                if (!json_is_object(v) || !only_keys(v, hk, ELEMENTSOF(hk)) ||
                    !int_ok(json_object_get(v, "level"), 1, 9) || !str_ok(json_object_get(v, "text"), 1, 1024) ||
                    !int_ok(json_object_get(v, "page"), 0, DOCREAD_PAGES_MAX))
                        return "a heading out of bounds";
        }
        json_array_foreach(ts, i, v) {
                if (!json_is_object(v) || !only_keys(v, tk, ELEMENTSOF(tk)) ||
                    !str_ok(json_object_get(v, "name"), 1, 256) ||
                    !int_ok(json_object_get(v, "page"), 0, DOCREAD_PAGES_MAX) ||
                    !int_ok(json_object_get(v, "rows"), 0, DOCREAD_TABLE_ROWS_MAX) ||
                    !int_ok(json_object_get(v, "cols"), 1, DOCREAD_TABLE_COLS_MAX) ||
                    !str_ok(json_object_get(v, "csv"), 1, DOCREAD_OUTPUT_MAX))
                        return "a table out of bounds";
        }
        json_array_foreach(ns, i, v) {
                if (!str_ok(v, 1, HULL_ERROR_MSG_MAX))
                        return "a note out of bounds";
        }
        return NULL;
}

/* --text-apart: the text after the JSON, as it is, which jansson, lexing a character at a time,
 * need not read (the JSON of a 100-page PDF is mostly its text). */
json_t *doc_answer_load(const char *out, size_t len) {
        static const char *const order[] = {"format", "pages",    "pages_read", "ocr",
                                            "text",   "headings", "tables",     "notes"};
        json_error_t jerr;
        json_auto_t *a = json_loadb(out, len, JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK, &jerr);
        if (!a || jerr.position < 0 || (size_t) jerr.position > len)
                return NULL;
        const char *rest = out + jerr.position;
        size_t n = len - (size_t) jerr.position;
        json_t *tb = json_object_get(a, "text_bytes");
        if (!tb) {
                for (size_t i = 0; i < n; i++)
                        if (!(rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n' || rest[i] == '\r'))
                                return NULL;
                return TAKE_PTR(a);
        }
        if (json_object_get(a, "text") || !json_is_integer(tb) || json_integer_value(tb) < 0 ||
            json_integer_value(tb) > (json_int_t) DOCREAD_TEXT_MAX || n < 1 || rest[0] != '\n' ||
            (json_int_t) (n - 1) != json_integer_value(tb) || memchr(rest + 1, '\0', n - 1) ||
            !utf8_is_valid(rest + 1, n - 1))
                return NULL;
        json_auto_t *text = json_stringn_nocheck(rest + 1, n - 1);
        json_auto_t *b = json_object();
        if (!text || !b)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                json_t *v = strcmp(order[i], "text") == 0 ? text : json_object_get(a, order[i]);
                if (v && json_object_set(b, order[i], v) < 0)
                        return NULL;
        }
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) { /* members no parser writes: kept for doc_answer_check to refuse */
                if (strcmp(k, "text_bytes") != 0 && !json_object_get(b, k) && json_object_set(b, k, v) < 0)
                        return NULL;
        }
        return TAKE_PTR(b);
}

static size_t seq_len(unsigned char c) {
        return c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

void doc_clean_message(const char *s, char *buf, size_t size) {
        size_t o = 0, max = MIN(size, (size_t) 401);
        while (s && *s && o + 1 < max) {
                size_t l = seq_len((unsigned char) *s);
                if (l == 0 || strnlen(s, l) < l || !utf8_is_valid(s, l)) { /* not UTF-8: dropped */
                        s++;
                        continue;
                }
                if (o + l >= max)
                        break;
                if (l > 1 || ((unsigned char) *s >= 0x20 && *s != 0x7f))
                        memcpy(buf + o, s, l), o += l;
                s += l;
        }
        if (size > 0)
                buf[o] = '\0';
}
