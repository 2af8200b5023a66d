/* test-multipart.c: the multipart/form-data parser: a form fed whole and byte by byte gives the
 * same parts, boundaries found in data that almost matches them, the boundary taken from a
 * Content-Type, and malformed bodies (a NUL in headers, parts over the bound) refused with a
 * reason. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "multipart.h"
#include "test.h"

typedef struct got {
        char log[4096];
        size_t len;
        unsigned parts;
} got;

static int on_begin(void *ud, const mp_part *p) {
        got *g = ud;
        g->parts++;
        g->len += (size_t) snprintf(g->log + g->len, sizeof(g->log) - g->len, "[%s|%s%s|%s]", p->name,
                                    p->has_filename ? "f:" : "", p->filename, p->content_type);
        return 0;
}

static int on_data(void *ud, const void *p, size_t n) {
        got *g = ud;
        if (g->len + n >= sizeof(g->log))
                return -E2BIG;
        memcpy(g->log + g->len, p, n);
        g->len += n;
        g->log[g->len] = '\0';
        return 0;
}

static int on_end(void *ud) {
        got *g = ud;
        g->len += (size_t) snprintf(g->log + g->len, sizeof(g->log) - g->len, "<end>");
        return 0;
}

static const mp_callbacks cbs = {on_begin, on_data, on_end};

/* Parse body in pieces of step bytes (0: whole); the result of mp_finish (or mp_feed's error). */
static int parse(const char *boundary, const char *body, size_t len, size_t step, got *g, mp_parser *p) {
        *g = (got){0};
        mp_init(p, boundary, &cbs, g);
        if (step == 0)
                step = len;
        for (size_t i = 0; i < len; i += step) {
                int r = mp_feed(p, body + i, len - i < step ? len - i : step);
                if (r < 0)
                        return r;
        }
        return mp_finish(p);
}

static const char form[] = "preamble\r\n"
                           "--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"purpose\"\r\n"
                           "\r\n"
                           "user_data\r\n"
                           "--XyZ\r\n"
                           "content-disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".txt\"\r\n"
                           "Content-Type: text/plain\r\n"
                           "\r\n"
                           "line1\r\n--XyQ\r\r\n-\r\n--Xy\r\n"
                           "--XyZ--\r\n"
                           "epilogue";

static void test_forms(void) {
        const char *want = "[purpose||]user_data<end>[file|f:a \"b\".txt|text/plain]line1\r\n--XyQ\r\r\n-\r\n--Xy<end>";
        mp_parser p;
        got g;
        for (size_t step = 0; step < 9; step++) {
                CHECK_EQ_INT(parse("XyZ", form, sizeof(form) - 1, step, &g, &p), 0);
                CHECK(strcmp(g.log, want) == 0);
        }
        /* no preamble, an empty part, binary bytes */
        static const char bin[] =
                "--b\r\nContent-Disposition: form-data; name=f; filename=x\r\n\r\n\0\r\n\xff\r\n--b--";
        CHECK_EQ_INT(parse("b", bin, sizeof(bin) - 1, 0, &g, &p), 0);
        CHECK(g.len == strlen("[f|f:x|]") + 4 + strlen("<end>") && memcmp(g.log + 8, "\0\r\n\xff", 4) == 0);
}

static void test_malformed(void) {
        mp_parser p;
        got g;
        static const char *const bad[] = {
                "no boundary at all",
                "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nunterminated",
                "--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--",                   /* no disposition */
                "--b\r\nContent-Disposition: attachment; name=f\r\n\r\nx\r\n--b--",    /* not form-data */
                "--b\r\nContent-Disposition: form-data; filename=x\r\n\r\nx\r\n--b--", /* no name */
                "--b\r\nContent-Disposition: form-data; name=\"f\r\n\r\nx\r\n--b--",   /* open quote */
                "--bX\r\n",                                                            /* junk after it */
                "--b\r\nno colon here\r\n\r\nx\r\n--b--",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = parse("b", bad[i], strlen(bad[i]), 0, &g, &p);
                CHECK_EQ_INT(r, -EBADMSG);
                CHECK(p.error[0] != '\0');
        }
        /* headers over the bound */
        static char big[MULTIPART_HEADER_MAX + 64];
        int n = snprintf(big, sizeof(big), "--b\r\nX: ");
        memset(big + n, 'a', sizeof(big) - (size_t) n - 1);
        CHECK_EQ_INT(parse("b", big, strlen(big), 0, &g, &p), -EBADMSG);
        CHECK(strstr(p.error, "headers are longer") != NULL);
        /* a NUL byte in a part's headers */
        static const char nul[] = "--b\r\nContent-Disposition: form-data; name=\"f\0g\"\r\n\r\nx\r\n--b--";
        CHECK_EQ_INT(parse("b", nul, sizeof(nul) - 1, 0, &g, &p), -EBADMSG);
        CHECK(strstr(p.error, "NUL") != NULL);
        /* more parts than the bound; a caller may set another bound after mp_init */
        char many[64 * (MULTIPART_PARTS_MAX + 2)];
        size_t m = 0;
        for (unsigned i = 0; i <= MULTIPART_PARTS_MAX; i++)
                m += (size_t) snprintf(many + m, sizeof(many) - m,
                                       "--b\r\nContent-Disposition: form-data; name=p%u\r\n\r\nx\r\n", i);
        m += (size_t) snprintf(many + m, sizeof(many) - m, "--b--");
        CHECK_EQ_INT(parse("b", many, m, 0, &g, &p), -EBADMSG);
        CHECK(strstr(p.error, "more than 16 parts") != NULL);
        g = (got){0};
        mp_init(&p, "b", &cbs, &g);
        p.max_parts = MULTIPART_PARTS_MAX + 1;
        CHECK_EQ_INT(mp_feed(&p, many, m), 0);
        CHECK_EQ_INT(mp_finish(&p), 0);
        CHECK_EQ_INT(g.parts, MULTIPART_PARTS_MAX + 1);
}

static void test_boundary(void) {
        char b[MULTIPART_BOUNDARY_MAX];
        CHECK_EQ_INT(mp_boundary("multipart/form-data; boundary=----abc123", b), 0);
        CHECK(strcmp(b, "----abc123") == 0);
        CHECK_EQ_INT(mp_boundary("Multipart/Form-Data; charset=utf-8; boundary=\"a b:c\"", b), 0);
        CHECK(strcmp(b, "a b:c") == 0);
        CHECK_EQ_INT(mp_boundary("application/json", b), -EINVAL);
        CHECK_EQ_INT(mp_boundary("multipart/form-data", b), -EINVAL);
        CHECK_EQ_INT(mp_boundary("multipart/form-data; boundary=", b), -EINVAL);
        CHECK_EQ_INT(mp_boundary("multipart/form-data; boundary=a\rb", b), -EINVAL);
        CHECK_EQ_INT(mp_boundary("multipart/form-data; boundary="
                                 "12345678901234567890123456789012345678901234567890123456789012345678901",
                                 b),
                     -EINVAL);
        CHECK_EQ_INT(mp_boundary(NULL, b), -EINVAL);
}

int main(void) {
        test_forms();
        test_malformed();
        test_boundary();
        return test_done();
}
