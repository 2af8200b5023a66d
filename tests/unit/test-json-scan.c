/* test-json-scan.c: the byte scan of JSON text before a parser sees it. */
#include <errno.h>
#include <string.h>

#include "json-scan.h"
#include "test.h"

static int prescan(const char *s, unsigned depth_max, size_t values_max) {
        return json_prescan(s, strlen(s), depth_max, values_max);
}

static void test_prescan(void) {
        CHECK_EQ_INT(prescan("{\"a\":1,\"b\":[2,3]}", 16, 5), 0);
        CHECK_EQ_INT(prescan("{\"a\":1,\"b\":[2,3]}", 16, 4), -E2BIG);
        CHECK_EQ_INT(prescan("{\"a\":\",,,,[{\"}", 16, 2), 0); /* inside a string: not counted */
        CHECK_EQ_INT(prescan("[[[]]]", 2, 100), -ELOOP);
        CHECK_EQ_INT(prescan("[[[]]]", 3, 100), 0);
        CHECK_EQ_INT(prescan("", 0, 1), 0);
}

static void test_depth(void) {
        CHECK(json_depth_ok("{\"a\":\"[[[[[[[[[[[[[[[[[[[[\"}", 25, 2));
        CHECK(json_depth_ok("{\"a\\\"[[[[\":[[1]]}", 18, 3));
        CHECK(!json_depth_ok("{\"a\\\"[[[[\":[[1]]}", 18, 2));
        CHECK(json_depth_ok("]]]]{}", 6, 1));
        CHECK(!json_depth_ok("[1]", 3, 0));
        CHECK(json_depth_ok("1", 1, 0));
}

int main(void) {
        test_prescan();
        test_depth();
        return test_done();
}
