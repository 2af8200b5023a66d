/* fuzz-v1-shape.c: every /v1 body parser of v1-shape.c on the same arbitrary JSON (as a create
 * body, as an update of a fixed agent, environment and session, as a batch of client events). A
 * refusal must fill its v1_err sanely and write nothing; an agent created and sent back as an
 * update must be no change. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "v1-shape.h"

#define NOW "2026-12-01T00:00:00Z"

static void check_err(int r, const json_t *out, const v1_err *e) {
        if (r >= 0)
                return;
        if (out || !(r == -EINVAL || r == -ESTALE || r == -EBUSY || r == -ENOMEM) ||
            (r != -ENOMEM && (e->status < 400 || e->status > 599 || !e->type[0] || !e->msg[0] ||
                              strnlen(e->msg, sizeof(e->msg)) >= sizeof(e->msg))))
                abort();
}

static json_t *fixed(const char *s) {
        json_t *j = json_loads(s, 0, NULL);
        if (!j)
                abort();
        return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_auto_t *body = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
        if (!body)
                return 0;
        v1_err e;
        int r;

        json_t *agent = NULL;
        r = v1_agent_create(body, "agent_1", NOW, &agent, &e);
        check_err(r, agent, &e);
        if (r >= 0) {
                static const char *const keys[] = {
                        "name",   "model",    "system",     "description",        "tools",   "mcp_servers",
                        "skills", "metadata", "multiagent", "execution_identity", "version", NULL};
                json_auto_t *back = json_object();
                for (size_t i = 0; keys[i]; i++)
                        json_object_set(back, keys[i], json_object_get(agent, keys[i]));
                json_t *next = NULL;
                if (v1_agent_update(agent, back, NOW, &next, &e) != 0 || next)
                        abort();
        }
        json_auto_t *cur_agent = agent ? agent
                                       : fixed("{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":"
                                               "\"agent_toolset_20260401\"}]}");
        if (!agent) {
                json_t *a = NULL;
                if (v1_agent_create(cur_agent, "agent_1", NOW, &a, &e) < 0)
                        abort();
                json_decref(cur_agent);
                cur_agent = a;
        }
        json_t *next = NULL;
        r = v1_agent_update(cur_agent, body, NOW, &next, &e);
        check_err(r, next, &e);
        json_decref(next);

        json_t *env = NULL;
        r = v1_environment_create(body, "env_1", NOW, &env, &e);
        check_err(r, env, &e);
        json_decref(env);
        json_auto_t *env_body = fixed("{\"name\":\"e\",\"metadata\":{\"k\":\"v\"}}");
        json_auto_t *cur_env = NULL;
        if (v1_environment_create(env_body, "env_1", NOW, &cur_env, &e) < 0)
                abort();
        next = NULL;
        r = v1_environment_update(cur_env, body, NOW, &next, &e);
        check_err(r, next, &e);
        json_decref(next);

        v1_session_req req;
        r = v1_session_parse(body, &req, &e);
        check_err(r, NULL, &e);
        if (r >= 0) {
                if (!req.agent_id || !req.environment_id || req.agent_version < 0 ||
                    json_array_size(req.initial_events) > V1_EVENTS_PER_SEND_MAX)
                        abort();
                json_t *s = NULL;
                r = v1_session_create(body, &req, cur_agent, "sesn_1", NOW, &s, &e);
                check_err(r, s, &e);
                if (r >= 0) {
                        json_t *changed = NULL;
                        next = NULL;
                        json_object_set_new(s, "status", json_string("running"));
                        r = v1_session_update(s, body, NOW, &next, &changed, &e);
                        check_err(r, next, &e);
                        if (!next != !changed)
                                abort();
                        json_decref(next);
                        json_decref(changed);
                }
                json_decref(s);
        }

        json_t *events = NULL;
        r = v1_events_parse(body, &events, &e);
        check_err(r, events, &e);
        if (r >= 0) {
                size_t i, n = json_array_size(events);
                json_t *ev;
                if (n < 1 || n > V1_EVENTS_PER_SEND_MAX)
                        abort();
                json_array_foreach(events, i, ev) {
                        if (strcmp(json_string_value(json_object_get(ev, "type")), "user.message") != 0)
                                continue;
                        char *text = v1_user_message_text(ev);
                        if (!text)
                                abort();
                        free(text);
                }
        }
        json_decref(events);
        return 0;
}
