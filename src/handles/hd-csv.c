/* hd-csv.c: see hd-csv.h. */
#include "hd-csv.h"

#include <inttypes.h>
#include <string.h>

#include "limits.h"

void hd_csv_init(hd_csv *c, const char *buf, size_t len, char delim) {
        *c = (hd_csv){.buf = buf, .len = len, .delim = delim, .line = 1};
        if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
                c->pos = 3;
}

int hd_csv_next(hd_csv *c, hd_csv_field *fields, size_t max, uint64_t *ret_line, hull_error *e) {
        const char *b = c->buf, *end = c->buf + c->len;
        const char *p = b + c->pos;
        uint64_t line = c->line;
        size_t n = 0;

        if (p >= end)
                return 0;
        for (;;) {
                if (n >= max)
                        return hull_err(e, -E2BIG, "line %" PRIu64 " has more than %zu fields", line, max);
                hd_csv_field *f = &fields[n++];
                *f = (hd_csv_field){0};
                if (p < end && *p == '"') {
                        const char *q = ++p;
                        bool escaped = false;
                        for (;;) {
                                const char *quote = memchr(q, '"', (size_t) (end - q));
                                if (!quote)
                                        return hull_err(e, -EBADMSG, "line %" PRIu64 ": a quoted field is not closed",
                                                        line);
                                for (const char *l = q; (l = memchr(l, '\n', (size_t) (quote - l))); l++)
                                        c->line++;
                                if (quote + 1 < end && quote[1] == '"') {
                                        escaped = true;
                                        q = quote + 2;
                                        continue;
                                }
                                f->p = p, f->n = (size_t) (quote - p), f->quoted = true, f->escaped = escaped;
                                p = quote + 1;
                                break;
                        }
                        if (p < end && *p != c->delim && *p != '\n' && !(*p == '\r' && p + 1 < end && p[1] == '\n') &&
                            !(*p == '\r' && p + 1 == end))
                                return hull_err(e, -EBADMSG, "line %" PRIu64 ": text after a closing quote", line);
                } else {
                        const char *q = p;
                        while (q < end && *q != c->delim && *q != '\n')
                                q++;
                        f->p = p;
                        f->n = (size_t) (q - p);
                        if (q < end && *q == '\n' && f->n > 0 && q[-1] == '\r')
                                f->n--;
                        else if (q == end && f->n > 0 && q[-1] == '\r')
                                f->n--;
                        p = q;
                }
                if (f->n > HD_FIELD_MAX)
                        return hull_err(e, -EFBIG, "line %" PRIu64 ": a field is longer than %llu bytes", line,
                                        (unsigned long long) HD_FIELD_MAX);
                if (p < end && *p == c->delim) {
                        p++;
                        continue;
                }
                if (p < end && *p == '\r')
                        p++;
                if (p < end && *p == '\n')
                        p++;
                break;
        }
        c->line++;
        c->pos = (size_t) (p - b);
        *ret_line = line;
        return (int) n;
}

size_t hd_csv_unescape(const hd_csv_field *f, char *out) {
        size_t o = 0;
        for (size_t i = 0; i < f->n; i++) {
                out[o++] = f->p[i];
                if (f->p[i] == '"' && i + 1 < f->n && f->p[i + 1] == '"')
                        i++;
        }
        return o;
}

static inline bool digit(char c) {
        return c >= '0' && c <= '9';
}

static bool digits(const char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!digit(p[i]))
                        return false;
        return true;
}

static bool is_date(const char *p, size_t n) {
        if (n != 10 || p[4] != '-' || p[7] != '-' || !digits(p, 4) || !digits(p + 5, 2) || !digits(p + 8, 2))
                return false;
        int m = (p[5] - '0') * 10 + (p[6] - '0'), d = (p[8] - '0') * 10 + (p[9] - '0');
        return m >= 1 && m <= 12 && d >= 1 && d <= 31;
}

static bool is_timestamp(const char *p, size_t n) {
        if (n < 16 || !is_date(p, 10) || (p[10] != 'T' && p[10] != ' '))
                return false;
        const char *q = p + 11, *end = p + n;
        if (!digits(q, 2) || q[2] != ':' || !digits(q + 3, 2))
                return false;
        if ((q[0] - '0') * 10 + (q[1] - '0') > 23 || (q[3] - '0') * 10 + (q[4] - '0') > 59)
                return false;
        q += 5;
        if (q < end && *q == ':') {
                if (end - q < 3 || !digits(q + 1, 2) || (q[1] - '0') * 10 + (q[2] - '0') > 60)
                        return false;
                q += 3;
                if (q < end && *q == '.') {
                        const char *f = ++q;
                        while (q < end && digit(*q) && q - f < 9)
                                q++;
                        if (q == f)
                                return false;
                }
        }
        if (q == end)
                return true;
        if (*q == 'Z')
                return q + 1 == end;
        if (*q != '+' && *q != '-')
                return false;
        q++;
        if (end - q == 5)
                return digits(q, 2) && q[2] == ':' && digits(q + 3, 2);
        if (end - q == 4 || end - q == 2)
                return digits(q, (size_t) (end - q));
        return false;
}

