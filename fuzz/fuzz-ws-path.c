/* fuzz-ws-path.c: the workspace path validator, its normalizer, the resolver of a model's paths
 * and the glob matcher on arbitrary bytes. Whatever is accepted must be relative, NUL-free and without "..", and
 * normalizing must be idempotent. Input: PATTERN '\n' PATH (or the whole input as a path). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sbx-workspace.h"

static int has_dotdot(const char *p, size_t len) {
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && p[j] != '/')
                        j++;
                if (j - i == 2 && p[i] == '.' && p[i + 1] == '.')
                        return 1;
                i = j + 1;
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data;
        hull_error e = {0};
        char norm[WS_PATH_MAX + 1], again[WS_PATH_MAX + 1];

        if (ws_path_check(p, size, &e) == 0) {
                if (size == 0 || p[0] == '/' || memchr(p, '\0', size) || has_dotdot(p, size) || size > WS_PATH_MAX)
                        abort();
                if (ws_path_normalize(p, size, norm, sizeof(norm), &e) != 0)
                        abort();
                size_t n = strlen(norm);
                if (n == 0 || norm[0] == '/' || strstr(norm, "//") || has_dotdot(norm, n))
                        abort();
                if (ws_path_normalize(norm, n, again, sizeof(again), &e) != 0 || strcmp(norm, again) != 0)
                        abort();
        } else if (e.err >= 0 || !e.msg[0])
                abort(); /* a refusal always explains itself */

        /* the resolver: what it accepts is a path the checker accepts, in canonical form */
        if (ws_path_resolve(p, size, norm, sizeof(norm), &e) == 0) {
                size_t n = strlen(norm);
                if (ws_path_check(norm, n, NULL) != 0 || ws_path_normalize(norm, n, again, sizeof(again), NULL) != 0 ||
                    strcmp(norm, again) != 0 || has_dotdot(norm, n))
                        abort();
        } else if (e.err >= 0 || !e.msg[0])
                abort();

        /* the glob matcher: PATTERN\nPATH, both NUL-terminated copies */
        const char *nl = memchr(p, '\n', size);
        if (nl) {
                size_t pl = (size_t) (nl - p);
                char *pat = malloc(pl + 1), *path = malloc(size - pl);
                if (pat && path) {
                        memcpy(pat, p, pl);
                        pat[pl] = '\0';
                        memcpy(path, nl + 1, size - pl - 1);
                        path[size - pl - 1] = '\0';
                        (void) ws_glob_match(pat, path, false);
                        (void) ws_glob_match(pat, path, true);
                        if (ws_glob_match("**", path, true) != (ws_path_check(path, strlen(path), NULL) == 0))
                                abort(); /* "**" with hidden names matches every valid path */
                }
                free(pat);
                free(path);
        }
        return 0;
}
