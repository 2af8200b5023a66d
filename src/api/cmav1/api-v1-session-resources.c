/* api-v1-session-resources.c: /v1/sessions/{id}/resources (the SDK's
 * client.beta.sessions.resources: add, list, retrieve, update, delete) over the session's object in
 * the engine (v1_engine_edit) and its resource directory (v1-resources.h): an added file appears
 * read-only in the session's sandbox at its mount path, a deleted one goes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "parse-util.h"
#include "v1-repo.h"
#include "v1-resources.h"

/* The session's resource directory (MNT_ROOT/<id>), "" when resources are not mounted. */
static void dir_of(api_v1 *a, const char *sid, char *buf, size_t size) {
        buf[0] = '\0';
        if (a->cfg.mnt_root)
                snprintf(buf, size, "%s/%s", a->cfg.mnt_root, sid);
}

static json_t *find(json_t *session, const char *rid, size_t *ret_i) {
        size_t i;
        json_t *res;
        json_array_foreach(json_object_get(session, "resources"), i, res) {
                const char *id = json_string_value(json_object_get(res, "id"));
                if (id && strcmp(id, rid) == 0) {
                        if (ret_i)
                                *ret_i = i;
                        return res;
                }
        }
        return NULL;
}

typedef struct add_ctx {
        json_t *made;
} add_ctx;

static int refuse_archived(const json_t *session, v1_err *err) {
        if (json_is_string(json_object_get(session, "archived_at")))
                return v1_fail(err, 400, "session_archived", "the session is archived: its resources cannot change");
        return 0;
}

static int add_edit(json_t *session, void *ud, v1_err *err) {
        add_ctx *c = ud;
        if (refuse_archived(session, err) < 0)
                return -EINVAL;
        json_t *list = json_object_get(session, "resources");
        if (!json_is_array(list)) {
                list = json_array();
                json_object_set_new(session, "resources", list);
        }
        size_t i;
        json_t *other;
        json_array_foreach(list, i, other) {
                if (json_equal(json_object_get(other, "mount_path"), json_object_get(c->made, "mount_path")))
                        return v1_fail(err, 409, NULL, "mount_path: resource %s is mounted there already",
                                       json_string_value(json_object_get(other, "id")));
        }
        if (json_array_size(list) >= V1_RESOURCES_MAX)
                return v1_fail(err, 400, NULL, "the session has %u resources, the most it may", V1_RESOURCES_MAX);
        return json_array_append(list, c->made) < 0 ? v1_fail(err, 500, "", "out of memory") : 0;
}

static void resource_add(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *sid = http_req_param(r, "id");
        json_auto_t *body = v1a_body_object(r, false);
        if (!body)
                return;
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        add_ctx c = {0};
        v1_err err = {0};
        json_auto_t *session = NULL;
        if (v1a_refuse_session(a, r, sid))
                return;
        if (v1_resource_make(a->cfg.files, v1_engine_settings(a->cfg.engine), a->cfg.mnt_root, body, "resource", now,
                             &c.made, &err) < 0 ||
            v1_engine_edit(a->cfg.engine, sid, add_edit, &c, &session, &err) < 0) {
                if (c.made)
                        v1_resource_unplace(a->cfg.mnt_root, "", c.made, true);
                json_decref(c.made);
                v1a_fail(r, &err);
                return;
        }
        char dir[4200];
        dir_of(a, sid, dir, sizeof(dir));
        hull_error e = {0};
        if (dir[0] && v1_resources_materialize(a->cfg.files, a->cfg.mnt_root, sid, NULL, dir, sizeof(dir), &e) >= 0 &&
            v1_resource_place(a->cfg.files, a->cfg.mnt_root, dir, c.made, &e) < 0)
                http_req_note(r, "place_error=\"%s\"", e.msg); /* placed again when the sandbox is made */
        ss_session *box = NULL; /* a checkout below /workspace/ goes into an open sandbox now */
        (void) v1_engine_sandbox(a->cfg.engine, sid, &box);
        if (box) {
                json_auto_t *one = json_pack("[O]", c.made);
                hull_error we = {0};
                if (one && v1_repo_workspace(a->cfg.mnt_root, v1_engine_ss(a->cfg.engine), box, one, &we) < 0)
                        http_req_note(r, "place_error=\"%s\"", we.msg); /* placed when the sandbox is remade */
                ss_unref(v1_engine_ss(a->cfg.engine), box);
        }
        v1a_answer_json(r, 200, c.made);
}

/* The session's object (404 when none); NULL once r is refused. */
static json_t *session_of(api_v1 *a, http_req *r) {
        const char *sid = http_req_param(r, "id");
        json_t *obj = NULL;
        hull_error e = {0};
        int rr = store_get(a->cfg.store, STORE_SESSION, sid, 0, &obj, &e);
        if (rr == -ENOENT)
                v1a_failf(r, 404, "session_not_found", "no session %.64s (GET /v1/sessions lists them)", sid);
        else if (rr < 0)
                v1a_answer_store_error(r, rr, &e, "session", sid);
        return rr < 0 ? NULL : obj;
}

