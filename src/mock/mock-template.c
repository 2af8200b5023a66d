/* mock-template.c: the placeholders of hull mock-model's answers. A placeholder picks a tool
 * result and cuts it down (a line, the blanks off): all of it is a slice of the result, so
 * nothing is built but the answer's text. */
#include "mock-template.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "limits.h"
#include "macro.h"

/* ---- the conversation's tool results ---- */

/* A content's text: a string, or the text of its {"type":"text","text":...} parts joined by
 * "\n"; "" for anything else. */
static char *content_text(const json_t *content) {
        if (json_is_string(content))
                return strdup(json_string_value(content));
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, MOCK_REQUEST_BODY_MAX);
        size_t i, parts = 0;
        json_t *part;
        if (json_is_array(content))
                json_array_foreach(content, i, part) {
                        const json_t *t = json_object_get(part, "text");
                        const char *type = json_string_value(json_object_get(part, "type"));
                        if (!type || strcmp(type, "text") != 0 || !json_is_string(t))
                                continue;
                        if ((parts++ > 0 && dynbuf_add(&b, "\n", 1) < 0) ||
                            dynbuf_add(&b, json_string_value(t), strlen(json_string_value(t))) < 0)
                                return NULL;
                }
        return dynbuf_take(&b, NULL);
}

/* Walk body's tool results: count them into *n, or (v not NULL) their text into v. The last: its
 * index in *ret_last, SIZE_MAX when none. */
static int results_walk(mock_api api, const json_t *body, char **v, size_t *n, size_t *ret_last) {
        const json_t *messages = json_object_get(body, "messages");
        size_t i, k, last = SIZE_MAX;
        json_t *m, *block;
        *n = 0;
        if (json_is_array(messages))
                json_array_foreach(messages, i, m) {
                        const char *role = json_string_value(json_object_get(m, "role"));
                        const json_t *content = json_object_get(m, "content");
                        if (!role)
                                continue;
                        if (api == MOCK_API_OPENAI) {
                                if (strcmp(role, "tool") != 0)
                                        continue;
                                if (v && !(v[*n] = content_text(content)))
                                        return -ENOMEM;
                                last = (*n)++;
                                continue;
                        }
                        if (strcmp(role, "user") != 0)
                                continue;
                        last = SIZE_MAX; /* Anthropic's last: in the last user message */
                        if (json_is_array(content))
                                json_array_foreach(content, k, block) {
                                        const char *type = json_string_value(json_object_get(block, "type"));
                                        if (!type || strcmp(type, "tool_result") != 0)
                                                continue;
                                        if (v && !(v[*n] = content_text(json_object_get(block, "content"))))
                                                return -ENOMEM;
                                        last = (*n)++;
                                }
                }
        *ret_last = last;
        return 0;
}

int mock_results_of(mock_api api, const json_t *body, mock_results *ret) {
        size_t n, last;
        (void) results_walk(api, body, NULL, &n, &last);
        mock_results r = {0};
        if (n > 0) {
                if (!(r.all.v = calloc(n, sizeof(char *))))
                        return -ENOMEM;
                if (results_walk(api, body, r.all.v, &r.all.n, &last) < 0) {
                        r.all.n = n; /* calloc'd: the rest are NULL */
                        mock_results_done(&r);
                        return -ENOMEM;
                }
                r.last = last == SIZE_MAX ? NULL : r.all.v[last];
        }
        *ret = r;
        return 0;
}

void mock_results_done(mock_results *r) {
        for (size_t i = 0; i < r->all.n; i++)
                free(r->all.v[i]);
        free(r->all.v);
        *r = (mock_results){0};
}

/* ---- placeholders ---- */

/* A whole number from 1 to MOCK_TEMPLATE_NUMBER_MAX at *p (at most end), *p moved past it. */
static bool number(const char **p, const char *end, size_t *ret) {
        size_t v = 0;
        const char *s = *p;
        while (s < end && *s >= '0' && *s <= '9') {
                v = v * 10 + (size_t) (*s - '0');
                if (v > MOCK_TEMPLATE_NUMBER_MAX)
                        return false;
                s++;
        }
        if (s == *p || v == 0)
                return false;
        *p = s;
        *ret = v;
        return true;
}

static bool word(const char **p, const char *end, const char *w) {
        size_t n = strlen(w);
        if ((size_t) (end - *p) < n || memcmp(*p, w, n) != 0)
                return false;
        *p += n;
        return true;
}

