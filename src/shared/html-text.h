/* html-text.h: an HTML page as readable text, for a model to read (web_fetch).
 *
 * The page is parsed by libxml2's HTML parser (loaded through src/shared/dlib-xml2.h), which
 * recovers from broken markup, decodes entities and converts the character set to UTF-8; this
 * module only walks the tree it builds (iteratively: any depth) and writes:
 *   - the title first, on its own line, then a blank line;
 *   - nothing of script, style, noscript, template, svg, math, iframe, object, embed, canvas,
 *     select and head (the title aside), nor comments;
 *   - paragraphs, headings, lists, tables, block quotes and pre as blocks separated by a blank
 *     line; div, section, li, tr, dt, dd and the like, and br, as line breaks;
 *   - headings as "# ", "## " ... lines; list items as "- ", indented two spaces per nesting
 *     level; table cells separated by " | ";
 *   - a link's text, followed by its href in parentheses when the href is an absolute http(s)
 *     URL that is not the text itself;
 *   - whitespace collapsed (a no-break space is a space), no leading or trailing blank lines,
 *     except inside pre, whose lines are kept as they are.
 * Pure over bytes (no I/O; libxml2's network access is off) and fuzzed (fuzz/fuzz-html-text.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "limits.h"

typedef struct html_text {
        char *text; /* UTF-8, NUL-terminated (not counted), malloc'd; "" when there is none */
        size_t len;
        char *title;    /* the title, whitespace collapsed (at most HTML_TEXT_TITLE_MAX bytes); NULL: none */
        bool truncated; /* the text was cut at max bytes (at a character's boundary), or the
                         * page at HTML_TEXT_INPUT_MAX bytes before it was parsed */
} html_text;
void html_text_done(html_text *t);

/* Convert len bytes of HTML. charset: the one the HTTP answer declared (NULL: libxml2 finds it
 * in the page or assumes UTF-8; an unknown name is ignored). max: bytes of text at most (0:
 * HTML_TEXT_MAX_DEFAULT). Returns 0 and *ret (release with html_text_done), or -ENOSYS (no
 * libxml2) or -ENOMEM with *e; input that is not HTML at all still gives its text. */
int html_to_text(const char *html, size_t len, const char *charset, size_t max, html_text *ret, hull_error *e);
