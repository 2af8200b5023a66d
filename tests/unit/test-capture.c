/* test-capture.c: head + tail capture keeps the right bytes and counts the rest. */
#include <stdlib.h>

#include "capture.h"
#include "macro.h"
#include "test.h"

static char *contents(const capture *c, size_t *len) {
        char *s = NULL;
        capture_contents(c, &s, len);
        return s;
}

int main(void) {
        capture c;
        size_t len;

        CHECK_EQ_INT(capture_init(&c, 8), 0);
        capture_append(&c, "abc", 3);
        _cleanup_free_ char *s1 = contents(&c, &len);
        CHECK_EQ_STR(s1, "abc");
        CHECK_EQ_INT(capture_dropped(&c), 0);
        capture_append(&c, "defgh", 5); /* head "abcd", tail "efgh" */
        _cleanup_free_ char *s2 = contents(&c, &len);
        CHECK_EQ_STR(s2, "abcdefgh");
        capture_append(&c, "ij", 2); /* tail slides to "ghij" */
        _cleanup_free_ char *s3 = contents(&c, &len);
        CHECK_EQ_STR(s3, "abcdghij");
        CHECK_EQ_INT(capture_dropped(&c), 2);
        CHECK_EQ_INT(c.total, 10);
        capture_append(&c, "0123456789", 10); /* longer than the tail */
        _cleanup_free_ char *s4 = contents(&c, &len);
        CHECK_EQ_STR(s4, "abcd6789");
        CHECK_EQ_INT(capture_dropped(&c), 12);
        for (int i = 0; i < 1000; i++)
                capture_append(&c, "x", 1);
        capture_append(&c, "END", 3);
        _cleanup_free_ char *s5 = contents(&c, &len);
        CHECK_EQ_STR(s5, "abcdxEND");
        CHECK_EQ_INT(len, 8);
        capture_done(&c);

        /* odd limits: head gets the extra byte */
        CHECK_EQ_INT(capture_init(&c, 5), 0);
        capture_append(&c, "abcdefghij", 10);
        _cleanup_free_ char *s6 = contents(&c, &len);
        CHECK_EQ_STR(s6, "abcij");
        CHECK_EQ_INT(capture_dropped(&c), 5);
        capture_done(&c);

        /* binary data with NULs survives */
        CHECK_EQ_INT(capture_init(&c, 64), 0);
        capture_append(&c, "a\0b", 3);
        _cleanup_free_ char *s7 = contents(&c, &len);
        CHECK_EQ_INT(len, 3);
        CHECK(s7 && s7[1] == '\0' && s7[2] == 'b');
        capture_done(&c);

        /* nothing appended: no buffer was taken (a silent command costs no 1 MiB mapping), and
         * the contents are empty; an empty append takes none either */
        CHECK_EQ_INT(capture_init(&c, 1 << 20), 0);
        CHECK(c.head == NULL);
        capture_append(&c, "", 0);
        CHECK(c.head == NULL);
        _cleanup_free_ char *s8 = contents(&c, &len);
        CHECK_EQ_INT(len, 0);
        CHECK(s8 && s8[0] == '\0');
        CHECK_EQ_INT(capture_dropped(&c), 0);
        capture_append(&c, "x", 1);
        CHECK(c.head != NULL);
        capture_done(&c);
        return test_done();
}
