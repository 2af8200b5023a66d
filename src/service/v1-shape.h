/* v1-shape.h: the Claude Managed Agents /v1 API's resources and client events
 * (../shared/reference/cma-api.md §2-5): request bodies validated and turned into the objects the
 * API answers and the store keeps. Pure (no I/O, no clock: the caller passes ids and times),
 * fuzzed (fuzz/fuzz-v1-shape.c).
 *
 * Every refusal fills a v1_err: the HTTP status, the error type of the envelope
 * ("invalid_request_error", "conflict_error", ...), an error_code for details ("" when none) and
 * one sentence saying what was wrong and what to do, naming the field ("tools[2].configs[0].name:
 * unknown tool 'bask' (one of bash, edit, read, write, glob, grep, web_fetch, web_search)").
 * Unknown fields are refused (400). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"

typedef struct v1_err {
        unsigned status;              /* 400, 404, 409 ... */
        char type[48];                /* the envelope's error.type */
        char code[V1_ERROR_CODE_MAX]; /* error.details.error_code, "" when none */
        char msg[V1_ERROR_MSG_MAX];
} v1_err;

/* Fill e; returns -EINVAL (status 400), -ENOENT (404), -EBUSY or -ESTALE (409). */
int v1_fail(v1_err *e, unsigned status, const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- agents ---- */

/* A create body → the agent object (version 1, id and times given), a new reference:
 * "model" always an object, toolsets resolved (each agent_toolset_20260401 config with "type"
 * and "name", resolved "enabled" and "permission_policy"; the default policy always_allow, an
 * mcp_toolset's always_ask), every field present ("description": null, "mcp_servers": [], ...). */
int v1_agent_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e);

/* An update body applied to the current version cur → the next version (version + 1, updated_at
 * now), or *ret NULL when nothing changes. The body's "version", when given, must equal cur's
 * (409 conflict_error, code "version_conflict"). An archived agent cannot be updated (400). */
int v1_agent_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e);

/* ---- environments ---- */
int v1_environment_create(const json_t *body, const char *id, const char *now, json_t **ret, v1_err *e);
/* *ret NULL when nothing changes; config.type cannot change (400 invalid_config_type_change). */
int v1_environment_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, v1_err *e);

/* ---- sessions ---- */

/* What a create body names: the agent (an id string, {type:"agent",id,version?} or
 * {type:"agent_with_overrides",...}), the environment and the rest, checked. */
typedef struct v1_session_req {
        const char *agent_id;    /* borrowed from the body */
        int64_t agent_version;   /* 0: the newest */
        const json_t *overrides; /* agent_with_overrides: the object (model, system, tools, ...); NULL */
        const char *environment_id;
        const json_t *initial_events; /* an array of user.message events, or NULL */
} v1_session_req;
int v1_session_parse(const json_t *body, v1_session_req *ret, v1_err *e);

/* The session object (status "idle", usage zero, stats zero), from the body, the agent version
 * (its snapshot: the agent object less created_at/updated_at/archived_at/metadata, "type":
 * "agent", with the overrides applied). */
int v1_session_create(const json_t *body, const v1_session_req *req, const json_t *agent, const char *id,
                      const char *now, json_t **ret, v1_err *e);

/* An update body (title, metadata per-key patch, budget; "agent" {tools?, mcp_servers?} only when
 * not running: 409 session_running; vault_ids refused) applied to cur; *ret NULL when nothing
 * changes, and *ret_changed (a new reference) the fields that changed, for session.updated. */
int v1_session_update(const json_t *cur, const json_t *body, const char *now, json_t **ret, json_t **ret_changed,
                      v1_err *e);

/* ---- client events (POST /v1/sessions/{id}/events) ---- */

/* The body {"events":[...]} → a new array of the events checked (1..V1_EVENTS_PER_SEND_MAX of
 * them): user.message (content blocks: text; image and document kept as given), user.interrupt,
 * user.tool_confirmation (tool_use_id, result allow|deny, deny_message only with deny),
 * user.custom_tool_result (custom_tool_use_id, content?, is_error?), system.message (last, right
 * after what it goes with). Each copy is stripped to its known fields; the caller adds "id" and
 * "processed_at". */
int v1_events_parse(const json_t *body, json_t **ret, v1_err *e);

/* The text of a user.message's content (its text blocks joined by "\n\n"; other blocks described
 * in one line each), malloc'd. */
char *v1_user_message_text(const json_t *event);

/* ---- metadata ---- */

/* Check a metadata object (at most 16 keys, keys <= 64 bytes, values strings <= 512 bytes). */
int v1_metadata_check(const json_t *m, const char *field, v1_err *e);
/* Apply a per-key patch (null or "" deletes) to cur (a new object). */
int v1_metadata_patch(const json_t *cur, const json_t *patch, const char *field, json_t **ret, v1_err *e);
