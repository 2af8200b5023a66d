/* cron.c: cron expressions parsed, TZif files read, and the next firing computed (cron.h). */
#include "cron.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* ---- the expression ---- */

typedef struct field_info {
        const char *name;
        unsigned lo, hi;
        const char *const *names; /* index + lo is the value; NULL: numbers only */
} field_info;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const field_info fields[5] = {
        {"minute", 0, 59, NULL},          {"hour", 0, 23, NULL},
        {"day of month", 1, 31, NULL},    {"month", 1, 12, month_names},
        {"day of week", 0, 7, day_names},
};

/* One value of field f at *p (a number or a name); advances *p. */
static int parse_value(const field_info *f, unsigned idx, const char **p, unsigned *ret, hull_error *e) {
        const char *s = *p;
        if (*s >= '0' && *s <= '9') {
                unsigned v = 0;
                size_t n = 0;
                while (s[n] >= '0' && s[n] <= '9') {
                        if (n >= 3)
                                return hull_fail(e, -EINVAL, "cron field %u (%s): the number %.8s... is too long",
                                                 idx + 1, f->name, s);
                        v = v * 10 + (unsigned) (s[n] - '0');
                        n++;
                }
                if (v < f->lo || v > f->hi)
                        return hull_fail(e, -EINVAL, "cron field %u (%s): %u is out of range %u-%u", idx + 1, f->name,
                                         v, f->lo, f->hi);
                *ret = v;
                *p = s + n;
                return 0;
        }
        if (f->names)
                for (size_t i = 0; f->names[i]; i++)
                        if (strncasecmp(s, f->names[i], 3) == 0 &&
                            !((s[3] >= 'a' && s[3] <= 'z') || (s[3] >= 'A' && s[3] <= 'Z'))) {
                                *ret = (unsigned) i + f->lo;
                                *p = s + 3;
                                return 0;
                        }
        return hull_fail(e, -EINVAL, "cron field %u (%s): '%.16s' is not a value (%u-%u%s)", idx + 1, f->name, s, f->lo,
                         f->hi, f->names ? (f->names == month_names ? " or jan-dec" : " or sun-sat") : "");
}

/* One field (a comma list) into the bits *ret. */
static int parse_field(const char *s, unsigned idx, uint64_t *ret, bool *ret_star, hull_error *e) {
        const field_info *f = &fields[idx];
        uint64_t bits = 0;
        *ret_star = s[0] == '*';
        for (const char *p = s;;) {
                unsigned a, b, step = 1;
                int r;
                bool star = *p == '*', single = false;
                if (star) {
                        a = f->lo;
                        b = f->hi;
                        p++;
                } else {
                        if ((r = parse_value(f, idx, &p, &a, e)) < 0)
                                return r;
                        b = a;
                        single = true;
                        if (*p == '-') {
                                p++;
                                if ((r = parse_value(f, idx, &p, &b, e)) < 0)
                                        return r;
                                single = false;
                                if (b < a)
                                        return hull_fail(e, -EINVAL,
                                                         "cron field %u (%s): the range %u-%u runs backwards", idx + 1,
                                                         f->name, a, b);
                        }
                }
                if (*p == '/') {
                        p++;
                        unsigned n = 0;
                        size_t k = 0;
                        while (p[k] >= '0' && p[k] <= '9' && k < 3)
                                n = n * 10 + (unsigned) (p[k++] - '0');
                        if (k == 0 || (p[k] >= '0' && p[k] <= '9') || n == 0 || n > f->hi - f->lo + 1)
                                return hull_fail(e, -EINVAL, "cron field %u (%s): a step must be 1-%u", idx + 1,
                                                 f->name, f->hi - f->lo + 1);
                        step = n;
                        p += k;
                        if (single) /* a/n: from a to the end */
                                b = f->hi;
                }
                for (unsigned v = a; v <= b; v += step)
                        bits |= UINT64_C(1) << v;
                if (*p == '\0')
                        break;
                if (*p != ',')
                        return hull_fail(e, -EINVAL, "cron field %u (%s): unexpected '%c' in '%.32s'", idx + 1, f->name,
                                         *p, s);
                p++;
        }
        *ret = bits;
        return 0;
}

