/* tool-web.h: the web tools, web_fetch and web_search (src/agent/tool.h).
 *
 * web_fetch(url, max_bytes?) fetches through the egress guard (src/shared/egress.h,
 * webfetch.h). What the model gets names the HTTP status, the content type and the final URL,
 * and then: an HTML page as readable text (src/shared/html-text.h), inline when short, else a
 * text handle; JSON as a json handle; CSV as a table handle; other text inline or as a text
 * handle; anything else as a binary handle, or an error when it is over max_bytes. A text body
 * over max_bytes is cut there and marked truncated (with its full size when the server gave
 * it). A refused URL, a network failure or an HTTP error is an error result {status, error,
 * url} the model can adapt to, never a failed turn.
 *
 * web_search(query, max_results?) asks a search provider (Tavily's API first; the base URL is
 * configurable) for an answer and results {title, url, content, score}, each content clipped to
 * WEBSEARCH_SNIPPET_CHARS characters. It is offered only when a key is configured. Its endpoint
 * is the operator's, not the model's: it does not go through the egress guard. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "egress.h"
#include "error.h"
#include "http-client.h"
#include "macro.h"
#include "tool.h"

/* The tools' configuration: their tool_def.env. Borrowed by the definitions for their life. */
typedef struct tool_web_config {
        const egress_policy *egress; /* web_fetch's policy (borrowed); required */
        uint64_t fetch_max_bytes;    /* a body's cap when the call gives none; 0: WEBFETCH_MAX_BYTES_DEFAULT */
        uint64_t fetch_timeout_ms;   /* one fetch, every hop; 0: WEBFETCH_TIMEOUT_MS_DEFAULT */
        const char *search_provider; /* "tavily" (NULL: tavily) */
        const char *search_base_url; /* NULL: the provider's (https://api.tavily.com) */
        const char *search_api_key;  /* NULL or "": web_search is not offered */
        unsigned search_max_results; /* when the call gives none; 0: WEBSEARCH_RESULTS_DEFAULT */
        uint64_t search_timeout_ms;  /* 0: WEBSEARCH_TIMEOUT_MS_DEFAULT */
} tool_web_config;

/* A search provider: one request, the answer in the tool's form {"answer": string or null,
 * "results": [{"title", "url", "content", "score"}]} with every string bounded. Returns 0 and
 * *ret, or a negative errno with *e (a message the model reads: what failed and, for a key the
 * provider refused, what to check). */
typedef struct tool_web_search_provider {
        const char *name;             /* "tavily" */
        const char *default_base_url; /* "https://api.tavily.com" */
        int (*search)(httpc *c, const tool_web_config *cfg, const char *base_url, const char *query,
                      unsigned max_results, uint64_t deadline_mono_ms, const atomic_bool *cancel, json_t **ret,
                      hull_error *e);
} tool_web_search_provider;

/* The provider called name, or NULL. */
const tool_web_search_provider *tool_web_search_provider_find(const char *name);

/* web_fetch's definition, cfg its env. Returns 0 and *ret, or -EINVAL with *e (no policy). */
int tool_web_fetch_def(const tool_web_config *cfg, tool_def *ret, hull_error *e);

/* web_search's definition, cfg its env. Returns 0 and *ret, -ENOENT when cfg has no key (the
 * tool is not offered: not an error to show), or -EINVAL with *e (an unknown provider, a base
 * URL that is not http(s)). */
int tool_web_search_def(const tool_web_config *cfg, tool_def *ret, hull_error *e);

/* ---- the web tools from plain settings (what a CLI such as hull run calls) ---- */

/* An owner of the egress policy and the configuration the definitions point to. */
typedef struct tool_web tool_web;

/* Build the web tools' settings. allow_hosts: n_hosts host names (or addresses) a fetch may
 * reach although they resolve to internal addresses; allow_cidrs: n_cidrs CIDRs (or bare
 * addresses) likewise; both empty by default, at most EGRESS_ALLOW_MAX in all; the cloud
 * metadata endpoints stay denied whatever they say. max_bytes: web_fetch's body cap when a call
 * gives none (0: WEBFETCH_MAX_BYTES_DEFAULT; at most WEBFETCH_MAX_BYTES_MAX). search_api_key:
 * NULL or "" and web_search is not offered; search_base_url: NULL for Tavily's
 * (https://api.tavily.com). Every string is copied. Returns 0 and *ret (free with
 * tool_web_free, after the last use of its definitions), or -EINVAL with *e (an allowlist entry
 * that is not what its list holds, max_bytes over the bound, a base URL that is not http(s)),
 * -ENOMEM. */
int tool_web_new(const char *const *allow_hosts, size_t n_hosts, const char *const *allow_cidrs, size_t n_cidrs,
                 uint64_t max_bytes, const char *search_api_key, const char *search_base_url, tool_web **ret,
                 hull_error *e);
void tool_web_free(tool_web *w);
static inline void tool_web_freep(tool_web **w) {
        if (*w)
                tool_web_free(*w);
}
#define _cleanup_tool_web_ _cleanup_(tool_web_freep)

/* The definitions (they borrow w): defs[0] web_fetch, then defs[1] web_search when a key was
 * given. Returns how many (1 or 2). */
size_t tool_web_defs(const tool_web *w, tool_def defs[static 2]);
