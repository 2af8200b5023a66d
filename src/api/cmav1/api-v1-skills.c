/* api-v1-skills.c: the /v1 skills routes (skills-2025-10-02): skills and their versions created
 * from multipart uploads, listed in pages, read, deleted, and a version's files served as a zip;
 * over src/service/v1-skill.c and the store. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "macro.h"
#include "store-skill.h"
#include "v1-skill.h"

/* Did the request name the skills-2025-10-02 beta (the older SDKs' shapes and semantics)? */
static bool is_beta(http_req *r) {
        unsigned n = 0;
        const char *v = http_req_header(r, "anthropic-beta", &n);
        return n == 1 && v && strstr(v, V1_SKILLS_BETA) != NULL;
}

/* A skill (a reference taken) as r's SDK shows it. */
static json_t *view(http_req *r, json_t *stored) {
        json_t *o = v1_skill_view(stored, is_beta(r));
        json_decref(stored);
        return o;
}

static void skill_store_error(http_req *r, int err, const hull_error *e) {
        if (err == -ENOENT)
                v1a_failf(r, 404, "", "%s", e->msg[0] ? e->msg : "no such skill");
        else if (err == -ENOTEMPTY)
                v1a_failf(r, 400, "",
                          "%s: delete its versions first (DELETE /v1/skills/{skill_id}/versions/{version}), then the "
                          "skill",
                          e->msg);
        else if (err == -EINVAL)
                v1a_failf(r, 400, "", "%s", e->msg);
        else
                v1a_failf(r, 500, "", "the skill could not be read or stored: %s", e->msg);
}

static void upload(api_v1 *a, http_req *r, const char *skill_id) {
        static const char *const none[] = {NULL};
        query q;
        if (v1a_refuse_query(r, &q, none, NULL))
                return;
        unsigned n = 0;
        const char *ct = http_req_header(r, "content-type", &n);
        size_t len;
        const char *body = http_req_body(r, &len);
        json_t *obj = NULL;
        v1_err err = {0};
        if (v1_skill_upload(a->cfg.store, skill_id, n == 1 ? ct : NULL, (const uint8_t *) body, len, &obj, &err) < 0) {
                v1a_fail(r, &err);
                return;
        }
        v1a_answer_json(r, 200, skill_id ? obj : view(r, obj));
}

static void list(api_v1 *a, http_req *r, const char *versions_of) {
        static const char *const skills_args[] = {"limit", "page", "source", NULL};
        static const char *const versions_args[] = {"limit", "page", NULL};
        query q;
        uint64_t limit = SKILL_PAGE_DEFAULT;
        if (v1a_refuse_query(r, &q, versions_of ? versions_args : skills_args, "source") ||
            v1a_refuse_int(r, "limit", q.limit, 1, STORE_PAGE_MAX, &limit))
                return;
        bool anthropic_only = false;
        for (size_t i = 0; i < q.n_list; i++) {
                if (strcmp(q.list[i], "anthropic") == 0)
                        anthropic_only = true;
                else if (strcmp(q.list[i], "custom") != 0 && q.list[i][0]) {
                        v1a_failf(r, 400, "", "source must be custom or anthropic, got '%.40s'", q.list[i]);
                        return;
                }
        }
        store_page p = {0};
        hull_error e = {0};
        if (anthropic_only) { /* hull has no Anthropic-provided skills */
                v1a_answer_json(r, 200, json_pack("{s:[], s:n}", "data", "next_page"));
                return;
        }
        int rr = store_skill_list(a->cfg.store, versions_of, q.page && q.page[0] ? q.page : NULL, (unsigned) limit, &p,
                                  &e);
        if (rr < 0) {
                skill_store_error(r, rr, &e);
                return;
        }
        if (!versions_of) {
                size_t i;
                json_t *s;
                json_array_foreach(p.data, i, s) json_array_set_new(p.data, i, view(r, json_incref(s)));
        }
        v1a_answer_json(r, 200, v1a_page_json(&p, false));
        store_page_done(&p);
}

/* The {version} of the path; "latest" is the skill's latest version (into buf). NULL once r is
 * refused. */
static const char *version_of(api_v1 *a, http_req *r, char buf[static 32]) {
        const char *v = http_req_param(r, "version");
        if (!v || strcmp(v, "latest") != 0)
                return v;
        json_auto_t *sk = NULL;
        hull_error e = {0};
        int rr = store_skill_get(a->cfg.store, http_req_param(r, "id"), &sk, &e);
        const char *lv = rr >= 0 ? json_string_value(json_object_get(sk, "latest_version")) : NULL;
        if (rr < 0)
                skill_store_error(r, rr, &e);
        else if (!lv)
                v1a_failf(r, 404, "", "skill %.64s has no version left", http_req_param(r, "id"));
        else
                snprintf(buf, 32, "%.31s", lv);
        return rr < 0 || !lv ? NULL : buf;
}

static bool refuse_query_none(http_req *r) {
        static const char *const none[] = {NULL};
        query q;
        return v1a_refuse_query(r, &q, none, NULL);
}

