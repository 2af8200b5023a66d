/* api-v1-capabilities.h: what hull's /v1 API does, as ONE table (api-v1-capabilities.c): every
 * area and capability of the Claude Managed Agents API (../shared/reference/cma-api.md §8, §9),
 * each supported, partial (with its reason) or unsupported (with its reason), with the routes
 * that serve it. GET /v1/capabilities (hull's extension) answers it, `hull capabilities
 * --markdown` prints docs/COMPATIBILITY.md from it, and api_v1_capabilities_check holds it
 * against the routes api_v1_register mounts. Adding a capability is one line of the table. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "error.h"

typedef enum api_v1_cap_status {
        CAP_SUPPORTED,
        CAP_PARTIAL,     /* works, with a limit its reason names */
        CAP_UNSUPPORTED, /* refused by name or not served; its reason says which and why */
} api_v1_cap_status;

typedef struct api_v1_capability {
        const char *area;
        const char *name;
        api_v1_cap_status status;
        const char *what;   /* one line: what the capability is */
        const char *routes; /* "GET|POST /v1/agents; DELETE /v1/agents/{id}" or NULL: none of its own */
        const char *reason; /* partial, unsupported: why (required); supported: NULL */
} api_v1_capability;

/* The table (n entries). */
const api_v1_capability *api_v1_capabilities(size_t *ret_n);
const char *api_v1_cap_status_name(api_v1_cap_status s); /* "supported", "partial", "unsupported" */
/* The table as GET /v1/capabilities answers it. NULL: out of memory. */
json_t *api_v1_capabilities_json(void);
/* docs/COMPATIBILITY.md (malloc'd). NULL: out of memory. */
char *api_v1_capabilities_markdown(void);
/* Is the table true to the routes mounted? Every mounted /v1 route (method and pattern) is in
 * some capability's routes, and every route of a supported or partial capability is mounted.
 * Returns 0, or -EPROTO with *e naming the first route that is not. */
int api_v1_capabilities_check(hull_error *e);