static bool blank(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The K-th line (from 1) of [*s, *s + *n), its "\r" off; none: "". */
static void line_of(const char **s, size_t *n, size_t k) {
        const char *p = *s, *end = *s + *n;
        for (size_t i = 1; i < k; i++) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                if (!nl) {
                        *n = 0;
                        return;
                }
                p = nl + 1;
        }
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        const char *e = nl ? nl : end;
        if (e > p && e[-1] == '\r')
                e--;
        *s = p;
        *n = (size_t) (e - p);
}

/* The placeholder whose inside is [in, end): 1 with its value's slice in *ret_s, *ret_n (from
 * res; NULL: ""), 0 when it names no tool result (left as written), -EINVAL when malformed. */
static int placeholder(const char *in, const char *end, const mock_results *res, const char **ret_s, size_t *ret_n) {
        const char *p = in, *s = "";
        size_t n = 0, idx = 0;
        if (word(&p, end, "last_tool_result")) {
                if (res && res->last)
                        s = res->last;
        } else if (word(&p, end, "tool_result")) {
                if (!word(&p, end, ":") || !number(&p, end, &idx))
                        return -EINVAL;
                if (res && idx <= res->all.n)
                        s = res->all.v[idx - 1];
        } else
                return 0;
        n = strlen(s);
        while (p < end) {
                size_t k;
                if (!word(&p, end, "|"))
                        return -EINVAL;
                if (word(&p, end, "trim")) {
                        while (n > 0 && blank(*s))
                                s++, n--;
                        while (n > 0 && blank(s[n - 1]))
                                n--;
                } else if (word(&p, end, "line:") && number(&p, end, &k))
                        line_of(&s, &n, k);
                else
                        return -EINVAL;
        }
        *ret_s = s;
        *ret_n = n;
        return 1;
}

/* Walk s's placeholders: into b (when not NULL) s with them replaced. Returns how many there
 * are, -EINVAL (with *e, when not NULL) for a malformed one, -E2BIG or -ENOMEM. */
static int walk(const char *s, const mock_results *res, bool json, dynbuf *b, hull_error *e) {
        int count = 0;
        const char *p = s;
        for (;;) {
                const char *open = strstr(p, "{{");
                if (!open)
                        break;
                const char *in = open + 2, *close = strstr(in, "}}");
                const char *end = close ? close : in + strlen(in);
                const char *v = NULL;
                size_t n = 0;
                int r = placeholder(in, end, res, &v, &n);
                if (r < 0 || (r > 0 && !close)) {
                        if (e)
                                hull_fail(e, -EINVAL,
                                          "\"{{%.*s%s\" is not a placeholder: write {{last_tool_result}} or "
                                          "{{tool_result:N}} (N from 1), optionally followed by |line:K (K from 1) "
                                          "or |trim, e.g. {{tool_result:2|line:1|trim}}",
                                          (int) MIN((size_t) (end - in), (size_t) 60), in, close ? "}}" : "");
                        return -EINVAL;
                }
                if (r == 0) { /* not ours: "{" as written, and look again from the next byte */
                        if (b && dynbuf_add(b, p, (size_t) (open - p) + 1) < 0)
                                return -E2BIG;
                        p = open + 1;
                        continue;
                }
                count++;
                if (b) {
                        int q = dynbuf_add(b, p, (size_t) (open - p));
                        if (q == 0 && json && n > 0) {
                                _cleanup_(json_decrefp) json_t *str = json_stringn(v, n);
                                _cleanup_free_ char *quoted = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
                                q = quoted ? dynbuf_add(b, quoted + 1, strlen(quoted) - 2) : -ENOMEM;
                        } else if (q == 0)
                                q = dynbuf_add(b, v, n);
                        if (q < 0)
                                return q;
                }
                p = close + 2;
        }
        if (b && dynbuf_add_str(b, p) < 0)
                return -E2BIG;
        return count;
}

int mock_template_check(const char *s, hull_error *e) {
        return walk(s, NULL, false, NULL, e);
}

int mock_template_expand(const char *s, const mock_results *res, bool json, char **ret) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, MOCK_TEMPLATE_BYTES_MAX);
        int r = walk(s, res, json, &b, NULL);
        if (r == -EINVAL) /* not checked (an input given with its arguments): as written */
                dynbuf_reset(&b);
        else if (r < 0)
                return r;
        char *t = r == -EINVAL ? strdup(s) : dynbuf_take(&b, NULL);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

/* ---- a step's answer ---- */

/* n more bytes of a step's expansion, out of *left. */
static int spend(size_t *left, size_t n) {
        if (n > *left)
                return -E2BIG;
        *left -= n;
        return 0;
}

/* v with every string (keys too) expanded, their bytes spent out of *left; NULL: out of memory
 * or too big (*err says). */