int cron_parse(const char *s, cron_expr *ret, hull_error *e) {
        if (!s || !s[0])
                return hull_fail(e, -EINVAL, "the cron expression is empty: give 5 fields, such as \"0 9 * * 1-5\"");
        if (strnlen(s, CRON_EXPR_MAX) >= CRON_EXPR_MAX)
                return hull_fail(e, -EINVAL, "the cron expression is longer than %u bytes", CRON_EXPR_MAX - 1);
        if (s[0] == '@')
                return hull_fail(e, -EINVAL,
                                 "cron macros such as %.16s are not supported: give 5 fields (\"0 0 * * *\" is daily)",
                                 s);
        char buf[CRON_EXPR_MAX];
        const char *tok[6];
        size_t n = 0, len = 0;
        for (const char *p = s; *p;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                if (n == 5)
                        return hull_fail(e, -EINVAL,
                                         "the cron expression has more than 5 fields (minute hour day-of-month month "
                                         "day-of-week; seconds and years are not supported)");
                tok[n++] = buf + len;
                while (*p && *p != ' ' && *p != '\t') {
                        char c = *p++;
                        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*' ||
                              c == '-' || c == '/' || c == ','))
                                return hull_fail(e, -EINVAL,
                                                 "the cron expression has '%c' in field %zu: only digits, names, "
                                                 "'*', '-', '/' and ',' are supported (no L, W, # or ?)",
                                                 (c >= 0x20 && c < 0x7f) ? c : '?', n);
                        buf[len++] = c;
                }
                buf[len++] = '\0';
        }
        if (n != 5)
                return hull_fail(e, -EINVAL,
                                 "the cron expression has %zu field%s, not 5 (minute hour day-of-month month "
                                 "day-of-week)",
                                 n, n == 1 ? "" : "s");
        cron_expr c = {0};
        uint64_t bits[5];
        bool stars[5];
        for (unsigned i = 0; i < 5; i++) {
                int r = parse_field(tok[i], i, &bits[i], &stars[i], e);
                if (r < 0)
                        return r;
        }
        c.minutes = bits[0];
        c.hours = (uint32_t) bits[1];
        c.days = (uint32_t) bits[2];
        c.months = (uint16_t) bits[3];
        c.weekdays = (uint8_t) ((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday */
        c.days_star = stars[2];
        c.weekdays_star = stars[4];
        *ret = c;
        return 0;
}

/* ---- civil time (days since 1970-01-01, proleptic Gregorian) ---- */

static int64_t floor_div(int64_t a, int64_t b) {
        return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
        z += 719468;
        int64_t era = floor_div(z, 146097);
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        *d = (unsigned) (doy - (153 * mp + 2) / 5 + 1);
        *m = (unsigned) (mp < 10 ? mp + 3 : mp - 9);
        *y = yoe + era * 400 + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
        y -= m <= 2;
        int64_t era = floor_div(y, 400);
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

void cron_time_rfc3339(int64_t t, char *buf, size_t size) {
        int64_t days = floor_div(t, 86400), sod = t - days * 86400, y;
        unsigned m, d;
        civil_from_days(days, &y, &m, &d);
        snprintf(buf, size, "%04lld-%02u-%02uT%02u:%02u:%02uZ", (long long) y, m, d, (unsigned) (sod / 3600),
                 (unsigned) (sod % 3600 / 60), (unsigned) (sod % 60));
}

/* ---- the time zone ---- */

struct tz_zone {
        size_t n_trans, n_types;
        int64_t trans[TZ_TRANSITIONS_MAX];
        uint8_t idx[TZ_TRANSITIONS_MAX];
        int32_t offs[TZ_TYPES_MAX];
};

bool tz_name_valid(const char *name) {
        if (!name || !name[0] || strnlen(name, TZ_NAME_MAX) >= TZ_NAME_MAX)
                return false;
        bool start = true;
        for (const char *p = name; *p; p++) {
                char c = *p;
                if (c == '/') {
                        if (start)
                                return false; /* "//", a leading or trailing '/' */
                        start = true;
                        continue;
                }
                if (start && (c == '.' || c == '-'))
                        return false;
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                      c == '-' || c == '+'))
                        return false;
                start = false;
        }
        return !start;
}

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p) {
        return (int64_t) ((uint64_t) be32(p) << 32 | be32(p + 4));
}

