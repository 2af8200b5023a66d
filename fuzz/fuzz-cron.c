/* fuzz-cron.c: any bytes as a cron expression parse or are refused with a message, and a parsed
 * one's next firing is after the start and matches its fields; any bytes as a TZif file parse or
 * are refused, and a parsed zone answers offsets in range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char s[CRON_EXPR_MAX + 8];
        size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
        memcpy(s, data, n);
        s[n] = '\0';
        cron_expr c;
        hull_error e = {0};
        if (cron_parse(s, &c, &e) < 0) {
                if (!e.msg[0])
                        abort();
        } else {
                if (!c.minutes || !c.hours || !c.days || !c.months || !c.weekdays)
                        abort();
                int64_t t = 1796000000, next;
                if (cron_next(&c, NULL, t, &next) == 0 &&
                    (next <= t || next % 60 != 0 || !(c.minutes >> (next / 60 % 60) & 1)))
                        abort();
        }
        tz_zone *z = NULL;
        e = (hull_error){0};
        if (tz_parse(data, size, &z, &e) < 0) {
                if (z || !e.msg[0])
                        abort();
                return 0;
        }
        for (int64_t t = -4000000000LL; t < 4000000000LL; t += 300000000) {
                int32_t off = tz_offset(z, t);
                if (off < -25 * 3600 || off > 26 * 3600)
                        abort();
        }
        tz_free(z);
        return 0;
}
