/* api-v1-capabilities.c: see api-v1-capabilities.h. The table of what hull's /v1 API does, its
 * answers (GET /v1/capabilities, docs/COMPATIBILITY.md), its check against the mounted routes,
 * and the routes that refuse an unsupported capability by name (400 unsupported_capability,
 * never a 404: session threads). */
#include "api-v1-capabilities.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-v1-internal.h"
#include "dynbuf.h"
#include "macro.h"

#define S CAP_SUPPORTED
#define P CAP_PARTIAL
#define U CAP_UNSUPPORTED

/* One line per capability: area, name, status, what it is, its routes, the reason (partial,
 * unsupported). Areas are grouped (the documents list them in this order). */
static const api_v1_capability table[] = {
        {"headers", "version-and-beta-admission", S,
         "anthropic-version (2023-06-01, 2026-10-21) and anthropic-beta as a list; unknown query parameters refused",
         NULL, NULL},
        {"errors", "error-envelope", S,
         "{type:error, error:{type, message, details:{error_code}}, request_id}; x-should-retry: false on 4xx", NULL,
         NULL},
        {"pagination", "cursor-pages", S, "opaque next_page/prev_page cursors bound to their query; limit, order", NULL,
         NULL},
        {"agents", "agent-crud", S, "create, retrieve (?version=), update (a new version), list, archive",
         "POST|GET /v1/agents; GET|POST /v1/agents/{id}; POST /v1/agents/{id}/archive", NULL},
        {"agents", "agent-versions", S, "every version of an agent", "GET /v1/agents/{id}/versions", NULL},
        {"agents", "model-effort", S,
         "model.effort passed to the model: Anthropic output_config.effort, OpenAI-compatible reasoning_effort", NULL,
         NULL},
        {"agents", "model-speed", P, "model.speed \"fast\" passed to the model", NULL,
         "only the Anthropic provider takes it (speed:\"fast\"); OpenAI-compatible servers have no such setting"},
        {"agents", "model-inference-geo", P, "model.inference_geo", NULL,
         "stored and echoed; hull calls the one model endpoint its operator configured"},
        {"agents", "multiagent-roster", U, "an agent whose multiagent roster delegates to other agents", NULL,
         "hull runs one agent per session: an agent with a multiagent roster is refused (400 "
         "unsupported_capability)"},
        {"environments", "environment-crud", S, "create, retrieve, update, list, archive, delete",
         "POST|GET /v1/environments; GET|POST|DELETE /v1/environments/{id}; POST /v1/environments/{id}/archive", NULL},
        {"environments", "networking", P, "networking none (hull's default), limited (allowed_hosts) or unrestricted",
         NULL, "unrestricted only when hull serve runs with --allow-unrestricted-network"},
        {"environments", "packages", S, "apt, npm, pip (and the other lists) installed once into shared layers", NULL,
         NULL},
        {"environments", "self-hosted-tools", S,
         "a self_hosted environment: the caller runs the built-in tools and answers with user.tool_result", NULL, NULL},
        {"environments", "self-hosted-work-queue", S,
         "the work queue of a self_hosted environment: workers poll, acknowledge, heartbeat (412 on a stale lease) and "
         "stop work items with an environment key (hull key create --environment) and the work's sessions token; hull "
         "worker and the SDKs' workers run the sessions' tools",
         "GET /v1/environments/{id}/work; GET /v1/environments/{id}/work/poll; GET /v1/environments/{id}/work/stats; "
         "GET|POST /v1/environments/{id}/work/{work}; POST /v1/environments/{id}/work/{work}/ack; "
         "POST /v1/environments/{id}/work/{work}/heartbeat; POST /v1/environments/{id}/work/{work}/stop",
         NULL},
        {"sessions", "session-lifecycle", S, "create, retrieve, update, list (statuses[] and filters), archive, delete",
         "POST|GET /v1/sessions; GET|POST|DELETE /v1/sessions/{id}; POST /v1/sessions/{id}/archive", NULL},
        {"sessions", "agent-overrides", S, "agent_with_overrides: a session's own model, system, tools, MCP servers",
         NULL, NULL},
        {"sessions", "initial-events", S, "initial_events at create: user.message and user.define_outcome", NULL, NULL},
        {"sessions", "session-states", S,
         "idle, running, rescheduling (a retried model call: session.status_rescheduled), terminated "
         "(session.status_terminated); statuses[] finds each",
         NULL, NULL},
        {"sessions", "session-budget", P, "budget.max_list_cost ends a turn that spent it (budget_reached)", NULL,
         "priced from the operator's config.json \"pricing\" table (USD only); a model without a price is refused a "
         "budget"},
        {"events", "event-log", S, "the session's append-only event log, paged, types[] and created_at filters",
         "GET|POST /v1/sessions/{id}/events", NULL},
        {"events", "user-message", S, "user.message with text, image, document and redacted blocks", NULL, NULL},
        {"events", "user-interrupt", S, "user.interrupt ends the turn", NULL, NULL},
        {"events", "tool-confirmation", S, "always_ask tools pause with requires_action until user.tool_confirmation",
         NULL, NULL},
        {"events", "custom-tools", S, "custom tools: agent.custom_tool_use answered by user.custom_tool_result", NULL,
         NULL},
        {"events", "user-tool-result", S,
         "user.tool_result: the results of built-in tools the caller runs (self_hosted environments)", NULL, NULL},
        {"events", "system-message", S,
         "system.message after the user.message, user.tool_result or user.custom_tool_result it goes with", NULL, NULL},
        {"events", "define-outcome", S, "user.define_outcome and the grader's span.outcome_evaluation_* events", NULL,
         NULL},
        {"events", "usage-and-spans", S,
         "span.model_request_start/end with model_usage (cache tokens included); the session's usage", NULL, NULL},
        {"streaming", "event-stream", S, "SSE event stream with Last-Event-ID replay and keepalive pings",
         "GET /v1/sessions/{id}/events/stream", NULL},
        {"streaming", "message-deltas", S, "event_deltas[]: event_start/event_delta previews of agent.message", NULL,
         NULL},
        {"threads", "session-threads", U, "a session's threads (multi-agent coordination) and their events",
         "GET /v1/sessions/{id}/threads; GET /v1/sessions/{id}/threads/{tid}; "
         "GET /v1/sessions/{id}/threads/{tid}/events; GET /v1/sessions/{id}/threads/{tid}/stream; "
         "POST /v1/sessions/{id}/threads/{tid}/archive",
         "hull runs one agent per session and makes no threads: these routes answer 400 unsupported_capability"},
        {"resources", "session-resources", S, "files, GitHub repositories and memory stores mounted in the session",
         "GET|POST /v1/sessions/{id}/resources; GET|POST|DELETE /v1/sessions/{id}/resources/{rid}", NULL},
        {"tools", "builtin-tools", S,
         "agent_toolset_20260401 (bash, read, write, edit, glob, grep, web_fetch) in a sandbox", NULL, NULL},
        {"tools", "permission-policies", S, "always_allow, always_ask and auto permission policies", NULL, NULL},
        {"tools", "web-search", P, "web_search", NULL, "only when the operator configured a search key"},
        {"tools", "mcp-servers", S, "MCP servers over Streamable HTTP, with mcp_toolset permission policies", NULL,
         NULL},
        {"models", "anthropic-prompt-caching", S,
         "cache_control on the system prompt and the tools; cache tokens in usage", NULL, NULL},
        {"vaults", "vault-crud", S, "vaults: create, retrieve, update, list, archive, delete",
         "POST|GET /v1/vaults; GET|POST|DELETE /v1/vaults/{id}; POST /v1/vaults/{id}/archive", NULL},
        {"vaults", "credentials", P,
         "static_bearer and mcp_oauth (refreshed on expiry and on 401) credentials, never echoed",
         "POST|GET /v1/vaults/{id}/credentials; GET|POST|DELETE /v1/vaults/{id}/credentials/{cred}; "
         "POST /v1/vaults/{id}/credentials/{cred}/archive; POST /v1/vaults/{id}/credentials/{cred}/mcp_oauth_validate",
         "environment_variable credentials are refused: hull does not substitute secrets in a sandbox's traffic"},
        {"memory-stores", "memory-stores", S, "memory stores, memories with preconditions, versions and redaction",
         "POST|GET /v1/memory_stores; GET|POST|DELETE /v1/memory_stores/{id}; POST /v1/memory_stores/{id}/archive; "
         "POST|GET /v1/memory_stores/{id}/memories; GET|POST|DELETE /v1/memory_stores/{id}/memories/{mid}; "
         "GET /v1/memory_stores/{id}/memory_versions; GET /v1/memory_stores/{id}/memory_versions/{vid}; "
         "POST /v1/memory_stores/{id}/memory_versions/{vid}/redact",
         NULL},
        {"files", "files", S, "upload, list, retrieve, download, delete",
         "POST|GET /v1/files; GET|DELETE /v1/files/{id}; GET /v1/files/{id}/content", NULL},
        {"skills", "skills", S, "skills and their versions, uploaded and downloaded",
         "POST|GET /v1/skills; GET|DELETE /v1/skills/{id}; POST|GET /v1/skills/{id}/versions; "
         "GET|DELETE /v1/skills/{id}/versions/{version}; GET /v1/skills/{id}/versions/{version}/content",
         NULL},
        {"webhooks", "webhook-subscriptions", S,
         "hull's extension: subscriptions with Standard Webhooks signed deliveries of the SDK's event types "
         "(retries, auto-disable, secret rotation, an outbox that survives restarts)",
         "POST|GET /v1/webhooks; GET|POST|DELETE /v1/webhooks/{id}; POST /v1/webhooks/{id}/rotate_secret; "
         "POST /v1/webhooks/{id}/test",
         NULL},
        {"deployments", "scheduled-deployments", S,
         "deployments on a cron schedule with a time zone (create, retrieve, update, list, archive, pause, unpause, "
         "run now) and their runs",
         "POST|GET /v1/deployments; GET|POST /v1/deployments/{id}; POST /v1/deployments/{id}/archive; "
         "POST /v1/deployments/{id}/pause; POST /v1/deployments/{id}/unpause; POST /v1/deployments/{id}/run; "
         "GET /v1/deployment_runs; GET /v1/deployment_runs/{id}",
         NULL},
        {"outcomes", "outcome-grading", S,
         "an outcome's rubric (text or a file) graded by a model call after each answer, with revision turns up to "
         "max_iterations",
         NULL, NULL},
        {"dreams", "dreams", U, "dreams", NULL, "not served"},
        {"tunnels", "mcp-tunnels", U, "MCP tunnels", NULL, "not served: hull reaches MCP servers directly"},
        {"user-profiles", "user-profiles", U, "user profiles", NULL, "not served"},
        {"hull", "api-keys", S, "hull's API keys", "POST|GET /v1/api-keys; DELETE /v1/api-keys/{id}", NULL},
        {"hull", "session-handles", S, "a session's handles, their previews and content",
         "GET /v1/sessions/{id}/handles; GET /v1/sessions/{id}/handles/{name}; "
         "GET /v1/sessions/{id}/handles/{name}/content",
         NULL},
        {"hull", "session-records", S, "a session's run records, audit log and network log",
         "GET /v1/sessions/{id}/records; GET /v1/sessions/{id}/audit_log; GET /v1/sessions/{id}/network_log", NULL},
        {"hull", "session-inputs", S, "input files handed to a session", "POST /v1/sessions/{id}/inputs", NULL},
        {"hull", "session-query", S, "SQL over a session's handles", "POST /v1/sessions/{id}/query", NULL},
        {"hull", "capabilities", S, "this inventory", "GET /v1/capabilities", NULL},
};

