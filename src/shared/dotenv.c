/* dotenv.c: see dotenv.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotenv.h"
#include "dynbuf.h"
#include <stdio.h>
#include "macro.h"

typedef struct dotenv_entry {
        char *key, *value;
} dotenv_entry;

struct dotenv {
        dotenv_entry *entries;
        size_t n;
};

void dotenv_free(dotenv *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n; i++) {
                free(d->entries[i].key);
                free(d->entries[i].value);
        }
        free(d->entries);
        free(d);
}

static bool is_key_start(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_key_char(char c) {
        return is_key_start(c) || (c >= '0' && c <= '9');
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

static int put(dotenv *d, char *key, char *value) {
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->entries[i].key, key) == 0) {
                        free(d->entries[i].value);
                        d->entries[i].value = value;
                        free(key);
                        return 0;
                }
        if (d->n >= DOTENV_ENTRIES_MAX) {
                free(key);
                free(value);
                return -E2BIG;
        }
        dotenv_entry *n = reallocarray(d->entries, d->n + 1, sizeof(*n));
        if (!n) {
                free(key);
                free(value);
                return -ENOMEM;
        }
        d->entries = n;
        d->entries[d->n++] = (dotenv_entry){key, value};
        return 0;
}

/* Parse the value starting at *pp (after '=' and blanks), up to end; leaves *pp after the line
 * that ends it and *line counting the lines it spanned. */
