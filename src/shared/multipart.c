/* multipart.c: see multipart.h. The delimiter is CRLF "--" boundary; a boundary holds no CR
 * (RFC 2046's characters), so a failed partial match can only restart at the byte that failed,
 * and the bytes it held are the delimiter's own: they are handed on from the delimiter itself,
 * nothing is buffered but a part's headers. */
#include "multipart.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int fail(mp_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(mp_parser *p, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error, sizeof(p->error), fmt, ap);
        va_end(ap);
        p->state = MP_FAILED;
        return -EBADMSG;
}

static bool boundary_char(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               strchr("'()+_,-./:=? ", c) != NULL;
}

int mp_boundary(const char *ct, char ret[static MULTIPART_BOUNDARY_MAX]) {
        static const char type[] = "multipart/form-data";
        if (!ct || strncasecmp(ct, type, sizeof(type) - 1) != 0)
                return -EINVAL;
        const char *p = ct + sizeof(type) - 1;
        while (*p) {
                p += strspn(p, " \t");
                if (*p != ';')
                        return -EINVAL;
                p++;
                p += strspn(p, " \t");
                size_t k = strcspn(p, "=; \t");
                bool is_boundary = k == 8 && strncasecmp(p, "boundary", 8) == 0;
                p += k;
                if (*p != '=')
                        return -EINVAL;
                p++;
                char v[MULTIPART_BOUNDARY_MAX];
                size_t n = 0;
                if (*p == '"') {
                        for (p++; *p && *p != '"'; p++) {
                                if (*p == '\\' && p[1])
                                        p++;
                                if (n + 1 >= sizeof(v))
                                        return -EINVAL;
                                v[n++] = *p;
                        }
                        if (*p != '"')
                                return -EINVAL;
                        p++;
                } else {
                        for (; *p && *p != ';' && *p != ' ' && *p != '\t'; p++) {
                                if (n + 1 >= sizeof(v))
                                        return -EINVAL;
                                v[n++] = *p;
                        }
                }
                v[n] = '\0';
                if (!is_boundary)
                        continue;
                if (n == 0 || v[n - 1] == ' ')
                        return -EINVAL;
                for (size_t i = 0; i < n; i++)
                        if (!boundary_char(v[i]))
                                return -EINVAL;
                memcpy(ret, v, n + 1);
                return 0;
        }
        return -EINVAL;
}

void mp_init(mp_parser *p, const char *boundary, const mp_callbacks *cb, void *ud) {
        *p = (mp_parser){.state = MP_PREAMBLE, .max_parts = MULTIPART_PARTS_MAX, .cb = cb, .ud = ud};
        p->delim_len = (size_t) snprintf(p->delim, sizeof(p->delim), "\r\n--%s", boundary);
        p->matched = 2; /* the first delimiter may open the body without the CRLF before it */
}

/* A header parameter's value (quoted-string or token) at *pp into v (size bytes); -E2BIG when it
 * is longer, -EINVAL when malformed. */
static int param_value(const char **pp, char *v, size_t size) {
        const char *p = *pp;
        size_t n = 0;
        if (*p == '"') {
                for (p++; *p && *p != '"'; p++) {
                        if (*p == '\\' && p[1])
                                p++;
                        if (n + 1 >= size)
                                return -E2BIG;
                        v[n++] = *p;
                }
                if (*p != '"')
                        return -EINVAL;
                p++;
        } else
                for (; *p && *p != ';' && *p != ' ' && *p != '\t'; p++) {
                        if (n + 1 >= size)
                                return -E2BIG;
                        v[n++] = *p;
                }
        v[n] = '\0';
        *pp = p;
        return 0;
}

