/* tool-document.c: documents into data handles (tool-document.h): the parser run in a sandbox,
 * its answer checked, the handles made, and read_document, the tool over them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "egress.h"
#include "fs-util.h"
#include "sbx.h"
#include "tool-doc-answer.h"
#include "tool-document.h"
#include "tool-util.h"
#include "tools-sandbox.h"
#include "webfetch.h"

#define PARSER_NAME "hull-docread"

int doc_parser_path(char *ret, size_t size, hull_error *e) {
        const char *env = getenv("HULL_DOCREAD");
        if (env && env[0]) {
                if (env[0] != '/' || access(env, X_OK) < 0)
                        return hull_fail(e, -ENOENT,
                                         "documents: HULL_DOCREAD=%.200s is not an executable absolute path", env);
                snprintf(ret, size, "%s", env);
                return 0;
        }
        char exe[SBX_PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return hull_err(e, -ENOENT, "documents: cannot find hull's own binary");
        exe[n] = '\0';
        char *dir = dirname(exe);
        static const char *const where[] = {"/" PARSER_NAME, "/../libexec/hull/" PARSER_NAME};
        for (size_t i = 0; i < ELEMENTSOF(where); i++) {
                char p[SBX_PATH_MAX];
                if ((size_t) snprintf(p, sizeof(p), "%s%s", dir, where[i]) >= sizeof(p))
                        continue;
                char *real = realpath(p, NULL);
                if (real && access(real, X_OK) == 0 && strlen(real) < size) {
                        snprintf(ret, size, "%s", real);
                        free(real);
                        return 0;
                }
                free(real);
        }
        return hull_fail(e, -ENOENT,
                         "documents: the parser " PARSER_NAME " is not installed next to hull (%.200s) or in "
                         "../libexec/hull/; set HULL_DOCREAD to its path",
                         dir);
}

static int answer_of(const sbx_result *res, json_t **ret, hull_error *e) {
        if (res->timed_out)
                return hull_fail(e, -ETIMEDOUT,
                                 "read_document: parsing took more than %llu s: read fewer pages (pages: \"1-20\") "
                                 "or without ocr",
                                 DOCREAD_TIMEOUT_MS / 1000);
        if (res->oom_killed)
                return hull_fail(e, -ENOMEM,
                                 "read_document: the document needs more than %llu MiB to parse: read "
                                 "fewer pages (pages: \"1-20\")",
                                 DOCREAD_MEMORY_BYTES >> 20);
        if (res->term_signal)
                return hull_fail(e, -EPROTO,
                                 "read_document: the parser stopped on signal %d (a damaged or hostile document, or "
                                 "one that needs more memory than the parser may use)",
                                 res->term_signal);
        if (res->out_dropped > 0)
                return hull_fail(e, -EFBIG,
                                 "read_document: the document's text and tables pass %llu MiB: read fewer "
                                 "pages (pages: \"1-20\")",
                                 DOCREAD_OUTPUT_MAX >> 20);
        json_t *a = doc_answer_load(res->out, res->out_len);
        if (!a)
                return hull_fail(e, -EPROTO, "read_document: the parser's answer is not JSON (exit status %d)",
                                 res->exit_code);
        const char *err = json_string_value(json_object_get(a, "error"));
        if (err) {
                char msg[HULL_ERROR_MSG_MAX];
                doc_clean_message(err, msg, sizeof(msg));
                json_decref(a);
                return hull_fail(e, -EBADMSG, "read_document: %s", msg);
        }
        const char *why = res->exit_code == 0 ? doc_answer_check(a) : "a failure without a message";
        if (why) {
                json_decref(a);
                return hull_fail(e, -EPROTO, "read_document: the parser's answer is refused: %s", why);
        }
        *ret = a;
        return 0;
}

static void arg_push(char **argv, size_t *n, const char *a) {
        argv[(*n)++] = (char *) a;
}

int doc_parse(const void *data, size_t len, const doc_read_opts *o, json_t **ret, hull_error *e) {
        if (len > DOCREAD_INPUT_MAX)
                return hull_fail(e, -EFBIG, "read_document: the document has %zu bytes; hull reads at most %llu MiB",
                                 len, DOCREAD_INPUT_MAX >> 20);
        char parser[SBX_PATH_MAX];
        int r = doc_parser_path(parser, sizeof(parser), e);
        if (r < 0)
                return r;
        char dir[SBX_PATH_MAX], base[SBX_PATH_MAX], exe[SBX_PATH_MAX + 8];
        snprintf(dir, sizeof(dir), "%s", parser);
        snprintf(base, sizeof(base), "%s", parser);
        snprintf(exe, sizeof(exe), "/env/%s", basename(base));
        _cleanup_close_ int fd = memfd_create("hull-document", MFD_CLOEXEC);
        if (fd < 0)
                return hull_err(e, -errno, "read_document: cannot hold the document");
        if ((r = loop_write(fd, data, len)) < 0)
                return hull_err(e, r, "read_document: cannot hold the document");
        char in[64];
        snprintf(in, sizeof(in), "/proc/self/fd/%d", fd);

        char name[256] = "";
        if (o->name) { /* the name's last segment, without control characters: a hint only */
                const char *slash = strrchr(o->name, '/');
                doc_clean_message(slash ? slash + 1 : o->name, name, sizeof(name));
        }
        char *argv[12];
        size_t n = 0;
        arg_push(argv, &n, exe);
        arg_push(argv, &n, "--name");
        arg_push(argv, &n, name);
        arg_push(argv, &n, "--text-apart");
        if (o->ocr)
                arg_push(argv, &n, "--ocr");
        if (o->langs) {
                arg_push(argv, &n, "--lang");
                arg_push(argv, &n, o->langs);
        }
        if (o->pages) {
                arg_push(argv, &n, "--pages");
                arg_push(argv, &n, o->pages);
        }
        argv[n] = NULL;
        char *env[] = {(char *) "OMP_THREAD_LIMIT=1", (char *) "LC_ALL=C.UTF-8",
                       (char *) "GLIBC_TUNABLES=" DOCREAD_MALLOC_TUNABLES, NULL};
        bool root = geteuid() == 0;
        sbx_spec spec = {
                .tier = SBX_TIER_CONTAINER,
                .argv = argv,
                .env = env,
                .layer_dir = dirname(dir),
                .stdin_path = in,
                .timeout_ms = o->timeout_ms ? MIN(o->timeout_ms, DOCREAD_TIMEOUT_MS) : DOCREAD_TIMEOUT_MS,
                .memory_bytes = root ? DOCREAD_MEMORY_BYTES : 0,
                .pids = root ? DOCREAD_PIDS : 0,
                .tmp_bytes = 16ULL << 20,
                .output_bytes = DOCREAD_OUTPUT_MAX,
                .use_cgroups = root,
                .cancel_fd = -1,
                .net = SBX_NET_NONE,
        };
        sbx_result res = {0};
        hull_error why = {0};
        r = sbx_run(&spec, &res, &why);
        if (r < 0) { /* once more: a busy host can miss a set-up deadline (a cgroup join) */
                why = (hull_error){0};
                r = sbx_run(&spec, &res, &why);
        }
        if (r < 0)
                return hull_fail(e, why.err ? why.err : -EIO,
                                 "read_document: documents are parsed only in a container sandbox, and it cannot "
                                 "start here: %s",
                                 why.msg);
        r = answer_of(&res, ret, e);
        sbx_result_done(&res);
        return r;
}

