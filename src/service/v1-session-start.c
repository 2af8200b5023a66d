/* v1-session-start.c: a session made from a create body (v1-session-start.h). */
#include "v1-session-start.h"

#include <errno.h>
#include <stdio.h>

#include "macro.h"
#include "v1-memory.h"
#include "v1-resources.h"
#include "v1-vault.h"
#include "v1-webhook.h"
#include "v1-work.h"

static int store_fail(v1_err *err, int rr, const hull_error *e, const char *what, const char *id) {
        if (rr == -EINVAL)
                return v1_fail(err, 400, "", "%s", e->msg);
        v1_fail(err, 500, "", "the %s %.64s could not be read or stored: %s", what, id, e->msg);
        return rr < 0 ? rr : -EIO;
}

/* The agent version and the environment req names, neither archived. */
static int lookup(const v1_starter *c, const v1_session_req *req, json_t **ret_agent, v1_err *err) {
        hull_error e = {0};
        json_auto_t *agent = NULL, *env = NULL;
        int rr = store_get(c->store, STORE_AGENT, req->agent_id, req->agent_version, &agent, &e);
        if (rr == -ENOENT)
                return v1_fail(err, 404, "agent_not_found", "no agent %.64s%s (GET /v1/agents lists them)",
                               req->agent_id, req->agent_version ? " at that version" : "");
        if (rr < 0)
                return store_fail(err, rr, &e, "agent", req->agent_id);
        if (json_is_string(json_object_get(agent, "archived_at")))
                return v1_fail(err, 400, "agent_archived", "agent %.64s is archived: sessions cannot start with it",
                               req->agent_id);
        rr = store_get(c->store, STORE_ENVIRONMENT, req->environment_id, 0, &env, &e);
        if (rr == -ENOENT)
                return v1_fail(err, 404, "environment_not_found",
                               "no environment %.64s (GET /v1/environments lists them)", req->environment_id);
        if (rr < 0)
                return store_fail(err, rr, &e, "environment", req->environment_id);
        if (json_is_string(json_object_get(env, "archived_at")))
                return v1_fail(err, 400, "environment_archived", "environment %.64s is archived", req->environment_id);
        *ret_agent = TAKE_PTR(agent);
        return 0;
}

int v1_session_start(const v1_starter *c, const json_t *body, const json_t *extra, json_t **ret, v1_err *err) {
        v1_session_req req = {0};
        int r = v1_session_parse(body, &req, err);
        if (r < 0)
                return r;
        json_auto_t *agent = NULL;
        if ((r = lookup(c, &req, &agent, err)) < 0)
                return r;
        if ((r = v1_vault_ids_check(c->store, json_object_get(body, "vault_ids"), err)) < 0)
                return r;
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("sesn_", id);
        store_now_rfc3339(now);
        json_auto_t *obj = NULL;
        if ((r = v1_session_create(body, &req, agent, id, now, &obj, err)) < 0)
                return r;
        if (extra && json_object_update(obj, (json_t *) extra) < 0)
                return v1_fail(err, 500, "", "out of memory");
        if ((r = v1_engine_budget_admit(c->engine, obj, err)) < 0) /* a budget needs its model's price */
                return r;
        if ((r = v1_engine_admit_session(c->engine, err)) < 0) /* a node at its --capacity takes none */
                return r;
        if ((r = v1_resources_resolve(c->files, v1_engine_settings(c->engine), c->mnt_root, obj, err)) < 0)
                return r;
        if ((r = v1_memory_resources_resolve(c->store, obj, err)) < 0) { /* memory_store resources */
                v1_resources_forget(c->mnt_root, "", json_object_get(obj, "resources"));
                return r;
        }
        hull_error e = {0};
        int rr = store_insert(c->store, STORE_SESSION, obj, &e);
        if (rr < 0) {
                v1_resources_forget(c->mnt_root, "", json_object_get(obj, "resources"));
                return store_fail(err, rr, &e, "session", id);
        }
        v1_webhook_emit(c->store, "session.created", id, NULL, NULL);
        if (json_array_size(req.initial_events) > 0) {
                json_auto_t *echo = NULL;
                if ((r = v1_engine_send(c->engine, id, req.initial_events, &echo, err)) < 0)
                        return r;
                json_decref(obj);
                obj = NULL;
                if ((rr = store_get(c->store, STORE_SESSION, id, 0, &obj, &e)) < 0)
                        return store_fail(err, -EIO, &e, "session", id);
        }
        v1_err ignored = {0}; /* self_hosted: a work item for the workers (a failure: the next event queues it) */
        (void) v1_work_enqueue(c->store, id, &ignored);
        *ret = TAKE_PTR(obj);
        return 0;
}