#undef S
#undef P
#undef U

const api_v1_capability *api_v1_capabilities(size_t *ret_n) {
        *ret_n = ELEMENTSOF(table);
        return table;
}

const char *api_v1_cap_status_name(api_v1_cap_status s) {
        return s == CAP_SUPPORTED ? "supported" : s == CAP_PARTIAL ? "partial" : "unsupported";
}

/* ---- a capability's routes: "M1|M2 /path; M /path2" ---- */

#define CAP_PATH_MAX 160U /* bytes of a route's path pattern in the table, and its NUL */

typedef struct cap_route {
        unsigned methods;
        char path[CAP_PATH_MAX];
} cap_route;

static unsigned method_bit(const char *m, size_t n) {
        static const struct {
                const char *name;
                unsigned bit;
        } ms[] = {{"GET", HTTP_GET}, {"POST", HTTP_POST}, {"PUT", HTTP_PUT}, {"DELETE", HTTP_DELETE}};
        for (size_t i = 0; i < ELEMENTSOF(ms); i++)
                if (strlen(ms[i].name) == n && memcmp(ms[i].name, m, n) == 0)
                        return ms[i].bit;
        return 0;
}

/* The next route of *p (advanced past it). Returns 1 with *ret, 0 at the end, -EINVAL for a
 * malformed one. */
