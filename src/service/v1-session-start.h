/* v1-session-start.h: a /v1 session made from a create body, the one path every caller takes
 * (POST /v1/sessions, a deployment's run): the agent version and the environment looked up (neither
 * archived), the vaults checked, the session object shaped (v1-shape.h), its resources resolved
 * and mounted (v1-resources.h, v1-memory.h), stored, and its initial events sent to the engine. */
#pragma once

#include <jansson.h>

#include "store.h"
#include "v1-files.h"
#include "v1-run.h"
#include "v1-shape.h"

typedef struct v1_starter {
        store *store;
        v1_engine *engine;
        v1_files *files;      /* NULL: no file resources */
        const char *mnt_root; /* NULL: none mounted */
} v1_starter;

/* Start a session from body (a POST /v1/sessions body); extra (may be NULL): fields set on the
 * session object before it is stored ({"deployment_id": ...}). *ret the session object as stored
 * after its initial events (a new reference). Errors with *err: 400 (a bad body; agent_archived,
 * environment_archived, a vault that is not one), 404 (agent_not_found, environment_not_found),
 * 500 (the store). */
int v1_session_start(const v1_starter *c, const json_t *body, const json_t *extra, json_t **ret, v1_err *err);