static void skill_get(api_v1 *a, http_req *r) {
        json_t *obj = NULL;
        hull_error e = {0};
        if (refuse_query_none(r))
                return;
        int rr = store_skill_get(a->cfg.store, http_req_param(r, "id"), &obj, &e);
        if (rr < 0)
                skill_store_error(r, rr, &e);
        else
                v1a_answer_json(r, 200, view(r, obj));
}

static void skill_delete(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        hull_error e = {0};
        if (refuse_query_none(r))
                return;
        /* the beta asks for the versions to go first; the current API takes them with the skill */
        int rr = store_skill_delete(a->cfg.store, id, !is_beta(r), &e);
        if (rr < 0)
                skill_store_error(r, rr, &e);
        else
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", id, "type", "skill_deleted"));
}

static void version_get(api_v1 *a, http_req *r) {
        json_t *obj = NULL;
        hull_error e = {0};
        char buf[32];
        const char *version = refuse_query_none(r) ? NULL : version_of(a, r, buf);
        if (!version)
                return;
        int rr = store_skill_version_get(a->cfg.store, http_req_param(r, "id"), version, &obj, &e);
        if (rr < 0)
                skill_store_error(r, rr, &e);
        else
                v1a_answer_json(r, 200, obj);
}

static void version_delete(api_v1 *a, http_req *r) {
        const char *version = http_req_param(r, "version");
        char now[STORE_TIME_MAX];
        hull_error e = {0};
        if (refuse_query_none(r))
                return;
        store_now_rfc3339(now);
        int rr = store_skill_version_delete(a->cfg.store, http_req_param(r, "id"), version, now, NULL, &e);
        if (rr < 0)
                skill_store_error(r, rr, &e);
        else
                v1a_answer_json(r, 200, json_pack("{s:s, s:s}", "id", version, "type", "skill_version_deleted"));
}

static void version_content(api_v1 *a, http_req *r) {
        const char *id = http_req_param(r, "id");
        uint8_t *zip = NULL;
        size_t len = 0;
        hull_error e = {0};
        char buf[32];
        const char *version = refuse_query_none(r) ? NULL : version_of(a, r, buf);
        if (!version)
                return;
        int rr = store_skill_zip(a->cfg.store, id, version, &zip, &len, &e);
        if (rr < 0) {
                skill_store_error(r, rr, &e);
                return;
        }
        char disp[STORE_ID_MAX + 64];
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s-%s.zip\"", id, version);
        (void) http_answer_header(r, "content-disposition", disp);
        (void) http_answer(r, 200, "application/zip", (char *) zip, len);
}

bool v1a_refuse_skills(api_v1 *a, http_req *r, const json_t *skills) {
        size_t i;
        json_t *s;
        json_array_foreach(skills, i, s) {
                const char *type = json_string_value(json_object_get(s, "type"));
                const char *id = json_string_value(json_object_get(s, "skill_id"));
                const json_t *v = json_object_get(s, "version");
                char ver[32] = "";
                if (json_is_integer(v))
                        snprintf(ver, sizeof(ver), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                else if (json_is_string(v) && strcmp(json_string_value(v), "latest") != 0)
                        snprintf(ver, sizeof(ver), "%.31s", json_string_value(v));
                if (type && strcmp(type, "anthropic") == 0) {
                        v1a_failf(r, 400, "skill_not_found",
                                  "skills[%zu]: hull serves no Anthropic-provided skills ('%.64s'): upload the skill "
                                  "(POST /v1/skills, or hull skill add) and name it as {\"type\": \"custom\", "
                                  "\"skill_id\": ...}",
                                  i, id ? id : "");
                        return true;
                }
                json_auto_t *got = NULL;
                hull_error e = {0};
                int rr = ver[0] ? store_skill_version_get(a->cfg.store, id, ver, &got, &e)
                                : store_skill_get(a->cfg.store, id, &got, &e);
                if (rr == -ENOENT || rr == -EINVAL) {
                        v1a_failf(r, 400, "skill_not_found", "skills[%zu]: %s", i, e.msg);
                        return true;
                }
                if (rr < 0) {
                        v1a_failf(r, 500, "", "skills[%zu]: the skill could not be read: %s", i, e.msg);
                        return true;
                }
        }
        return false;
}

#define HANDLER(name, call)                                                                                            \
        void v1a_##name(http_req *r) {                                                                                 \
                api_v1 *a = http_req_data(r);                                                                          \
                call;                                                                                                  \
        }
HANDLER(skill_create, upload(a, r, NULL))
HANDLER(skill_list, list(a, r, NULL))
HANDLER(skill_get, skill_get(a, r))
HANDLER(skill_delete, skill_delete(a, r))
HANDLER(skill_version_create, upload(a, r, http_req_param(r, "id")))
HANDLER(skill_version_list, list(a, r, http_req_param(r, "id")))
HANDLER(skill_version_get, version_get(a, r))
HANDLER(skill_version_delete, version_delete(a, r))
HANDLER(skill_version_content, version_content(a, r))
