/* fuzz-hd-csv.c: the CSV reader and the type classifier never crash, read every byte once and
 * only ever return fields inside the input; the bytes are also ingested into a real table in a
 * scratch store (CSV, and as JSON lines), which must fail cleanly or summarize. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-csv.h"
#include "hd-store.h"

static char dir[64];
static int dir_fd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static hd_csv_field f[64];
        const char *b = (const char *) data;
        for (int pass = 0; pass < 2; pass++) {
                hd_csv c;
                uint64_t line, last = 0;
                hd_csv_init(&c, b, size, pass ? '\t' : ',');
                int n;
                while ((n = hd_csv_next(&c, f, ELEMENTSOF(f), &line, NULL)) > 0) {
                        if (line <= last && last)
                                abort();
                        last = line;
                        for (int i = 0; i < n; i++) {
                                if (f[i].p < b || f[i].p + f[i].n > b + size)
                                        abort();
                                hd_type t = hd_classify(f[i].p, f[i].n);
                                if (t >= _HD_TYPE_MAX || hd_type_merge(t, HD_TYPE_NULL) != t)
                                        abort();
                        }
                }
        }
        if (dir_fd < 0) {
                snprintf(dir, sizeof(dir), "/tmp/fuzz-hd-csv-XXXXXX");
                if (!mkdtemp(dir))
                        abort();
                dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        hd_store *s = NULL;
        if (hd_store_open(dir_fd, NULL, &s, NULL) < 0)
                abort();
        static const hd_format formats[] = {HD_FORMAT_CSV, HD_FORMAT_JSON_LINES, HD_FORMAT_JSON_ARRAY};
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                json_t *sum = NULL;
                if (hd_put(s, NULL, formats[i], "fuzz", data, size, &sum, NULL) == 0) {
                        if (!json_is_integer(json_object_get(sum, "n_rows")))
                                abort();
                }
                json_decref(sum);
        }
        hd_store_free(s);
        /* a fresh scratch store for each input, none left in /tmp when the run ends */
        rm_rf_at(AT_FDCWD, dir);
        close(dir_fd);
        dir_fd = -1;
        return 0;
}