static int next_route(const char **p, cap_route *ret) {
        const char *s = *p + strspn(*p, " ;");
        if (!*s)
                return 0;
        size_t n = strcspn(s, ";");
        const char *sp = memchr(s, ' ', n);
        if (!sp)
                return -EINVAL;
        *ret = (cap_route){0};
        for (const char *m = s; m < sp;) {
                size_t k = strcspn(m, "| ");
                unsigned bit = method_bit(m, k);
                if (!bit)
                        return -EINVAL;
                ret->methods |= bit;
                m += k + (m[k] == '|');
        }
        size_t plen = n - (size_t) (sp + 1 - s);
        while (plen > 0 && sp[plen] == ' ')
                plen--;
        if (plen == 0 || plen >= sizeof(ret->path))
                return -EINVAL;
        memcpy(ret->path, sp + 1, plen);
        ret->path[plen] = '\0';
        *p = s + n;
        return 1;
}

static json_t *routes_json(const char *routes) {
        json_t *out = json_array();
        cap_route cr;
        for (const char *p = routes ? routes : ""; out && next_route(&p, &cr) > 0;) {
                static const char *const names[] = {"GET", "POST", "PUT", "DELETE"};
                static const unsigned bits[] = {HTTP_GET, HTTP_POST, HTTP_PUT, HTTP_DELETE};
                for (size_t i = 0; i < ELEMENTSOF(bits); i++)
                        if ((cr.methods & bits[i]) &&
                            json_array_append_new(out, json_pack("{s:s, s:s}", "method", names[i], "path", cr.path)) <
                                    0)
                                return json_decref(out), NULL;
        }
        return out;
}

