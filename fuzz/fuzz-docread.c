/* fuzz-docread.c: hull-docread's own parsers (src/docread/: Markdown with its pipe tables, and
 * the table finder over word boxes taken from the bytes) never crash and keep their bounds: every
 * table they hand back becomes CSV or is refused cleanly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docread.h"

static int on_table(void *ud, const dr_grid *g) {
        char *csv = NULL;
        size_t len = 0;
        int r = dr_grid_csv(g, &csv, &len);
        if (r == 0 && strlen(csv) != len)
                abort();
        free(csv);
        (*(int *) ud)++;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        dr_doc d = {.headings = json_array(), .tables = json_array(), .notes = json_array()};
        dynbuf_init(&d.text, DOCREAD_TEXT_MAX);
        int r = dr_markdown((const char *) data, size, &d);
        if (r < 0 && !d.error[0])
                abort();
        if (json_array_size(d.tables) > DOCREAD_TABLES_MAX || json_array_size(d.headings) > DOCREAD_HEADINGS_MAX)
                abort();
        json_decref(d.headings);
        json_decref(d.tables);
        json_decref(d.notes);
        dynbuf_free(&d.text);

        /* words: 4 bytes each (x, y, width, length of text taken from the input itself) */
        size_t n = size / 4;
        dr_word *w = calloc(n ? n : 1, sizeof(dr_word));
        if (!w)
                return 0;
        for (size_t i = 0; i < n; i++) {
                const uint8_t *p = data + 4 * i;
                size_t len = (size_t) (p[3] % 8) + 1;
                if (len > size)
                        len = size;
                w[i] = (dr_word){p[0] * 3.0,      p[1] * 2.0,          p[0] * 3.0 + p[2] % 64 + 1,
                                 p[1] * 2.0 + 10, (const char *) data, len};
        }
        int count = 0;
        r = dr_find_tables(w, n, on_table, &count);
        if (r >= 0 && r != count)
                abort();
        free(w);
        return 0;
}
