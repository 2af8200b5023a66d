/* test-store-skill.c: skills in the store (store-skill.h) on SQLite and, when HULL_TEST_PG_URL
 * names a database (tests/unit/test-store-pg.sh), on PostgreSQL: create, versions, pages of both
 * lists with their cursors, latest_version moving when versions go, a skill with versions not
 * deleted, the zip read back byte for byte. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-skill.h"
#include "store.h"
#include "test.h"

static json_t *skill_obj(const char *id, const char *created, const char *latest) {
        return json_pack("{s:s, s:s, s:s, s:n, s:s, s:s, s:s}", "id", id, "type", "skill", "source", "custom",
                         "display_title", "latest_version", latest, "created_at", created, "updated_at", created);
}

static json_t *version_obj(const char *id, const char *v, const char *created) {
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", v, "type", "skill_version", "skill_id", id,
                         "version", v, "name", "x", "description", "d", "created_at", created);
}

static void run(store *s, const char *what) {
        hull_error e = {0};
        printf("# %s\n", what);
        const uint8_t zip[] = {'P', 'K', 3, 4, 0, 1, 2, 0xff};
        char id[32], t[40];
        for (int i = 0; i < 5; i++) {
                snprintf(id, sizeof(id), "skill_%d", i);
                snprintf(t, sizeof(t), "2026-01-0%dT00:00:00Z", i + 1);
                json_auto_t *sk = skill_obj(id, t, "100");
                json_auto_t *v = version_obj(id, "100", t);
                CHECK_EQ_INT(store_skill_create(s, sk, v, zip, sizeof(zip), &e), 0);
        }
        json_auto_t *dup = skill_obj("skill_0", "2026-01-01T00:00:00Z", "100");
        json_auto_t *dupv = version_obj("skill_0", "100", "2026-01-01T00:00:00Z");
        CHECK_EQ_INT(store_skill_create(s, dup, dupv, zip, sizeof(zip), &e), -EEXIST);

        /* pages of 2, newest first */
        store_page p = {0};
        CHECK_EQ_INT(store_skill_list(s, NULL, NULL, 2, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(p.data, 0), "id")), "skill_4");
        CHECK(p.next_page[0] != '\0');
        char next[STORE_CURSOR_MAX];
        snprintf(next, sizeof(next), "%s", p.next_page);
        store_page_done(&p);
        CHECK_EQ_INT(store_skill_list(s, NULL, next, 2, &p, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(p.data, 0), "id")), "skill_2");
        snprintf(next, sizeof(next), "%s", p.next_page);
        store_page_done(&p);
        CHECK_EQ_INT(store_skill_list(s, NULL, next, 2, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 1);
        CHECK_EQ_STR(p.next_page, "");
        store_page_done(&p);
        CHECK_EQ_INT(store_skill_list(s, NULL, "v12", 2, &p, &e), -EINVAL);
        CHECK_EQ_INT(store_skill_list(s, NULL, "s1_", 2, &p, &e), -EINVAL);

        /* versions */
        json_auto_t *sk = skill_obj("skill_0", "2026-01-01T00:00:00Z", "300");
        json_auto_t *v2 = version_obj("skill_0", "200", "2026-01-02T00:00:00Z");
        json_auto_t *v3 = version_obj("skill_0", "300", "2026-01-03T00:00:00Z");
        CHECK_EQ_INT(store_skill_version_add(s, sk, v2, zip, sizeof(zip), &e), 0);
        CHECK_EQ_INT(store_skill_version_add(s, sk, v3, zip, 3, &e), 0);
        CHECK_EQ_INT(store_skill_version_add(s, sk, v3, zip, 3, &e), -EEXIST);
        json_auto_t *nos = skill_obj("skill_none", "2026-01-01T00:00:00Z", "1");
        json_auto_t *nov = version_obj("skill_none", "1", "2026-01-01T00:00:00Z");
        CHECK_EQ_INT(store_skill_version_add(s, nos, nov, zip, 3, &e), -ENOENT);
        CHECK_EQ_INT(store_skill_list(s, "skill_0", NULL, 2, &p, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(p.data, 0), "version")), "300");
        CHECK_EQ_STR(p.next_page, "v200");
        store_page_done(&p);
        CHECK_EQ_INT(store_skill_list(s, "skill_0", "v200", 2, &p, &e), 0);
        CHECK_EQ_INT(json_array_size(p.data), 1);
        store_page_done(&p);
        CHECK_EQ_INT(store_skill_list(s, "skill_none", NULL, 2, &p, &e), -ENOENT);

        json_t *got = NULL;
        CHECK_EQ_INT(store_skill_version_get(s, "skill_0", "200", &got, &e), 0);
        json_decref(got);
        CHECK_EQ_INT(store_skill_version_get(s, "skill_0", "latest", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_skill_version_get(s, "skill_0", "999", &got, &e), -ENOENT);
        uint8_t *z = NULL;
        size_t zn = 0;
        CHECK_EQ_INT(store_skill_zip(s, "skill_0", "200", &z, &zn, &e), 0);
        CHECK(zn == sizeof(zip) && memcmp(z, zip, zn) == 0);
        free(z);

        /* latest moves down as versions go, then to null */
        CHECK_EQ_INT(store_skill_delete(s, "skill_0", false, &e), -ENOTEMPTY);
        CHECK_EQ_INT(store_skill_version_delete(s, "skill_0", "300", "2026-02-01T00:00:00Z", &got, &e), 0);
        CHECK_EQ_STR(json_string_value(json_object_get(got, "latest_version")), "200");
        json_decref(got);
        CHECK_EQ_INT(store_skill_version_delete(s, "skill_0", "300", "2026-02-01T00:00:00Z", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_skill_version_delete(s, "skill_0", "200", "2026-02-01T00:00:00Z", NULL, &e), 0);
        CHECK_EQ_INT(store_skill_version_delete(s, "skill_0", "100", "2026-02-01T00:00:00Z", &got, &e), 0);
        CHECK(json_is_null(json_object_get(got, "latest_version")));
        json_decref(got);
        CHECK_EQ_INT(store_skill_get(s, "skill_0", &got, &e), 0);
        CHECK(json_is_null(json_object_get(got, "latest_version")));
        json_decref(got);
        CHECK_EQ_INT(store_skill_delete(s, "skill_0", false, &e), 0);
        CHECK_EQ_INT(store_skill_get(s, "skill_0", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_skill_delete(s, "skill_0", false, &e), -ENOENT);
        /* with its versions */
        CHECK_EQ_INT(store_skill_delete(s, "skill_1", true, &e), 0);
        CHECK_EQ_INT(store_skill_version_get(s, "skill_1", "100", &got, &e), -ENOENT);
        CHECK_EQ_INT(store_skill_delete(s, "skill_1", true, &e), -ENOENT);
}

int main(void) {
        char dir[] = "/tmp/test-store-skill.XXXXXX", path[80];
        hull_error e = {0};
        store *s = NULL;
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/hull.db", dir);
        CHECK_EQ_INT(store_open(path, &s, &e), 0);
        if (s) {
                run(s, "sqlite");
                store_close(s);
        }
        unlink(path);
        snprintf(path, sizeof(path), "%s/hull.db-wal", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/hull.db-shm", dir);
        unlink(path);
        rmdir(dir);
        const char *pg = getenv("HULL_TEST_PG_URL");
        if (pg) {
                s = NULL;
                CHECK_EQ_INT(store_open(pg, &s, &e), 0);
                if (s) {
                        run(s, "postgresql");
                        store_close(s);
                }
        }
        return test_done();
}
