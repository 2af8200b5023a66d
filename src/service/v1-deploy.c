/* v1-deploy.c: the deployments' bodies checked and their objects made, their operations, and
 * each run (v1-deploy.h). */
#include "v1-deploy-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "macro.h"
#include "v1-shape-internal.h"
#include "v1-vault.h"
#include "v1-webhook.h"

static const char *const create_fields[] = {"name",           "description", "agent",     "environment_id",
                                            "initial_events", "resources",   "vault_ids", "budget",
                                            "metadata",       "schedule",    NULL};

int deploy_zone(v1_deploy *d, const char *name, const tz_zone **ret, tz_zone **ret_owned, hull_error *e) {
        *ret_owned = NULL;
        if (!tz_name_valid(name))
                return hull_fail(e, -EINVAL, "not a time zone name");
        pthread_mutex_lock(&d->zlock);
        for (size_t i = 0; i < d->n_zones; i++)
                if (strcmp(d->zones[i].name, name) == 0) {
                        *ret = d->zones[i].zone;
                        pthread_mutex_unlock(&d->zlock);
                        return 0;
                }
        tz_zone *z = NULL;
        int r = tz_load(d->cfg.tz_dir, name, &z, e);
        if (r >= 0 && d->n_zones < DEPLOY_ZONE_CACHE_MAX) {
                snprintf(d->zones[d->n_zones].name, sizeof(d->zones[0].name), "%s", name);
                d->zones[d->n_zones++].zone = z;
        } else if (r >= 0)
                *ret_owned = z;
        pthread_mutex_unlock(&d->zlock);
        *ret = z;
        return r;
}

void deploy_announce(v1_deploy *d, const char *event_type, const json_t *obj) {
        const char *id = json_string_value(json_object_get(obj, "id")) ?: "";
        dlog_log(d->cfg.log, DLOG_INFO, "event=%s id=%s", event_type, id);
        hull_error e = {0}; /* to the webhooks that want it; the change itself stands */
        if (v1_webhook_emit(d->cfg.start.store, event_type, id, NULL, &e) < 0)
                dlog_log(d->cfg.log, DLOG_WARN, "event=webhook-not-queued type=%s id=%s error=\"%s\"", event_type, id,
                         e.msg);
}

/* ---- the body ---- */