json_t *api_v1_capabilities_json(void) {
        json_auto_t *data = json_array();
        size_t counts[3] = {0};
        if (!data)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const api_v1_capability *c = &table[i];
                json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?}", "area", c->area, "name", c->name, "status",
                                      api_v1_cap_status_name(c->status), "description", c->what, "routes",
                                      routes_json(c->routes), "reason", c->reason);
                if (!o)
                        return NULL;
                if (!c->reason)
                        json_object_set_new(o, "reason", json_null());
                if (json_array_append_new(data, o) < 0)
                        return NULL;
                counts[c->status]++;
        }
        return json_pack("{s:s, s:s, s:O, s:{s:I, s:I, s:I}}", "type", "capability_list", "server", "hull", "data",
                         data, "counts", "supported", (json_int_t) counts[CAP_SUPPORTED], "partial",
                         (json_int_t) counts[CAP_PARTIAL], "unsupported", (json_int_t) counts[CAP_UNSUPPORTED]);
}

/* A table cell: '|' escaped, as Markdown wants. */
static int add_cell(dynbuf *b, const char *s) {
        int r = 0;
        for (const char *p = s ? s : ""; r >= 0 && *p; p++)
                r = *p == '|' ? dynbuf_add_str(b, "\\|") : dynbuf_addf(b, "%c", *p);
        return r;
}

