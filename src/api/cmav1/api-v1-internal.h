/* api-v1-internal.h: what the files of the /v1 face share (api-v1.c: the answers, the
 * admission of a request, the route table; api-v1-resources.c: agents, environments, sessions,
 * events and keys; api-v1-ext.c, api-v1-workspace.c: hull's extensions; api-v1-stream.c: event streams). Not for use
 * outside src/api/cmav1. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api-v1.h"

struct api_v1 {
        api_v1_config cfg;
        struct v1_work_pollers *pollers; /* the Work API's workers_polling (v1-work.h) */
};

#define V1_BETA "managed-agents-2026-04-01"
#define V1_SKILLS_BETA "skills-2025-10-02" /* /v1/skills */
#define V1_RETRY_AFTER_S "2"               /* retry-after of a 503 (the database away, a node full) */

/* A request about a session's sandbox (its {id}) that another node holds: forwarded there and
 * answered (true), or refused (true: a bad hop header 400, the node gone 409, unreachable 503);
 * false: answered here (one node, this node, a forwarded request). On the request's thread. */
bool v1a_forwarded(http_req *r);
/* The same for a session's events (its turns): a holder that stopped leaves them to this node. */
bool v1a_forwarded_turn(http_req *r);

/* The query: each known argument (an "x[]" is "x"), repeated ones collected. */
#define QUERY_LIST_MAX 16U
typedef struct query {
        const char *limit, *page, *order, *include_archived, *version, *agent_id, *agent_version, *last_event_id;
        const char *rows, *sandbox;  /* hull's extensions */
        const char *memory_store_id; /* sessions: those a memory store is attached to */
        const char *created_gt, *created_gte, *created_lt, *created_lte;
        const char *list[QUERY_LIST_MAX]; /* statuses[], types[], event_deltas[] */
        size_t n_list;
        const char *list_name;
        const char *const *allowed; /* names this route takes */
        char bad[64];               /* the first unknown or repeated name */
        bool too_many;
} query;

/* ---- answers (api-v1.c) ---- */

/* Answer r with an error in the /v1 envelope (type NULL or "": the status's). */
void v1a_answer_error(http_req *r, unsigned status, const char *type, const char *code, const char *msg);
void v1a_fail(http_req *r, const v1_err *e);
void v1a_failf(http_req *r, unsigned status, const char *code, const char *fmt, ...) _printf_(4, 5);
/* Answer a JSON value (a reference is taken; NULL: a 500 saying why). */
void v1a_answer_json(http_req *r, unsigned status, json_t *v);
void v1a_answer_store_error(http_req *r, int err, const hull_error *e, const char *what, const char *id);
/* A store page as the API's list object. */
json_t *v1a_page_json(store_page *p, bool prev);

/* ---- what a request brings (api-v1.c): each returns true once r is refused ---- */

/* The query parsed into q, its names among allowed (list_name: the one "x[]" list it takes). */
bool v1a_refuse_query(http_req *r, query *q, const char *const *allowed, const char *list_name);
bool v1a_refuse_bool(http_req *r, const char *name, const char *v, bool *ret);
bool v1a_refuse_int(http_req *r, const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *ret);
bool v1a_refuse_time(http_req *r, const char *name, const char *v);
bool v1a_refuse_order(http_req *r, const char *v, bool def_desc, bool *ret_desc);
/* Does the session exist? (api-v1-resources.c) */
bool v1a_refuse_session(api_v1 *a, http_req *r, const char *id);
/* The body as a JSON object (empty_ok: none is {}); NULL once r is refused. */
json_t *v1a_body_object(http_req *r, bool empty_ok);

/* ---- the routes' handlers (api-v1-resources.c, api-v1-ext.c) ---- */

http_handler_fn v1a_agent_create, v1a_agent_list, v1a_agent_get, v1a_agent_update, v1a_agent_archive,
        v1a_agent_versions;
http_handler_fn v1a_environment_create, v1a_environment_list, v1a_environment_get, v1a_environment_update,
        v1a_environment_archive, v1a_environment_delete;
http_handler_fn v1a_session_create, v1a_session_list, v1a_session_get, v1a_session_update, v1a_session_archive,
        v1a_session_delete;
http_handler_fn v1a_events_list, v1a_events_send, v1a_events_stream;
http_handler_fn v1a_key_create, v1a_key_list, v1a_key_delete;
/* memory stores (api-v1-memory.c): their routes, with their own head (the memory beta) */
extern const http_route api_v1_memory_routes[];
extern const size_t api_v1_memory_n_routes;
/* api-v1-files.c: the /v1/files routes, a table of their own */
extern const http_route v1a_files_routes[];
extern const size_t v1a_n_files_routes;
/* api-v1-session-resources.c: /v1/sessions/{id}/resources, with the head of api-v1.c's routes */
extern const http_route v1a_resource_routes[];
extern const size_t v1a_n_resource_routes;
int v1a_head_resources(http_req *r);
/* api-v1-work.c: /v1/environments/{id}/work..., and whether a worker's credential may reach a
 * session (an environment key: its environment's sessions; a sessions token: its session);
 * true once r is refused */
extern const http_route v1a_work_routes[];
extern const size_t v1a_n_work_routes;
bool v1a_refuse_worker_session(api_v1 *a, http_req *r, const char *session_id);
/* hull's extensions' head: the version (no beta), an id that can name something */
int v1a_head_ext(http_req *r);
/* api-v1-capabilities.c: GET /v1/capabilities and the routes that refuse an unsupported
 * capability by name */
extern const http_route v1a_capability_routes[];
extern const size_t v1a_n_capability_routes;
/* Each /v1 route api_v1_register may mount (every table, whatever the config), in order. */
void v1a_each_route(void (*fn)(void *ud, const http_route *r), void *ud);
http_handler_fn v1a_handles_list, v1a_handle_get, v1a_records_list, v1a_audit_log, v1a_network_log;
/* api-v1-vaults.c: vaults and their credentials */
http_handler_fn v1a_vault_create, v1a_vault_list, v1a_vault_get, v1a_vault_update, v1a_vault_delete, v1a_vault_archive;
http_handler_fn v1a_credential_create, v1a_credential_list, v1a_credential_get, v1a_credential_update,
        v1a_credential_delete, v1a_credential_archive, v1a_credential_validate;
/* api-v1-skills.c */
/* Does each of an agent's skills (its "skills" as v1-shape made them) name a skill (and version)
 * the store has? Returns true once r is refused (400 naming the first that does not). */
bool v1a_refuse_skills(api_v1 *a, http_req *r, const json_t *skills);
http_handler_fn v1a_skill_create, v1a_skill_list, v1a_skill_get, v1a_skill_delete, v1a_skill_version_create,
        v1a_skill_version_list, v1a_skill_version_get, v1a_skill_version_delete, v1a_skill_version_content;
/* api-v1-deployments.c: /v1/deployments and /v1/deployment_runs (when cfg.deploy) */
extern const http_route v1a_deploy_routes[];
extern const size_t v1a_n_deploy_routes;
/* api-v1-webhooks.c: hull's extension /v1/webhooks */
http_handler_fn v1a_webhook_create, v1a_webhook_list, v1a_webhook_get, v1a_webhook_update, v1a_webhook_delete,
        v1a_webhook_rotate, v1a_webhook_test;
/* api-v1-workspace.c */
http_handler_fn v1a_input_add, v1a_handle_content, v1a_query_run;
