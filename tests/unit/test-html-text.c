/* test-html-text.c: HTML to readable text: a whole page pinned line by line (title first,
 * dropped elements, blocks, headings, lists, tables, links, entities, pre), then each rule on
 * its own: whitespace, br, links that are not shown, character sets, the bound (cut at a
 * character's boundary), input that is not HTML, invalid bytes, nesting far past libxml2's
 * own limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html-text.h"
#include "test.h"
#include "utf8.h"

static char out[1 << 16];

/* s with its line breaks shown as \n, in one of two buffers. */
static const char *shown(const char *s, int which) {
        static char bufs[2][1 << 12];
        char *b = bufs[which];
        size_t n = 0;
        for (; s && *s && n + 3 < sizeof(bufs[0]); s++) {
                if (*s == '\n') {
                        b[n++] = '\\';
                        b[n++] = 'n';
                } else
                        b[n++] = *s;
        }
        b[n] = '\0';
        return b;
}

#define CHECK_TEXT(got, want)                                                                                          \
        do {                                                                                                           \
                const char *_g = (got), *_w = (want);                                                                  \
                TEST_RESULT(_g &&strcmp(_g, _w) == 0, "\"%s\" (got \"%s\")", shown(_w, 0), shown(_g, 1));              \
        } while (0)

/* The text of html (NUL-terminated), or "(error)". */
static const char *text_of(const char *html, const char *charset, size_t max) {
        html_text t = {0};
        hull_error e = {0};
        if (html_to_text(html, strlen(html), charset, max, &t, &e) < 0) {
                snprintf(out, sizeof(out), "(error %s)", e.msg);
                return out;
        }
        snprintf(out, sizeof(out), "%s", t.text);
        html_text_done(&t);
        return out;
}

static const char page[] =
        "<!DOCTYPE html>\n"
        "<html><head><title>  The   Title &amp; more </title><style>body{color:red}</style>"
        "<script>var x = \"<p>no</p>\";</script></head>\n"
        "<body>\n"
        "<nav><a href=\"/\">Home</a> | <a href=\"https://example.com/about\">About us</a></nav>\n"
        "<h1>Main  heading</h1>\n"
        "<p>First paragraph with <b>bold</b> and <i>italic</i>&nbsp;text, an entity &eacute; &#x263A; and a "
        "<a href=\"https://example.com/x\">link</a>.</p>\n"
        "<p>Second<br>line two<br><br>line four</p>\n"
        "<ul><li>one</li><li>two<ul><li>two-a</li><li>two-b</li></ul></li><li>three</li></ul>\n"
        "<h2>Table</h2>\n"
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>\n"
        "<pre>  code   line 1\n    indented</pre>\n"
        "<noscript>enable js</noscript><template><p>tpl</p></template>"
        "<svg><title>svg title</title><text>svg text</text></svg>\n"
        "<div>div text</div><div></div><!-- a comment -->\n"
        "<p><a href=\"https://example.com/same\">https://example.com/same</a></p>\n"
        "<h3></h3><h6>six</h6>\n"
        "<p>trailing</p>\n"
        "</body></html>\n";

static const char page_text[] = "The Title & more\n"
                                "\n"
                                "Home | About us (https://example.com/about)\n"
                                "\n"
                                "# Main heading\n"
                                "\n"
                                "First paragraph with bold and italic text, an entity \xc3\xa9 \xe2\x98\xba and a "
                                "link (https://example.com/x).\n"
                                "\n"
                                "Second\n"
                                "line two\n"
                                "\n"
                                "line four\n"
                                "\n"
                                "- one\n"
                                "- two\n"
                                "  - two-a\n"
                                "  - two-b\n"
                                "- three\n"
                                "\n"
                                "## Table\n"
                                "\n"
                                "a | b\n"
                                "1 | 2\n"
                                "\n"
                                "  code   line 1\n"
                                "    indented\n"
                                "\n"
                                "div text\n"
                                "\n"
                                "https://example.com/same\n"
                                "\n"
                                "###### six\n"
                                "\n"
                                "trailing";