/* ---- handles ---- */

static void add_columns(dynbuf *out, const json_t *summary) {
        json_t *schema = json_object_get(summary, "schema");
        const char *col;
        json_t *t;
        size_t k = 0;
        json_object_foreach(schema, col, t) {
                if (k++ >= 12) {
                        (void) dynbuf_add_str(out, ", ...");
                        break;
                }
                (void) dynbuf_addf(out, "%s%s %s", k > 1 ? ", " : "", col, json_string_value(t) ?: "?");
        }
}

int doc_put_session(void *ud, hd_format f, const char *source, const void *data, size_t len, json_t **ret_summary,
                    hull_error *e) {
        const tool_ctx *c = ud;
        return ss_handles_spill(c->ss, c->session, f, source, data, len, ret_summary, e);
}

int doc_store(doc_put_fn *put, void *ud, const char *name, const json_t *doc, json_t **ret_handles, dynbuf *out,
              hull_error *e) {
        json_auto_t *handles = json_array();
        if (!handles)
                return hull_err(e, -ENOMEM, "read_document: out of memory");
        const char *text = json_string_value(json_object_get(doc, "text"));
        size_t text_len = json_string_length(json_object_get(doc, "text"));
        json_t *tables = json_object_get(doc, "tables"), *headings = json_object_get(doc, "headings");
        json_int_t pages = json_integer_value(json_object_get(doc, "pages"));
        (void) dynbuf_addf(out,
                           "%s: %s, %" JSON_INTEGER_FORMAT " page%s (%" JSON_INTEGER_FORMAT " read)%s, %zu table%s\n",
                           name, json_string_value(json_object_get(doc, "format")), pages, pages == 1 ? "" : "s",
                           json_integer_value(json_object_get(doc, "pages_read")),
                           json_is_true(json_object_get(doc, "ocr")) ? ", text by OCR" : "", json_array_size(tables),
                           json_array_size(tables) == 1 ? "" : "s");
        char source[HD_SOURCE_MAX];
        int r;
        if (text_len > 0) {
                json_t *sum = NULL;
                snprintf(source, sizeof(source), "read_document %.200s: text", name);
                r = put(ud, HD_FORMAT_TEXT, source, text, text_len, &sum, e);
                if (r < 0)
                        return r;
                json_array_append_new(handles, sum);
                (void) dynbuf_addf(out,
                                   "Text: handle %s (%zu bytes; read_handle reads it, pages start with [page N])\n",
                                   json_string_value(json_object_get(sum, "id")) ?: "?", text_len);
        } else
                (void) dynbuf_add_str(out, "Text: none\n");
        size_t i;
        json_t *v;
        if (json_array_size(headings) > 0) {
                (void) dynbuf_addf(out, "Headings (%zu):", json_array_size(headings));
                json_array_foreach(headings, i, v) {
                        if (i >= DOCREAD_SUMMARY_HEADINGS) {
                                (void) dynbuf_add_str(out, " ...");
                                break;
                        }
                        json_int_t pg = json_integer_value(json_object_get(v, "page"));
                        const char *ht = json_string_value(json_object_get(v, "text"));
                        if (pg)
                                (void) dynbuf_addf(out, "%s p%" JSON_INTEGER_FORMAT " \"%.120s\"", i ? ";" : "", pg,
                                                   ht);
                        else
                                (void) dynbuf_addf(out, "%s \"%.120s\"", i ? ";" : "", ht);
                }
                (void) dynbuf_add_str(out, "\n");
        }
        if (json_array_size(tables) > 0)
                (void) dynbuf_add_str(out, "Tables, each a table handle (query_handle: SQL with the handle id as the "
                                           "table name; inspect_handle shows rows):\n");
        json_array_foreach(tables, i, v) {
                json_t *sum = NULL;
                const char *tname = json_string_value(json_object_get(v, "name"));
                json_int_t pg = json_integer_value(json_object_get(v, "page"));
                const char *csv = json_string_value(json_object_get(v, "csv"));
                if (pg)
                        snprintf(source, sizeof(source),
                                 "read_document %.200s: table %.100s, page %" JSON_INTEGER_FORMAT, name, tname, pg);
                else
                        snprintf(source, sizeof(source), "read_document %.200s: table %.100s", name, tname);
                hull_error te = {0};
                r = put(ud, HD_FORMAT_CSV, source, csv, json_string_length(json_object_get(v, "csv")), &sum, &te);
                if (r == -ENOSPC || r == -EFBIG || r == -ENOMEM || r == -EOPNOTSUPP) {
                        if (e)
                                *e = te;
                        return r;
                }
                if (r < 0) {
                        (void) dynbuf_addf(out, "  table %.100s: not kept (%s)\n", tname, te.msg);
                        continue;
                }
                json_array_append_new(handles, sum);
                (void) dynbuf_addf(out, "  %s: %.100s%s", json_string_value(json_object_get(sum, "id")) ?: "?", tname,
                                   pg ? ", page " : "");
                if (pg)
                        (void) dynbuf_addf(out, "%" JSON_INTEGER_FORMAT, pg);
                (void) dynbuf_addf(
                        out, ", %" JSON_INTEGER_FORMAT " rows: ", json_integer_value(json_object_get(sum, "n_rows")));
                add_columns(out, sum);
                (void) dynbuf_add_str(out, "\n");
        }
        json_t *notes = json_object_get(doc, "notes");
        json_array_foreach(notes, i, v) {
                if (i >= DOCREAD_SUMMARY_HEADINGS)
                        break;
                (void) dynbuf_addf(out, "Note: %s\n", json_string_value(v));
        }
        *ret_handles = json_incref(handles);
        return 0;
}

