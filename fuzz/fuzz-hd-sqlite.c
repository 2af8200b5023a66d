/* fuzz-hd-sqlite.c: the SQLite reader over hostile bytes: adopting any file as a table either
 * fails with an error or yields a summary, an inspect with stats and a query that all work. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/tmp/fuzz-hd-sqlite-XXXXXX");
        if (!mkdtemp(dir))
                abort();
        int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = memfd_create("adopt", MFD_CLOEXEC);
        if (dir_fd < 0 || fd < 0 || write(fd, data, size) != (ssize_t) size)
                abort();
        hd_store *s = NULL;
        if (hd_store_open(dir_fd, NULL, &s, NULL) < 0)
                abort();
        json_t *sum = NULL;
        if (hd_adopt_fd(s, fd, "t", HD_FORMAT_SQLITE, "fuzz", &sum, NULL) == 0) {
                json_t *o = NULL;
                hd_inspect_opts io = {.head = 3, .tail = 3, .stats = true};
                hd_inspect(s, "t", &io, &o, NULL);
                json_decref(o);
                const char *ids[] = {"t"};
                char sql[128];
                snprintf(sql, sizeof(sql), "SELECT count(*) FROM t.\"%s\"",
                         json_string_value(json_object_get(sum, "table")));
                o = NULL;
                hd_query(s, strchr(sql + 20, '"') && !strchr(sql + 22, '"') ? sql : "SELECT 1", ids, 1, NULL, &o, NULL);
                json_decref(o);
        }
        json_decref(sum);
        hd_store_free(s);
        close(fd);
        close(dir_fd);
        rm_rf_at(AT_FDCWD, dir);
        return 0;
}
