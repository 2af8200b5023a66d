/* fuzz-protojson.c: every reader on every field of an arbitrary JSON object, by either spelling:
 * no crash, a refusal always says why, and what is read holds: a string within its bound and
 * without NUL when asked so, an integer within its range, bytes within their bound that encode
 * back to base64 which reads again to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protojson.h"

static void check_refusal(int r, const hull_error *e) {
        if (r < 0 && (e->err != r || !e->msg[0]))
                abort();
}

static void read_all(const json_t *o, const char *camel, const char *snake) {
        hull_error e;
        const char *s;
        size_t n;
        int64_t x;
        uint64_t u;
        bool b, present;
        json_t *v;
        void *p;
        int r;

        r = pj_string(o, camel, snake, "w.", 8, &s, NULL, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        if (r == 0 && (strlen(s) > 8))
                abort();
        r = pj_string(o, camel, snake, NULL, SIZE_MAX, &s, &n, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        r = pj_int(o, camel, snake, -5, 1000, &present, &x, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        if (r == 0 && present && (x < -5 || x > 1000))
                abort();
        r = pj_uint64(o, camel, snake, &u, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        r = pj_bool(o, camel, snake, &b, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        r = pj_array(o, camel, snake, NULL, 4, &v, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        if (r == 0 && v && json_array_size(v) > 4)
                abort();
        r = pj_bytes(o, camel, snake, NULL, 64, &p, &n, (e = (hull_error){0}, &e));
        check_refusal(r, &e);
        if (r == 0 && p) {
                if (n > 64)
                        abort();
                json_t *w = pj_new_bytes(p, n), *back = w ? json_pack("{s:o}", "f", w) : NULL;
                void *q = NULL;
                size_t m;
                if (back && (pj_bytes(back, "f", NULL, NULL, 64, &q, &m, NULL) != 0 || m != n || memcmp(p, q, n) != 0))
                        abort();
                free(q);
                json_decref(back);
                free(p);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *o = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                return 0;
        }
        const char *key;
        json_t *val;
        json_object_foreach(o, key, val) {
                (void) val;
                read_all(o, key, NULL);
                /* The same field under a second spelling: present twice when both exist. */
                read_all(o, key, "snake_spelling");
                read_all(o, "camelSpelling", key);
        }
        read_all(o, "absent", "ab_sent");
        json_decref(o);
        return 0;
}