char *api_v1_capabilities_markdown(void) {
        _cleanup_dynbuf_ dynbuf b;
        dynbuf_init(&b, 256 * 1024);
        int r = dynbuf_add_str(&b, "<!-- Generated by `hull capabilities --markdown` from the table in\n"
                                   "     src/api/cmav1/api-v1-capabilities.c: edit the table, not this file. -->\n"
                                   "# Compatibility with the Claude Managed Agents API\n\n"
                                   "What hull's `/v1` API does, capability by capability: **supported**, **partial** "
                                   "(works, with the limit named) or **unsupported** (refused by name or not served, "
                                   "with the reason). A running server answers the same table at `GET "
                                   "/v1/capabilities` (hull's extension, see docs/API.md); a test holds it against "
                                   "the routes the server mounts.\n");
        const char *area = "";
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(table); i++) {
                const api_v1_capability *c = &table[i];
                if (strcmp(area, c->area) != 0) {
                        area = c->area;
                        r = dynbuf_addf(&b,
                                        "\n## %s\n\n| capability | status | what | routes | notes |\n"
                                        "|---|---|---|---|---|\n",
                                        area);
                }
                if (r >= 0)
                        r = dynbuf_addf(&b, "| %s | %s | ", c->name, api_v1_cap_status_name(c->status));
                if (r >= 0)
                        r = add_cell(&b, c->what);
                if (r >= 0)
                        r = dynbuf_add_str(&b, " | ");
                cap_route cr;
                bool first = true;
                for (const char *p = c->routes ? c->routes : ""; r >= 0 && next_route(&p, &cr) > 0; first = false) {
                        r = dynbuf_addf(&b, "%s`", first ? "" : "<br>");
                        for (unsigned bit = HTTP_GET, k = 0; r >= 0 && bit <= HTTP_DELETE; bit <<= 1)
                                if (cr.methods & bit)
                                        r = dynbuf_addf(&b, "%s%s", k++ ? "\\|" : "",
                                                        bit == HTTP_GET    ? "GET"
                                                        : bit == HTTP_POST ? "POST"
                                                        : bit == HTTP_PUT  ? "PUT"
                                                        : bit == HTTP_HEAD ? "HEAD"
                                                                           : "DELETE");
                        if (r >= 0)
                                r = dynbuf_addf(&b, " %s`", cr.path);
                }
                if (r >= 0)
                        r = dynbuf_add_str(&b, " | ");
                if (r >= 0)
                        r = add_cell(&b, c->reason);
                if (r >= 0)
                        r = dynbuf_add_str(&b, " |\n");
        }
        return r < 0 ? NULL : dynbuf_take(&b, NULL);
}

/* ---- the check ---- */

typedef struct check_ctx {
        hull_error *e;
        int r;
} check_ctx;

