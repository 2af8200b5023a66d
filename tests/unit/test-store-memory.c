/* test-store-memory.c: the store's memory stores (store.h's STORE_MEMORY_STORE and
 * store_memory_*), backend-neutral, against SQLite and, when tests/unit/test-store-pg.sh names one
 * in HULL_TEST_PG_URL, PostgreSQL: a change applied only against the head it expects (-ESTALE
 * otherwise, nothing written), paths unique in a store (-EEXIST naming the other memory), the
 * count bound (-ENOSPC), scans in byte order within a range, the versions' list with its filters
 * and pages, a version replaced (redaction), a store's delete taking its memories and versions,
 * and writers in threads racing on one memory: every version numbered once, no change lost. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs-util.h"
#include "store.h"
#include "test.h"

static json_t *memory(const char *id, const char *path, const char *content, const char *vid) {
        return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "memory", "path", path, "content", content,
                         "memory_version_id", vid);
}

static json_t *version(const char *vid, const char *mid, const char *op, unsigned sec) {
        char t[STORE_TIME_MAX];
        snprintf(t, sizeof(t), "2026-01-01T00:00:%02u.000Z", sec % 60);
        return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", vid, "type", "memory_version", "memory_id", mid,
                         "operation", op, "created_at", t);
}

/* Apply one change: the memory (NULL: deleted) at head vid, expecting expect. */
static int apply(store *s, const char *store_id, const char *mid, const char *expect, const char *path,
                 const char *content, const char *vid, const char *op, const char *session, size_t max,
                 char conflict[static STORE_ID_MAX]) {
        json_auto_t *m = path ? memory(mid, path, content, vid) : NULL;
        json_auto_t *v = version(vid, mid, op, 1);
        store_memory_change c = {.store_id = store_id,
                                 .memory_id = mid,
                                 .expect_version_id = expect,
                                 .memory = m,
                                 .version = v,
                                 .session_id = session,
                                 .memories_max = max};
        hull_error e = {0};
        return store_memory_apply(s, &c, conflict, &e);
}

static void make_store(store *s, const char *id) {
        json_auto_t *o = json_pack("{s:s, s:s, s:s, s:s, s:n}", "id", id, "type", "memory_store", "name", id,
                                   "created_at", "2026-01-01T00:00:00Z", "archived_at");
        hull_error e = {0};
        CHECK_EQ_INT(store_insert(s, STORE_MEMORY_STORE, o, &e), 0);
}

