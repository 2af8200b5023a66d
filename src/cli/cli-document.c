/* cli-document.c: `hull read-document FILE`: a document read as read_document reads it (parsed by
 * hull-docread in a container sandbox, tool-document.h), on the command line: its summary, or
 * the parser's checked answer as JSON, and with --handles DIR its text and tables kept as data
 * handles in the store at DIR (a table handle per table, as a session would hold them). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fs-util.h"
#include "hd-store.h"
#include "json-str.h"
#include "macro.h"
#include "tool-document.h"

enum {
        OPT_OCR = 0x100,
        OPT_LANG,
        OPT_PAGES,
        OPT_JSON,
        OPT_HANDLES,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"ocr", no_argument, NULL, OPT_OCR},
        {"lang", required_argument, NULL, OPT_LANG},
        {"pages", required_argument, NULL, OPT_PAGES},
        {"json", no_argument, NULL, OPT_JSON},
        {"handles", required_argument, NULL, OPT_HANDLES},
        {},
};

/* The checked answer as json_dumpf(JSON_COMPACT) writes it, member by member in its order, but
 * its strings (the text is most of a document's answer) written a run at a time by json_str_put,
 * not a character at a time through jansson's dump callback. */
static void put_answer(json_t *a) {
        const char *k;
        json_t *v;
        bool first = true;
        putchar('{');
        json_object_foreach(a, k, v) {
                if (!first)
                        putchar(',');
                first = false;
                json_str_put(stdout, k, strlen(k));
                putchar(':');
                if (json_is_string(v))
                        json_str_put(stdout, json_string_value(v), json_string_length(v));
                else
                        json_dumpf(v, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
        }
        putchar('}');
}

void cli_document_help(void) {
        printf("Usage: hull read-document FILE [--ocr] [--lang L] [--pages P] [--json] [--handles DIR]\n\n"
               "Read a document the way the read_document tool does: PDF (text in reading order, tables found\n"
               "on the pages), Word .docx, Excel .xlsx (every sheet a table), PowerPoint .pptx, OpenDocument\n"
               ".odt/.ods/.odp, HTML, Markdown, and with --ocr scanned PDFs and images. The parser,\n"
               "hull-docread, runs in a container sandbox: no network, %llu s, %llu MiB.\n\n"
               "Options:\n"
               "  --ocr           recognize the text of scanned pages and images (tesseract; off by default)\n"
               "  --lang L        OCR languages, e.g. eng or eng+deu (installed traineddata only; default eng)\n"
               "  --pages P       pages, slides or sheets to read, e.g. 1-3,7 (default all)\n"
               "  --json          print the parser's checked answer (text, headings, tables as CSV)\n"
               "  --handles DIR   keep the text and every table as data handles in the store at DIR\n"
               "                  (created if missing; a table handle per table, types inferred)\n\n"
               "Without --json, a summary is printed: format, pages, headings, tables.\n\n"
               "Environment: HULL_DOCUMENT_OCR=1 turns OCR on by default (here, and for read_document in\n"
               "hull run, hull chat and hull serve); HULL_DOCUMENT_OCR_LANGUAGES=eng+deu sets the languages.\n",
               DOCREAD_TIMEOUT_MS / 1000, DOCREAD_MEMORY_BYTES >> 20);
}

#define usage_error(...) cli_usage_error("read-document", CLI_EXIT_USAGE, __VA_ARGS__)

static int put_store(void *ud, hd_format f, const char *source, const void *data, size_t len, json_t **ret_summary,
                     hull_error *e) {
        return hd_put(ud, NULL, f, source, data, len, ret_summary, e);
}

static int read_file(const char *path, dynbuf *b, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0)
                return hull_err(e, -errno, "read-document: cannot open %s", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "read-document: %s is not a regular file", path);
        if ((uint64_t) st.st_size > DOCREAD_INPUT_MAX)
                return hull_fail(e, -EFBIG, "read-document: %s is larger than %llu MiB", path, DOCREAD_INPUT_MAX >> 20);
        int r = dynbuf_reserve(b, (size_t) st.st_size + 1);
        if (r < 0)
                return hull_err(e, r, "read-document: cannot hold %s", path);
        ssize_t n = loop_read(fd, b->buf, (size_t) st.st_size);
        if (n < 0)
                return hull_err(e, (int) n, "read-document: cannot read %s", path);
        dynbuf_advance(b, (size_t) n);
        return 0;
}

