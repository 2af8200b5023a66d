/* api-hull.c: the routes of /hull.v1.Workspace, /hull.v1.Sessions and /hull.v1.Handles. */
#include "api-hull.h"

#include <errno.h>
#include <stdlib.h>

#include "hullapi.h"
#include "macro.h"

struct api_hull {
        api_connect connect; /* first: the Connect wording reads it */
        api_hull_config cfg;
};

/* One procedure's thread: hs_rpc for the whole call, the connection suspended meanwhile. */
static void hull_thread(http_req *r) {
        api_hull *a = http_req_data(r);
        hs_answer ans;
        size_t len;
        const char *body = http_req_body(r, &len);
        hs_rpc(a->cfg.sessions, PLIM_PROC_NONE, (hull_api_procedure) http_req_tag(r), http_req_principal(r), body, len,
               http_req_received_unix_ms(r), http_req_fd(r), &ans);
        http_req_body_release(r);
        api_connect_session_answer(r, &ans);
}

static void do_procedure(http_req *r) {
        api_hull *a = http_req_data(r);
        plim_error f;
        if (!a->cfg.sessions) {
                plim_fail(&f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                          "sessions are off on this daemon; nothing ran");
                api_connect_error(r, &f, "unsupported", 0);
                return;
        }
        if (http_req_spawn(r, hull_thread) < 0) {
                plim_fail(&f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "no thread for the call; retry later; nothing ran");
                api_connect_error(r, &f, NULL, 0);
        }
}

#define PROCEDURE(service, method, proc)                                                                               \
        {                                                                                                              \
                .methods = HTTP_POST, .pattern = "{base...}" service method, .scope = AUTH_SCOPE_CODE_RUN,             \
                .body_max = SERVE_BODY_MAX, .head = api_connect_head, .handler = do_procedure, .tag = (proc),          \
        }

static const http_route routes[] = {
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Exec", HULL_API_EXEC),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Read", HULL_API_READ),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Write", HULL_API_WRITE),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Edit", HULL_API_EDIT),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Glob", HULL_API_GLOB),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Grep", HULL_API_GREP),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Persist", HULL_API_PERSIST),
        PROCEDURE(HULL_API_WORKSPACE_PATH, "Hydrate", HULL_API_HYDRATE),
        PROCEDURE(HULL_API_SESSIONS_PATH, "List", HULL_API_SESSIONS_LIST),
        PROCEDURE(HULL_API_HANDLES_PATH, "List", HULL_API_HANDLES_LIST),
        PROCEDURE(HULL_API_HANDLES_PATH, "Inspect", HULL_API_HANDLES_INSPECT),
        PROCEDURE(HULL_API_HANDLES_PATH, "Query", HULL_API_HANDLES_QUERY),
        PROCEDURE(HULL_API_HANDLES_PATH, "Read", HULL_API_HANDLES_READ),
        PROCEDURE(HULL_API_HANDLES_PATH, "AddInput", HULL_API_HANDLES_ADD_INPUT),
};

int api_hull_new(const api_hull_config *cfg, api_hull **ret) {
        api_hull *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        a->connect = (api_connect){.metrics = cfg->metrics, .log = cfg->log};
        *ret = a;
        return 0;
}

int api_hull_register(api_hull *a, http_server *s) {
        return http_add_routes(s, &api_connect_api, routes, ELEMENTSOF(routes), a);
}

void api_hull_free(api_hull *a) {
        free(a);
}
