/* api-ops.c: /healthz, /readyz, /metrics. */
#include "api-ops.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"

struct api_ops {
        api_ops_config cfg;
        http_server *srv;
};

static void healthz(http_req *r) {
        (void) http_answer_text(r, 200, "ok\n");
}

static void readyz(http_req *r) {
        api_ops *a = http_req_data(r);
        if (http_stopping(a->srv))
                (void) http_answer_text(r, 503, "not ready: shutting down\n");
        else if (!brk_alive(a->cfg.broker))
                (void) http_answer_text(r, 503, "not ready: the sandbox broker is gone\n");
        else
                (void) http_answer_text(r, 200, "ready\n");
}

static void metrics_page(http_req *r) {
        api_ops *a = http_req_data(r);
        char *body;
        size_t len;
        if (metrics_render(a->cfg.metrics, &body, &len) == 0)
                (void) http_answer(r, 200, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* Plain text: "no such path on hull serve\n" and the like. */
static const http_api ops_api = {.name = "ops"};

static const http_route routes[] = {
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/healthz", .during_shutdown = true, .handler = healthz},
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/readyz", .during_shutdown = true, .handler = readyz},
        {.methods = HTTP_GET | HTTP_HEAD, .pattern = "/metrics", .during_shutdown = true, .handler = metrics_page},
};

int api_ops_new(const api_ops_config *cfg, api_ops **ret) {
        api_ops *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->cfg = *cfg;
        *ret = a;
        return 0;
}

int api_ops_register(api_ops *a, http_server *s) {
        a->srv = s;
        return http_add_routes(s, &ops_api, routes, ELEMENTSOF(routes), a);
}

void api_ops_free(api_ops *a) {
        free(a);
}