hd_type hd_classify(const char *p, size_t n) {
        if (n == 0)
                return HD_TYPE_NULL;
        char c = p[0];
        if (c == 't' || c == 'T' || c == 'f' || c == 'F') {
                if ((n == 4 && (memcmp(p, "true", 4) == 0 || memcmp(p, "True", 4) == 0 || memcmp(p, "TRUE", 4) == 0)) ||
                    (n == 5 &&
                     (memcmp(p, "false", 5) == 0 || memcmp(p, "False", 5) == 0 || memcmp(p, "FALSE", 5) == 0)))
                        return HD_TYPE_BOOLEAN;
                return HD_TYPE_TEXT;
        }
        if (!digit(c) && c != '-' && c != '+' && c != '.')
                return HD_TYPE_TEXT;
        if (n >= 10 && digit(c) && p[4] == '-') {
                if (is_date(p, n))
                        return HD_TYPE_DATE;
                return is_timestamp(p, n) ? HD_TYPE_TIMESTAMP : HD_TYPE_TEXT;
        }
        /* numbers: [+-]? int? (. frac)? ([eE][+-]?exp)? with at least one digit in int or frac */
        size_t i = 0;
        if (p[i] == '-' || p[i] == '+')
                i++;
        size_t int_start = i;
        while (i < n && digit(p[i]))
                i++;
        size_t int_len = i - int_start;
        if (int_len > 1 && p[int_start] == '0')
                return HD_TYPE_TEXT; /* leading zeros (zip codes, ids) stay text */
        if (i == n)
                return int_len >= 1 && int_len <= 18 ? HD_TYPE_INTEGER : HD_TYPE_TEXT;
        size_t frac_len = 0;
        if (p[i] == '.') {
                i++;
                size_t f = i;
                while (i < n && digit(p[i]))
                        i++;
                frac_len = i - f;
        }
        if (int_len + frac_len == 0)
                return HD_TYPE_TEXT;
        if (i < n && (p[i] == 'e' || p[i] == 'E')) {
                i++;
                if (i < n && (p[i] == '+' || p[i] == '-'))
                        i++;
                size_t x = i;
                while (i < n && digit(p[i]))
                        i++;
                if (i == x || i - x > 4)
                        return HD_TYPE_TEXT;
        }
        return i == n && n <= 64 ? HD_TYPE_REAL : HD_TYPE_TEXT;
}

hd_type hd_type_merge(hd_type a, hd_type b) {
        if (a == b || b == HD_TYPE_NULL)
                return a;
        if (a == HD_TYPE_NULL)
                return b;
        if ((a == HD_TYPE_INTEGER && b == HD_TYPE_REAL) || (a == HD_TYPE_REAL && b == HD_TYPE_INTEGER))
                return HD_TYPE_REAL;
        if ((a == HD_TYPE_DATE && b == HD_TYPE_TIMESTAMP) || (a == HD_TYPE_TIMESTAMP && b == HD_TYPE_DATE))
                return HD_TYPE_TIMESTAMP;
        return HD_TYPE_TEXT;
}

const char *hd_type_name(hd_type t) {
        static const char *const names[_HD_TYPE_MAX] = {
                [HD_TYPE_NULL] = "text",       [HD_TYPE_INTEGER] = "integer", [HD_TYPE_REAL] = "real",
                [HD_TYPE_BOOLEAN] = "boolean", [HD_TYPE_DATE] = "date",       [HD_TYPE_TIMESTAMP] = "timestamp",
                [HD_TYPE_TEXT] = "text",
        };
        return t < _HD_TYPE_MAX ? names[t] : "text";
}

const char *hd_type_sql(hd_type t) {
        static const char *const names[_HD_TYPE_MAX] = {
                [HD_TYPE_NULL] = "TEXT",       [HD_TYPE_INTEGER] = "INTEGER", [HD_TYPE_REAL] = "REAL",
                [HD_TYPE_BOOLEAN] = "BOOLEAN", [HD_TYPE_DATE] = "DATE",       [HD_TYPE_TIMESTAMP] = "TIMESTAMP",
                [HD_TYPE_TEXT] = "TEXT",
        };
        return t < _HD_TYPE_MAX ? names[t] : "TEXT";
}

int64_t hd_parse_integer(const char *p, size_t n) {
        size_t i = 0;
        bool neg = false;
        if (n > 0 && (p[0] == '-' || p[0] == '+'))
                neg = p[0] == '-', i = 1;
        int64_t v = 0;
        for (; i < n; i++)
                v = v * 10 + (p[i] - '0');
        return neg ? -v : v;
}

bool hd_parse_boolean(const char *p, size_t n) {
        return n == 4;
}
