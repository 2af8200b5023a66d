/* json-scan.c: see json-scan.h. */
#include "json-scan.h"

#include <errno.h>
#include <stdint.h>

int json_prescan(const char *buf, size_t len, unsigned depth_max, size_t values_max) {
        unsigned depth = 0;
        size_t values = 1; /* each further value opens a container or follows a comma */
        bool in_string = false, escaped = false;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                } else if (c == '"')
                        in_string = true;
                else if (c == '[' || c == '{') {
                        if (++depth > depth_max)
                                return -ELOOP;
                        if (++values > values_max)
                                return -E2BIG;
                } else if (c == ',') {
                        if (++values > values_max)
                                return -E2BIG;
                } else if ((c == ']' || c == '}') && depth > 0)
                        depth--;
        }
        return 0;
}

bool json_depth_ok(const char *buf, size_t len, unsigned max) {
        return json_prescan(buf, len, max, SIZE_MAX) == 0;
}
