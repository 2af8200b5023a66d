/* http-route.c: route tables: matching a path against a pattern (pure, fuzzed) and finding the
 * route of a request. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http-server-internal.h"
#include "macro.h"
#include "sock-util.h"
#include "time-util.h"

/* ---- routes ---- */

static bool segment_is_clean(const char *s, size_t n) {
        return n > 0 && !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* "{name}" (or "{name...}" when base) at p, ending at the segment's end; its name's bounds. */
static bool is_param(const char *p, size_t n, bool base, size_t *ret_name_len) {
        size_t extra = base ? 3 : 0;
        if (n < 3 + extra || p[0] != '{' || p[n - 1] != '}' || (base && memcmp(p + n - 4, "...", 3) != 0))
                return false;
        size_t name_len = n - 2 - extra;
        for (size_t i = 1; i <= name_len; i++) {
                char c = p[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
                        return false;
        }
        *ret_name_len = name_len;
        return true;
}

static int add_param(http_params *p, const char *name, size_t name_len, const char *value, size_t value_len) {
        if (p->n >= ELEMENTSOF(p->v))
                return -EINVAL;
        p->v[p->n].name = name;
        p->v[p->n].name_len = name_len;
        p->v[p->n].value = value;
        p->v[p->n].value_len = value_len;
        p->n++;
        return 0;
}

/* pattern and path both start with '/' (or are ""): segment by segment. */
static int match_segments(const char *pattern, const char *path, http_params *p) {
        while (*pattern) {
                if (*pattern != '/')
                        return -EINVAL;
                if (*path != '/')
                        return 0;
                pattern++;
                path++;
                size_t pn = strcspn(pattern, "/"), sn = strcspn(path, "/"), name_len;
                if (pattern[0] == '{') {
                        if (!is_param(pattern, pn, false, &name_len))
                                return -EINVAL;
                        if (sn == 0 || add_param(p, pattern + 1, name_len, path, sn) < 0)
                                return sn == 0 ? 0 : -EINVAL;
                } else if (pn != sn || memcmp(pattern, path, pn) != 0)
                        return 0;
                pattern += pn;
                path += sn;
        }
        return *path == '\0';
}

int http_route_match(const char *pattern, const char *path, http_params *ret) {
        http_params p = {0};
        int r;
        if (pattern[0] == '{') { /* a base: any number of clean segments first */
                size_t bn = strcspn(pattern, "/"), name_len;
                if (!is_param(pattern, bn, true, &name_len))
                        return -EINVAL;
                const char *rest = pattern + bn;
                size_t k = 0;
                for (const char *c = rest; *c; c++)
                        k += *c == '/';
                if (k == 0)
                        return -EINVAL;
                /* the last k segments of the path are the rest's */
                const char *start = path + strlen(path);
                for (size_t i = 0; i < k; i++) {
                        while (start > path && start[-1] != '/')
                                start--;
                        if (start == path)
                                return 0;
                        start--;
                }
                for (const char *s = path; s < start;) {
                        if (*s != '/')
                                return 0;
                        size_t n = strcspn(s + 1, "/");
                        if (s + 1 + n > start || !segment_is_clean(s + 1, n))
                                return 0;
                        s += 1 + n;
                }
                if (add_param(&p, pattern + 1, name_len, path, (size_t) (start - path)) < 0)
                        return -EINVAL;
                r = match_segments(rest, start, &p);
        } else if (pattern[0] != '/')
                return -EINVAL;
        else
                r = match_segments(pattern, path, &p);
        if (r > 0 && ret)
                *ret = p;
        return r;
}

/* The route for r's path and method (and its table); NULL with *ret_allowed the methods of the
 * routes that have the path (0: none; else *ret_table is the first one's table). */
const http_route *http_route_find(http_server *s, http_req *r, const http_table **ret_table, unsigned *ret_allowed) {
        unsigned bit = 0;
        static const struct {
                const char *name;
                unsigned bit;
        } methods[] = {{MHD_HTTP_METHOD_GET, HTTP_GET},
                       {MHD_HTTP_METHOD_HEAD, HTTP_HEAD},
                       {MHD_HTTP_METHOD_POST, HTTP_POST},
                       {MHD_HTTP_METHOD_PUT, HTTP_PUT},
                       {MHD_HTTP_METHOD_DELETE, HTTP_DELETE}};
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                if (strcmp(r->method, methods[i].name) == 0)
                        bit = methods[i].bit;
        *ret_allowed = 0;
        if (r->path_too_long)
                return NULL;
        for (size_t t = 0; t < s->n_tables; t++)
                for (size_t i = 0; i < s->tables[t].n; i++) {
                        const http_route *rt = &s->tables[t].routes[i];
                        http_params p;
                        if (http_route_match(rt->pattern, r->path, &p) != 1)
                                continue;
                        if (!(rt->methods & bit)) { /* its API words the 405 */
                                if (!*ret_allowed)
                                        *ret_table = &s->tables[t];
                                *ret_allowed |= rt->methods;
                                continue;
                        }
                        char *b = r->param_buf; /* the values fit: they are parts of the path */
                        for (size_t k = 0; k < p.n; k++) {
                                r->param_names[k].name = p.v[k].name;
                                r->param_names[k].len = p.v[k].name_len;
                                memcpy(b, p.v[k].value, p.v[k].value_len);
                                b[p.v[k].value_len] = '\0';
                                r->param_values[k] = b;
                                b += p.v[k].value_len + 1;
                        }
                        r->n_params = p.n;
                        *ret_table = &s->tables[t];
                        return rt;
                }
        return NULL;
}