static int parse_disposition(mp_parser *p, const char *v) {
        static const char fd[] = "form-data";
        if (strncasecmp(v, fd, sizeof(fd) - 1) != 0)
                return fail(p, "a part's Content-Disposition is not form-data");
        bool named = false;
        for (v += sizeof(fd) - 1; *v;) {
                v += strspn(v, " \t");
                if (*v != ';')
                        return fail(p, "a part's Content-Disposition is malformed");
                v++;
                v += strspn(v, " \t");
                size_t k = strcspn(v, "=; \t");
                const char *key = v;
                v += k;
                if (*v != '=')
                        return fail(p, "a part's Content-Disposition has a parameter without a value");
                v++;
                char tmp[MULTIPART_FILENAME_MAX];
                int r;
                if (k == 4 && strncasecmp(key, "name", 4) == 0) {
                        r = param_value(&v, p->part.name, sizeof(p->part.name));
                        named = r >= 0;
                } else if (k == 8 && strncasecmp(key, "filename", 8) == 0) {
                        r = param_value(&v, p->part.filename, sizeof(p->part.filename));
                        p->part.has_filename = r >= 0;
                } else
                        r = param_value(&v, tmp, sizeof(tmp));
                if (r == -E2BIG)
                        return fail(p, "a part's %.*s is longer than %u bytes", (int) (k < 16 ? k : 16), key,
                                    (unsigned) (k == 4 ? MULTIPART_NAME_MAX - 1 : MULTIPART_FILENAME_MAX - 1));
                if (r < 0)
                        return fail(p, "a part's Content-Disposition has an unterminated quoted value");
        }
        if (!named)
                return fail(p, "a part's Content-Disposition has no name");
        return 0;
}

/* The header block in p->head (ending CRLF CRLF, or only CRLF) parsed into p->part. */
static int parse_headers(mp_parser *p) {
        p->part = (mp_part){0};
        bool disposition = false;
        p->head[p->head_len] = '\0';
        for (char *line = p->head; *line;) {
                char *end = strstr(line, "\r\n");
                if (!end)
                        break;
                *end = '\0';
                if (line != end) {
                        char *colon = strchr(line, ':');
                        if (!colon || colon == line)
                                return fail(p, "a part's header line has no name and colon");
                        *colon = '\0';
                        char *v = colon + 1;
                        v += strspn(v, " \t");
                        for (char *t = v + strlen(v); t > v && (t[-1] == ' ' || t[-1] == '\t');)
                                *--t = '\0';
                        if (strcasecmp(line, "content-disposition") == 0) {
                                if (disposition)
                                        return fail(p, "a part has two Content-Disposition headers");
                                disposition = true;
                                int r = parse_disposition(p, v);
                                if (r < 0)
                                        return r;
                        } else if (strcasecmp(line, "content-type") == 0) {
                                if (strlen(v) >= sizeof(p->part.content_type))
                                        return fail(p, "a part's Content-Type is longer than %u bytes",
                                                    V1_FILE_MIME_MAX - 1);
                                for (const char *c = v; *c; c++)
                                        if ((unsigned char) *c < 0x20 || (unsigned char) *c >= 0x7f)
                                                return fail(p, "a part's Content-Type is not printable ASCII");
                                snprintf(p->part.content_type, sizeof(p->part.content_type), "%s", v);
                        }
                }
                line = end + 2;
        }
        if (!disposition)
                return fail(p, "a part has no Content-Disposition header");
        return 0;
}

/* n bytes of a part's body handed on (none outside a part). */
static int emit(mp_parser *p, const char *d, size_t n) {
        if (n == 0 || p->state != MP_BODY)
                return 0;
        return p->cb->part_data ? p->cb->part_data(p->ud, d, n) : 0;
}

/* One byte c against the delimiter at a place where it may begin: 1 when it completed it. */
static int delim_step(mp_parser *p, char c, bool *ret_done) {
        *ret_done = false;
        if (c == p->delim[p->matched]) {
                if (++p->matched == p->delim_len) {
                        p->matched = 0;
                        *ret_done = true;
                }
                return 0;
        }
        int r = emit(p, p->delim, p->matched); /* what was held was the delimiter's own bytes */
        p->matched = c == p->delim[0] ? 1 : 0;
        if (r == 0 && p->matched == 0)
                r = emit(p, &c, 1);
        return r;
}