/* OCR's default where a call does not say: HULL_DOCUMENT_OCR=1 turns it on for every document
 * this process reads (hull run, hull serve), HULL_DOCUMENT_OCR_LANGUAGES sets the languages. */
static bool ocr_default(void) {
        const char *v = getenv("HULL_DOCUMENT_OCR");
        return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0);
}

static const char *langs_default(void) {
        const char *v = getenv("HULL_DOCUMENT_OCR_LANGUAGES");
        return v && v[0] && strlen(v) < DOCREAD_LANGS_MAX ? v : NULL;
}

typedef struct session_put {
        ss_manager *m;
        ss_session *s;
} session_put;

static int put_session(void *ud, hd_format f, const char *source, const void *data, size_t len, json_t **ret_summary,
                       hull_error *e) {
        session_put *p = ud;
        return ss_handles_spill(p->m, p->s, f, source, data, len, ret_summary, e);
}

int doc_read_fd(ss_manager *m, ss_session *s, const char *name, int fd, json_t **ret, hull_error *e) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return hull_err(e, -errno, "read_document: cannot read the upload");
        if ((uint64_t) st.st_size > DOCREAD_INPUT_MAX)
                return hull_fail(e, -EFBIG, "read_document: the document is larger than %llu MiB",
                                 DOCREAD_INPUT_MAX >> 20);
        _cleanup_free_ char *buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "read_document: out of memory");
        ssize_t n = loop_pread(fd, buf, (size_t) st.st_size, 0);
        if (n < 0)
                return hull_err(e, (int) n, "read_document: cannot read the upload");
        doc_read_opts o = {.name = name, .ocr = ocr_default(), .langs = langs_default(), .cancel_fd = -1};
        json_auto_t *parsed = NULL;
        int r = doc_parse(buf, (size_t) n, &o, &parsed, e);
        if (r < 0)
                return r;
        _cleanup_dynbuf_ dynbuf out;
        dynbuf_init(&out, AGENT_TOOL_TEXT_MAX);
        json_t *handles = NULL;
        session_put p = {m, s};
        r = doc_store(put_session, &p, name, parsed, &handles, &out, e);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s%, s:o}", "summary", out.buf ?: "", out.len, "handles", handles);
        return *ret ? 0 : hull_err(e, -ENOMEM, "read_document: out of memory");
}