int tz_parse(const void *buf, size_t len, tz_zone **ret, hull_error *e) {
        const uint8_t *p = buf;
        if (len < 44 || memcmp(p, "TZif", 4) != 0)
                return hull_fail(e, -EINVAL, "not a TZif time zone file");
        char version = (char) p[4];
        size_t c[6]; /* isutcnt isstdcnt leapcnt timecnt typecnt charcnt */
        for (int i = 0; i < 6; i++)
                c[i] = be32(p + 20 + 4 * i);
        int tsize = 4;
        size_t at = 44;
        if (version >= '2') { /* skip the 32-bit block, read the 64-bit one */
                if (c[3] > TZ_TRANSITIONS_MAX || c[4] > TZ_TYPES_MAX || c[2] > TZ_TRANSITIONS_MAX ||
                    c[0] > TZ_TYPES_MAX || c[1] > TZ_TYPES_MAX || c[5] > TZ_FILE_BYTES_MAX)
                        return hull_fail(e, -EINVAL, "TZif: counts out of range");
                at += c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
                if (at + 44 > len || memcmp(p + at, "TZif", 4) != 0)
                        return hull_fail(e, -EINVAL, "TZif: no second header");
                for (int i = 0; i < 6; i++)
                        c[i] = be32(p + at + 20 + 4 * i);
                at += 44;
                tsize = 8;
        }
        if (c[3] > TZ_TRANSITIONS_MAX || c[4] == 0 || c[4] > TZ_TYPES_MAX || c[5] > TZ_FILE_BYTES_MAX)
                return hull_fail(e, -EINVAL, "TZif: %zu transitions and %zu types are out of range", c[3], c[4]);
        if (c[2] != 0)
                return hull_fail(e, -EINVAL, "TZif: zones that count leap seconds (right/...) are not supported");
        size_t need = c[3] * (size_t) tsize + c[3] + c[4] * 6 + c[5] + c[1] + c[0];
        if (need > len - at)
                return hull_fail(e, -EINVAL, "TZif: the file is truncated");
        tz_zone *z = calloc(1, sizeof(*z));
        if (!z)
                return hull_err(e, -ENOMEM, "cannot read a time zone");
        z->n_trans = c[3];
        z->n_types = c[4];
        const uint8_t *q = p + at;
        for (size_t i = 0; i < c[3]; i++, q += tsize) {
                z->trans[i] = tsize == 8 ? be64(q) : (int64_t) (int32_t) be32(q);
                if (i > 0 && z->trans[i] <= z->trans[i - 1]) {
                        free(z);
                        return hull_fail(e, -EINVAL, "TZif: transitions out of order");
                }
        }
        for (size_t i = 0; i < c[3]; i++, q++) {
                if (*q >= c[4]) {
                        free(z);
                        return hull_fail(e, -EINVAL, "TZif: a transition names no type");
                }
                z->idx[i] = *q;
        }
        for (size_t i = 0; i < c[4]; i++, q += 6) {
                int32_t off = (int32_t) be32(q);
                if (off < -25 * 3600 || off > 26 * 3600) {
                        free(z);
                        return hull_fail(e, -EINVAL, "TZif: an offset of %d seconds is out of range", off);
                }
                z->offs[i] = off;
        }
        *ret = z;
        return 0;
}