int main(void) {
        html_text t = {0};
        hull_error e = {0};
        if (html_to_text("<p>x", 4, NULL, 0, &t, &e) < 0) {
                printf("skip - no libxml2: %s\n", e.msg);
                return 77;
        }
        html_text_done(&t);

        /* the whole page */
        CHECK(html_to_text(page, strlen(page), NULL, 0, &t, &e) == 0);
        CHECK_EQ_STR(t.title, "The Title & more");
        CHECK_TEXT(t.text, page_text);
        CHECK(t.len == strlen(page_text) && !t.truncated);
        html_text_done(&t);

        /* whitespace collapsed; no leading or trailing blank lines */
        CHECK_TEXT(text_of("  <p>  a \n\t b  </p>\n\n<p> c</p>  ", NULL, 0), "a b\n\nc");
        CHECK_TEXT(text_of("a&nbsp;&nbsp; b", NULL, 0), "a b");
        CHECK_TEXT(text_of("<b>a</b> <i>b</i>", NULL, 0), "a b");
        CHECK_TEXT(text_of("<span>a</span><span>b</span>", NULL, 0), "ab");
        /* br: a line; two make a blank line; more make no more */
        CHECK_TEXT(text_of("a<br>b", NULL, 0), "a\nb");
        CHECK_TEXT(text_of("a<br><br><br><br>b", NULL, 0), "a\n\nb");
        CHECK_TEXT(text_of("<div>a<br></div><div>b</div>", NULL, 0), "a\nb");
        CHECK_TEXT(text_of("<br><br>a<br><br>", NULL, 0), "a");
        /* entities */
        CHECK_TEXT(text_of("&lt;tag&gt; &amp; &quot;q&quot; &#39;s&#39; &copy; &#8364; &euro;", NULL, 0),
                   "<tag> & \"q\" 's' \xc2\xa9 \xe2\x82\xac \xe2\x82\xac");
        /* links: the href only when absolute http(s) and not the text itself */
        CHECK_TEXT(text_of("<a href=\"/rel\">r</a> <a href=\"mailto:x@y\">m</a> <a href=\"javascript:go()\">j</a> "
                           "<a href=\"HTTPS://E.example/\">e</a> <a href=\"https://e.example/\"></a>",
                           NULL, 0),
                   "r m j e (HTTPS://E.example/)");
        CHECK_TEXT(text_of("<p>see <a href=\"http://x.example/a\">http://x.example/a</a> now</p>", NULL, 0),
                   "see http://x.example/a now");
        /* dropped elements, even holding markup-like text */
        CHECK_TEXT(text_of("<p>a</p><script>document.write('<p>b</p>')</script><style>p{}</style>"
                           "<noscript>c</noscript><iframe src=x>d</iframe><select><option>e</option></select>"
                           "<object>f</object><math><mi>g</mi></math><p>h</p>",
                           NULL, 0),
                   "a\n\nh");
        /* headings, lists in lists, tables, pre */
        CHECK_TEXT(text_of("<h1>1</h1><h2>2</h2><h3>3</h3><h4>4</h4><h5>5</h5><h6>6</h6>", NULL, 0),
                   "# 1\n\n## 2\n\n### 3\n\n#### 4\n\n##### 5\n\n###### 6");
        CHECK_TEXT(text_of("<ol><li>a<ol><li>b<ol><li>c</li></ol></li></ol></li><li>d</li></ol>", NULL, 0),
                   "- a\n  - b\n    - c\n- d");
        CHECK_TEXT(text_of("<li></li><p>x</p>", NULL, 0), "x");
        CHECK_TEXT(text_of("<table><tr><td>a</td><td></td><td>c</td></tr></table>", NULL, 0), "a |  | c");
        CHECK_TEXT(text_of("<pre>a\r\n  b\n\n\nc</pre>", NULL, 0), "a\n  b\n\n\nc");
        /* a title alone; none */
        CHECK_TEXT(text_of("<title>Only</title>", NULL, 0), "Only");
        CHECK(html_to_text("<p>no title</p>", 15, NULL, 0, &t, &e) == 0 && t.title == NULL);
        html_text_done(&t);
        /* not HTML at all, empty, NUL bytes */
        CHECK_TEXT(text_of("just some text", NULL, 0), "just some text");
        CHECK(html_to_text("", 0, NULL, 0, &t, &e) == 0 && t.text && t.len == 0 && t.text[0] == 0);
        html_text_done(&t);
        CHECK(html_to_text("<p>a\0b</p>", 10, NULL, 0, &t, &e) == 0 && utf8_is_valid(t.text, t.len) &&
              strlen(t.text) == t.len);
        html_text_done(&t);

        /* character sets: the HTTP answer's, the page's own, an unknown name ignored */
        CHECK_TEXT(text_of("<p>caf\xe9</p>", "ISO-8859-1", 0), "caf\xc3\xa9");
        CHECK_TEXT(text_of("<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9</body></html>", NULL, 0),
                   "caf\xc3\xa9");
        CHECK_TEXT(text_of("<p>caf\xc3\xa9</p>", "x-no-such-charset", 0), "caf\xc3\xa9");
        CHECK_TEXT(text_of("<p>caf\xc3\xa9</p>", "utf-8\"; evil", 0), "caf\xc3\xa9");
        /* bytes that are not UTF-8 in a UTF-8 page still give valid UTF-8 */
        static const char bad_bytes[] = "<meta charset=utf-8><p>a\xff\xfe b \xc3</p>";
        CHECK(html_to_text(bad_bytes, strlen(bad_bytes), NULL, 0, &t, &e) == 0 && utf8_is_valid(t.text, t.len) &&
              t.len > 0);
        html_text_done(&t);

        /* the bound: cut at a character's boundary, said */
        static const char many[] = "<p>\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9</p>";
        for (size_t max = 1; max <= 17; max++) {
                CHECK(html_to_text(many, strlen(many), NULL, max, &t, &e) == 0);
                TEST_RESULT(t.len <= max && t.len >= max - 1 && t.len % 2 == 0 && utf8_is_valid(t.text, t.len) &&
                                    t.truncated == (max < 16),
                            "max %zu: %zu bytes, truncated %d", max, t.len, t.truncated);
                html_text_done(&t);
        }
        /* the title counts too */
        CHECK(html_to_text("<title>T</title><p>body</p>", 27, NULL, 3, &t, &e) == 0 && t.truncated);
        CHECK_TEXT(t.text, "T");
        html_text_done(&t);

        /* nesting far past libxml2's own limit (256): every level walked, no recursion */
        size_t depth = 200000, n = 0;
        char *deep = malloc(depth * 11 + 64);
        CHECK(deep != NULL);
        if (deep) {
                for (size_t i = 0; i < depth; i++, n += 5)
                        memcpy(deep + n, "<div>", 5);
                memcpy(deep + n, "<ul><li>x", 9);
                n += 9;
                for (size_t i = 0; i < depth; i++, n += 6)
                        memcpy(deep + n, "</div>", 6);
                CHECK(html_to_text(deep, n, NULL, 0, &t, &e) == 0);
                CHECK_TEXT(t.text, "- x");
                html_text_done(&t);
                free(deep);
        }
        return test_done();
}