/* ---- read_document ---- */

/* An input's bytes (rel is inputs/<id>/<name>, a link into the read-only store that the
 * workspace tools do not follow): read from its binary handle <id>. Returns 0, 1 when rel is not
 * an input's path or id not a binary handle, or a negative errno. */
static int read_input(const tool_ctx *c, const char *rel, dynbuf *b, hull_error *e) {
        char id[HD_ID_MAX + 1];
        const char *p = rel + strlen("inputs/"), *slash = strchr(p, '/');
        if (strncmp(rel, "inputs/", 7) != 0 || !slash || (size_t) (slash - p) > HD_ID_MAX || strchr(slash + 1, '/'))
                return 1;
        snprintf(id, sizeof(id), "%.*s", (int) (slash - p), p);
        for (uint64_t off = 0;;) {
                json_auto_t *v = NULL;
                hull_error he = {0};
                if (ss_handles_read(c->ss, c->session, id, off, 0, &v, &he) < 0)
                        return 1;
                const char *content = json_string_value(json_object_get(v, "content"));
                if (!content)
                        return 1; /* not a binary handle */
                _cleanup_free_ void *bytes = NULL;
                size_t n = 0;
                int r = base64_decode(content, strlen(content), &bytes, &n);
                if (r < 0)
                        return hull_err(e, r, "read_document: input %s cannot be read", id);
                if ((r = dynbuf_add(b, bytes, n)) < 0)
                        return r;
                off += n;
                if (json_is_true(json_object_get(v, "eof")) || n == 0)
                        return 0;
        }
}