/* Is the mounted route (its methods, its pattern) listed by some capability? */
static void check_mounted(void *ud, const http_route *rt) {
        check_ctx *c = ud;
        if (c->r < 0)
                return;
        unsigned missing = rt->methods & (HTTP_GET | HTTP_POST | HTTP_PUT | HTTP_DELETE);
        for (size_t i = 0; missing && i < ELEMENTSOF(table); i++) {
                cap_route cr;
                for (const char *p = table[i].routes ? table[i].routes : ""; next_route(&p, &cr) > 0;)
                        if (strcmp(cr.path, rt->pattern) == 0)
                                missing &= ~cr.methods;
        }
        if (missing)
                c->r = hull_fail(c->e, -EPROTO,
                                 "the route %s%s%s%s%s is mounted but no capability of "
                                 "src/api/cmav1/api-v1-capabilities.c lists it",
                                 missing & HTTP_GET ? "GET " : "", missing & HTTP_POST ? "POST " : "",
                                 missing & HTTP_PUT ? "PUT " : "", missing & HTTP_DELETE ? "DELETE " : "", rt->pattern);
}

typedef struct find_ctx {
        const cap_route *want;
        unsigned found;
} find_ctx;

static void find_mounted(void *ud, const http_route *rt) {
        find_ctx *f = ud;
        if (strcmp(rt->pattern, f->want->path) == 0)
                f->found |= rt->methods & f->want->methods;
}

int api_v1_capabilities_check(hull_error *e) {
        check_ctx c = {.e = e};
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const api_v1_capability *cap = &table[i];
                if ((cap->status != CAP_SUPPORTED) != (cap->reason != NULL))
                        return hull_fail(e, -EPROTO, "capability %s/%s: a %s capability %s a reason", cap->area,
                                         cap->name, api_v1_cap_status_name(cap->status),
                                         cap->reason ? "has no" : "needs");
                cap_route cr;
                int k;
                for (const char *p = cap->routes ? cap->routes : ""; (k = next_route(&p, &cr)) != 0;) {
                        if (k < 0)
                                return hull_fail(e, -EPROTO, "capability %s/%s: malformed routes \"%s\"", cap->area,
                                                 cap->name, cap->routes);
                        if (cap->status == CAP_UNSUPPORTED)
                                continue;
                        find_ctx f = {.want = &cr};
                        v1a_each_route(find_mounted, &f);
                        if (f.found != cr.methods)
                                return hull_fail(e, -EPROTO,
                                                 "capability %s/%s is %s but its route %s is not mounted (or not with "
                                                 "every method listed)",
                                                 cap->area, cap->name, api_v1_cap_status_name(cap->status), cr.path);
                }
        }
        v1a_each_route(check_mounted, &c);
        return c.r;
}

/* ---- the routes ---- */

static void capabilities_get(http_req *r) {
        static const char *const none[] = {NULL};
        query q;
        if (v1a_refuse_query(r, &q, none, NULL))
                return;
        v1a_answer_json(r, 200, api_v1_capabilities_json());
}

/* An unsupported capability's route: refused by name, with the table's reason. */
static void refuse_threads(http_req *r) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcmp(table[i].name, "session-threads") == 0) {
                        v1a_failf(r, 400, "unsupported_capability",
                                  "session threads are not supported by hull: %s (GET /v1/capabilities lists what is)",
                                  table[i].reason);
                        return;
                }
}

const http_route v1a_capability_routes[] = {
        {.methods = HTTP_GET,
         .pattern = "/v1/capabilities",
         .scope = "v1",
         .head = v1a_head_ext,
         .handler = capabilities_get},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/threads",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = refuse_threads},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/threads/{tid}",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = refuse_threads},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/threads/{tid}/events",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = refuse_threads},
        {.methods = HTTP_GET,
         .pattern = "/v1/sessions/{id}/threads/{tid}/stream",
         .scope = "v1",
         .head = v1a_head_resources,
         .handler = refuse_threads},
        {.methods = HTTP_POST,
         .pattern = "/v1/sessions/{id}/threads/{tid}/archive",
         .scope = "v1",
         .body_max = V1_BODY_MAX,
         .head = v1a_head_resources,
         .handler = refuse_threads},
};
const size_t v1a_n_capability_routes = ELEMENTSOF(v1a_capability_routes);
