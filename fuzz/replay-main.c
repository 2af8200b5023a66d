/* replay-main.c: runs a fuzz target over every file in the directories or files given, so the
 * corpora and crash reproducers replay in the ordinary test suite without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, unsigned *count) {
        FILE *f = fopen(path, "rb");
        if (!f)
                return -1;
        uint8_t *buf = malloc(1 << 20);
        size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
        fclose(f);
        if (!buf)
                return -1;
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        (*count)++;
        return 0;
}

int main(int argc, char **argv) {
        unsigned count = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (run_file(argv[i], &count) < 0)
                                return 1;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                if (!d)
                        return 1;
                for (struct dirent *de; (de = readdir(d));) {
                        char p[4096];
                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
                        if (run_file(p, &count) < 0) {
                                closedir(d);
                                return 1;
                        }
                }
                closedir(d);
        }
        printf("replayed %u inputs\n", count);
        return count ? 0 : 1;
}
