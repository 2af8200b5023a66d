/* cli-env.h: what hull env shares with hull exec and hull run: an environment's layer. */
#pragma once

#include <stdbool.h>

#include "env-spec.h"
#include "error.h"
#include "limits.h"
#include "svc-env.h"

/* The environment NAME of HOME's hull.db (svc-env.h's svc_env_named and svc_env_resolve, the
 * build's progress and output on stderr): its layer's directory into ret_layer ("" when it has
 * no packages), built first when build is set and it is missing (else -ENOENT; *ret_built, may
 * be NULL, says whether this call built it), its spec into *ret_spec (may be NULL; free with
 * env_spec_done) and, when ret_desc is not NULL, how run records name it (env_describe: its
 * newest version, the layer's digest, the network). Returns 0 or a negative errno with *e. */
int cli_env_layer(const char *home, const char *name, bool build, char ret_layer[SBX_PATH_MAX], env_spec *ret_spec,
                  bool *ret_built, char *ret_desc, hull_error *e);

/* The environment NAME of HOME's hull.db resolved (svc-env.h) as hull run and hull chat use it:
 * its layer (built first when build is set and it is missing, the progress and a failed step's
 * output on stderr), its network (unrestricted allowed: the user's own machine) and its
 * description. *ret: free with svc_env_done; *ret_spec (may be NULL): free with env_spec_done.
 * Returns 0 or a negative errno with *e. */
int cli_env_resolve(const char *home, const char *name, bool build, svc_env *ret, env_spec *ret_spec, hull_error *e);