/* The workspace file rel, whole (at most DOCREAD_INPUT_MAX bytes), into *b. */
static int read_workspace(const tool_ctx *c, const char *rel, dynbuf *b, tool_output *ret, hull_error *e) {
        char shown[WS_PATH_MAX + 16];
        tool_shown_path(rel, shown);
        uint64_t pos = 0;
        for (;;) {
                ws_read_result rr = {0};
                hull_error re = {0};
                int r = ss_read(c->ss, c->session, rel, pos, WS_READ_MAX_BYTES, &rr, &re);
                if (r == -ELOOP && pos == 0) {
                        int k = read_input(c, rel, b, e);
                        if (k == -E2BIG)
                                return tool_error(ret, "read_document: %s is larger than %llu MiB", shown,
                                                  DOCREAD_INPUT_MAX >> 20) +
                                       1;
                        if (k <= 0)
                                return k; /* else not an input: the jail's refusal below */
                }
                if (r < 0)
                        return tool_error(ret, "read_document: %s", re.msg) + 1;
                if (rr.size > DOCREAD_INPUT_MAX) {
                        ws_read_result_done(&rr);
                        return tool_error(ret,
                                          "read_document: %s has %" PRIu64 " bytes; hull reads documents of at most "
                                          "%llu MiB (split it, or read it with code)",
                                          shown, rr.size, DOCREAD_INPUT_MAX >> 20) +
                               1;
                }
                r = dynbuf_add(b, rr.data, rr.len);
                bool eof = rr.eof || rr.len == 0;
                pos += rr.len;
                ws_read_result_done(&rr);
                if (r < 0)
                        return hull_err(e, r, "read_document: cannot hold %s", shown);
                if (eof)
                        return 0;
        }
}

/* The document at url through the egress guard, with its default policy (loopback, private,
 * link-local and cloud metadata addresses refused; hull serve's web allowlist is web_fetch's). */
static int read_url(const tool_ctx *c, const char *url, dynbuf *b, tool_output *ret, hull_error *e) {
        _cleanup_httpc_ httpc *client = NULL;
        egress_policy *own = NULL;
        int r = httpc_new(&client, e);
        if (r < 0)
                return r;
        if ((r = egress_policy_new(NULL, 0, NULL, NULL, &own, e)) < 0)
                return r;
        webfetch_request req = {
                .url = url,
                .max_bytes = DOCREAD_INPUT_MAX + 1,
                .deadline_mono_ms = c->deadline_mono_ms,
                .cancel = c->cancel,
        };
        webfetch_result f = {0};
        hull_error why = {0};
        r = webfetch(client, own, &req, &f, &why);
        egress_policy_free(own);
        if (r == -ECANCELED || r == -ENOMEM) {
                if (e)
                        *e = why;
                return r;
        }
        if (r < 0)
                return tool_error(ret, "read_document: %s", why.msg) + 1;
        if (f.status < 200 || f.status > 299 || f.truncated) {
                if (f.truncated)
                        tool_error(ret, "read_document: %.300s is larger than %llu MiB", f.url ?: url,
                                   DOCREAD_INPUT_MAX >> 20);
                else
                        tool_error(ret, "read_document: %.300s answered HTTP %ld", f.url ?: url, f.status);
                webfetch_result_done(&f);
                return 1;
        }
        r = dynbuf_add(b, f.body, f.body_len);
        webfetch_result_done(&f);
        return r < 0 ? hull_err(e, r, "read_document: cannot hold the document") : 0;
}

