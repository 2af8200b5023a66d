/* test-protojson.c: the ProtoJSON readers (either spelling, null as absent, given twice, 64-bit
 * integers as numbers or strings, bounds, bytes) with their messages, and the writers. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "protojson.h"
#include "test.h"

static json_t *load(const char *s) {
        json_t *j = json_loads(s, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        if (!j)
                printf("# cannot parse %s\n", s);
        return j;
}

static void test_field(void) {
        json_t *o = load("{\"timeoutMs\": 5, \"old_text\": \"x\", \"nothing\": null, \"both\": 1, \"bo_th\": 2}");
        json_t *v = (json_t *) 1;
        hull_error e = {0};
        CHECK(pj_field(o, "timeoutMs", "timeout_ms", &v, &e) == 0 && json_integer_value(v) == 5);
        CHECK(pj_field(o, "oldText", "old_text", &v, &e) == 0 && json_is_string(v));
        CHECK(pj_field(o, "nothing", NULL, &v, &e) == 0 && v == NULL);
        CHECK(pj_field(o, "absent", "ab_sent", &v, &e) == 0 && v == NULL);
        v = (json_t *) 1;
        CHECK_EQ_INT(pj_field(o, "both", "bo_th", &v, &e), -EINVAL);
        CHECK(v == (json_t *) 1);
        CHECK_EQ_STR(e.msg, "both is given twice (as both and bo_th)");
        CHECK_EQ_INT(e.err, -EINVAL);
        CHECK(pj_field(o, "both", "both", &v, NULL) == 0 && json_integer_value(v) == 1); /* one spelling */
        CHECK_EQ_INT(pj_field(o, "both", "bo_th", &v, NULL), -EINVAL);                   /* e may be NULL */
        json_decref(o);
}