int tz_load(const char *dir, const char *name, tz_zone **ret, hull_error *e) {
        if (!tz_name_valid(name))
                return hull_fail(e, -EINVAL,
                                 "'%.64s' is not an IANA time zone name (such as \"UTC\" or \"Europe/Paris\")",
                                 name ? name : "");
        char path[SBX_PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir ? dir : "/usr/share/zoneinfo", name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_fail(e, -ENOENT, "unknown time zone '%.64s': the tz database has no such zone", name);
        if (st.st_size > (off_t) TZ_FILE_BYTES_MAX)
                return hull_fail(e, -EINVAL, "time zone %.64s: its file is too large", name);
        _cleanup_free_ uint8_t *buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "cannot read time zone %.64s", name);
        size_t got = 0;
        while (got < (size_t) st.st_size) {
                ssize_t k = pread(fd, buf + got, (size_t) st.st_size - got, (off_t) got);
                if (k <= 0)
                        return hull_err(e, k < 0 ? -errno : -EIO, "cannot read time zone %.64s", name);
                got += (size_t) k;
        }
        int r = tz_parse(buf, got, ret, e);
        if (r < 0)
                return hull_fail(e, -ENOENT, "unknown time zone '%.64s': the tz database has no such zone", name);
        return 0;
}

void tz_free(tz_zone *z) {
        free(z);
}

int32_t tz_offset(const tz_zone *z, int64_t t) {
        if (!z)
                return 0;
        if (z->n_trans == 0 || t < z->trans[0])
                return z->offs[0];
        size_t lo = 0, hi = z->n_trans; /* the last transition <= t */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (z->trans[mid] <= t)
                        lo = mid;
                else
                        hi = mid;
        }
        return z->offs[z->idx[lo]];
}

/* ---- the next firing ---- */

static bool day_ok(const cron_expr *c, unsigned d, unsigned wd) {
        bool dm = c->days >> d & 1, wm = c->weekdays >> wd & 1;
        if (c->days_star || c->weekdays_star)
                return dm && wm;
        return dm || wm;
}

int cron_next(const cron_expr *c, const tz_zone *z, int64_t after, int64_t *ret) {
        int64_t u = floor_div(after, 60) * 60 + 60;
        const int64_t end = u + (int64_t) CRON_SEARCH_DAYS * 86400;
        while (u <= end) {
                int32_t off = tz_offset(z, u);
                int64_t w = u + off, days = floor_div(w, 86400), sod = w - days * 86400, y;
                unsigned m, d, h = (unsigned) (sod / 3600), mi = (unsigned) (sod % 3600 / 60);
                unsigned wd = (unsigned) (((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
                civil_from_days(days, &y, &m, &d);
                int64_t target; /* the wall time to move to */
                if (!(c->months >> m & 1))
                        target = days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * 86400;
                else if (!day_ok(c, d, wd))
                        target = (days + 1) * 86400;
                else if (!(c->hours >> h & 1))
                        target = days * 86400 + (int64_t) (h + 1) * 3600;
                else if (!(c->minutes >> mi & 1)) {
                        uint64_t later = c->minutes >> (mi + 1);
                        target = later ? w - (w % 60) + 60 * (1 + __builtin_ctzll(later))
                                       : days * 86400 + (int64_t) (h + 1) * 3600;
                } else {
                        /* a wall time repeated by a DST change fires at its first occurrence only */
                        int32_t before = tz_offset(z, u - 7200);
                        if (before > off && tz_offset(z, u - (before - off)) == before) {
                                u += 60;
                                continue;
                        }
                        *ret = u;
                        return 0;
                }
                int64_t next = u + (target - w);
                int32_t off2 = tz_offset(z, next);
                if (off2 > off) /* the clock jumped forward in between: do not overshoot */
                        next -= off2 - off;
                u = next > u ? next : u + 60;
        }
        return -ENOENT;
}
