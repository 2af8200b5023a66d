/* api-hull.c: the routes of /hull.v1.Workspace, /hull.v1.Sessions and /hull.v1.Handles. */
#include "api-hull.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
        if (http_req_spawn_short(r, hull_thread) < 0) {
                plim_fail(&f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "no thread for the call; retry later; nothing ran");
                api_connect_error(r, &f, NULL, 0);
        }
}

/* ---- /hull.v1.Handles/Upload: a file streamed into a session's handles ---- */

static void upload_free(void *p) {
        hs_upload_free(p);
}

/* Before the body: the query's arguments, the session, the file the body goes to. */
static int upload_head(http_req *r) {
        api_hull *a = http_req_data(r);
        plim_error f;
        unsigned n;
        const char *enc = http_req_header(r, "Content-Encoding", &n);
        if (n > 1 || (enc && strcasecmp(enc, "identity") != 0)) {
                plim_fail(&f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "compressed bodies are not accepted (send Content-Encoding: identity); nothing changed");
                api_connect_error(r, &f, "request", 0);
                return 1;
        }
        hs_upload *u = NULL;
        if (hs_upload_begin(a->cfg.sessions, http_req_principal(r), http_req_query(r, "sessionId"),
                            http_req_query(r, "inputId"), http_req_query(r, "name"), http_req_query(r, "format"), &u,
                            &f) < 0) {
                api_connect_error(r, &f, f.reason ? plim_reason_to_string(f.reason) : NULL, 0);
                return 1;
        }
        http_req_set_ctx(r, u, upload_free);
        return 0;
}

static int upload_sink(http_req *r, const void *data, size_t n) {
        return hs_upload_write(http_req_ctx(r), data, n);
}

static void upload_thread(http_req *r) {
        api_hull *a = http_req_data(r);
        hs_answer ans;
        hs_upload_finish(a->cfg.sessions, http_req_ctx(r), http_req_fd(r), &ans);
        api_connect_session_answer(r, &ans);
}

static void do_upload(http_req *r) {
        plim_error f;
        int err = http_req_body_error(r);
        if (err == -EFBIG) {
                plim_fail(&f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "the upload is over the largest handle this hull serve keeps (--handle-max); nothing "
                          "changed");
                api_connect_error(r, &f, "capacity", 413);
        } else if (err < 0) {
                plim_fail(&f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                          "the upload could not be stored (%s); nothing changed", strerror(-err));
                api_connect_error(r, &f, NULL, 0);
        } else if (http_req_spawn(r, upload_thread) < 0) {
                plim_fail(&f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                          "no thread for the call; retry later; nothing changed");
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
        {
                .methods = HTTP_POST | HTTP_PUT,
                .pattern = "{base...}" HULL_API_HANDLES_PATH "Upload",
                .scope = AUTH_SCOPE_CODE_RUN,
                .body_max = HD_MAX_SPILL_MAX,
                .sink = upload_sink,
                .receive_ms = SERVE_UPLOAD_RECEIVE_MS,
                .head = upload_head,
                .handler = do_upload,
        },
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
