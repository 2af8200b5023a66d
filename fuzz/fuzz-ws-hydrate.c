/* fuzz-ws-hydrate.c: hydrate arbitrary bytes into a fresh workspace. It must not crash, and
 * nothing may appear beside the workspace: each run uses a canary directory holding only
 * "root", which must hold only "root" afterwards. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "sbx-workspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char canary[] = "/tmp/hull-fuzz-ws.XXXXXX";
        if (!mkdtemp(canary))
                abort();
        int cfd = open(canary, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cfd < 0 || mkdirat(cfd, "root", 0755) < 0)
                abort();
        int root = openat(cfd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                abort();

        ws_tar_limits lim = {.bytes_max = 1 << 20, .file_bytes_max = 256 << 10, .entries_max = 256};
        hull_error e = {0};
        int r = ws_hydrate_mem(root, data, size, &lim, NULL, &e);
        if (r < 0 && (!e.msg[0] || e.err != r))
                abort(); /* a refusal always explains itself */

        DIR *d = fdopendir(dup(cfd));
        if (!d)
                abort();
        for (struct dirent *de; (de = readdir(d));)
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "root"))
                        abort(); /* something escaped the workspace */
        closedir(d);

        close(root);
        close(cfd);
        if (rm_rf_at(AT_FDCWD, canary) < 0)
                abort();
        return 0;
}
