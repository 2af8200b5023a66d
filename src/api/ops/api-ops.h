/* api-ops.h: the operational routes of hull serve: GET /healthz (the process serves), GET
 * /readyz (it takes calls: not shutting down, the sandbox broker alive) and GET /metrics
 * (Prometheus text). Open (no token), plain text, served during shutdown too. */
#pragma once

#include "broker.h"
#include "http-server.h"
#include "metrics.h"

typedef struct api_ops_config {
        brk_broker *broker;
        metrics *metrics;
} api_ops_config;

typedef struct api_ops api_ops;

/* Returns 0 with *ret or -ENOMEM. */
int api_ops_new(const api_ops_config *cfg, api_ops **ret);

/* Add the routes to s (before http_start). Returns 0 or -E2BIG. */
int api_ops_register(api_ops *a, http_server *s);

void api_ops_free(api_ops *a);