static json_t *expand_json(const json_t *v, const mock_results *res, size_t *left, int *err) {
        if (json_is_string(v)) {
                _cleanup_free_ char *t = NULL;
                if ((*err = mock_template_expand(json_string_value(v), res, false, &t)) < 0 ||
                    (*err = spend(left, strlen(t))) < 0)
                        return NULL;
                json_t *s = json_string(t);
                if (!s)
                        *err = -ENOMEM;
                return s;
        }
        json_t *copy = json_is_object(v) ? json_object() : json_is_array(v) ? json_array() : json_deep_copy(v);
        if (!copy) {
                *err = -ENOMEM;
                return NULL;
        }
        const char *key;
        json_t *x;
        size_t i;
        if (json_is_object(v))
                json_object_foreach((json_t *) v, key, x) {
                        _cleanup_free_ char *k = NULL;
                        json_t *c = NULL;
                        if ((*err = mock_template_expand(key, res, false, &k)) < 0 ||
                            (*err = spend(left, strlen(k))) < 0 || !(c = expand_json(x, res, left, err)) ||
                            json_object_set_new(copy, k, c) < 0) {
                                *err = *err < 0 ? *err : -ENOMEM;
                                json_decref(copy);
                                return NULL;
                        }
                }
        else if (json_is_array(v))
                json_array_foreach(v, i, x) {
                        json_t *c = expand_json(x, res, left, err);
                        if (!c || json_array_append_new(copy, c) < 0) {
                                *err = *err < 0 ? *err : -ENOMEM;
                                json_decref(copy);
                                return NULL;
                        }
                }
        return copy;
}

/* Each of in's strings expanded into *out, and their concatenation into *ret_whole (when not
 * NULL). */
static int expand_strs(const mock_strs *in, const mock_results *res, bool json, mock_strs *out, char **ret_whole) {
        if (in->n == 0)
                return 0;
        out->v = calloc(in->n, sizeof(char *));
        if (!out->v)
                return -ENOMEM;
        _cleanup_dynbuf_ dynbuf whole;
        dynbuf_init(&whole, MOCK_TEMPLATE_BYTES_MAX);
        for (size_t i = 0; i < in->n; i++) {
                int r = mock_template_expand(in->v[i], res, json, &out->v[i]);
                if (r < 0)
                        return r;
                out->n++;
                if (dynbuf_add_str(&whole, out->v[i]) < 0)
                        return -E2BIG;
        }
        if (ret_whole) {
                char *w = dynbuf_take(&whole, NULL);
                if (!w && !(w = strdup("")))
                        return -ENOMEM;
                free(*ret_whole);
                *ret_whole = w;
        }
        return 0;
}

int mock_step_expand(const mock_step *st, const mock_results *res, mock_step *ret) {
        mock_step x = *st;
        x.text = NULL;
        x.pieces = (mock_strs){0};
        x.calls = NULL;
        x.n_calls = 0;
        size_t left = MOCK_TEMPLATE_BYTES_MAX; /* for the whole step */
        int r = mock_template_expand(st->text, res, false, &x.text);
        if (r == 0)
                r = expand_strs(&st->pieces, res, false, &x.pieces, &x.text);
        if (r == 0)
                r = spend(&left, strlen(x.text));
        if (r == 0 && st->n_calls > 0 && !(x.calls = calloc(st->n_calls, sizeof(mock_call))))
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < st->n_calls; i++) {
                mock_call *c = &x.calls[i];
                *c = st->calls[i];
                c->arguments = NULL;
                c->pieces = (mock_strs){0};
                c->input = NULL;
                x.n_calls++;
                r = mock_template_expand(st->calls[i].arguments, res, true, &c->arguments);
                if (r == 0)
                        r = expand_strs(&st->calls[i].pieces, res, true, &c->pieces, &c->arguments);
                if (r == 0)
                        r = spend(&left, strlen(c->arguments));
                if (r == 0)
                        c->input = expand_json(st->calls[i].input, res, &left, &r);
        }
        if (r < 0) {
                mock_step_expanded_done(&x);
                return r;
        }
        *ret = x;
        return 0;
}

static void strs_done(mock_strs *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        *s = (mock_strs){0};
}

void mock_step_expanded_done(mock_step *st) {
        free(st->text);
        strs_done(&st->pieces);
        for (size_t i = 0; i < st->n_calls; i++) {
                free(st->calls[i].arguments);
                strs_done(&st->calls[i].pieces);
                json_decref(st->calls[i].input);
        }
        free(st->calls);
        *st = (mock_step){0};
}
