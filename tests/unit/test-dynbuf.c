/* test-dynbuf.c: the bounded growable buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "test.h"

static void test_basic(void) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, 16);
        CHECK(b.buf == NULL && b.len == 0);
        CHECK_EQ_INT(dynbuf_add(&b, "", 0), 0);
        CHECK(b.buf == NULL);
        CHECK_EQ_INT(dynbuf_add_str(&b, "hello"), 0);
        CHECK_EQ_STR(b.buf, "hello");
        CHECK_EQ_INT(b.len, 5);
        CHECK_EQ_INT(dynbuf_addf(&b, " %d%s", 42, "!"), 0);
        CHECK_EQ_STR(b.buf, "hello 42!");
        /* exactly to the maximum, then one byte more is refused and changes nothing */
        CHECK_EQ_INT(dynbuf_add(&b, "1234567", 7), 0);
        CHECK_EQ_INT(b.len, 16);
        CHECK(b.cap <= 17);
        CHECK_EQ_INT(dynbuf_add(&b, "x", 1), -E2BIG);
        CHECK_EQ_INT(dynbuf_addf(&b, "%s", "y"), -E2BIG);
        CHECK_EQ_INT(b.len, 16);
        CHECK_EQ_STR(b.buf, "hello 42!1234567");
        dynbuf_consume(&b, 6);
        CHECK_EQ_STR(b.buf, "42!1234567");
        dynbuf_consume(&b, 100);
        CHECK_EQ_INT(b.len, 0);
        CHECK_EQ_INT(dynbuf_add_str(&b, "again"), 0);
        dynbuf_reset(&b);
        CHECK_EQ_INT(b.len, 0);
        CHECK_EQ_STR(b.buf, "");
        CHECK_EQ_INT(dynbuf_add(&b, "a\0b", 3), 0);
        CHECK(memcmp(b.buf, "a\0b", 4) == 0);
}

static void test_overflow_and_take(void) {
        dynbuf b;
        dynbuf_init(&b, SIZE_MAX - 1);
        CHECK_EQ_INT(dynbuf_add_str(&b, "ab"), 0);
        CHECK_EQ_INT(dynbuf_reserve(&b, SIZE_MAX - 2), -E2BIG); /* len + n overflows the max */
        CHECK_EQ_INT(dynbuf_reserve(&b, SIZE_MAX), -E2BIG);
        CHECK_EQ_INT(b.len, 2);
        size_t n = 99;
        char *p = dynbuf_take(&b, &n);
        CHECK_EQ_STR(p, "ab");
        CHECK_EQ_INT(n, 2);
        CHECK(b.buf == NULL && b.len == 0 && b.cap == 0);
        free(p);
        p = dynbuf_take(&b, &n); /* nothing appended: an empty string, not NULL */
        CHECK(p && p[0] == '\0');
        CHECK_EQ_INT(n, 0);
        free(p);
}

static void test_long_format_and_reserve(void) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, 1 << 20);
        char big[1000];
        memset(big, 'z', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        CHECK_EQ_INT(dynbuf_addf(&b, "<%s>", big), 0);
        CHECK_EQ_INT(b.len, 1001);
        CHECK(b.buf[0] == '<' && b.buf[1000] == '>' && b.buf[1001] == '\0');
        CHECK_EQ_INT(dynbuf_reserve(&b, 10), 0);
        memcpy(b.buf + b.len, "0123456789", 10);
        dynbuf_advance(&b, 4);
        CHECK_EQ_INT(b.len, 1005);
        CHECK(memcmp(b.buf + 1001, "0123", 5) == 0);
        /* a format that makes too much text is refused whole */
        dynbuf c;
        dynbuf_init(&c, 100);
        CHECK_EQ_INT(dynbuf_addf(&c, "%s", big), -E2BIG);
        CHECK(c.len == 0);
        dynbuf_free(&c);
}

int main(void) {
        test_basic();
        test_overflow_and_take();
        test_long_format_and_reserve();
        return test_done();
}