static void test_string(void) {
        json_t *o = load("{\"a\": \"hello\", \"n\": 3, \"z\": \"x\\u0000y\", \"long\": \"123456\"}");
        const char *s = "unset";
        size_t n = 99;
        hull_error e = {0};
        CHECK(pj_string(o, "a", NULL, NULL, 10, &s, NULL, &e) == 0 && strcmp(s, "hello") == 0);
        CHECK(pj_string(o, "absent", NULL, "", 10, &s, &n, &e) == 0 && strcmp(s, "") == 0 && n == 0);
        CHECK_EQ_INT(pj_string(o, "n", NULL, "files[1].", 10, &s, NULL, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "files[1].n must be a string");
        CHECK_EQ_INT(pj_string(o, "z", NULL, NULL, 10, &s, NULL, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "z contains a NUL character");
        CHECK(pj_string(o, "z", NULL, NULL, 10, &s, &n, &e) == 0 && n == 3 && memcmp(s, "x\0y", 3) == 0);
        CHECK_EQ_INT(pj_string(o, "long", NULL, NULL, 5, &s, NULL, &e), -E2BIG);
        CHECK_EQ_STR(e.msg, "long is 6 bytes, over the limit of 5");
        json_decref(o);
}

static void test_int(void) {
        json_t *o =
                load("{\"a\": 7, \"s\": \"-42\", \"big\": \"9223372036854775807\", \"over\": \"9223372036854775808\","
                     " \"plus\": \"+1\", \"sp\": \" 1\", \"exp\": \"1e3\", \"empty\": \"\", \"minus\": \"-\","
                     " \"nul\": \"3\\u0000x\", \"f\": 1.5, \"b\": true, \"neg\": -1, \"u\": \"18446744073709551615\"}");
        int64_t x = 99;
        bool present = false;
        hull_error e = {0};
        CHECK(pj_int(o, "a", NULL, 0, 10, &present, &x, &e) == 0 && x == 7 && present);
        CHECK(pj_int(o, "absent", NULL, 1, 10, &present, &x, &e) == 0 && x == 0 && !present); /* zero, unchecked */
        CHECK(pj_int(o, "s", NULL, -100, 100, NULL, &x, &e) == 0 && x == -42);
        CHECK(pj_int(o, "big", NULL, INT64_MIN, INT64_MAX, NULL, &x, &e) == 0 && x == INT64_MAX);
        static const char *const bad[] = {"over", "plus", "sp", "exp", "empty", "minus", "nul", "f", "b"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                x = 99;
                TEST_RESULT(pj_int(o, bad[i], NULL, INT64_MIN, INT64_MAX, NULL, &x, &e) == -EINVAL && x == 99,
                            "%s is not an int64", bad[i]);
        }
        CHECK_EQ_INT(pj_int(o, "a", NULL, 0, 5, NULL, &x, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "a must be an integer from 0 to 5");

        uint64_t u = 99;
        CHECK(pj_uint64(o, "u", NULL, &u, &e) == 0 && u == UINT64_MAX);
        CHECK(pj_uint64(o, "a", NULL, &u, &e) == 0 && u == 7);
        CHECK(pj_uint64(o, "absent", NULL, &u, &e) == 0 && u == 0);
        CHECK_EQ_INT(pj_uint64(o, "neg", NULL, &u, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "neg must be an integer from 0 to 18446744073709551615");
        CHECK_EQ_INT(pj_uint64(o, "s", NULL, &u, &e), -EINVAL);
        json_decref(o);
}

static void test_bool_array_bytes(void) {
        json_t *o = load("{\"t\": true, \"n\": 0, \"l\": [1, 2, 3], \"m\": {}, \"b\": \"QUJD\", \"u\": \"-_8\","
                         " \"bad\": \"QQ=\", \"num\": 4}");
        bool b = false;
        hull_error e = {0};
        CHECK(pj_bool(o, "t", NULL, &b, &e) == 0 && b);
        CHECK(pj_bool(o, "absent", NULL, &b, &e) == 0 && !b);
        CHECK_EQ_INT(pj_bool(o, "n", NULL, &b, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "n must be true or false");

        json_t *a = NULL;
        CHECK(pj_array(o, "l", NULL, NULL, 3, &a, &e) == 0 && json_array_size(a) == 3);
        CHECK(pj_array(o, "absent", NULL, NULL, 3, &a, &e) == 0 && a == NULL);
        CHECK_EQ_INT(pj_array(o, "l", NULL, "project.", 2, &a, &e), -E2BIG);
        CHECK_EQ_STR(e.msg, "project.l has 3 entries, over the limit of 2");
        CHECK_EQ_INT(pj_array(o, "m", NULL, NULL, 2, &a, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "m must be an array");

        void *p = NULL;
        size_t n = 0;
        CHECK(pj_bytes(o, "b", NULL, NULL, 3, &p, &n, &e) == 0 && n == 3 && memcmp(p, "ABC", 3) == 0);
        free(p);
        CHECK(pj_bytes(o, "u", NULL, NULL, 3, &p, &n, &e) == 0 && n == 2 && memcmp(p, "\xfb\xff", 2) == 0);
        free(p);
        p = (void *) 1;
        CHECK(pj_bytes(o, "absent", NULL, NULL, 3, &p, &n, &e) == 0 && p == NULL && n == 0);
        CHECK_EQ_INT(pj_bytes(o, "b", NULL, "", 2, &p, &n, &e), -E2BIG);
        CHECK_EQ_STR(e.msg, "b is over the limit of 2 bytes");
        CHECK_EQ_INT(pj_bytes(o, "bad", NULL, "x.", 10, &p, &n, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "x.bad is not base64 (standard or URL-safe, padded or not)");
        CHECK_EQ_INT(pj_bytes(o, "num", NULL, NULL, 10, &p, &n, &e), -EINVAL);
        CHECK_EQ_STR(e.msg, "num must be a base64 string");
        json_decref(o);
}

static void test_writers(void) {
        json_t *v = pj_new_bytes("\xfb\xff", 2);
        CHECK_EQ_STR(json_string_value(v), "+/8=");
        json_decref(v);
        v = pj_new_bytes("", 0);
        CHECK_EQ_STR(json_string_value(v), "");
        json_decref(v);
        v = pj_new_int64(INT64_MIN);
        CHECK_EQ_STR(json_string_value(v), "-9223372036854775808");
        json_decref(v);
        v = pj_new_uint64(UINT64_MAX);
        CHECK_EQ_STR(json_string_value(v), "18446744073709551615");
        json_t *o = json_pack("{s:o}", "n", v);
        uint64_t u = 0;
        CHECK(pj_uint64(o, "n", NULL, &u, NULL) == 0 && u == UINT64_MAX); /* what it writes, it reads */
        json_decref(o);
}

int main(void) {
        test_field();
        test_string();
        test_int();
        test_bool_array_bytes();
        test_writers();
        return test_done();
}
