/* test-utf8.c: strict validation and lossy repair. */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "test.h"
#include "utf8.h"

int main(void) {
        CHECK(utf8_is_valid("", 0));
        CHECK(utf8_is_valid("hello", 5));
        CHECK(utf8_is_valid("caf\xc3\xa9", 5));
        CHECK(utf8_is_valid("\xf0\x9f\x98\x80", 4));
        CHECK(!utf8_is_valid("\xff", 1));
        CHECK(!utf8_is_valid("\xc0\xaf", 2));         /* overlong */
        CHECK(!utf8_is_valid("\xed\xa0\x80", 3));     /* surrogate */
        CHECK(!utf8_is_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
        CHECK(!utf8_is_valid("\xe2\x82", 2));         /* truncated */
        CHECK(utf8_is_valid("a\0b", 3));
        /* the 32- and eight-byte ASCII fast paths: a bad byte at every place of a block and of
         * a word, and after them, and a sequence across their ends */
        for (size_t at = 0; at < 80; at++) {
                char buf[80];
                memset(buf, 'x', sizeof(buf));
                CHECK(utf8_is_valid(buf, sizeof(buf)));
                buf[at] = (char) 0xff;
                CHECK(!utf8_is_valid(buf, sizeof(buf)));
                buf[at] = (char) 0xc3; /* a sequence cut by the end, or followed by ASCII */
                CHECK(!utf8_is_valid(buf, sizeof(buf)));
                if (at + 1 < sizeof(buf)) {
                        buf[at + 1] = (char) 0xa9;
                        CHECK(utf8_is_valid(buf, sizeof(buf)));
                }
        }

        char *s = NULL;
        size_t len = 0;
        CHECK_EQ_INT(utf8_make_valid("a\xff"
                                     "b",
                                     3, &s, &len),
                     0);
        CHECK_EQ_STR(s, "a\xef\xbf\xbd"
                        "b");
        CHECK_EQ_INT(len, 5);
        free(s);
        CHECK_EQ_INT(utf8_make_valid("\xe2\x82", 2, &s, &len), 0);
        CHECK_EQ_STR(s, "\xef\xbf\xbd\xef\xbf\xbd");
        free(s);
        return test_done();
}
