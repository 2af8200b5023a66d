/* api-console.h: hull serve's web console (console/, issue 12): GET / (index.html) and GET
 * /console/{file}, the files embedded in the binary at build time (scripts/embed-console.py), each
 * also gzip-compressed then. Open (no token: the console's API calls carry the key); gzip when
 * Accept-Encoding allows it; an ETag per file (If-None-Match: 304) with Cache-Control no-cache (the
 * browser revalidates every file, so a new binary's console is never mixed with an old one); a
 * strict Content-Security-Policy, nosniff, no referrer. The routes are "/" and "/console/..."
 * only, so they never shadow /v1, /mcp, /agui, /healthz or plimsoll's procedure paths. */
#pragma once

#include <stdbool.h>

#include "http-server.h"

/* The policy every console answer carries: scripts, styles and fetches from hull serve only, no
 * inline script or style, no plugin, never framed. */
#define CONSOLE_CSP                                                                                                    \
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "                \
        "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* Does an Accept-Encoding header's value allow gzip ("gzip", "x-gzip" or "*" with a q above 0)?
 * NULL: no. Pure. */
bool console_accepts_gzip(const char *accept_encoding);

/* Does an If-None-Match header's value ("*", or a list of entity tags, weak or strong) name etag
 * (quoted, as console_assets has it)? NULL: no. Pure. */
bool console_etag_matches(const char *if_none_match, const char *etag);

/* Add the console's routes to s (before http_start; after the APIs', so they win any tie).
 * Returns 0 or -E2BIG. */
int api_console_register(http_server *s);
