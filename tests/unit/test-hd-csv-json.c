/* test-hd-csv-json.c: the pure parts of the handle store: the CSV reader, type inference and
 * the JSON scanner (validity, shapes, depth). */
#include <stdlib.h>
#include <string.h>

#include "hd-csv.h"
#include "hd-json.h"
#include "test.h"

static void test_csv(void) {
        hd_csv_field f[8];
        hd_csv c;
        uint64_t line;
        const char *in = "\xef\xbb\xbf"
                         "a,b\r\n\"x,\"\"y\"\"\nz\",2\n,\n";
        hd_csv_init(&c, in, strlen(in), ',');
        CHECK_EQ_INT(hd_csv_next(&c, f, 8, &line, NULL), 2);
        CHECK(f[0].n == 1 && f[0].p[0] == 'a' && f[1].n == 1);
        CHECK_EQ_INT(hd_csv_next(&c, f, 8, &line, NULL), 2);
        char buf[32];
        size_t n = hd_csv_unescape(&f[0], buf);
        CHECK(f[0].escaped && n == 7 && memcmp(buf, "x,\"y\"\nz", 7) == 0);
        CHECK_EQ_INT(line, 2);
        CHECK_EQ_INT(hd_csv_next(&c, f, 8, &line, NULL), 2);
        CHECK_EQ_INT(line, 4); /* the quoted newline counted */
        CHECK_EQ_INT(hd_csv_next(&c, f, 8, &line, NULL), 0);
        hull_error e = {0};
        hd_csv_init(&c, "\"open", 5, ',');
        CHECK_EQ_INT(hd_csv_next(&c, f, 8, &line, &e), -EBADMSG);
        CHECK(strstr(e.msg, "not closed") != NULL);
        hd_csv_init(&c, "a,b,c", 5, ',');
        CHECK_EQ_INT(hd_csv_next(&c, f, 2, &line, NULL), -E2BIG);
}

static void test_types(void) {
        CHECK_EQ_INT(hd_classify("", 0), HD_TYPE_NULL);
        CHECK_EQ_INT(hd_classify("42", 2), HD_TYPE_INTEGER);
        CHECK_EQ_INT(hd_classify("-7", 2), HD_TYPE_INTEGER);
        CHECK_EQ_INT(hd_classify("007", 3), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_classify("1.5e3", 5), HD_TYPE_REAL);
        CHECK_EQ_INT(hd_classify(".5", 2), HD_TYPE_REAL);
        CHECK_EQ_INT(hd_classify("1e", 2), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_classify("1234567890123456789", 19), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_classify("true", 4), HD_TYPE_BOOLEAN);
        CHECK_EQ_INT(hd_classify("False", 5), HD_TYPE_BOOLEAN);
        CHECK_EQ_INT(hd_classify("2024-02-29", 10), HD_TYPE_DATE);
        CHECK_EQ_INT(hd_classify("2024-13-01", 10), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_classify("2024-02-29T10:11:12.5Z", 22), HD_TYPE_TIMESTAMP);
        CHECK_EQ_INT(hd_classify("2024-02-29 10:11+02:00", 22), HD_TYPE_TIMESTAMP);
        CHECK_EQ_INT(hd_classify("nan", 3), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_type_merge(HD_TYPE_INTEGER, HD_TYPE_REAL), HD_TYPE_REAL);
        CHECK_EQ_INT(hd_type_merge(HD_TYPE_DATE, HD_TYPE_TIMESTAMP), HD_TYPE_TIMESTAMP);
        CHECK_EQ_INT(hd_type_merge(HD_TYPE_BOOLEAN, HD_TYPE_INTEGER), HD_TYPE_TEXT);
        CHECK_EQ_INT(hd_type_merge(HD_TYPE_NULL, HD_TYPE_DATE), HD_TYPE_DATE);
        CHECK_EQ_INT(hd_parse_integer("-123", 4), -123);
}

static json_t *shape_of(const char *s, int *ret) {
        json_t *sh = NULL;
        *ret = hd_json_scan(s, strlen(s), &sh, NULL, NULL, NULL);
        return sh;
}

