/* fuzz-console-headers.c: the console's header readers on arbitrary values ("ACCEPT-ENCODING\n
 * IF-NONE-MATCH\nETAG"), with an oracle: a value that allows gzip still does with ", identity"
 * added, and a tag always matches a list that names it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-console.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        char *inm = strchr(s, '\n');
        char *etag = NULL;
        if (inm) {
                *inm++ = '\0';
                etag = strchr(inm, '\n');
                if (etag)
                        *etag++ = '\0';
        }
        bool gz = console_accepts_gzip(s);
        size_t n = strlen(s) + 16;
        char *more = malloc(n);
        if (more) {
                snprintf(more, n, "%s, identity", s);
                if (gz && !console_accepts_gzip(more))
                        abort();
                free(more);
        }
        if (inm)
                (void) console_etag_matches(inm, etag ? etag : "\"x\"");
        if (etag && etag[0] && !strchr(etag, ',') && etag[0] != ' ' && etag[0] != '\t' &&
            etag[strlen(etag) - 1] != ' ' && etag[strlen(etag) - 1] != '\t') {
                size_t m = strlen(etag) * 2 + 8;
                char *list = malloc(m);
                if (list) {
                        snprintf(list, m, "\"a\", %s", etag);
                        if (!console_etag_matches(list, etag))
                                abort();
                        free(list);
                }
        }
        free(s);
        return 0;
}