/* The schedule {type:"cron", expression, timezone} checked (it must fire) into *ret. */
static int parse_schedule(v1_deploy *d, const json_t *v, json_t **ret, v1_err *err) {
        static const char *const fields[] = {"type", "expression", "timezone", NULL};
        static const char *const types[] = {"cron", NULL};
        const char *type, *expr, *tzname;
        int r;
        if ((r = v1_want(v, JSON_OBJECT, "schedule", "an object {type:\"cron\", expression, timezone} or null", err)) <
                    0 ||
            (r = v1_check_object(v, "schedule", fields, err)) < 0 ||
            (r = v1_get_enum(v, "type", "schedule", types, NULL, &type, err)) < 0 ||
            (r = v1_get_str(v, "expression", "schedule", CRON_EXPR_MAX - 1, F_REQUIRED | F_NONEMPTY, &expr, err)) < 0 ||
            (r = v1_get_str(v, "timezone", "schedule", TZ_NAME_MAX - 1, F_REQUIRED | F_NONEMPTY, &tzname, err)) < 0)
                return r;
        cron_expr c;
        hull_error e = {0};
        if (cron_parse(expr, &c, &e) < 0)
                return v1_fail(err, 400, "invalid_cron_expression", "schedule.expression: %s", e.msg);
        _cleanup_tz_ tz_zone *z = NULL;
        if (tz_load(d->cfg.tz_dir, tzname, &z, &e) < 0)
                return v1_fail(err, 400, "invalid_timezone", "schedule.timezone: %s", e.msg);
        int64_t next;
        if (cron_next(&c, z, v1_deploy_now_ms(d) / 1000, &next) < 0)
                return v1_fail(err, 400, "invalid_cron_expression",
                               "schedule.expression: '%s' never fires (no such date in the next %u days)", expr,
                               CRON_SEARCH_DAYS);
        *ret = json_pack("{s:s, s:s, s:s, s:n}", "type", "cron", "expression", expr, "timezone", tzname, "last_run_at");
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

/* The agent (an id: its newest version, or {type:"agent", id, version}) resolved and pinned. */
static int parse_agent(v1_deploy *d, const json_t *v, json_t **ret, v1_err *err) {
        static const char *const fields[] = {"type", "id", "version", NULL};
        static const char *const types[] = {"agent", NULL};
        const char *id = json_string_value(v), *type;
        int64_t version = 0;
        int r;
        if (!id) {
                if ((r = v1_want(v, JSON_OBJECT, "agent", "an agent id or {type:\"agent\", id, version}", err)) < 0 ||
                    (r = v1_check_object(v, "agent", fields, err)) < 0 ||
                    (r = v1_get_enum(v, "type", "agent", types, NULL, &type, err)) < 0 ||
                    (r = v1_get_str(v, "id", "agent", V1_NAME_MAX, F_REQUIRED | F_NONEMPTY, &id, err)) < 0)
                        return r;
                json_t *ver = json_object_get(v, "version");
                if (ver && !json_is_null(ver) && (!json_is_integer(ver) || json_integer_value(ver) < 1))
                        return v1_fail(err, 400, "", "agent.version: must be an integer >= 1");
                version = ver ? json_integer_value(ver) : 0;
        }
        if (!id[0] || strlen(id) >= V1_NAME_MAX)
                return v1_fail(err, 400, "", "agent: an agent id of 1 to %u bytes", V1_NAME_MAX - 1);
        json_auto_t *agent = NULL;
        hull_error e = {0};
        r = store_get(d->cfg.start.store, STORE_AGENT, id, version, &agent, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "agent_not_found", "no agent %.64s%s (GET /v1/agents lists them)", id,
                               version ? " at that version" : "");
        if (r < 0)
                return v1_fail(err, 500, "", "the agent could not be read: %s", e.msg);
        if (json_is_string(json_object_get(agent, "archived_at")))
                return v1_fail(err, 400, "agent_archived", "agent %.64s is archived: a deployment cannot use it", id);
        *ret = json_pack("{s:s, s:s, s:O}", "type", "agent", "id", id, "version", json_object_get(agent, "version"));
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

static int check_environment(v1_deploy *d, const char *id, v1_err *err) {
        json_auto_t *env = NULL;
        hull_error e = {0};
        int r = store_get(d->cfg.start.store, STORE_ENVIRONMENT, id, 0, &env, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "environment_not_found",
                               "no environment %.64s (GET /v1/environments lists them)", id);
        if (r < 0)
                return v1_fail(err, 500, "", "the environment could not be read: %s", e.msg);
        if (json_is_string(json_object_get(env, "archived_at")))
                return v1_fail(err, 400, "environment_archived", "environment %.64s is archived", id);
        return 0;
}

/* The body a run's session is made from. */
static json_t *session_body(const json_t *dep) {
        json_t *b = json_pack("{s:O, s:O, s:O, s:O}", "agent", json_object_get(dep, "agent"), "environment_id",
                              json_object_get(dep, "environment_id"), "resources", json_object_get(dep, "resources"),
                              "vault_ids", json_object_get(dep, "vault_ids"));
        json_t *budget = json_object_get(dep, "budget");
        if (b && budget && !json_is_null(budget))
                json_object_set(b, "budget", budget);
        return b;
}

/* One field of a create or update body applied to obj. */
static int apply_field(v1_deploy *d, json_t *obj, const char *k, json_t *v, v1_err *err) {
        int r;
        json_t *nv = NULL;
        bool clearable = !(strcmp(k, "name") == 0 || strcmp(k, "agent") == 0 || strcmp(k, "environment_id") == 0 ||
                           strcmp(k, "initial_events") == 0);
        if (json_is_null(v) && !clearable)
                return v1_fail(err, 400, "", "%s: cannot be cleared", k);
        if (strcmp(k, "name") == 0 || strcmp(k, "environment_id") == 0) {
                if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= DEPLOY_NAME_MAX)
                        return v1_fail(err, 400, "", "%s: a string of 1 to %u bytes", k, DEPLOY_NAME_MAX - 1);
                if (strcmp(k, "environment_id") == 0 && (r = check_environment(d, json_string_value(v), err)) < 0)
                        return r;
                nv = json_incref(v);
        } else if (strcmp(k, "description") == 0) {
                if (!json_is_null(v) && (!json_is_string(v) || json_string_length(v) >= DEPLOY_DESCRIPTION_MAX))
                        return v1_fail(err, 400, "", "description: a string of at most %u bytes, or null",
                                       DEPLOY_DESCRIPTION_MAX - 1);
                nv = json_is_string(v) && json_string_length(v) ? json_incref(v) : json_null();
        } else if (strcmp(k, "agent") == 0) {
                if ((r = parse_agent(d, v, &nv, err)) < 0)
                        return r;
        } else if (strcmp(k, "initial_events") == 0) {
                if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > DEPLOY_INITIAL_EVENTS_MAX)
                        return v1_fail(err, 400, "", "initial_events: an array of 1 to %u events",
                                       DEPLOY_INITIAL_EVENTS_MAX);
                if ((r = v1_events_parse_array(v, "initial_events", false, &nv, err)) < 0)
                        return r;
                size_t i;
                json_t *ev;
                json_array_foreach(nv, i, ev) {
                        const char *t = json_string_value(json_object_get(ev, "type"));
                        if (!t || (strcmp(t, "user.message") != 0 && strcmp(t, "user.define_outcome") != 0 &&
                                   strcmp(t, "system.message") != 0)) {
                                r = v1_fail(err, 400, "",
                                            "initial_events[%zu]: a deployment starts with user.message, "
                                            "user.define_outcome or system.message events, not %.40s",
                                            i, t ? t : "this");
                                json_decref(nv); /* after the message: t is one of its strings */
                                return r;
                        }
                }
        } else if (strcmp(k, "resources") == 0 || strcmp(k, "vault_ids") == 0) {
                size_t max = k[0] == 'r' ? DEPLOY_RESOURCES_MAX : DEPLOY_VAULTS_MAX;
                if (!json_is_null(v) && (!json_is_array(v) || json_array_size(v) > max))
                        return v1_fail(err, 400, "", "%s: an array of at most %zu, or null", k, max);
                size_t i;
                json_t *it;
                json_array_foreach(
                        v, i,
                        it) if (json_is_object(it) &&
                                json_object_get(it,
                                                "authorization_"
                                                "token")) return v1_fail(err, 400, "",
                                                                         "resources[%zu].authorization_token: a "
                                                                         "deployment keeps no repository token in its "
                                                                         "definition; put the credential in a vault "
                                                                         "and name it in vault_ids",
                                                                         i);
                if (k[0] == 'v' && (r = v1_vault_ids_check(d->cfg.start.store, v, err)) < 0)
                        return r;
                nv = json_is_null(v) ? json_array() : json_incref(v);
        } else if (strcmp(k, "budget") == 0) {
                nv = json_incref(v); /* checked with the session's body below */
        } else if (strcmp(k, "metadata") == 0) {
                if ((r = v1_metadata_patch(json_object_get(obj, "metadata"), v, "metadata", &nv, err)) < 0)
                        return r;
        } else if (strcmp(k, "schedule") == 0) {
                if (json_is_null(v))
                        nv = json_null();
                else if ((r = parse_schedule(d, v, &nv, err)) < 0)
                        return r;
        } else
                return v1_fail(err, 400, "", "unknown field '%.40s'", k);
        if (!nv || json_object_set_new(obj, k, nv) < 0)
                return v1_fail(err, 500, "", "out of memory");
        return 0;
}