static void test_json(void) {
        int r;
        json_t *sh = shape_of(
                "{\"a\": [1, 2, {\"x\": null}], \"b\": {\"c\": \"\\u00e9\", \"d\": [true]}, \"e\\n\": 1.5e2}", &r);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_STR(json_string_value(json_object_get(sh, "type")), "object");
        CHECK_EQ_INT(json_integer_value(json_object_get(sh, "n_keys")), 3);
        json_t *keys = json_object_get(sh, "keys");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(keys, "a"), "type")), "array");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(keys, "a"), "length")), 3);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(keys, "a"), "items"), "type")),
                     "mixed");
        CHECK(json_object_get(keys, "e\n") != NULL); /* keys decoded */
        json_t *b = json_object_get(keys, "b");
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(b, "keys"), "d"), "type")),
                     "array");
        CHECK(json_object_get(json_object_get(json_object_get(b, "keys"), "d"), "items") == NULL); /* two levels only */
        /* stable: same bytes, same shape */
        char *d1 = json_dumps(sh, JSON_COMPACT);
        json_decref(sh);
        sh = shape_of("{\"a\": [1, 2, {\"x\": null}], \"b\": {\"c\": \"\\u00e9\", \"d\": [true]}, \"e\\n\": 1.5e2}",
                      &r);
        char *d2 = json_dumps(sh, JSON_COMPACT);
        CHECK_EQ_STR(d1, d2);
        free(d1);
        free(d2);
        json_decref(sh);

        /* records: keys united, counts min/max */
        sh = shape_of("[{\"a\":1},{\"a\":2,\"b\":\"x\"},{\"c\":[]}]", &r);
        json_t *items = json_object_get(sh, "items");
        CHECK_EQ_INT(json_integer_value(json_object_get(sh, "length")), 3);
        CHECK_EQ_INT(json_object_size(json_object_get(items, "keys")), 3);
        CHECK_EQ_INT(json_integer_value(json_object_get(items, "n_keys_max")), 2);
        json_decref(sh);

        /* many keys: bounded */
        char big[8192];
        size_t o = 0;
        big[o++] = '{';
        for (int i = 0; i < 500; i++)
                o += (size_t) snprintf(big + o, sizeof(big) - o, "%s\"k%d\":%d", i ? "," : "", i, i);
        big[o++] = '}';
        big[o] = 0;
        sh = shape_of(big, &r);
        CHECK_EQ_INT(json_object_size(json_object_get(sh, "keys")), HD_SHAPE_KEYS_MAX);
        CHECK(json_is_true(json_object_get(sh, "keys_truncated")));
        CHECK_EQ_INT(json_integer_value(json_object_get(sh, "n_keys")), 500);
        json_decref(sh);

        /* invalid */
        static const char *const bad[] = {"",
                                          " ",
                                          "{",
                                          "[1,]",
                                          "{\"a\":1,}",
                                          "01",
                                          "1.",
                                          "\"\\x\"",
                                          "\"\x01\"",
                                          "\"\xff\"",
                                          "tru",
                                          "[1] 2",
                                          "\xef\xbb\xbf[]",
                                          "{1:2}",
                                          "\"\xed\xa0\x80\"",
                                          "-",
                                          "1e+"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                hull_error e = {0};
                sh = NULL;
                r = hd_json_scan(bad[i], strlen(bad[i]), &sh, NULL, NULL, &e);
                TEST_RESULT(r == -EBADMSG && !sh && strstr(e.msg, "not JSON"), "invalid JSON %zu refused: %s", i,
                            e.msg);
        }

        /* 100000 levels: accepted without recursion; one more refused */
        size_t depth = 100000;
        char *deep = malloc(depth * 2 + 2);
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        sh = NULL;
        r = hd_json_scan(deep, depth * 2, &sh, NULL, NULL, NULL);
        CHECK_EQ_INT(r, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(sh, "items"), "length")), 1);
        char *dump = json_dumps(sh, JSON_COMPACT);
        CHECK(dump && strlen(dump) < 300); /* shape bounded */
        free(dump);
        json_decref(sh);
        deep = realloc(deep, depth * 2 + 4);
        memmove(deep + 1, deep, depth * 2);
        deep[0] = '[';
        deep[depth * 2 + 1] = ']';
        hull_error e = {0};
        r = hd_json_scan(deep, depth * 2 + 2, NULL, NULL, NULL, &e);
        CHECK_EQ_INT(r, -ELOOP);
        CHECK(strstr(e.msg, "deeper") != NULL);
        free(deep);
}

int main(void) {
        test_csv();
        test_types();
        test_json();
        return test_done();
}
