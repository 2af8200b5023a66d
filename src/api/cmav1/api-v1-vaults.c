/* api-v1-vaults.c: the /v1 vaults and their credentials (cma-api-more.md §3) over the vault
 * engine (v1-vault.h): create, list (PageCursor), retrieve, update, delete, archive, and a
 * credential's mcp_oauth_validate. No answer holds a secret: the objects v1-vault.c makes have
 * none. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "parse-util.h"
#include "utf8.h"
#include "v1-vault.h"

static const char *const list_args[] = {"limit", "page", "include_archived", NULL};

/* The credential's id from the path: text that could be an id, else a 404 (true once refused). */
static bool refuse_cred(http_req *r, const char **ret) {
        const char *c = http_req_param(r, "cred");
        bool ok = c && c[0] && strlen(c) < STORE_ID_MAX && utf8_is_valid(c, strlen(c));
        for (const char *p = c; ok && *p; p++)
                ok = (unsigned char) *p >= 0x20 && *p != 0x7f;
        if (!ok) {
                v1a_failf(r, 404, "credential_not_found", "no credential with that id: the id in the path is not one");
                return true;
        }
        *ret = c;
        return false;
}

/* The vault's id from the path: one no vault can have (too long for an id) is a 404 here. */
static bool refuse_vault(http_req *r, const char **ret) {
        const char *v = http_req_param(r, "id");
        if (!v || !v[0] || strlen(v) >= STORE_ID_MAX) {
                v1a_failf(r, 404, "vault_not_found", "no vault with that id (GET /v1/vaults lists them)");
                return true;
        }
        *ret = v;
        return false;
}

static void answer(http_req *r, int rr, const v1_err *err, json_t *obj) {
        if (rr < 0) {
                v1_err oom = {.status = 500};
                snprintf(oom.msg, sizeof(oom.msg), "out of memory");
                v1a_fail(r, err->status ? err : &oom);
                json_decref(obj);
                return;
        }
        v1a_answer_json(r, 200, obj);
}

/* limit (clamped to STORE_PAGE_MAX, as the SDK's callers may ask for more), page, include_archived. */
static void list(api_v1 *a, http_req *r, store_vkind k) {
        const char *vault_id = NULL;
        if (k == STORE_VAULT_CREDENTIAL && refuse_vault(r, &vault_id))
                return;
        query q;
        uint64_t limit = STORE_PAGE_DEFAULT;
        bool arch = false;
        if (v1a_refuse_query(r, &q, list_args, NULL) || v1a_refuse_int(r, "limit", q.limit, 1, UINT32_MAX, &limit) ||
            v1a_refuse_bool(r, "include_archived", q.include_archived, &arch))
                return;
        store_list_q lq = {.limit = (unsigned) (limit > STORE_PAGE_MAX ? STORE_PAGE_MAX : limit),
                           .page = q.page && q.page[0] ? q.page : NULL,
                           .include_archived = arch};
        store_page p = {0};
        hull_error e = {0};
        int rr = store_vault_list(a->cfg.store, k, vault_id, &lq, &p, &e);
        if (rr == -ENOENT)
                v1a_failf(r, 404, "vault_not_found", "no vault %.64s (GET /v1/vaults lists them)", vault_id);
        else if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "page", NULL);
        else
                v1a_answer_json(r, 200, v1a_page_json(&p, false));
        store_page_done(&p);
}

typedef enum op { OP_CREATE, OP_GET, OP_UPDATE, OP_DELETE, OP_ARCHIVE, OP_VALIDATE } op;

