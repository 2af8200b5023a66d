/* fuzz-hd-exchange.c: the exchange directory's parsers (new_handles.jsonl, publish.jsonl, the
 * emit check) on arbitrary bytes. Whatever is accepted must be what the host may act on: valid
 * ids and kinds, plain file names, unique ids and files, paths under outputs/ without "..",
 * bounded counts. Input: one byte selecting the caps (low 3 bits: adopt/publish cap - 1, 0 for
 * the defaults), then the bytes given to all three parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hd-exchange.h"
#include "sbx-workspace.h"

static int valid_id(const char *s) {
        size_t n = strlen(s);
        if (n < 1 || n > HD_EXCHANGE_ID_MAX)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                int alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
                        return 0;
        }
        return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        size_t cap = data[0] & 7;
        const char *p = (const char *) data + 1;
        size_t len = size - 1;
        hd_exchange x;
        hd_exchange_init(&x);

        if (hd_exchange_parse_new_handles(p, len, cap, &x) < 0 || hd_exchange_parse_publish(p, len, cap, &x) < 0)
                abort(); /* only -ENOMEM, which a fuzzer never sees */
        size_t max_h = cap ? cap : HD_EXCHANGE_ADOPT_MAX, max_p = cap ? cap : HD_EXCHANGE_PUBLISH_MAX;
        if (x.n_handles > max_h || x.n_publish > max_p || x.n_errors > HD_EXCHANGE_ERRORS_MAX)
                abort();
        for (size_t i = 0; i < x.n_handles; i++) {
                const hd_exchange_handle *h = &x.handles[i];
                if (!valid_id(h->id) || !h->kind || h->fd != -1 || !h->source || !h->source[0])
                        abort();
                if (strcmp(h->kind, "json") && strcmp(h->kind, "text") && strcmp(h->kind, "table") &&
                    strcmp(h->kind, "binary"))
                        abort();
                if (!h->file[0] || strchr(h->file, '/') || !strcmp(h->file, ".") || !strcmp(h->file, "..") ||
                    !strcmp(h->file, "new_handles.jsonl") || !strcmp(h->file, "emit.json") ||
                    !strcmp(h->file, "publish.jsonl"))
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(h->id, x.handles[j].id) || !strcmp(h->file, x.handles[j].file))
                                abort();
        }
        for (size_t i = 0; i < x.n_publish; i++) {
                const char *path = x.publish[i].path;
                if (strncmp(path, "outputs/", 8) != 0 || !path[8] || strstr(path, "/../") || strstr(path, "//") ||
                    ws_path_check(path, strlen(path), NULL) < 0 || !x.publish[i].description)
                        abort();
                for (const char *c = path; *c; c++)
                        if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                abort();
        }
        for (size_t i = 0; i < x.n_errors; i++)
                if (!x.errors[i] || !x.errors[i][0])
                        abort();
        hull_error e = {0};
        if (hd_exchange_check_emit(p, len, &e) < 0 && (e.err != -EBADMSG || !e.msg[0]))
                abort();
        char *z = strndup(p, len); /* a C string for the path check */
        if (z && hd_exchange_rel_is_valid(z) && (strlen(z) != HD_EXCHANGE_REL_SIZE - 1 || strncmp(z, ".hull/x-", 8)))
                abort();
        free(z);
        hd_exchange_done(&x);
        return 0;
}