static void test_changes(store *s) {
        char conflict[STORE_ID_MAX] = "";
        hull_error e = {0};
        make_store(s, "memstore_a");
        CHECK_EQ_INT(apply(s, "memstore_nope", "mem_1", NULL, "/a.md", "x", "memver_0", "created", NULL, 10, conflict),
                     -ENOENT);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_1", NULL, "/a.md", "one", "memver_1", "created", NULL, 10, conflict),
                     0);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_1", NULL, "/a.md", "one", "memver_x", "created", NULL, 10, conflict),
                     -ESTALE); /* the id exists */
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_2", NULL, "/a.md", "two", "memver_2", "created", NULL, 10, conflict),
                     -EEXIST);
        CHECK_EQ_STR(conflict, "mem_1");
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_1", "memver_old", "/a.md", "1b", "memver_3", "modified", NULL, 10,
                           conflict),
                     -ESTALE);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_1", "memver_1", "/a.md", "1b", "memver_3", "modified", "sesn_1", 10,
                           conflict),
                     0);
        CHECK_EQ_INT(
                apply(s, "memstore_a", "mem_1", "memver_3", "/a.md", "1c", "memver_3", "modified", NULL, 10, conflict),
                -ESTALE); /* a version id taken: nothing written */
        json_t *got = NULL;
        CHECK_EQ_INT(store_memory_get(s, "memstore_a", "mem_1", NULL, &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "content")), "1b");
        json_decref(got);
        CHECK_EQ_INT(store_memory_get(s, "memstore_a", NULL, "/a.md", &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "id")), "mem_1");
        json_decref(got);
        CHECK_EQ_INT(store_memory_get(s, "memstore_a", NULL, "/b.md", &got, &e), -ENOENT);
        /* the count bound: 2 memories at most */
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_2", NULL, "/b/c.md", "c", "memver_4", "created", NULL, 2, conflict),
                     0);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_9", NULL, "/z.md", "z", "memver_5", "created", NULL, 2, conflict),
                     -ENOSPC);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_3", NULL, "/b0", "d", "memver_6", "created", NULL, 10, conflict), 0);
        CHECK_EQ_INT(
                apply(s, "memstore_a", "mem_4", NULL, "/b/\xc3\xa9.md", "e", "memver_7", "created", NULL, 10, conflict),
                0);
        /* scans in byte order, within [from, below) */
        json_t *rows = NULL;
        CHECK_EQ_INT(store_memory_scan(s, "memstore_a", "/", true, NULL, 100, &rows, &e), 0);
        const char *want[] = {"/a.md", "/b/c.md", "/b/\xc3\xa9.md", "/b0"};
        CHECK_EQ_INT((int) json_array_size(rows), 4);
        for (size_t i = 0; i < json_array_size(rows) && i < 4; i++)
                CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(rows, i), "path")), want[i]);
        json_decref(rows);
        CHECK_EQ_INT(store_memory_scan(s, "memstore_a", "/b/", true, "/b0", 100, &rows, &e), 0);
        CHECK_EQ_INT((int) json_array_size(rows), 2);
        json_decref(rows);
        CHECK_EQ_INT(store_memory_scan(s, "memstore_a", "/b/c.md", false, "/b0", 1, &rows, &e), 0);
        CHECK_EQ_INT((int) json_array_size(rows), 1);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 0), "path")), "/b/\xc3\xa9.md");
        json_decref(rows);
        /* a delete: its head must match, a version stays */
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_3", "memver_1", NULL, NULL, "memver_8", "deleted", NULL, 10, conflict),
                     -ESTALE);
        CHECK_EQ_INT(apply(s, "memstore_a", "mem_3", "memver_6", NULL, NULL, "memver_8", "deleted", NULL, 10, conflict),
                     0);
        CHECK_EQ_INT(store_memory_get(s, "memstore_a", "mem_3", NULL, &got, &e), -ENOENT);
        /* the versions, newest first, by pages of 2, and filtered */
        store_memory_versions_q q = {.limit = 2};
        store_page p = {0};
        const char *order[] = {"memver_8", "memver_7", "memver_6", "memver_4", "memver_3", "memver_1"};
        size_t seen = 0;
        char page[STORE_CURSOR_MAX] = "";
        do {
                q.page = page[0] ? page : NULL;
                CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), 0);
                for (size_t i = 0; i < json_array_size(p.data) && seen < 6; i++, seen++)
                        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(p.data, i), "id")), order[seen]);
                snprintf(page, sizeof(page), "%s", p.next_page);
                store_page_done(&p);
        } while (page[0] && seen < 10);
        CHECK_EQ_INT((int) seen, 6);
        q = (store_memory_versions_q){.memory_id = "mem_1"};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), 0);
        CHECK_EQ_INT((int) json_array_size(p.data), 2);
        store_page_done(&p);
        q = (store_memory_versions_q){.session_id = "sesn_1"};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), 0);
        CHECK_EQ_INT((int) json_array_size(p.data), 1);
        store_page_done(&p);
        q = (store_memory_versions_q){.operation = "deleted"};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), 0);
        CHECK_EQ_INT((int) json_array_size(p.data), 1);
        store_page_done(&p);
        q = (store_memory_versions_q){.limit = 2, .page = "Mn.0000000000.x"};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), -EINVAL);
        /* a version replaced (redacted) */
        json_t *v = NULL;
        CHECK_EQ_INT(store_memory_version_get(s, "memstore_a", "memver_1", &v, &e), 0);
        json_object_set_new(v, "redacted_at", json_string("2026-01-02T00:00:00Z"));
        CHECK_EQ_INT(store_memory_version_put(s, "memstore_a", v, &e), 0);
        json_decref(v);
        CHECK_EQ_INT(store_memory_version_get(s, "memstore_a", "memver_1", &v, &e), 0);
        CHECK(json_is_string(json_object_get(v, "redacted_at")));
        json_decref(v);
        CHECK_EQ_INT(store_memory_version_get(s, "memstore_other", "memver_1", &v, &e), -ENOENT);
        /* the store's delete takes everything */
        CHECK_EQ_INT(store_delete(s, STORE_MEMORY_STORE, "memstore_a", &e), 0);
        CHECK_EQ_INT(store_memory_get(s, "memstore_a", NULL, "/a.md", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_memory_version_get(s, "memstore_a", "memver_1", &v, &e), -ENOENT);
        q = (store_memory_versions_q){0};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_a", &q, &p, &e), -ENOENT);
}