static int apply_body(v1_deploy *d, json_t *obj, const json_t *body, v1_err *err) {
        int r = v1_check_object(body, "", create_fields, err);
        if (r < 0)
                return r;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *) body, k, v) if ((r = apply_field(d, obj, k, v, err)) < 0) return r;
        /* what a run's session would be made from, checked as POST /v1/sessions checks it */
        json_auto_t *sb = session_body(obj);
        v1_session_req req;
        return sb ? v1_session_parse(sb, &req, err) : v1_fail(err, 500, "", "out of memory");
}

/* ---- the operations ---- */

int64_t v1_deploy_now_ms(v1_deploy *d) {
        struct timespec ts;
        if (d->cfg.clock_rate) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                int64_t mono = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
                return d->cfg.clock_start * 1000 + (mono - d->mono_start_ms) * (int64_t) d->cfg.clock_rate;
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int deploy_next_ms(v1_deploy *d, const json_t *dep, int64_t after_ms, int64_t *ret) {
        json_t *s = json_object_get(dep, "schedule");
        if (!json_is_object(s))
                return -ENOENT;
        cron_expr c;
        hull_error e = {0};
        const tz_zone *z = NULL;
        _cleanup_tz_ tz_zone *owned = NULL;
        if (cron_parse(json_string_value(json_object_get(s, "expression")), &c, &e) < 0 ||
            deploy_zone(d, json_string_value(json_object_get(s, "timezone")), &z, &owned, &e) < 0)
                return -EINVAL;
        int64_t t;
        int r = cron_next(&c, z, after_ms / 1000 - (after_ms % 1000 < 0), &t);
        if (r < 0)
                return r;
        *ret = t * 1000;
        return 0;
}

void v1_deploy_decorate(v1_deploy *d, json_t *dep) {
        json_t *s = json_object_get(dep, "schedule");
        if (!json_is_object(s))
                return;
        json_t *up = json_array();
        int64_t t = v1_deploy_now_ms(d);
        for (unsigned i = 0; up && i < DEPLOY_UPCOMING_MAX && !json_is_string(json_object_get(dep, "archived_at"));
             i++) {
                if (deploy_next_ms(d, dep, t, &t) < 0)
                        break;
                char buf[32];
                cron_time_rfc3339(t / 1000, buf, sizeof(buf));
                json_array_append_new(up, json_string(buf));
        }
        if (up)
                json_object_set_new(s, "upcoming_runs_at", up);
}

static int load(v1_deploy *d, const char *id, json_t **ret, v1_err *err) {
        hull_error e = {0};
        int r = store_deploy_get(d->cfg.start.store, STORE_DEPLOYMENT, id, ret, &e);
        if (r == -ENOENT)
                return v1_fail(err, 404, "deployment_not_found", "no deployment %.64s (GET /v1/deployments lists them)",
                               id);
        if (r < 0)
                return v1_fail(err, 500, "", "the deployment could not be read: %s", e.msg);
        return 0;
}

static int save(v1_deploy *d, json_t *dep, bool create, v1_err *err) {
        hull_error e = {0};
        json_t *s = json_object_get(dep, "schedule");
        if (json_is_object(s))
                json_object_del(s, "upcoming_runs_at"); /* computed when read */
        int r = store_deploy_put(d->cfg.start.store, STORE_DEPLOYMENT, dep, create, &e);
        if (r < 0)
                return v1_fail(err, 500, "", "the deployment could not be stored: %s", e.msg);
        deploy_sched_arm(d, dep);
        v1_deploy_decorate(d, dep);
        return 0;
}

int v1_deploy_create(v1_deploy *d, const json_t *body, json_t **ret, v1_err *err) {
        static const char *const required[] = {"name", "agent", "environment_id", "initial_events", NULL};
        if (!json_is_object(body))
                return v1_fail(err, 400, "", "the body must be a JSON object");
        for (size_t i = 0; required[i]; i++)
                if (!json_object_get(body, required[i]))
                        return v1_fail(err, 400, "", "%s: required", required[i]);
        char id[STORE_ID_MAX], now[STORE_TIME_MAX];
        v1_id_new("depl_", id);
        store_now_rfc3339(now);
        json_auto_t *dep =
                json_pack("{s:s, s:s, s:n, s:[], s:[], s:n, s:n, s:s, s:n, s:{}, s:s, s:s, s:n}", "id", id, "type",
                          "deployment", "description", "resources", "vault_ids", "budget", "schedule", "status",
                          "active", "paused_reason", "metadata", "created_at", now, "updated_at", now, "archived_at");
        if (!dep)
                return v1_fail(err, 500, "", "out of memory");
        int r = apply_body(d, dep, body, err);
        if (r < 0 || (r = save(d, dep, true, err)) < 0)
                return r;
        deploy_announce(d, "deployment.created", dep);
        *ret = TAKE_PTR(dep);
        return 0;
}

int v1_deploy_get(v1_deploy *d, const char *id, json_t **ret, v1_err *err) {
        int r = load(d, id, ret, err);
        if (r >= 0)
                v1_deploy_decorate(d, *ret);
        return r;
}

static int refuse_archived(const json_t *dep, const char *what, v1_err *err) {
        if (json_is_string(json_object_get(dep, "archived_at")))
                return v1_fail(err, 400, "deployment_archived", "deployment %.64s is archived: it cannot be %s",
                               json_string_value(json_object_get(dep, "id")), what);
        return 0;
}

int v1_deploy_update(v1_deploy *d, const char *id, const json_t *body, json_t **ret, v1_err *err) {
        pthread_mutex_lock(&d->edit);
        json_auto_t *dep = NULL;
        int r = load(d, id, &dep, err);
        if (r >= 0)
                r = refuse_archived(dep, "updated", err);
        if (r >= 0)
                r = apply_body(d, dep, body, err);
        if (r >= 0) {
                char now[STORE_TIME_MAX];
                store_now_rfc3339(now);
                json_object_set_new(dep, "updated_at", json_string(now));
                r = save(d, dep, false, err);
        }
        pthread_mutex_unlock(&d->edit);
        if (r < 0)
                return r;
        deploy_announce(d, "deployment.updated", dep);
        *ret = TAKE_PTR(dep);
        return 0;
}

/* Under d->edit: dep (loaded) archived, paused with reason (NULL: manual) or unpaused, stored. */
static int set_state(v1_deploy *d, json_t *dep, v1_deploy_op op, json_t *reason, v1_err *err) {
        char now[STORE_TIME_MAX];
        store_now_rfc3339(now);
        if (op == V1_DEPLOY_ARCHIVE)
                json_object_set_new(dep, "archived_at", json_string(now));
        else {
                json_object_set_new(dep, "status", json_string(op == V1_DEPLOY_PAUSE ? "paused" : "active"));
                json_object_set_new(dep, "paused_reason",
                                    op == V1_DEPLOY_UNPAUSE ? json_null()
                                    : reason                ? json_incref(reason)
                                                            : json_pack("{s:s}", "type", "manual"));
        }
        json_object_set_new(dep, "updated_at", json_string(now));
        int r = save(d, dep, false, err);
        if (r >= 0)
                deploy_announce(d,
                                op == V1_DEPLOY_ARCHIVE ? "deployment.archived"
                                : op == V1_DEPLOY_PAUSE ? "deployment.paused"
                                                        : "deployment.unpaused",
                                dep);
        return r;
}

int v1_deploy_act(v1_deploy *d, const char *id, v1_deploy_op op, json_t **ret, v1_err *err) {
        pthread_mutex_lock(&d->edit);
        json_auto_t *dep = NULL;
        int r = load(d, id, &dep, err);
        bool archived = r >= 0 && json_is_string(json_object_get(dep, "archived_at"));
        if (r >= 0 && op == V1_DEPLOY_ARCHIVE && archived)
                v1_deploy_decorate(d, dep); /* archived already: the same object */
        else if (r >= 0 && (r = refuse_archived(dep, op == V1_DEPLOY_PAUSE ? "paused" : "unpaused", err)) >= 0)
                r = set_state(d, dep, op, NULL, err);
        pthread_mutex_unlock(&d->edit);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(dep);
        return 0;
}

int v1_deploy_run_now(v1_deploy *d, const char *id, json_t **ret, v1_err *err) {
        json_auto_t *dep = NULL;
        int r = load(d, id, &dep, err);
        if (r < 0 || (r = refuse_archived(dep, "run", err)) < 0)
                return r;
        return deploy_run(d, id, false, 0, ret, err);
}

/* ---- a run ---- */

/* The run error type and whether it archives (agent gone) for a session start's refusal. */
static const char *run_error_type(const v1_err *se, bool *ret_archive) {
        static const struct {
                const char *code, *type;
        } map[] = {
                {"agent_not_found", "agent_not_found_error"},
                {"agent_archived", "agent_archived_error"},
                {"environment_not_found", "environment_not_found_error"},
                {"environment_archived", "environment_archived_error"},
                {"vault_not_found", "vault_not_found_error"},
                {"vault_archived", "vault_archived_error"},
                {"file_not_found", "file_not_found_error"},
                {"memory_store_archived", "memory_store_archived_error"},
                {"skill_not_found", "skill_not_found_error"},
        };
        *ret_archive = strcmp(se->code, "agent_not_found") == 0;
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcmp(se->code, map[i].code) == 0)
                        return map[i].type;
        if (strstr(se->msg, "vault") && se->status == 404)
                return "vault_not_found_error";
        return se->status >= 500 ? "unknown_error" : "session_creation_rejected_error";
}

