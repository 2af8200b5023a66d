/* test-docread.c: hull-docread's pure parts (src/docread/dr-table.c, dr-markdown.c): page lists,
 * grids to CSV (quoting, header names), tables found from word positions (a table found, prose
 * in two columns not), and Markdown's headings and pipe tables. */
#include <stdlib.h>
#include <string.h>

#include "docread.h"
#include "test.h"

static void doc_init(dr_doc *d) {
        *d = (dr_doc){.headings = json_array(), .tables = json_array(), .notes = json_array()};
        dynbuf_init(&d->text, DOCREAD_TEXT_MAX);
}

static void doc_done(dr_doc *d) {
        json_decref(d->headings);
        json_decref(d->tables);
        json_decref(d->notes);
        dynbuf_free(&d->text);
}

static void test_pages(void) {
        dr_opts o = {0};
        CHECK_EQ_INT(dr_pages_parse("1-3,7", &o), 0);
        CHECK(dr_page_wanted(&o, 1) && dr_page_wanted(&o, 3) && !dr_page_wanted(&o, 4) && dr_page_wanted(&o, 7));
        CHECK_EQ_INT(dr_pages_parse("4998-", &o), 0);
        CHECK(dr_page_wanted(&o, 5000) && !dr_page_wanted(&o, 4997) && !dr_page_wanted(&o, 5001));
        CHECK_EQ_INT(dr_pages_parse("0", &o), -EINVAL);
        CHECK_EQ_INT(dr_pages_parse("3-1", &o), -EINVAL);
        CHECK_EQ_INT(dr_pages_parse("1,,2", &o), -EINVAL);
        CHECK_EQ_INT(dr_pages_parse("99999", &o), -EINVAL);
        CHECK_EQ_INT(dr_pages_parse("a", &o), -EINVAL);
        dr_opts all = {0};
        CHECK(dr_page_wanted(&all, 123));
}

static void test_grid_csv(void) {
        dr_grid g;
        dr_grid_init(&g, 0);
        CHECK_EQ_INT(dr_grid_set(&g, 1, 0, "name", 4), 0); /* row 0 empty: the header is row 1 */
        CHECK_EQ_INT(dr_grid_set(&g, 1, 1, "name", 4), 0);
        CHECK_EQ_INT(dr_grid_set(&g, 2, 0, "  a,\n b  ", 9), 0);
        CHECK_EQ_INT(dr_grid_set(&g, 2, 1, "say \"hi\"", 8), 0);
        CHECK_EQ_INT(dr_grid_set(&g, 3, 3, "x", 1), 0); /* widens every row */
        char *csv = NULL;
        size_t len = 0;
        CHECK_EQ_INT(dr_grid_csv(&g, &csv, &len), 0);
        CHECK_EQ_STR(csv, "name,name_2,col_3,col_4\n\"a, b\",\"say \"\"hi\"\"\",,\n,,,x\n");
        CHECK_EQ_INT(len, strlen(csv));
        free(csv);
        dr_grid_done(&g);
        dr_grid_init(&g, 2);
        CHECK_EQ_INT(dr_grid_set(&g, 0, 5, "dropped", 7), 0);
        CHECK(g.cut);
        CHECK_EQ_INT(dr_grid_csv(&g, &csv, &len), -ENODATA);
        dr_grid_done(&g);
}

typedef struct found {
        int n;
        char csv[4][512];
} found;

static int on_table(void *ud, const dr_grid *g) {
        found *f = ud;
        char *csv = NULL;
        size_t len;
        if (dr_grid_csv(g, &csv, &len) < 0)
                return -ENOMEM;
        if (f->n < 4)
                snprintf(f->csv[f->n], sizeof(f->csv[0]), "%s", csv);
        f->n++;
        free(csv);
        return 0;
}

static dr_word word(double x, double y, const char *t) {
        return (dr_word){x, y, x + 6.0 * (double) strlen(t), y + 11, t, strlen(t)};
}

static void test_find_tables(void) {
        /* a title, a 3-column table (in shuffled order), a closing line */
        dr_word w[] = {
                word(72, 50, "Quarterly"), word(135, 50, "Sales"),   word(300, 100, "Units"),  word(72, 100, "Region"),
                word(180, 100, "Revenue"), word(72, 118, "North"),   word(180, 118, "1250.5"), word(300, 118, "31"),
                word(72, 136, "South"),    word(180, 136, "980.25"), word(300, 136, "22"),     word(72, 154, "East"),
                word(180, 154, "1432"),    word(300, 154, "40"),     word(72, 200, "Revenue"), word(120, 200, "grew."),
        };
        found f = {0};
        CHECK_EQ_INT(dr_find_tables(w, ELEMENTSOF(w), on_table, &f), 1);
        CHECK_EQ_STR(f.csv[0], "Region,Revenue,Units\nNorth,1250.5,31\nSouth,980.25,22\nEast,1432,40\n");

        /* two columns of prose: long cells, not a table */
        static const char *const left[] = {"The", "left", "column", "starts", "the", "story", "of", "a", "town"};
        dr_word p[128];
        size_t n = 0;
        for (int line = 0; line < 5; line++) {
                double x = 72;
                for (size_t k = 0; k < ELEMENTSOF(left); k++) {
                        p[n] = word(x, 100 + 14 * line, left[k]);
                        x = p[n++].x1 + 3;
                }
                x = 330;
                for (size_t k = 0; k < ELEMENTSOF(left) - 2; k++) {
                        p[n] = word(x, 100 + 14 * line, left[k]);
                        x = p[n++].x1 + 3;
                }
        }
        found g = {0};
        CHECK_EQ_INT(dr_find_tables(p, n, on_table, &g), 0);
        found none = {0};
        CHECK_EQ_INT(dr_find_tables(NULL, 0, on_table, &none), 0);
}

static void test_markdown(void) {
        dr_doc d;
        doc_init(&d);
        const char *md = "# Title\n\ntext\n```\n# not a heading\n```\n## Part two\n\n"
                         "| k | v \\| w |\n|:--|--:|\n| a | 1 |\n| b | 2 |\nafter\n#nospace\n";
        CHECK_EQ_INT(dr_markdown(md, strlen(md), &d), 0);
        CHECK_EQ_INT(json_array_size(d.headings), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(d.headings, 1), "text")), "Part two");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(d.headings, 1), "level")), 2);
        CHECK_EQ_INT(json_array_size(d.tables), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(d.tables, 0), "csv")), "k,v \\| w\na,1\nb,2\n");
        CHECK(d.text.len == strlen(md));
        doc_done(&d);
        doc_init(&d);
        CHECK_EQ_INT(dr_markdown("a\xff", 2, &d), -EILSEQ);
        CHECK(strstr(d.error, "UTF-8") != NULL);
        doc_done(&d);
}

int main(void) {
        test_pages();
        test_grid_csv();
        test_find_tables();
        test_markdown();
        return test_done();
}