static void resource_list(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *limit_s = http_req_query(r, "limit"), *page = http_req_query(r, "page");
        uint64_t limit = STORE_PAGE_DEFAULT, start = 0;
        if (limit_s && limit_s[0] && parse_uint64(limit_s, 1, UINT64_MAX, &limit) < 0) {
                v1a_failf(r, 400, "", "limit must be a positive integer, got '%.40s'", limit_s);
                return;
        }
        if (page && page[0] && (strncmp(page, "at_", 3) != 0 || parse_uint64(page + 3, 0, UINT32_MAX, &start) < 0)) {
                v1a_failf(r, 400, "", "page: '%.40s' is not a cursor this list gave", page);
                return;
        }
        limit = MIN(limit, (uint64_t) STORE_PAGE_MAX);
        json_auto_t *session = session_of(a, r);
        if (!session)
                return;
        json_t *all = json_object_get(session, "resources");
        json_t *data = json_array();
        for (size_t i = (size_t) start; data && i < json_array_size(all) && json_array_size(data) < limit; i++)
                json_array_append(data, json_array_get(all, i));
        size_t next = (size_t) start + json_array_size(data);
        char cursor[32];
        snprintf(cursor, sizeof(cursor), "at_%zu", next);
        v1a_answer_json(r, 200,
                        json_pack("{s:o, s:o}", "data", data, "next_page",
                                  next < json_array_size(all) ? json_string(cursor) : json_null()));
}

static void resource_get(http_req *r) {
        api_v1 *a = http_req_data(r);
        json_auto_t *session = session_of(a, r);
        if (!session)
                return;
        const char *rid = http_req_param(r, "rid");
        json_t *res = find(session, rid, NULL);
        if (!res)
                v1a_failf(r, 404, "resource_not_found", "session %.64s has no resource %.64s", http_req_param(r, "id"),
                          rid);
        else
                v1a_answer_json(r, 200, json_incref(res));
}

typedef struct upd_ctx {
        const char *rid, *now;
        json_t *res;
} upd_ctx;

static int upd_edit(json_t *session, void *ud, v1_err *err) {
        upd_ctx *c = ud;
        if (refuse_archived(session, err) < 0)
                return -EINVAL;
        json_t *res = find(session, c->rid, NULL);
        if (!res)
                return v1_fail(err, 404, "resource_not_found", "the session has no resource %.64s", c->rid);
        json_object_set_new(res, "updated_at", json_string(c->now));
        c->res = json_incref(res);
        return 0;
}

static void resource_update(http_req *r) {
        api_v1 *a = http_req_data(r);
        json_auto_t *body = v1a_body_object(r, true);
        if (!body)
                return;
        json_auto_t *session = session_of(a, r);
        if (!session)
                return;
        const char *rid = http_req_param(r, "rid");
        json_t *res = find(session, rid, NULL);
        const json_t *tok = json_object_get(body, "authorization_token");
        if (res && strcmp(json_string_value(json_object_get(res, "type")) ?: "", "github_repository") == 0) {
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                upd_ctx c = {.rid = rid, .now = now};
                v1_err err = {0};
                if (json_object_size(body) != 1 || !json_is_string(tok) || !json_string_value(tok)[0])
                        v1a_failf(r, 400, "", "authorization_token: required, the repository's new token (a string)");
                else if (refuse_archived(session, &err) < 0 ||
                         v1_repo_set_token(a->cfg.mnt_root, res, json_string_value(tok), &err) < 0 ||
                         v1_engine_edit(a->cfg.engine, http_req_param(r, "id"), upd_edit, &c, NULL, &err) < 0)
                        v1a_fail(r, &err);
                else
                        v1a_answer_json(r, 200, c.res);
                return;
        }
        if (!res)
                v1a_failf(r, 404, "resource_not_found", "session %.64s has no resource %.64s", http_req_param(r, "id"),
                          rid);
        else
                v1a_failf(r, 400, "",
                          "resource %.64s is a %s resource: only a github_repository's authorization_token can be "
                          "updated",
                          rid, json_string_value(json_object_get(res, "type")));
}

typedef struct del_ctx {
        const char *rid;
        json_t *gone;
} del_ctx;

static int del_edit(json_t *session, void *ud, v1_err *err) {
        del_ctx *c = ud;
        size_t i;
        if (refuse_archived(session, err) < 0)
                return -EINVAL;
        json_t *res = find(session, c->rid, &i);
        if (!res)
                return v1_fail(err, 404, "resource_not_found", "the session has no resource %.64s", c->rid);
        c->gone = json_incref(res);
        json_array_remove(json_object_get(session, "resources"), i);
        return 0;
}

static void resource_delete(http_req *r) {
        api_v1 *a = http_req_data(r);
        const char *sid = http_req_param(r, "id"), *rid = http_req_param(r, "rid");
        del_ctx c = {.rid = rid};
        v1_err err = {0};
        if (v1a_refuse_session(a, r, sid))
                return;
        if (v1_engine_edit(a->cfg.engine, sid, del_edit, &c, NULL, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        char dir[4200];
        dir_of(a, sid, dir, sizeof(dir));
        v1_resource_unplace(a->cfg.mnt_root, dir, c.gone, true);
        json_decref(c.gone);
        v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", rid, "type", "session_resource_deleted"));
}

const http_route v1a_resource_routes[] = {
        {.methods = HTTP_POST,
         .pattern = "/v1/sessions/{id}/resources",
         .scope = "v1",
         .body_max = V1_BODY_MAX,
         .head = v1a_head_resources,
         .handler = resource_add},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/resources",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = resource_list},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/resources/{rid}",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = resource_get},
        {.methods = HTTP_POST,
         .pattern = "/v1/sessions/{id}/resources/{rid}",
         .scope = "v1",
         .body_max = V1_BODY_MAX,
         .head = v1a_head_resources,
         .handler = resource_update},
        {.methods = HTTP_DELETE,
         .pattern = "/v1/sessions/{id}/resources/{rid}",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = resource_delete},
};
const size_t v1a_n_resource_routes = ELEMENTSOF(v1a_resource_routes);