static int parse_value(const char **pp, const char *end, unsigned *line, char **ret, hull_error *e) {
        const char *p = *pp;
        _cleanup_dynbuf_ dynbuf b;
        unsigned start_line = *line;

        dynbuf_init(&b, DOTENV_BYTES_MAX);
        if (p < end && (*p == '\'' || *p == '"')) {
                char q = *p++;
                for (;;) {
                        if (p >= end)
                                return hull_fail(e, -EINVAL, ".env: line %u: the value's %s quote is never closed",
                                                 start_line, q == '"' ? "double" : "single");
                        char c = *p++;
                        if (c == q)
                                break;
                        if (c == '\n')
                                (*line)++;
                        if (q == '"' && c == '\\' && p < end) {
                                char x = *p++;
                                c = x == 'n' ? '\n' : x == 'r' ? '\r' : x == 't' ? '\t' : x;
                                if (x != 'n' && x != 'r' && x != 't' && x != '"' && x != '\\' && x != '$') {
                                        if (dynbuf_add(&b, "\\", 1) < 0)
                                                return -ENOMEM;
                                }
                        }
                        if (dynbuf_add(&b, &c, 1) < 0)
                                return -ENOMEM;
                }
                /* only blanks and a comment may follow on the line */
                while (p < end && is_blank(*p))
                        p++;
                if (p < end && *p != '\n' && *p != '#' && *p != '\r')
                        return hull_fail(e, -EINVAL, ".env: line %u: unexpected text after the quoted value", *line);
                while (p < end && *p != '\n')
                        p++;
        } else {
                const char *v = p, *ve;
                while (p < end && *p != '\n') {
                        if (*p == '#' && p > v && is_blank(p[-1]))
                                break;
                        p++;
                }
                ve = p;
                while (p < end && *p != '\n')
                        p++;
                while (ve > v && (is_blank(ve[-1]) || ve[-1] == '\r'))
                        ve--;
                if (dynbuf_add(&b, v, (size_t) (ve - v)) < 0)
                        return -ENOMEM;
        }
        if (p < end) /* the '\n' */
                p++;
        (*line)++;
        *pp = p;
        char *s = dynbuf_take(&b, NULL);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int dotenv_parse(const char *buf, size_t len, dotenv **ret, hull_error *e) {
        _cleanup_(dotenv_freep) dotenv *d = NULL;
        const char *p = buf, *end = buf + len;
        unsigned line = 1;
        int r;

        if (len > DOTENV_BYTES_MAX)
                return hull_fail(e, -E2BIG, ".env: the file is over %u bytes", DOTENV_BYTES_MAX);
        if (len && memchr(buf, '\0', len))
                return hull_fail(e, -EINVAL, ".env: the file holds a NUL byte (is it a text file?)");
        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        while (p < end) {
                while (p < end && (is_blank(*p) || *p == '\r'))
                        p++;
                if (p >= end)
                        break;
                if (*p == '\n' || *p == '#') {
                        while (p < end && *p != '\n')
                                p++;
                        if (p < end)
                                p++;
                        line++;
                        continue;
                }
                if ((size_t) (end - p) > 7 && memcmp(p, "export", 6) == 0 && is_blank(p[6])) {
                        p += 7;
                        while (p < end && is_blank(*p))
                                p++;
                }
                const char *k = p;
                if (p >= end || !is_key_start(*p))
                        return hull_fail(e, -EINVAL,
                                         ".env: line %u: expected KEY=VALUE with a name of letters, digits and _",
                                         line);
                while (p < end && is_key_char(*p))
                        p++;
                size_t klen = (size_t) (p - k);
                while (p < end && is_blank(*p))
                        p++;
                if (p >= end || *p != '=')
                        return hull_fail(e, -EINVAL, ".env: line %u: expected '=' after %.*s", line,
                                         (int) (klen > 64 ? 64 : klen), k);
                p++;
                while (p < end && is_blank(*p))
                        p++;
                char *key = strndup(k, klen), *value = NULL;
                if (!key)
                        return -ENOMEM;
                r = parse_value(&p, end, &line, &value, e);
                if (r < 0) {
                        free(key);
                        return r;
                }
                r = put(d, key, value);
                if (r == -E2BIG)
                        return hull_fail(e, r, ".env: more than %u assignments", DOTENV_ENTRIES_MAX);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(d);
        return 0;
}

int dotenv_load(const char *path, dotenv **ret, hull_error *e) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_dynbuf_ dynbuf b;
        struct stat st;
        int r;

        dynbuf_init(&b, DOTENV_BYTES_MAX);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT)
                        return dotenv_parse("", 0, ret, e);
                return hull_err(e, -errno, "%s: cannot open it", path);
        }
        if (fstat(fd, &st) < 0)
                return hull_err(e, -errno, "%s: cannot stat it", path);
        if (!S_ISREG(st.st_mode))
                return hull_fail(e, -EINVAL, "%s: not a regular file", path);
        for (;;) {
                size_t chunk = DOTENV_BYTES_MAX - b.len < 4096 ? DOTENV_BYTES_MAX - b.len : 4096;
                char probe;
                if (chunk == 0) { /* full: one more byte means too large */
                        ssize_t m = read(fd, &probe, 1);
                        if (m > 0)
                                return hull_fail(e, -E2BIG, "%s: the file is over %u bytes", path, DOTENV_BYTES_MAX);
                        if (m < 0 && errno == EINTR)
                                continue;
                        if (m < 0)
                                return hull_err(e, -errno, "%s: cannot read it", path);
                        break;
                }
                r = dynbuf_reserve(&b, chunk);
                if (r < 0)
                        return r;
                ssize_t n = read(fd, b.buf + b.len, chunk);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, -errno, "%s: cannot read it", path);
                if (n == 0)
                        break;
                dynbuf_advance(&b, (size_t) n);
        }
        r = dotenv_parse(b.buf ? b.buf : "", b.len, ret, e);
        if (r < 0 && e) {
                /* name the file: ".env: line 3: ..." -> "PATH: line 3: ..." */
                char rest[HULL_ERROR_MSG_MAX];
                memcpy(rest, strncmp(e->msg, ".env: ", 6) == 0 ? e->msg + 6 : e->msg, sizeof(rest) - 6);
                rest[sizeof(rest) - 7] = '\0';
                hull_fail(e, r, "%.200s: %s", path, rest);
        }
        return r;
}

const char *dotenv_get(const dotenv *d, const char *key) {
        if (!d || !key)
                return NULL;
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->entries[i].key, key) == 0)
                        return d->entries[i].value;
        return NULL;
}

size_t dotenv_count(const dotenv *d) {
        return d ? d->n : 0;
}
