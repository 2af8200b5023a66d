/* test-tool-doc-answer.c: hull-docread's answer as hull reads it (src/tools/tool-doc-answer.c): the
 * text apart after the JSON taken exactly (its length, UTF-8, no NUL, no second "text"), the
 * members put back in the parser's order, the shape judged member by member, and a message
 * cleaned for showing. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tool-doc-answer.h"

#define HEAD "{\"format\":\"pdf\",\"pages\":2,\"pages_read\":2,\"ocr\":false,"
#define LISTS "\"headings\":[{\"level\":1,\"text\":\"Intro\",\"page\":1}],\"tables\":[],\"notes\":[]}"
#define TAIL "," LISTS

static json_t *load(const char *s, size_t len) {
        return doc_answer_load(s, len);
}

static void test_text_apart(void) {
        static const char ok[] = HEAD "\"text_bytes\":11" TAIL "\n[page 1]\nhi";
        json_t *a = load(ok, sizeof(ok) - 1);
        CHECK(a != NULL);
        CHECK(a && doc_answer_check(a) == NULL);
        CHECK_EQ_STR(a ? json_string_value(json_object_get(a, "text")) : "", "[page 1]\nhi");
        CHECK(a && !json_object_get(a, "text_bytes"));
        char *dump = a ? json_dumps(a, JSON_COMPACT) : NULL; /* the parser's order, text in place */
        CHECK(dump && strncmp(dump, HEAD "\"text\":", strlen(HEAD "\"text\":")) == 0);
        free(dump);
        json_decref(a);

        static const char longer[] = HEAD "\"text_bytes\":10" TAIL "\n[page 1]\nhi";
        CHECK(load(longer, sizeof(longer) - 1) == NULL); /* one byte more than it says */
        static const char shorter[] = HEAD "\"text_bytes\":12" TAIL "\n[page 1]\nhi";
        CHECK(load(shorter, sizeof(shorter) - 1) == NULL);
        static const char no_nl[] = HEAD "\"text_bytes\":2" TAIL "hi";
        CHECK(load(no_nl, sizeof(no_nl) - 1) == NULL);
        static const char nul[] = HEAD "\"text_bytes\":3" TAIL "\nh\0i";
        CHECK(load(nul, sizeof(nul) - 1) == NULL);
        static const char bad[] = HEAD "\"text_bytes\":2" TAIL "\n\xc3\x28";
        CHECK(load(bad, sizeof(bad) - 1) == NULL);
        static const char twice[] = HEAD "\"text\":\"a\",\"text_bytes\":1" TAIL "\nb";
        CHECK(load(twice, sizeof(twice) - 1) == NULL);
        static const char negative[] = HEAD "\"text_bytes\":-1" TAIL "\n";
        CHECK(load(negative, sizeof(negative) - 1) == NULL);
        static const char dup[] = HEAD "\"pages\":3,\"text_bytes\":1" TAIL "\nb";
        CHECK(load(dup, sizeof(dup) - 1) == NULL); /* a member twice */
}

static void test_inline(void) {
        static const char ok[] = HEAD "\"text\":\"x\"" TAIL "\n \n";
        json_t *a = load(ok, sizeof(ok) - 1);
        CHECK(a && doc_answer_check(a) == NULL);
        json_decref(a);
        static const char trailing[] = HEAD "\"text\":\"x\"" TAIL "\nmore";
        CHECK(load(trailing, sizeof(trailing) - 1) == NULL);
        CHECK(load("", 0) == NULL);
        json_t *arr = load("[1]", 3); /* JSON: loaded, then refused by its shape */
        CHECK(arr != NULL);
        json_decref(arr);
}

static const char *check_of(const char *s) {
        static char why[128];
        json_t *a = load(s, strlen(s));
        if (!a)
                return "not loaded";
        const char *w = doc_answer_check(a);
        snprintf(why, sizeof(why), "%s", w ? w : "ok");
        json_decref(a);
        return why;
}

static void test_shape(void) {
        CHECK_EQ_STR(check_of("[1]"), "not an object of the parser's members");
        CHECK_EQ_STR(check_of(HEAD "\"text\":\"x\",\"extra\":1" TAIL), "not an object of the parser's members");
        CHECK_EQ_STR(check_of("{\"format\":\"exe\",\"pages\":1,\"pages_read\":1,\"ocr\":false,\"text\":\"\"," LISTS),
                     "an unknown format");
        CHECK_EQ_STR(
                check_of("{\"format\":\"pdf\",\"pages\":1,\"pages_read\":99999,\"ocr\":false,\"text\":\"\"," LISTS),
                "pages, pages_read, ocr or text out of bounds");
        CHECK_EQ_STR(check_of(HEAD
                              "\"text\":\"x\",\"headings\":[{\"level\":0,\"text\":\"a\",\"page\":1}],\"tables\":[],"
                              "\"notes\":[]}"),
                     "a heading out of bounds");
        CHECK_EQ_STR(check_of(HEAD "\"text\":\"x\",\"headings\":[],\"tables\":[{\"name\":\"t\",\"page\":1,\"rows\":1,"
                                   "\"cols\":0,\"csv\":\"a\"}],\"notes\":[]}"),
                     "a table out of bounds");
        CHECK_EQ_STR(check_of(HEAD "\"text\":\"x\",\"headings\":[],\"tables\":[],\"notes\":[\"\"]}"),
                     "a note out of bounds");
        CHECK_EQ_STR(check_of(HEAD "\"text\":\"x\"" TAIL), "ok");
}

static void test_clean_message(void) {
        char buf[512];
        doc_clean_message("bad\x01 page\n\x7f 3: \xc3\xa9t\xc3\xa9 \xff\xc3\x28 \xe2\x82\xac", buf, sizeof(buf));
        CHECK_EQ_STR(buf, "bad page 3: \xc3\xa9t\xc3\xa9 ( \xe2\x82\xac");
        char tiny[3];
        doc_clean_message("a\xe2\x82\xac", tiny, sizeof(tiny)); /* the euro sign does not fit: cut before it */
        CHECK_EQ_STR(tiny, "a");
        char *big = malloc(1000);
        if (big) {
                memset(big, 'x', 999);
                big[999] = '\0';
                big[399] = '\xc3', big[400] = '\xa9'; /* a character across the 400th byte */
                doc_clean_message(big, buf, sizeof(buf));
                CHECK_EQ_INT(strlen(buf), 399);
                free(big);
        }
        doc_clean_message(NULL, buf, sizeof(buf));
        CHECK_EQ_STR(buf, "");
}

int main(void) {
        test_text_apart();
        test_inline();
        test_shape();
        test_clean_message();
        return test_done();
}
