/* hd-bench.c: drives the handle store for bench/handles.sh. Prints seconds on stdout.
 *   hd-bench ingest FILE.csv   hd_adopt_fd as a CSV table (copy, infer, insert, summary)
 *   hd-bench json FILE.json    hd_adopt_fd as JSON (copy, validate, shape, digest)
 *   hd-bench query FILE.csv SQL   ingest (untimed), then time hd_query */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "hd-store.h"

static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        if (argc < 3)
                return 2;
        char dir[] = "/tmp/hd-bench-XXXXXX";
        if (!mkdtemp(dir))
                return 1;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        hd_store *s = NULL;
        hull_error e = {0};
        hd_store_opts o = {.max_spill_bytes = 1ULL << 30};
        if (hd_store_open(dfd, &o, &s, &e) < 0 || fd < 0) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
        }
        json_t *sum = NULL;
        bool json = strcmp(argv[1], "json") == 0;
        double t0 = now();
        int r = hd_adopt_fd(s, fd, "t", json ? HD_FORMAT_JSON : HD_FORMAT_CSV, "bench", &sum, &e);
        double t1 = now();
        if (r < 0) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
        }
        if (strcmp(argv[1], "query") == 0 && argc > 3) {
                const char *ids[] = {"t"};
                json_t *res = NULL;
                t0 = now();
                r = hd_query(s, argv[3], ids, 1, NULL, &res, &e);
                t1 = now();
                if (r < 0) {
                        fprintf(stderr, "%s\n", e.msg);
                        return 1;
                }
                char *d = json_dumps(res, JSON_COMPACT);
                fprintf(stderr, "%.200s\n", d);
                free(d);
                json_decref(res);
        } else {
                char *d = json_dumps(sum, JSON_COMPACT);
                fprintf(stderr, "%.300s\n", d);
                free(d);
        }
        printf("%.3f\n", t1 - t0);
        json_decref(sum);
        hd_store_free(s);
        rm_rf_at(AT_FDCWD, dir);
        return 0;
}
