/* docread-main.c: hull-docread, the document parser read_document runs in a container sandbox
 * (src/tools/tool-document.c). The document on stdin (at most DOCREAD_INPUT_MAX bytes), one JSON
 * object on stdout:
 *   {"format", "pages", "pages_read", "ocr", "text", "headings": [{"level", "text", "page"}],
 *    "tables": [{"name", "page", "rows", "cols", "csv"}], "notes": [string]}
 * or {"error": "what was wrong"} with exit status 1 (2: bad arguments). Options: --name FILE (its
 * extension hints the format), --ocr, --lang eng+deu, --pages 1-3,7, --text-apart (the text
 * after the object, not in it: {..., "text_bytes": N, ...} "\n" and the N bytes, as hull asks).
 * For tests (hull never passes them): --threads N reads a PDF's pages on N threads (at most
 * DOCREAD_THREADS_MAX) whatever the CPUs and pages, --stats writes "threads N" to stderr.
 * Its own limits come first (address space, CPU time), on top of the sandbox's. Nothing here
 * trusts the document; the host does not trust this answer either. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "docread.h"
#include "dr-lib.h"
#include "fs-util.h"
#include "json-str.h"
#include "parse-util.h"
#include "utf8.h"

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

static bool starts_html(const char *buf, size_t len) {
        size_t i = 0;
        if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
                i = 3;
        while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
                i++;
        return (len - i >= 14 && strncasecmp(buf + i, "<!doctype html", 14) == 0) ||
               (len - i >= 5 && strncasecmp(buf + i, "<html", 5) == 0);
}

static bool is_image(const unsigned char *b, size_t len) {
        return (len >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) ||
               (len >= 3 && memcmp(b, "\xff\xd8\xff", 3) == 0) ||
               (len >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0)) ||
               (len >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0)) ||
               (len >= 2 && memcmp(b, "BM", 2) == 0) ||
               (len >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0);
}

static int dispatch(const char *buf, size_t len, const dr_opts *o, dr_doc *d) {
        const char *name = o->name ? o->name : "";
        if (len >= 5 && memmem(buf, MIN(len, (size_t) 1024), "%PDF-", 5))
                return dr_pdf(buf, len, o, d);
        if (len >= 4 && memcmp(buf, "PK\3\4", 4) == 0)
                return dr_lib_load(d) < 0 ? -ENOENT : dr_office(buf, len, o, d);
        if (is_image((const unsigned char *) buf, len))
                return dr_image(buf, len, o, d);
        if (ends_with(name, ".html") || ends_with(name, ".htm") || ends_with(name, ".xhtml") || starts_html(buf, len))
                return dr_lib_load(d) < 0 ? -ENOENT : dr_html(buf, len, o, d);
        if (ends_with(name, ".md") || ends_with(name, ".markdown"))
                return dr_markdown(buf, len, d);
        if (len == 0)
                return dr_fail(d, -ENODATA, "the file is empty");
        if (utf8_is_valid(buf, len) && !memchr(buf, '\0', len))
                return dr_plain_text(buf, len, d);
        return dr_fail(d, -EMEDIUMTYPE,
                       "not a document hull reads (PDF, Word .docx, Excel .xlsx, PowerPoint .pptx, OpenDocument "
                       ".odt/.ods/.odp, HTML, Markdown, text, or an image with ocr)");
}

/* The answer, written member by member in json_pack's order: the text, which is most of it,
 * with json_str_put (jansson's dump escapes it a character at a time, through a callback).
 * apart (--text-apart, what hull asks for): "text_bytes" in the object instead of "text", and
 * after the object a newline and the text's bytes as they are, so that hull's JSON parser, which
 * lexes a character at a time too, does not read them. */
static int answer(const dr_doc *d, bool apart) {
        _cleanup_free_ char *fixed = NULL;
        const char *text = d->text.buf ?: "";
        size_t len = d->text.len;
        if (!utf8_is_valid(text, len)) { /* text that is not UTF-8 (a PDF's broken encoding): repaired */
                if (utf8_make_valid(text, len, &fixed, &len) < 0)
                        return -ENOMEM;
                text = fixed;
        }
        const char *format = d->format ?: "?";
        fputs("{\"format\":", stdout);
        json_str_put(stdout, format, strlen(format));
        printf(",\"pages\":%u,\"pages_read\":%u,\"ocr\":%s,", d->pages, d->pages_read, d->ocr_used ? "true" : "false");
        if (apart)
                printf("\"text_bytes\":%zu", len);
        else {
                fputs("\"text\":", stdout);
                json_str_put(stdout, text, len);
        }
        fputs(",\"headings\":", stdout);
        int r = json_dumpf(d->headings, stdout, JSON_COMPACT);
        fputs(",\"tables\":", stdout);
        r |= json_dumpf(d->tables, stdout, JSON_COMPACT);
        fputs(",\"notes\":", stdout);
        r |= json_dumpf(d->notes, stdout, JSON_COMPACT);
        fputc('}', stdout);
        if (apart) {
                fputc('\n', stdout);
                fwrite(text, 1, len, stdout);
        }
        return r < 0 || ferror(stdout) ? -EIO : 0;
}

static int fail(const char *msg, int status) {
        json_t *v = json_pack("{s:s}", "error", msg);
        if (v)
                json_dumpf(v, stdout, JSON_COMPACT);
        json_decref(v);
        fflush(stdout);
        return status;
}

