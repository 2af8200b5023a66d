/* v1-repo.h: a /v1 session's github_repository resources (issue 22, cma-api-more.md §7.1): the
 * repository checked through the egress guard (like an MCP server's URL: https:// or http://, the
 * operator's web.allow_* admitting a private address), cloned once with Debian's git when the
 * resource is made (bounded in time, no prompt, the token given to that git only as an
 * http.extraHeader through GIT_CONFIG_COUNT, so never in the clone's config), its commit frozen
 * then (the resource's "checkout_sha", a hull extension), kept in MNT_ROOT/.repos/<resource id>
 * (0700). Mounted below /workspace/ (the default: /workspace/<repo>), a writable copy goes into
 * the session's workspace when its sandbox opens; below /mnt/session/, a copy goes into the
 * session's resource directory, which the sandbox sees read-only. The token is sealed at rest with the vaults' key ring
 * (vault-seal.h) in MNT_ROOT/.repos/<resource id>.token, and is never in the resource object. */
#pragma once

#include <jansson.h>

#include "settings.h"
#include "ss.h"
#include "v1-shape.h"

/* A github_repository resource object from body (path names it in messages), its clone made in
 * mnt_root/.repos/. Errors: 400 for a bad field, a URL the guard refuses, or a clone that fails
 * (git's own words, never the token); 500 when the clone cannot be kept. */
int v1_repo_make(const settings *st, const char *mnt_root, const json_t *body, const char *path, const char *now,
                 json_t **ret, v1_err *err);

/* Store a new authorization_token for the resource res (sealed). */
int v1_repo_set_token(const char *mnt_root, const json_t *res, const char *token, v1_err *err);

/* Copy res's clone into dir at its mount path (nothing when it is there already). */
int v1_repo_place(const char *mnt_root, const char *dir, const json_t *res, hull_error *e);

/* Each github_repository of resources mounted below /workspace/: a writable copy of its clone
 * (its .git, the frozen commit checked out, no token) written into box's workspace through the
 * jail (ss_hydrate), when nothing is at that path yet. Called when the sandbox opens. */
int v1_repo_workspace(const char *mnt_root, ss_manager *ss, ss_session *box, const json_t *resources, hull_error *e);

/* Take res's copy out of dir. */
void v1_repo_unplace(const char *dir, const json_t *res);

/* Drop res's clone and sealed token from mnt_root/.repos/. */
void v1_repo_forget(const char *mnt_root, const json_t *res);
