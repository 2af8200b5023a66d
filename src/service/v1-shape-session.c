/* v1-shape-session.c: a session's create body parsed and shaped (the agent it names, with its
 * overrides, the environment, resources, budget, initial events) and its update bodies (see
 * v1-shape.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "v1-shape-internal.h"

/* ---- sessions ---- */

static const char *const SESSION_FIELDS[] = {"agent",     "environment_id", "title",          "metadata", "resources",
                                             "vault_ids", "budget",         "initial_events", NULL};
static const char *const OVERRIDE_FIELDS[] = {"type",  "id",          "version", "model", "system",
                                              "tools", "mcp_servers", "skills",  NULL};

static int parse_budget(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "max_list_cost", NULL};
        static const char *const ckeys[] = {"amount", "currency", NULL};
        static const char *const types[] = {"limit", NULL};
        static const char *const currencies[] = {"USD", NULL};
        if (json_is_null(v)) {
                *ret = json_null();
                return 0;
        }
        const char *type, *amount, *cur;
        v1_path p;
        v1_path_key(p, path, "max_list_cost");
        int r;
        if ((r = v1_check_object(v, path, keys, e)) < 0 ||
            (r = v1_get_enum(v, "type", path, types, NULL, &type, e)) < 0 ||
            (r = v1_check_object(json_object_get(v, "max_list_cost"), p, ckeys, e)) < 0 ||
            (r = v1_get_str(json_object_get(v, "max_list_cost"), "amount", p, 32, F_REQUIRED | F_NONEMPTY, &amount,
                            e)) < 0 ||
            (r = v1_get_enum(json_object_get(v, "max_list_cost"), "currency", p, currencies, NULL, &cur, e)) < 0)
                return r;
        size_t n = strlen(amount);
        bool digits = n <= V1_BUDGET_AMOUNT_DIGITS_MAX;
        for (size_t i = 0; digits && i < n; i++)
                digits = amount[i] >= '0' && amount[i] <= '9';
        if (!digits || (n > 1 && amount[0] == '0'))
                return v1_fail(e, 400, NULL,
                               "%s.amount: '%.40s' is not an amount: a whole number of cents as a string, at most %u "
                               "digits, no sign, no decimal point, no leading zeros (\"2500\" is $25.00)",
                               p, amount, V1_BUDGET_AMOUNT_DIGITS_MAX);
        *ret = json_pack("{s:s, s:{s:s, s:s}}", "type", type, "max_list_cost", "amount", amount, "currency", cur);
        return *ret ? 0 : -ENOMEM;
}

/* A memory_store resource: {type, memory_store_id, access? (read_write, the default, or
 * read_only), instructions?}; resolved against the store at create (v1_memory_resources_resolve). */
static int memory_store_resource(const json_t *res, const char *p, v1_err *e) {
        static const char *const keys[] = {"type", "memory_store_id", "access", "instructions", NULL};
        static const char *const access[] = {"read_write", "read_only", NULL};
        const char *id, *acc, *ins;
        int r = v1_check_object(res, p, keys, e);
        if (r < 0 ||
            (r = v1_get_str(res, "memory_store_id", p, STORE_ID_MAX - 1, F_REQUIRED | F_NONEMPTY, &id, e)) < 0 ||
            (r = v1_get_enum(res, "access", p, access, "read_write", &acc, e)) < 0)
                return r;
        return v1_get_str(res, "instructions", p, MEMORY_INSTRUCTIONS_MAX, F_NULLABLE, &ins, e);
}