#if defined(__SANITIZE_ADDRESS__)
/* The parser is one short process whose libraries (poppler, glib, fontconfig, libxml2) keep their
 * caches to the end: the sanitizer build checks its memory accesses, not what it holds at exit
 * (the sandbox hands it no ASAN_OPTIONS). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
        return "detect_leaks=0";
}
#endif

int main(int argc, char **argv) {
        static const struct option longopts[] = {
                {"name", required_argument, NULL, 'n'}, {"ocr", no_argument, NULL, 'o'},
                {"lang", required_argument, NULL, 'l'}, {"pages", required_argument, NULL, 'p'},
                {"text-apart", no_argument, NULL, 't'}, {"threads", required_argument, NULL, 'T'},
                {"stats", no_argument, NULL, 's'},      {NULL, 0, NULL, 0},
        };
        dr_opts o = {.name = ""};
        bool apart = false, stats = false;
        int c;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0)
                switch (c) {
                case 'n':
                        o.name = optarg;
                        break;
                case 'o':
                        o.ocr = true;
                        break;
                case 'l':
                        if (strlen(optarg) >= sizeof(o.langs))
                                return fail("--lang is too long", 2);
                        snprintf(o.langs, sizeof(o.langs), "%s", optarg);
                        break;
                case 't':
                        apart = true;
                        break;
                case 'T': {
                        uint64_t t;
                        if (parse_uint64(optarg, 1, DOCREAD_THREADS_MAX, &t) < 0) {
                                char msg[64];
                                snprintf(msg, sizeof(msg), "--threads wants a number from 1 to %u",
                                         DOCREAD_THREADS_MAX);
                                return fail(msg, 2);
                        }
                        o.threads = (unsigned) t;
                        break;
                }
                case 's':
                        stats = true;
                        break;
                case 'p':
                        if (dr_pages_parse(optarg, &o) < 0)
                                return fail("--pages wants a list such as 1-3,7 (pages from 1)", 2);
                        break;
                default:
                        return fail("usage: hull-docread [--name FILE] [--ocr] [--lang L] [--pages P] [--text-apart] "
                                    "[--threads N] [--stats] < DOCUMENT",
                                    2);
                }
        struct rlimit as = {2 * DOCREAD_MEMORY_BYTES, 2 * DOCREAD_MEMORY_BYTES};
        struct rlimit cpu = {DOCREAD_TIMEOUT_MS / 1000 + 1, DOCREAD_TIMEOUT_MS / 1000 + 2};
#if defined(__SANITIZE_ADDRESS__)
        /* AddressSanitizer's shadow already holds terabytes of address space: the sanitizer
         * build keeps the sandbox's memory limit (its cgroup) and the CPU bound only */
        (void) as;
        if (setrlimit(RLIMIT_CPU, &cpu) < 0)
                return fail("cannot set its own limits", 1);
#else
        if (setrlimit(RLIMIT_AS, &as) < 0 || setrlimit(RLIMIT_CPU, &cpu) < 0)
                return fail("cannot set its own limits", 1);
#endif

        /* poppler allocates and frees a few hundred thousand small objects a page (its TextPage):
         * without fastbins malloc never stops to consolidate them (malloc_consolidate was 3 %
         * of a PDF's parse), and a heap grown and kept in large steps spares the ~240 brk calls
         * (and their page faults) of growing and trimming it page after page. The memory
         * bounds are unchanged: RLIMIT_AS and the sandbox's cgroup count what is touched. */
        mallopt(M_MXFAST, 0);
        mallopt(M_TOP_PAD, (int) DOCREAD_HEAP_PAD);
        mallopt(M_TRIM_THRESHOLD, (int) DOCREAD_HEAP_KEEP);

        dynbuf in;
        dynbuf_init(&in, DOCREAD_INPUT_MAX);
        for (;;) {
                int r = dynbuf_reserve(&in, 1 << 16);
                if (r < 0)
                        return fail(r == -E2BIG ? "the document is larger than hull reads (DOCREAD_INPUT_MAX)"
                                                : "out of memory",
                                    1);
                ssize_t n = read(STDIN_FILENO, in.buf + in.len, MIN((size_t) 1 << 16, in.max - in.len));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail("cannot read the document", 1);
                if (n == 0)
                        break;
                dynbuf_advance(&in, (size_t) n);
        }
        dr_doc d = {.headings = json_array(), .tables = json_array(), .notes = json_array()};
        dynbuf_init(&d.text, DOCREAD_TEXT_MAX);
        if (!d.headings || !d.tables || !d.notes)
                return fail("out of memory", 1);
        int r = dispatch(in.buf ?: "", in.len, &o, &d);
        dynbuf_free(&in);
        int status;
        if (r < 0)
                status = fail(d.error[0] ? d.error : strerror(-r), 1);
        else if (answer(&d, apart) < 0)
                status = fail("the answer cannot be written", 1);
        else
                status = fflush(stdout) == 0 ? 0 : 1;
        if (stats)
                fprintf(stderr, "threads %u\n", d.threads);
        dynbuf_free(&d.text); /* freed even on an error: the sanitizer build checks for leaks */
        json_decref(d.headings);
        json_decref(d.tables);
        json_decref(d.notes);
        return status;
}