/* ---- racing writers: each reads the head, writes the next, again when it lost ---- */

#define WRITERS 4
#define WRITES 15

typedef struct writer {
        const char *url;
        int id;
        int done, lost;
} writer;

static void *write_loop(void *arg) {
        writer *w = arg;
        store *s = NULL;
        hull_error e = {0};
        if (store_open(w->url, &s, &e) < 0)
                return NULL;
        for (int i = 0; i < WRITES;) {
                json_t *cur = NULL;
                if (store_memory_get(s, "memstore_r", "mem_r", NULL, &cur, &e) < 0)
                        break;
                char vid[STORE_ID_MAX], content[32], conflict[STORE_ID_MAX];
                snprintf(vid, sizeof(vid), "memver_w%d_%d", w->id, i);
                snprintf(content, sizeof(content), "%d/%d", w->id, i);
                int r = apply(s, "memstore_r", "mem_r", json_string_value(json_object_get(cur, "memory_version_id")),
                              "/r.md", content, vid, "modified", NULL, 10, conflict);
                json_decref(cur);
                if (r == 0) {
                        i++;
                        w->done++;
                } else if (r == -ESTALE || r == -EBUSY)
                        w->lost++;
                else
                        break;
        }
        store_close(s);
        return NULL;
}

static void test_race(store *s, const char *url) {
        char conflict[STORE_ID_MAX];
        make_store(s, "memstore_r");
        CHECK_EQ_INT(apply(s, "memstore_r", "mem_r", NULL, "/r.md", "0", "memver_r0", "created", NULL, 10, conflict),
                     0);
        pthread_t t[WRITERS];
        writer w[WRITERS];
        for (int i = 0; i < WRITERS; i++) {
                w[i] = (writer){.url = url, .id = i};
                pthread_create(&t[i], NULL, write_loop, &w[i]);
        }
        int done = 0;
        for (int i = 0; i < WRITERS; i++) {
                pthread_join(t[i], NULL);
                done += w[i].done;
        }
        CHECK_EQ_INT(done, WRITERS * WRITES);
        store_memory_versions_q q = {.limit = 1000};
        store_page p = {0};
        hull_error e = {0};
        CHECK_EQ_INT(store_memory_versions_list(s, "memstore_r", &q, &p, &e), 0);
        CHECK_EQ_INT((int) json_array_size(p.data), WRITERS * WRITES + 1); /* every write a version, once */
        store_page_done(&p);
}

static void test_backend(const char *url) {
        printf("# memory stores at %s\n", url);
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                printf("not ok - open %s: %s\n", url, e.msg);
                return;
        }
        test_changes(s);
        test_race(s, url);
        store_close(s);
}

int main(void) {
        char dir[64], db[128];
        snprintf(dir, sizeof(dir), "/tmp/hull-test-store-memory-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        snprintf(db, sizeof(db), "%s/hull.db", dir);
        const char *pg = getenv("HULL_TEST_PG_URL");
        test_backend(pg && *pg ? pg : db);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
