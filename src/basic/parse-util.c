/* parse-util.c: pure parsers for sizes, durations, counts and environment assignments. */
#include "parse-util.h"

#include <errno.h>
#include <string.h>

#include "macro.h"

/* Digits then an optional fraction of up to 3 decimals; returns the value times 1000. */
static int parse_fixed3(const char *s, const char **ret_end, uint64_t *ret_milli) {
        uint64_t whole = 0, frac = 0;
        const char *p = s;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (whole > (UINT64_MAX / 1000 - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                unsigned digits = 0;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (digits < 3) {
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                digits++;
                        }
                }
                for (; digits < 3; digits++)
                        frac *= 10;
        }
        *ret_end = p;
        *ret_milli = whole * 1000 + frac;
        return 0;
}

int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;
        if (!s || *s == '\0')
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                unsigned d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        static const struct {
                const char *suffix;
                unsigned shift;
        } table[] = {
                {"", 0},     {"B", 0},  {"K", 10},   {"KiB", 10}, {"k", 10},   {"M", 20},
                {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40},
        };
        uint64_t v = 0;
        const char *p;
        if (!s)
                return -EINVAL;
        for (p = s; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (p == s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                if (strcmp(p, table[i].suffix) != 0)
                        continue;
                if (table[i].shift && v > (UINT64_MAX >> table[i].shift))
                        return -ERANGE;
                v <<= table[i].shift;
                if (v < min || v > max)
                        return -ERANGE;
                *ret = v;
                return 0;
        }
        return -EINVAL;
}

int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret_ms) {
        const char *end;
        uint64_t milli;
        if (!s)
                return -EINVAL;
        int r = parse_fixed3(s, &end, &milli);
        if (r < 0)
                return r;
        uint64_t ms;
        if (*end == '\0' || strcmp(end, "s") == 0)
                ms = milli;
        else if (strcmp(end, "ms") == 0)
                ms = milli / 1000;
        else if (strcmp(end, "m") == 0 && milli <= UINT64_MAX / 60)
                ms = milli * 60;
        else if (strcmp(end, "h") == 0 && milli <= UINT64_MAX / 3600)
                ms = milli * 3600;
        else
                return -EINVAL;
        if (ms < min_ms || ms > max_ms)
                return -ERANGE;
        *ret_ms = ms;
        return 0;
}

int parse_cpus(const char *s, double max, uint64_t *ret_millicpus) {
        const char *end;
        uint64_t milli;
        if (!s)
                return -EINVAL;
        int r = parse_fixed3(s, &end, &milli);
        if (r < 0)
                return r;
        if (*end != '\0')
                return -EINVAL;
        if (milli == 0 || (double) milli > max * 1000.0)
                return -ERANGE;
        *ret_millicpus = milli;
        return 0;
}

int parse_env_assignment(const char *s, size_t max_len) {
        if (!s)
                return -EINVAL;
        size_t len = strnlen(s, max_len + 1);
        if (len > max_len)
                return -EINVAL;
        const char *eq = memchr(s, '=', len);
        if (!eq || eq == s)
                return -EINVAL;
        for (const char *p = s; p < eq; p++) {
                char c = *p;
                bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                          (p != s && c >= '0' && c <= '9');
                if (!ok)
                        return -EINVAL;
        }
        return 0;
}
