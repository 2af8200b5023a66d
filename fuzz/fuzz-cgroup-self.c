/* fuzz-cgroup-self.c: the /proc/self/cgroup parser on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sbx-cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char out[64];
        static const char *const ctl[] = {NULL, "memory", "pids", "cpu"};
        for (size_t i = 0; i < 4; i++)
                if (sbx_cgroup_parse_self((const char *) data, size, ctl[i], out, sizeof(out)) == 0 &&
                    (out[0] != '/' || strlen(out) >= sizeof(out)))
                        abort();
        return 0;
}