static void vault(api_v1 *a, http_req *r, op o) {
        const char *id = NULL;
        if (o != OP_CREATE && refuse_vault(r, &id))
                return;
        json_t *obj = NULL;
        v1_err err = {0};
        int rr = 0;
        json_auto_t *body = NULL;
        if (o == OP_CREATE || o == OP_UPDATE || o == OP_ARCHIVE) {
                if (!(body = v1a_body_object(r, o == OP_ARCHIVE)))
                        return;
                if (o == OP_ARCHIVE && json_object_size(body) > 0) {
                        v1a_failf(r, 400, "", "archive takes no body");
                        return;
                }
        }
        switch (o) {
        case OP_CREATE:
                rr = v1_vault_create(a->cfg.store, body, &obj, &err);
                break;
        case OP_GET: {
                hull_error e = {0};
                rr = store_vault_get(a->cfg.store, STORE_VAULT, NULL, id, &obj, NULL, &e);
                if (rr < 0) {
                        v1a_failf(r, rr == -ENOENT ? 404 : 500, rr == -ENOENT ? "vault_not_found" : "", "%s",
                                  rr == -ENOENT ? "no such vault (GET /v1/vaults lists them)" : e.msg);
                        return;
                }
                break;
        }
        case OP_UPDATE:
                rr = v1_vault_update(a->cfg.store, id, body, &obj, &err);
                break;
        case OP_DELETE:
                rr = v1_vault_delete(a->cfg.store, id, &err);
                obj = rr < 0 ? NULL : json_pack("{s:s, s:s}", "id", id, "type", "vault_deleted");
                break;
        case OP_ARCHIVE:
                rr = v1_vault_archive(a->cfg.store, id, &obj, &err);
                break;
        case OP_VALIDATE:
                break;
        }
        answer(r, rr, &err, obj);
}

static void credential(api_v1 *a, http_req *r, op o) {
        const char *vid = NULL, *cid = NULL;
        if (refuse_vault(r, &vid) || (o != OP_CREATE && refuse_cred(r, &cid)))
                return;
        json_t *obj = NULL;
        v1_err err = {0};
        int rr = 0;
        json_auto_t *body = NULL;
        if (o == OP_CREATE || o == OP_UPDATE || o == OP_ARCHIVE || o == OP_VALIDATE) {
                if (!(body = v1a_body_object(r, o == OP_ARCHIVE || o == OP_VALIDATE)))
                        return;
                if ((o == OP_ARCHIVE || o == OP_VALIDATE) && json_object_size(body) > 0) {
                        v1a_failf(r, 400, "", "%s takes no body", o == OP_ARCHIVE ? "archive" : "mcp_oauth_validate");
                        return;
                }
        }
        switch (o) {
        case OP_CREATE:
                rr = v1_credential_create(a->cfg.store, vid, body, &obj, &err);
                break;
        case OP_GET: {
                hull_error e = {0};
                rr = store_vault_get(a->cfg.store, STORE_VAULT_CREDENTIAL, vid, cid, &obj, NULL, &e);
                if (rr < 0) {
                        v1a_failf(r, rr == -ENOENT ? 404 : 500, rr == -ENOENT ? "credential_not_found" : "",
                                  "%s%.64s%s%.64s", rr == -ENOENT ? "vault " : "", rr == -ENOENT ? vid : e.msg,
                                  rr == -ENOENT ? " has no credential " : "", rr == -ENOENT ? cid : "");
                        return;
                }
                break;
        }
        case OP_UPDATE:
                rr = v1_credential_update(a->cfg.store, vid, cid, body, &obj, &err);
                break;
        case OP_DELETE:
                rr = v1_credential_delete(a->cfg.store, vid, cid, &err);
                obj = rr < 0 ? NULL : json_pack("{s:s, s:s}", "id", cid, "type", "vault_credential_deleted");
                break;
        case OP_ARCHIVE:
                rr = v1_credential_archive(a->cfg.store, vid, cid, &obj, &err);
                break;
        case OP_VALIDATE:
                rr = v1_credential_validate(a->cfg.store, v1_engine_settings(a->cfg.engine), vid, cid, &obj, &err);
                break;
        }
        answer(r, rr, &err, obj);
}

#define HANDLER(name, call)                                                                                            \
        void v1a_##name(http_req *r) {                                                                                 \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(vault_create, vault(a, r, OP_CREATE))
HANDLER(vault_list, list(a, r, STORE_VAULT))
HANDLER(vault_get, vault(a, r, OP_GET))
HANDLER(vault_update, vault(a, r, OP_UPDATE))
HANDLER(vault_delete, vault(a, r, OP_DELETE))
HANDLER(vault_archive, vault(a, r, OP_ARCHIVE))
HANDLER(credential_create, credential(a, r, OP_CREATE))
HANDLER(credential_list, list(a, r, STORE_VAULT_CREDENTIAL))
HANDLER(credential_get, credential(a, r, OP_GET))
HANDLER(credential_update, credential(a, r, OP_UPDATE))
HANDLER(credential_delete, credential(a, r, OP_DELETE))
HANDLER(credential_archive, credential(a, r, OP_ARCHIVE))
HANDLER(credential_validate, credential(a, r, OP_VALIDATE))
