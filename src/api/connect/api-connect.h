/* api-connect.h: the Connect protocol's wording that plimsoll's face and hull.v1's share (not a
 * face of its own: a helper below both): errors as Connect JSON with NotDispatched details and
 * their header, the Plimsoll-Request-Id echo, the checks of a Connect request's head, a session
 * procedure's answer. Uses src/http and the service's plimsoll types only. */
#pragma once

#include "dlog.h"
#include "http-server.h"
#include "plimsoll.h"
#include "serve-metrics.h"
#include "sessions.h"

/* ---- Connect ---- */

/* The data of a route table worded by api_connect_api starts with this. */
typedef struct api_connect {
        metrics *metrics;
        const dlog *log;
} api_connect;

/* Connect errors for the server's refusals; the request-ID echo. */
extern const http_api api_connect_api;

/* A Connect procedure's head: Content-Type application/json, no Content-Encoding but identity.
 * Returns 0, or 1 once it refused. */
int api_connect_head(http_req *r);

/* Answer r with a Connect error made of code, reason and msg (api_connect_error's arguments). */
void api_connect_refuse(http_req *r, plim_code code, plim_reason reason, const char *not_dispatched,
                        unsigned status_override, const char *msg);

/* Answer r with the Connect error f (its status, or status_override when not 0), the header
 * Plimsoll-Not-Dispatched: not_dispatched when not NULL; counted by reason; noted in the log. */
void api_connect_error(http_req *r, const plim_error *f, const char *not_dispatched, unsigned status_override);

/* Answer r with what a session procedure (hs_rpc) answered; takes a->body. */
void api_connect_session_answer(http_req *r, hs_answer *a);