/* After a run: the deployment's last_run_at, and its archive or pause. */
static void after_run(v1_deploy *d, const char *id, bool scheduled, const char *ran_at, const char *etype,
                      bool archive) {
        pthread_mutex_lock(&d->edit);
        json_auto_t *dep = NULL;
        v1_err err = {0};
        if (load(d, id, &dep, &err) >= 0 && !json_is_string(json_object_get(dep, "archived_at"))) {
                json_t *s = json_object_get(dep, "schedule");
                if (scheduled && json_is_object(s))
                        json_object_set_new(s, "last_run_at", json_string(ran_at));
                json_auto_t *reason =
                        etype ? json_pack("{s:s, s:{s:s}}", "type", "error", "error", "type", etype) : NULL;
                int r = archive              ? set_state(d, dep, V1_DEPLOY_ARCHIVE, NULL, &err)
                        : scheduled && etype ? set_state(d, dep, V1_DEPLOY_PAUSE, reason, &err)
                                             : save(d, dep, false, &err);
                if (r < 0)
                        dlog_log(d->cfg.log, DLOG_WARN, "event=deployment-save id=%s msg=\"%s\"", id, err.msg);
        }
        pthread_mutex_unlock(&d->edit);
}

int deploy_run(v1_deploy *d, const char *id, bool scheduled, int64_t scheduled_ms, json_t **ret, v1_err *err) {
        json_auto_t *dep = NULL;
        int r = load(d, id, &dep, err);
        if (r < 0)
                return r;
        char rid[STORE_ID_MAX], now[STORE_TIME_MAX], at[32];
        v1_id_new("drun_", rid);
        store_now_rfc3339(now);
        cron_time_rfc3339(scheduled_ms / 1000, at, sizeof(at));
        json_auto_t *run = json_pack("{s:s, s:s, s:s, s:O, s:s, s:o, s:n, s:n}", "id", rid, "type", "deployment_run",
                                     "deployment_id", id, "agent", json_object_get(dep, "agent"), "created_at", now,
                                     "trigger_context",
                                     scheduled ? json_pack("{s:s, s:s}", "type", "schedule", "scheduled_at", at)
                                               : json_pack("{s:s}", "type", "manual"),
                                     "session_id", "error");
        json_auto_t *body = session_body(dep), *extra = json_pack("{s:s}", "deployment_id", id);
        if (!run || !body || !extra)
                return v1_fail(err, 500, "", "out of memory");
        deploy_announce(d, "deployment_run.started", run);
        json_auto_t *session = NULL;
        v1_err se = {0};
        const char *etype = NULL;
        bool archive = false;
        if (v1_session_start(&d->cfg.start, body, extra, &session, &se) < 0) {
                etype = run_error_type(&se, &archive);
                json_object_set_new(run, "error", json_pack("{s:s, s:s}", "type", etype, "message", se.msg));
        } else {
                const char *sid = json_string_value(json_object_get(session, "id"));
                json_object_set_new(run, "session_id", json_string(sid));
                json_auto_t *echo = NULL;
                if (v1_engine_send(d->cfg.start.engine, sid, json_object_get(dep, "initial_events"), &echo, &se) < 0)
                        dlog_log(d->cfg.log, DLOG_WARN, "event=deployment-events id=%s session=%s msg=\"%s\"", id, sid,
                                 se.msg);
        }
        hull_error e = {0};
        if (store_deploy_put(d->cfg.start.store, STORE_DEPLOYMENT_RUN, run, true, &e) < 0)
                return v1_fail(err, 500, "", "the run could not be stored: %s", e.msg);
        deploy_announce(d, etype ? "deployment_run.failed" : "deployment_run.succeeded", run);
        dlog_log(d->cfg.log, etype ? DLOG_WARN : DLOG_INFO, "event=deployment-run id=%s run=%s trigger=%s%s%s", id, rid,
                 scheduled ? "schedule" : "manual", etype ? " error=" : "", etype ? etype : "");
        after_run(d, id, scheduled, scheduled ? at : now, etype, archive);
        if (ret)
                *ret = TAKE_PTR(run);
        return 0;
}