static int parse_resources(const json_t *v, const char *path, json_t **ret, v1_err *e) {
        static const char *const keys[] = {"type", "file_id", "mount_path", NULL};
        int r = v1_want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (json_array_size(v) > V1_RESOURCES_MAX)
                return v1_fail(e, 400, NULL, "%s: %zu resources, at most %u", path, json_array_size(v),
                               V1_RESOURCES_MAX);
        size_t i;
        json_t *res;
        json_array_foreach(v, i, res) {
                v1_path p;
                const char *type, *fid, *mp;
                v1_path_idx(p, path, i);
                if ((r = v1_want(res, JSON_OBJECT, p, "an object", e)) < 0 ||
                    (r = v1_get_str(res, "type", p, V1_NAME_MAX, F_REQUIRED, &type, e)) < 0)
                        return r;
                if (eq(type, "memory_store")) { /* memory stores (v1-memory-mount.c) */
                        if ((r = memory_store_resource(res, p, e)) < 0)
                                return r;
                        continue;
                }
                if (eq(type, "github_repository")) /* checked and cloned by v1_resource_make (v1-repo.h) */
                        continue;
                if (!eq(type, "file"))
                        return v1_fail(e, 400, NULL,
                                       "%s.type: unknown resource type '%.64s' (one of file, github_repository, "
                                       "memory_store)",
                                       p, type);
                if ((r = v1_check_object(res, p, keys, e)) < 0 ||
                    (r = v1_get_str(res, "file_id", p, V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &fid, e)) < 0 ||
                    (r = v1_get_str(res, "mount_path", p, V1_NAME_MAX, F_NULLABLE | F_NONEMPTY, &mp, e)) < 0)
                        return r;
        }
        *ret = json_deep_copy(v);
        return *ret ? 0 : -ENOMEM;
}

/* At session create: vault ids (strings; that each names a vault is the caller's to check,
 * v1-vault.h); at update (create false) only [] or null, as the API says. */
static int parse_vault_ids(const json_t *v, const char *path, bool create, v1_err *e) {
        int r = json_is_null(v) ? 0 : v1_want(v, JSON_ARRAY, path, "an array", e);
        if (r < 0)
                return r;
        if (!create && json_array_size(v) > 0)
                return v1_fail(e, 400, NULL, "%s: cannot change after the session is created (make a new session)",
                               path);
        if (json_array_size(v) > VAULT_IDS_MAX)
                return v1_fail(e, 400, NULL, "%s: more than %u vaults", path, VAULT_IDS_MAX);
        size_t i;
        json_t *id;
        json_array_foreach(v, i, id) {
                v1_path p;
                v1_path_idx(p, path, i);
                if (!json_is_string(id) || json_string_length(id) == 0 || json_string_length(id) >= STORE_ID_MAX)
                        return v1_fail(e, 400, NULL, "%s: must be a vault id (a string such as vlt_...)", p);
        }
        return 0;
}