int cli_document_main(int argc, char **argv) {
        const char *env_ocr = getenv("HULL_DOCUMENT_OCR");
        doc_read_opts o = {.cancel_fd = -1,
                           .ocr = env_ocr && (strcmp(env_ocr, "1") == 0 || strcmp(env_ocr, "true") == 0),
                           .langs = getenv("HULL_DOCUMENT_OCR_LANGUAGES")};
        bool json = false;
        const char *handles = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        cli_document_help();
                        return 0;
                case OPT_OCR:
                        o.ocr = true;
                        break;
                case OPT_LANG:
                        o.langs = optarg;
                        break;
                case OPT_PAGES:
                        o.pages = optarg;
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_HANDLES:
                        handles = optarg;
                        break;
                default:
                        return usage_error("unknown option");
                }
        if (optind + 1 != argc)
                return usage_error("give one FILE");
        o.name = argv[optind];
        hull_error e = {0};
        _cleanup_dynbuf_ dynbuf doc;
        dynbuf_init(&doc, DOCREAD_INPUT_MAX + 1);
        json_auto_t *parsed = NULL;
        int r = read_file(o.name, &doc, &e);
        if (r >= 0)
                r = doc_parse(doc.buf ?: "", doc.len, &o, &parsed, &e);
        if (r < 0) {
                fprintf(stderr, "hull: %s\n", e.msg);
                return CLI_EXIT_FAILURE;
        }
        if (!handles && json) {
                put_answer(parsed);
                putchar('\n');
                return 0;
        }
        hd_store *store = NULL;
        if (handles) {
                if (mkdir(handles, 0700) < 0 && errno != EEXIST) {
                        fprintf(stderr, "hull: read-document: cannot make %s: %m\n", handles);
                        return CLI_EXIT_FAILURE;
                }
                _cleanup_close_ int dfd = open(handles, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || hd_store_open(dfd, NULL, &store, &e) < 0) {
                        fprintf(stderr, "hull: read-document: %s: %s\n", handles, e.msg[0] ? e.msg : "cannot open it");
                        return CLI_EXIT_FAILURE;
                }
        }
        _cleanup_dynbuf_ dynbuf out;
        dynbuf_init(&out, DOCREAD_OUTPUT_MAX);
        json_t *made = NULL;
        if (store) {
                r = doc_store(put_store, store, o.name, parsed, &made, &out, &e);
                hd_store_free(store);
        } else { /* the summary alone: tables listed from the answer */
                (void) dynbuf_addf(&out, "%s: %s, %" JSON_INTEGER_FORMAT " pages, %zu tables\n", o.name,
                                   json_string_value(json_object_get(parsed, "format")),
                                   json_integer_value(json_object_get(parsed, "pages")),
                                   json_array_size(json_object_get(parsed, "tables")));
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(parsed, "tables"), i, v)(void) dynbuf_addf(
                        &out, "  table %s, page %" JSON_INTEGER_FORMAT ": %" JSON_INTEGER_FORMAT " rows\n",
                        json_string_value(json_object_get(v, "name")), json_integer_value(json_object_get(v, "page")),
                        json_integer_value(json_object_get(v, "rows")));
                json_array_foreach(json_object_get(parsed, "notes"), i, v)(void)
                        dynbuf_addf(&out, "Note: %s\n", json_string_value(v));
        }
        if (r < 0) {
                fprintf(stderr, "hull: %s\n", e.msg);
                json_decref(made);
                return CLI_EXIT_FAILURE;
        }
        if (json)
                json_dumpf(made, stdout, JSON_COMPACT), putchar('\n');
        else
                fwrite(out.buf ?: "", 1, out.len, stdout);
        json_decref(made);
        return 0;
}