static int on_delimiter(mp_parser *p) {
        int r = 0;
        if (p->state == MP_BODY && p->cb->part_end)
                r = p->cb->part_end(p->ud);
        p->state = MP_AFTER_DELIM;
        return r;
}

/* Bytes of a body or the preamble, until the delimiter; returns bytes used. */
static ssize_t scan_body(mp_parser *p, const char *d, size_t n) {
        size_t i = 0;
        while (i < n) {
                if (p->matched == 0) { /* the bulk: up to the next CR at once */
                        const char *cr = memchr(d + i, '\r', n - i);
                        size_t run = cr ? (size_t) (cr - (d + i)) : n - i;
                        int r = emit(p, d + i, run);
                        if (r < 0)
                                return r;
                        i += run;
                        if (i == n)
                                break;
                }
                bool done;
                int r = delim_step(p, d[i++], &done);
                if (r < 0)
                        return r;
                if (done) {
                        r = on_delimiter(p);
                        return r < 0 ? r : (ssize_t) i;
                }
        }
        return (ssize_t) i;
}

static int header_byte(mp_parser *p, char c) {
        if (p->head_len + 1 >= sizeof(p->head))
                return fail(p, "a part's headers are longer than %u bytes", MULTIPART_HEADER_MAX);
        if (c == '\0')
                return fail(p, "a part's headers hold a NUL byte");
        p->head[p->head_len++] = c;
        bool end = (p->head_len == 2 && memcmp(p->head, "\r\n", 2) == 0) ||
                   (p->head_len >= 4 && memcmp(p->head + p->head_len - 4, "\r\n\r\n", 4) == 0);
        if (!end)
                return 0;
        int r = parse_headers(p);
        if (r < 0)
                return r;
        p->state = MP_BODY;
        p->matched = 0;
        return p->cb->part_begin ? p->cb->part_begin(p->ud, &p->part) : 0;
}

int mp_feed(mp_parser *p, const void *data, size_t n) {
        const char *d = data;
        size_t i = 0;
        while (i < n) {
                char c = d[i];
                switch (p->state) {
                case MP_PREAMBLE:
                case MP_BODY: {
                        ssize_t used = scan_body(p, d + i, n - i);
                        if (used < 0)
                                return (int) used;
                        i += (size_t) used;
                        continue;
                }
                case MP_AFTER_DELIM:
                        if (c == '-')
                                p->state = MP_CLOSE_DASH;
                        else if (c == '\r')
                                p->state = MP_AFTER_CR;
                        else if (c != ' ' && c != '\t')
                                return fail(p, "a boundary line goes on after the boundary");
                        break;
                case MP_CLOSE_DASH:
                        if (c != '-')
                                return fail(p, "a boundary line goes on after the boundary");
                        p->state = MP_EPILOGUE;
                        break;
                case MP_AFTER_CR:
                        if (c != '\n')
                                return fail(p, "a boundary line does not end with CRLF");
                        if (p->parts++ >= p->max_parts)
                                return fail(p, "the form has more than %u parts", p->max_parts);
                        p->state = MP_HEADERS;
                        p->head_len = 0;
                        break;
                case MP_HEADERS: {
                        int r = header_byte(p, c);
                        if (r < 0)
                                return r;
                        break;
                }
                case MP_EPILOGUE:
                        return 0;
                case MP_FAILED:
                        return -EBADMSG;
                }
                i++;
        }
        return p->state == MP_FAILED ? -EBADMSG : 0;
}

int mp_finish(mp_parser *p) {
        if (p->state == MP_EPILOGUE)
                return 0;
        if (p->state == MP_FAILED)
                return -EBADMSG;
        if (p->state == MP_PREAMBLE)
                return fail(p, "the body holds no part: no boundary line was found");
        return fail(p, "the body ends before the closing boundary (--BOUNDARY--)");
}