static int parse_title(const json_t *v, json_t **ret, v1_err *e) {
        if (!json_is_null(v)) {
                int r = v1_want(v, JSON_STRING, "title", "a string or null", e);
                if (r < 0)
                        return r;
                if (json_string_length(v) > V1_NAME_MAX)
                        return v1_fail(e, 400, NULL, "title: too long (%zu bytes, at most %u)", json_string_length(v),
                                       V1_NAME_MAX);
        }
        *ret = v1_str_or_null(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

int v1_session_parse(const json_t *body, v1_session_req *ret, v1_err *e) {
        static const char *const ref_fields[] = {"type", "id", "version", NULL};
        static const char *const agent_types[] = {"agent", "agent_with_overrides", NULL};
        int r = v1_check_object(body, "", SESSION_FIELDS, e);
        if (r < 0)
                return r;
        v1_session_req req = {0};
        const json_t *a = json_object_get(body, "agent");
        if (!a)
                return v1_fail(e, 400, NULL, "agent: required (an agent id, or {\"type\":\"agent\",\"id\":...})");
        if (json_is_string(a)) {
                if (json_string_length(a) == 0 || json_string_length(a) > V1_NAME_MAX ||
                    strlen(json_string_value(a)) != json_string_length(a))
                        return v1_fail(e, 400, NULL, "agent: an agent id of 1 to %u bytes", V1_NAME_MAX);
                req.agent_id = json_string_value(a);
        } else {
                const char *type;
                if ((r = v1_want(a, JSON_OBJECT, "agent", "an agent id or an object", e)) < 0 ||
                    (r = v1_get_enum(a, "type", "agent", agent_types, NULL, &type, e)) < 0 ||
                    (r = v1_check_object(a, "agent", eq(type, "agent") ? ref_fields : OVERRIDE_FIELDS, e)) < 0 ||
                    (r = v1_get_str(a, "id", "agent", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &req.agent_id, e)) < 0)
                        return r;
                const json_t *ver = json_object_get(a, "version");
                if (ver && !json_is_null(ver)) {
                        if (!json_is_integer(ver) || json_integer_value(ver) < 1)
                                return v1_fail(e, 400, NULL, "agent.version: must be an integer >= 1");
                        req.agent_version = json_integer_value(ver);
                }
                if (eq(type, "agent_with_overrides")) {
                        /* Check the overrides now, on a scratch agent. */
                        json_auto_t *scratch = json_pack("{s:[], s:[]}", "tools", "mcp_servers");
                        const char *k;
                        json_t *v;
                        if (!scratch)
                                return -ENOMEM;
                        json_object_foreach((json_t *) a, k,
                                            v) if (!eq(k, "type") && !eq(k, "id") && !eq(k, "version") &&
                                                   (r = v1_agent_set(scratch, k, v, "agent", e)) < 0) return r;
                        req.overrides = a;
                }
        }
        if ((r = v1_get_str(body, "environment_id", "", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &req.environment_id, e)) <
            0)
                return r;
        const json_t *v;
        json_auto_t *scratch = NULL;
        if ((v = json_object_get(body, "title")) && (r = parse_title(v, &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v) &&
            (r = v1_metadata_patch(NULL, v, "metadata", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "resources")) && !json_is_null(v) &&
            (r = parse_resources(v, "resources", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "vault_ids")) && (r = parse_vault_ids(v, "vault_ids", true, e)) < 0)
                return r;
        if ((v = json_object_get(body, "budget")) && (r = parse_budget(v, "budget", &scratch, e)) < 0)
                return r;
        json_decref(TAKE_PTR(scratch));
        if ((v = json_object_get(body, "initial_events")) && !json_is_null(v)) {
                if ((r = v1_events_parse_array(v, "initial_events", true, &scratch, e)) < 0)
                        return r;
                if (json_array_size(v) > 0)
                        req.initial_events = v;
        }
        *ret = req;
        return 0;
}

/* The agent snapshot of a session: the agent less its times and metadata, with overrides applied. */
static int session_agent(const json_t *agent, const json_t *overrides, json_t **ret, v1_err *e) {
        json_auto_t *s = json_deep_copy(agent);
        if (!s)
                return -ENOMEM;
        json_object_del(s, "created_at");
        json_object_del(s, "updated_at");
        json_object_del(s, "archived_at");
        json_object_del(s, "metadata");
        if (json_object_set_new(s, "type", json_string("agent")) < 0)
                return -ENOMEM;
        const char *k;
        json_t *v;
        int r;
        json_object_foreach((json_t *) overrides, k, v) if (!eq(k, "type") && !eq(k, "id") && !eq(k, "version") &&
                                                            (r = v1_agent_set(s, k, v, "agent", e)) < 0) return r;
        r = v1_agent_check_mcp(json_object_get(s, "tools"), json_object_get(s, "mcp_servers"), "agent", e);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int v1_session_create(const json_t *body, const v1_session_req *req, const json_t *agent, const char *id,
                      const char *now, json_t **ret, v1_err *e) {
        json_auto_t *snap = NULL, *title = NULL, *budget = NULL, *resources = NULL, *metadata = NULL;
        int r = session_agent(agent, req->overrides, &snap, e);
        if (r < 0)
                return r;
        const json_t *v;
        if ((v = json_object_get(body, "title")) && (r = parse_title(v, &title, e)) < 0)
                return r;
        if ((v = json_object_get(body, "budget")) && (r = parse_budget(v, "budget", &budget, e)) < 0)
                return r;
        if ((v = json_object_get(body, "resources")) && !json_is_null(v) &&
            (r = parse_resources(v, "resources", &resources, e)) < 0)
                return r;
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v) &&
            (r = v1_metadata_patch(NULL, v, "metadata", &metadata, e)) < 0)
                return r;
        json_auto_t *s = json_pack(
                "{s:s, s:s, s:s, s:O?, s:s, s:O, s:o?, s:[], s:o?, s:O?, s:[], "
                "s:{s:i, s:i}, s:{s:i, s:i, s:i, s:{s:i, s:i}}, s:s, s:s, s:n}",
                "id", id, "type", "session", "status", "idle", "title", title, "environment_id", req->environment_id,
                "agent", snap, "resources", resources ? json_incref(resources) : json_array(), "vault_ids", "metadata",
                metadata ? json_incref(metadata) : json_object(), "budget", budget, "outcome_evaluations", "stats",
                "active_seconds", 0, "duration_seconds", 0, "usage", "input_tokens", 0, "output_tokens", 0,
                "cache_read_input_tokens", 0, "cache_creation", "ephemeral_5m_input_tokens", 0,
                "ephemeral_1h_input_tokens", 0, "created_at", now, "updated_at", now, "archived_at");
        if (!s)
                return -ENOMEM;
        if ((v = json_object_get(body, "vault_ids")) && json_array_size(v) > 0)
                json_object_set_new(s, "vault_ids", json_deep_copy(v));
        *ret = TAKE_PTR(s);
        return 0;
}

int v1_session_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, json_t **ret_changed,
                      v1_err *e) {
        static const char *const keys[] = {"title", "metadata", "budget", "agent", "vault_ids", NULL};
        static const char *const akeys[] = {"tools", "mcp_servers", NULL};
        int r = v1_check_object(body, "", keys, e);
        if (r < 0)
                return r;
        json_auto_t *s = json_deep_copy(cur), *changed = json_object();
        if (!s || !changed)
                return -ENOMEM;
        const json_t *v;
        if ((v = json_object_get(body, "vault_ids")) && (r = parse_vault_ids(v, "vault_ids", false, e)) < 0)
                return r;
        if ((v = json_object_get(body, "title"))) {
                json_t *t;
                if ((r = parse_title(v, &t, e)) < 0)
                        return r;
                json_object_set_new(s, "title", t);
        }
        if ((v = json_object_get(body, "metadata")) && !json_is_null(v)) {
                json_t *m;
                if ((r = v1_metadata_patch(json_object_get(s, "metadata"), v, "metadata", &m, e)) < 0)
                        return r;
                json_object_set_new(s, "metadata", m);
        }
        if ((v = json_object_get(body, "budget"))) {
                json_t *b;
                if ((r = parse_budget(v, "budget", &b, e)) < 0)
                        return r;
                json_object_set_new(s, "budget", b);
        }
        if ((v = json_object_get(body, "agent")) && !json_is_null(v)) {
                if ((r = v1_check_object(v, "agent", akeys, e)) < 0)
                        return r;
                if (eq(json_string_value(json_object_get(cur, "status")), "running"))
                        return v1_fail(e, 409, "session_running",
                                       "agent: the session is running; change its tools once it is idle (or send "
                                       "user.interrupt first)");
                json_auto_t *a = json_deep_copy(json_object_get(s, "agent"));
                if (!a)
                        return -ENOMEM;
                const char *k;
                json_t *av;
                json_object_foreach((json_t *) v, k, av) if ((r = v1_agent_set(a, k, av, "agent", e)) < 0) return r;
                if ((r = v1_agent_check_mcp(json_object_get(a, "tools"), json_object_get(a, "mcp_servers"), "agent",
                                            e)) < 0)
                        return r;
                json_object_set(s, "agent", a);
        }
        static const char *const fields[] = {"title", "metadata", "budget", "agent", NULL};
        for (size_t i = 0; fields[i]; i++) {
                json_t *nv = json_object_get(s, fields[i]);
                if (!json_equal(nv, json_object_get(cur, fields[i])) && json_object_set(changed, fields[i], nv) < 0)
                        return -ENOMEM;
        }
        if (json_object_size(changed) == 0) {
                *ret = NULL;
                *ret_changed = NULL;
                return 0;
        }
        if (json_object_set_new(s, "updated_at", json_string(now)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        *ret_changed = TAKE_PTR(changed);
        return 0;
}
