/* test-dotenv.c: the .env reader: the forms the common tools accept, later keys winning, and every
 * malformed line refused with its number. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotenv.h"
#include "limits.h"
#include "macro.h"
#include "test.h"

static dotenv *parse(const char *s, hull_error *e) {
        dotenv *d = NULL;
        if (dotenv_parse(s, strlen(s), &d, e) < 0)
                return NULL;
        return d;
}

static void test_forms(void) {
        hull_error e = {0};
        const char *text = "# a comment\n"
                           "\n"
                           "OPENAI_API_KEY=sk-abc\n"
                           "export HULL_MODEL = gpt-5.4  # the model\n"
                           "  SPACED =  two words  \n"
                           "SINGLE='a $literal # not a comment'\n"
                           "DOUBLE=\"line1\\nline2 \\\"q\\\" \\\\ \\x\"\n"
                           "MULTI=\"first\n"
                           "second\"\n"
                           "EMPTY=\n"
                           "HASH=abc#def\n"
                           "CRLF=value\r\n"
                           "OPENAI_API_KEY=sk-later\n";
        dotenv *d = parse(text, &e);
        CHECK(d != NULL);
        if (!d) {
                printf("# %s\n", e.msg);
                return;
        }
        CHECK_EQ_STR(dotenv_get(d, "OPENAI_API_KEY"), "sk-later");
        CHECK_EQ_STR(dotenv_get(d, "HULL_MODEL"), "gpt-5.4");
        CHECK_EQ_STR(dotenv_get(d, "SPACED"), "two words");
        CHECK_EQ_STR(dotenv_get(d, "SINGLE"), "a $literal # not a comment");
        CHECK_EQ_STR(dotenv_get(d, "DOUBLE"), "line1\nline2 \"q\" \\ \\x");
        CHECK_EQ_STR(dotenv_get(d, "MULTI"), "first\nsecond");
        CHECK_EQ_STR(dotenv_get(d, "EMPTY"), "");
        CHECK_EQ_STR(dotenv_get(d, "HASH"), "abc#def");
        CHECK_EQ_STR(dotenv_get(d, "CRLF"), "value");
        CHECK(dotenv_get(d, "MISSING") == NULL);
        CHECK(dotenv_get(NULL, "X") == NULL);
        CHECK_EQ_INT(dotenv_count(d), 9);
        dotenv_free(d);
}

static void test_refused(void) {
        static const struct {
                const char *text, *want;
        } bad[] = {
                {"A=1\nnot an assignment\n", "line 2"},
                {"1A=x\n", "line 1"},
                {"A\n", "expected '='"},
                {"A=\"open\n\nB=2\n", "never closed"},
                {"A='x' tail\n", "after the quoted value"},
                {"=x\n", "line 1"},
                {"A=1\nB=\"x\ny\"\nC D=1\n", "line 4"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                hull_error e = {0};
                dotenv *d = parse(bad[i].text, &e);
                TEST_RESULT(!d && e.err == -EINVAL && strstr(e.msg, bad[i].want), "refused #%zu: %s", i, e.msg);
                dotenv_free(d);
        }
        hull_error e = {0};
        dotenv *d = NULL;
        CHECK_EQ_INT(dotenv_parse("A=1\0B=2\n", 8, &d, &e), -EINVAL);
        CHECK(strstr(e.msg, "NUL") != NULL);

        /* bounds */
        size_t n = DOTENV_BYTES_MAX + 1;
        char *big = malloc(n);
        memset(big, '#', n);
        CHECK_EQ_INT(dotenv_parse(big, n, &d, &e), -E2BIG);
        free(big);
        char *many = malloc((DOTENV_ENTRIES_MAX + 1) * 16);
        size_t len = 0;
        for (unsigned i = 0; i <= DOTENV_ENTRIES_MAX; i++)
                len += (size_t) sprintf(many + len, "K%u=v\n", i);
        CHECK_EQ_INT(dotenv_parse(many, len, &d, &e), -E2BIG);
        CHECK(strstr(e.msg, "assignments") != NULL);
        free(many);
}

static void test_load(void) {
        char dir[] = "/tmp/test-dotenv.XXXXXX", path[64];
        hull_error e = {0};
        dotenv *d = NULL;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/.env", dir);
        CHECK_EQ_INT(dotenv_load(path, &d, &e), 0); /* missing: empty */
        CHECK_EQ_INT(dotenv_count(d), 0);
        dotenv_free(d);
        d = NULL;
        FILE *f = fopen(path, "w");
        fputs("A=1\nB C\n", f);
        fclose(f);
        CHECK_EQ_INT(dotenv_load(path, &d, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, path) && strstr(e.msg, "line 2"), "the file and line are named: %s", e.msg);
        unlink(path);
        CHECK(mkdir(path, 0700) == 0);
        CHECK_EQ_INT(dotenv_load(path, &d, &e), -EINVAL);
        CHECK(strstr(e.msg, "not a regular file") != NULL);
        rmdir(path);
        rmdir(dir);
}

int main(void) {
        test_forms();
        test_refused();
        test_load();
        return test_done();
}
