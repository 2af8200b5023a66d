/* store-vault.c: the front of the vaults and their credentials (store.h): every argument checked,
 * the columns read from the object, then the backend's store_vault_ops. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store-backend.h"

static const char *vkind_name(store_vkind k) {
        return k == STORE_VAULT ? "vault" : "vault credential";
}

static int vkind_check(store *s, store_vkind k, hull_error *e) {
        if (k != STORE_VAULT && k != STORE_VAULT_CREDENTIAL)
                return hull_fail(e, -EINVAL, "store: not a vault kind");
        if (!s->ops->vault)
                return hull_fail(e, -ENOSYS, "store: the %s backend keeps no vaults", s->ops->name);
        return 0;
}

int store_vault_put(store *s, store_vkind k, const json_t *obj, const char *sealed, const char *key_id, bool create,
                    hull_error *e) {
        int r = vkind_check(s, k, e);
        if (r < 0)
                return r;
        const char *what = vkind_name(k);
        if (!json_is_object(obj))
                return hull_fail(e, -EINVAL, "store: a %s must be a JSON object", what);
        store_vrow row = {.id = json_string_value(json_object_get(obj, "id"))};
        if ((r = store_id_check(what, row.id, e)) < 0)
                return r;
        if (store_time_ms(json_string_value(json_object_get(obj, "created_at")), &row.created_ms) < 0)
                return hull_fail(e, -EINVAL, "store: %s %s: \"created_at\" must be an RFC 3339 time", what, row.id);
        json_t *a = json_object_get(obj, "archived_at");
        if (a && !json_is_null(a) && !json_is_string(a))
                return hull_fail(e, -EINVAL, "store: %s %s: \"archived_at\" must be null or a string", what, row.id);
        row.archived = json_is_string(a);
        if (k == STORE_VAULT_CREDENTIAL) {
                row.vault_id = json_string_value(json_object_get(obj, "vault_id"));
                row.url = json_string_value(json_object_get(json_object_get(obj, "auth"), "mcp_server_url"));
                row.sealed = sealed;
                row.key_id = key_id;
                if ((r = store_id_check("vault", row.vault_id, e)) < 0)
                        return r;
                if (!row.url || !sealed || !key_id || !key_id[0])
                        return hull_fail(
                                e, -EINVAL,
                                "store: credential %s needs auth.mcp_server_url, its sealed secrets and a key id",
                                row.id);
        }
        _cleanup_free_ char *body = NULL;
        if ((r = store_dump(obj, what, &body, e)) < 0)
                return r;
        row.body = body;
        return s->ops->vault->put(s, k, &row, create, e);
}

int store_vault_get(store *s, store_vkind k, const char *vault_id, const char *id, json_t **ret, char **ret_sealed,
                    hull_error *e) {
        int r = vkind_check(s, k, e);
        if (r < 0 || (r = store_id_check(vkind_name(k), id, e)) < 0)
                return r;
        if (k == STORE_VAULT_CREDENTIAL && (r = store_id_check("vault", vault_id, e)) < 0)
                return r;
        if (ret_sealed)
                *ret_sealed = NULL;
        return s->ops->vault->get(s, k, k == STORE_VAULT ? NULL : vault_id, id, ret,
                                  k == STORE_VAULT ? NULL : ret_sealed, e);
}

int store_vault_delete(store *s, store_vkind k, const char *vault_id, const char *id, hull_error *e) {
        int r = vkind_check(s, k, e);
        if (r < 0 || (r = store_id_check(vkind_name(k), id, e)) < 0)
                return r;
        if (k == STORE_VAULT_CREDENTIAL && (r = store_id_check("vault", vault_id, e)) < 0)
                return r;
        return s->ops->vault->remove(s, k, k == STORE_VAULT ? NULL : vault_id, id, e);
}

int store_vault_list(store *s, store_vkind k, const char *vault_id, const store_list_q *q, store_page *ret,
                     hull_error *e) {
        unsigned limit = 0;
        int r = vkind_check(s, k, e);
        if (r < 0 || (r = store_limit_check(q->limit, STORE_PAGE_MAX, &limit, e)) < 0)
                return r;
        if (k == STORE_VAULT_CREDENTIAL && (r = store_id_check("vault", vault_id, e)) < 0)
                return r;
        store_listing l = {.of = STORE_LIST_OBJECTS,
                           .tag = k == STORE_VAULT ? 'V' : 'C',
                           .with_id = true,
                           .what = vkind_name(k),
                           .include_archived = q->include_archived};
        /* the cursor's digest: FNV-1a of what selects the rows */
        uint32_t h = 2166136261U;
        char head[2] = {l.tag, q->include_archived ? '1' : '0'};
        for (size_t i = 0; i < sizeof(head); i++)
                h = (h ^ (uint8_t) head[i]) * 16777619U;
        for (const char *p = k == STORE_VAULT ? "" : vault_id; *p; p++)
                h = (h ^ (uint8_t) *p) * 16777619U;
        l.digest = h;
        *ret = (store_page){0};
        return s->ops->vault->list(s, k, k == STORE_VAULT ? NULL : vault_id, &l, q->page, limit, ret, e);
}

int store_vault_stale(store *s, const char *key_id, json_t **ret, hull_error *e) {
        int r = vkind_check(s, STORE_VAULT_CREDENTIAL, e);
        if (r < 0)
                return r;
        if (!key_id || !key_id[0])
                return hull_fail(e, -EINVAL, "store: no key id");
        return s->ops->vault->stale(s, key_id, ret, e);
}