static int read_document_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const char *url = json_string_value(json_object_get(input, "url"));
        bool has_path = json_object_get(input, "path") != NULL;
        if (!!url == has_path)
                return tool_error(ret, "read_document: give either path (a file in /workspace) or url, not both");
        _cleanup_dynbuf_ dynbuf doc;
        dynbuf_init(&doc, DOCREAD_INPUT_MAX + 1);
        char rel[WS_PATH_MAX + 1], shown[WS_PATH_MAX + 16];
        const char *name;
        int r;
        if (url) {
                r = read_url(c, url, &doc, ret, e);
                name = url;
        } else {
                if (tool_path(input, "path", false, rel, ret))
                        return 0;
                r = read_workspace(c, rel, &doc, ret, e);
                name = tool_shown_path(rel, shown);
        }
        if (r != 0)
                return r < 0 ? r : 0;
        json_t *pages = json_object_get(input, "pages");
        char pages_buf[32];
        if (json_is_integer(pages))
                snprintf(pages_buf, sizeof(pages_buf), "%" JSON_INTEGER_FORMAT, json_integer_value(pages));
        doc_read_opts o = {
                .name = name,
                .ocr = tool_bool(input, "ocr", ocr_default()),
                .langs = json_string_value(json_object_get(input, "ocr_languages")) ?: langs_default(),
                .pages = json_is_integer(pages) ? pages_buf : json_string_value(pages),
                .timeout_ms = tool_time_left(c, DOCREAD_TIMEOUT_MS),
        };
        if (c->progress)
                c->progress(c->progress_ud,
                            o.ocr ? "parsing the document with OCR in a sandbox" : "parsing the document in a sandbox");
        json_auto_t *parsed = NULL;
        hull_error pe = {0};
        r = doc_parse(doc.buf ?: "", doc.len, &o, &parsed, &pe);
        if (r == -ENOENT && !pe.msg[0])
                return hull_err(e, r, "read_document: no parser");
        if (r < 0)
                return tool_error(ret, "%s", pe.msg);
        dynbuf_free(&doc);
        _cleanup_dynbuf_ dynbuf out;
        tool_buf_init(&out);
        json_t *handles = NULL;
        hull_error se = {0};
        r = doc_store(doc_put_session, (void *) c, name, parsed, &handles, &out, &se);
        if (r < 0)
                return tool_error(ret, "read_document: the document was read but cannot be kept: %s", se.msg);
        ret->handles = handles;
        return tool_text(ret, &out, false);
}

_Static_assert(DOCREAD_PAGES_MAX == 5000, "read_document's description names 5000 pages");

const tool_def tool_read_document = {
        .name = "read_document",
        .description =
                "Read a document into data handles: PDF (text in reading order with [page N] markers, tables found "
                "on the pages), Word .docx, Excel .xlsx (every sheet a table with typed columns), PowerPoint .pptx, "
                "OpenDocument .odt/.ods/.odp, HTML, Markdown, and with ocr scanned PDFs and images. Give path (a "
                "file in /workspace, e.g. /workspace/inputs/ID/report.pdf) or url. You get a summary: pages, "
                "headings, a text handle (read_handle) and one table handle per table (query_handle with SQL). "
                "At most 5000 pages at once (pages: \"1-50\").",
        .input_schema =
                "{\"type\": \"object\", \"properties\": {"
                "\"path\": {\"type\": \"string\", \"description\": \"The document's path in /workspace\"}, "
                "\"url\": {\"type\": \"string\", \"description\": \"An http(s) URL of the document\"}, "
                "\"pages\": {\"type\": \"string\", \"description\": \"Pages (slides, sheets) to read, e.g. "
                "\\\"1-3,7\\\" (default: all)\"}, "
                "\"ocr\": {\"type\": \"boolean\", \"description\": \"Recognize the text of scanned pages and images "
                "(slower; default false)\"}, "
                "\"ocr_languages\": {\"type\": \"string\", \"description\": \"Tesseract languages, e.g. \\\"eng\\\" "
                "or \\\"eng+deu\\\" (default eng; only installed ones)\"}}, "
                "\"additionalProperties\": false}",
        .default_policy = TOOL_ALWAYS_ALLOW,
        .timeout_ms = DOCREAD_TIMEOUT_MS + WEBFETCH_TIMEOUT_MS_DEFAULT,
        .needs_session = true,
        .run = read_document_run,
};
