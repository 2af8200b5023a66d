/* test-store-vault.c: the store's vaults and credentials (store.h) on SQLite and, when
 * tests/unit/test-store-pg.sh gives HULL_TEST_PG_URL, on PostgreSQL: put, get with the sealed
 * secrets, one active credential per URL, pages with cursors, archived rows left out, a vault's
 * delete taking its credentials, the credentials sealed with another key, and a copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlib-sqlite3.h"
#include "fs-util.h"
#include "macro.h"
#include "store.h"
#include "test.h"

static json_t *vault_obj(const char *id, unsigned sec, bool archived) {
        char t[STORE_TIME_MAX];
        snprintf(t, sizeof(t), "2026-01-01T00:00:%02u.000Z", sec % 60);
        return json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", id, "type", "vault", "display_name", id, "created_at", t,
                         "archived_at", archived ? json_string("2026-02-01T00:00:00Z") : json_null());
}

static json_t *cred_obj(const char *id, const char *vault, const char *url, unsigned sec) {
        char t[STORE_TIME_MAX];
        snprintf(t, sizeof(t), "2026-01-01T00:00:%02u.000Z", sec % 60);
        return json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:n}", "id", id, "type", "vault_credential", "vault_id",
                         vault, "auth", "type", "static_bearer", "mcp_server_url", url, "created_at", t, "archived_at");
}

static size_t walk(store *s, store_vkind k, const char *vault, bool archived) {
        size_t n = 0;
        char page[STORE_CURSOR_MAX] = "";
        for (int guard = 0; guard < 50; guard++) {
                store_list_q q = {.limit = 2, .page = page[0] ? page : NULL, .include_archived = archived};
                store_page p = {0};
                hull_error e = {0};
                if (store_vault_list(s, k, vault, &q, &p, &e) < 0) {
                        TEST_RESULT(false, "list: %s", e.msg);
                        return n;
                }
                n += json_array_size(p.data);
                snprintf(page, sizeof(page), "%s", p.next_page);
                store_page_done(&p);
                if (!page[0])
                        break;
        }
        return n;
}

static void test_backend(const char *url, const char *copy_to) {
        printf("# store at %s\n", url);
        store *s = NULL;
        hull_error e = {0};
        if (store_open(url, &s, &e) < 0) {
                TEST_RESULT(false, "open %s: %s", url, e.msg);
                return;
        }
        for (unsigned i = 0; i < 5; i++) {
                char id[32];
                snprintf(id, sizeof(id), "vlt_%u", i);
                json_auto_t *v = vault_obj(id, i, i == 4);
                CHECK_EQ_INT(store_vault_put(s, STORE_VAULT, v, NULL, NULL, true, &e), 0);
        }
        json_auto_t *dup = vault_obj("vlt_0", 9, false);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT, dup, NULL, NULL, true, &e), -EEXIST);
        CHECK_EQ_INT((int) walk(s, STORE_VAULT, NULL, false), 4);
        CHECK_EQ_INT((int) walk(s, STORE_VAULT, NULL, true), 5);

        json_auto_t *c1 = cred_obj("vcrd_1", "vlt_0", "http://a/mcp", 1);
        json_auto_t *c2 = cred_obj("vcrd_2", "vlt_0", "http://a/mcp", 2);
        json_auto_t *c3 = cred_obj("vcrd_3", "vlt_0", "http://b/mcp", 3);
        json_auto_t *c4 = cred_obj("vcrd_4", "vlt_none", "http://b/mcp", 3);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c1, "hv1.k1.AAAA", "k1", true, &e), 0);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c2, "hv1.k1.BBBB", "k1", true, &e), -EEXIST);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c3, "hv1.k2.CCCC", "k2", true, &e), 0);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c4, "hv1.k2.DDDD", "k2", true, &e), -ENOENT);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c1, NULL, "k1", true, &e), -EINVAL);

        /* archived, its URL is free again */
        json_object_set_new(c1, "archived_at", json_string("2026-03-01T00:00:00Z"));
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c1, "hv1.k2.EEEE", "k2", false, &e), 0);
        CHECK_EQ_INT(store_vault_put(s, STORE_VAULT_CREDENTIAL, c2, "hv1.k1.BBBB", "k1", true, &e), 0);

        json_t *got = NULL;
        char *sealed = NULL;
        CHECK_EQ_INT(store_vault_get(s, STORE_VAULT_CREDENTIAL, "vlt_0", "vcrd_1", &got, &sealed, &e), 0);
        CHECK(got && sealed && strcmp(sealed, "hv1.k2.EEEE") == 0 &&
              json_is_string(json_object_get(got, "archived_at")));
        json_decref(got);
        free(sealed);
        CHECK_EQ_INT(store_vault_get(s, STORE_VAULT_CREDENTIAL, "vlt_1", "vcrd_1", &got, NULL, &e), -ENOENT);
        CHECK_EQ_INT(store_vault_get(s, STORE_VAULT, NULL, "vlt_9", &got, NULL, &e), -ENOENT);
        CHECK_EQ_INT((int) walk(s, STORE_VAULT_CREDENTIAL, "vlt_0", false), 2);
        CHECK_EQ_INT((int) walk(s, STORE_VAULT_CREDENTIAL, "vlt_0", true), 3);
        store_list_q q = {0};
        store_page p = {0};
        CHECK_EQ_INT(store_vault_list(s, STORE_VAULT_CREDENTIAL, "vlt_9", &q, &p, &e), -ENOENT);
        q.page = "Vgarbage";
        CHECK_EQ_INT(store_vault_list(s, STORE_VAULT_CREDENTIAL, "vlt_0", &q, &p, &e), -EINVAL);

        json_t *stale = NULL;
        CHECK_EQ_INT(store_vault_stale(s, "k2", &stale, &e), 0);
        CHECK(json_array_size(stale) == 1 &&
              strcmp(json_string_value(json_array_get(json_array_get(stale, 0), 1)), "vcrd_2") == 0);
        json_decref(stale);

        /* hull db copy takes them along, still sealed */
        if (copy_to) {
                store *to = NULL;
                CHECK_EQ_INT(store_open(copy_to, &to, &e), 0);
                CHECK_EQ_INT(store_copy(s, to, NULL, NULL, &e), 0);
                char *cs = NULL;
                json_t *cg = NULL;
                CHECK_EQ_INT(store_vault_get(to, STORE_VAULT_CREDENTIAL, "vlt_0", "vcrd_2", &cg, &cs, &e), 0);
                CHECK(cs && strcmp(cs, "hv1.k1.BBBB") == 0);
                CHECK_EQ_INT((int) walk(to, STORE_VAULT, NULL, true), 5);
                json_decref(cg);
                free(cs);
                store_close(to);
        }
        CHECK_EQ_INT(store_vault_delete(s, STORE_VAULT_CREDENTIAL, "vlt_1", "vcrd_3", &e), -ENOENT);
        CHECK_EQ_INT(store_vault_delete(s, STORE_VAULT_CREDENTIAL, "vlt_0", "vcrd_3", &e), 0);
        CHECK_EQ_INT(store_vault_delete(s, STORE_VAULT, NULL, "vlt_0", &e), 0);
        CHECK_EQ_INT(store_vault_get(s, STORE_VAULT_CREDENTIAL, "vlt_0", "vcrd_2", &got, NULL, &e), -ENOENT);
        CHECK_EQ_INT(store_vault_delete(s, STORE_VAULT, NULL, "vlt_0", &e), -ENOENT);
        store_close(s);
}

int main(void) {
        hull_error e = {0};
        if (!dlib_sqlite3_load(&e)) {
                printf("skip - sqlite: %s\n", e.msg);
                return 77;
        }
        char dir[] = "/tmp/hull-test-store-vault-XXXXXX", db[128];
        if (!mkdtemp(dir))
                return 1;
        char copy[160], from_pg[160];
        snprintf(db, sizeof(db), "%s/hull.db", dir);
        snprintf(copy, sizeof(copy), "%s/copy.db", dir);
        snprintf(from_pg, sizeof(from_pg), "%s/from-pg.db", dir);
        test_backend(db, copy);
        const char *pg = getenv("HULL_TEST_PG_URL");
        if (pg && *pg)
                test_backend(pg, from_pg);
        rm_rf_at(AT_FDCWD, dir);
        return test_done();
}
