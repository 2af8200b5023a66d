/* http-forward.h: a request handed on to another hull serve node (the one that holds what the
 * request is about: a session's sandbox), over HTTP with libcurl (src/shared/http-client.h), with
 * the caller's own authority (its Authorization or x-api-key passed through, checked again there)
 * and a hop header (HTTP_FORWARD_HOP_HEADER, naming the node that forwarded) so that a forwarded
 * request is never forwarded again. Bounded: connect and total timeouts, the answer's size
 * (NODE_FORWARD_ANSWER_MAX; kept whole, then answered), or, with http_forward_stream, an
 * event-stream answer relayed as its bytes come (/mcp's calls, AG-UI's runs). Blocking: call it
 * on a thread of the request (http_req_spawn). */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "error.h"
#include "http-server.h"

/* The hop header: a request that has it came from another node and is answered here. */
#define HTTP_FORWARD_HOP_HEADER "hull-forwarded-from"
/* The answer's header naming the node that answered a forwarded request. */
#define HTTP_FORWARD_NODE_HEADER "x-hull-node"

/* Whether r came from another node: 1 (its node id in ret_from, when not NULL), 0 not, or -EINVAL
 * when the hop header is there but is not one node id (given twice, empty, too long, other than
 * [A-Za-z0-9._-]): a request no node sent, to refuse. */
int http_forward_hop(const http_req *r, char ret_from[static 64]);

/* p percent-encoded for a URL (every byte but A-Z a-z 0-9 - . _ ~, and '/' when path) into buf
 * of size bytes. Returns the length, or -ENAMETOOLONG when it does not fit. Pure. */
int http_forward_escape(const char *p, bool path, char *buf, size_t size);

/* Send r (its method, path, query and body) to base_url (http:// or https://, no trailing path),
 * with the hop header saying from_node, and answer r with what came back (its status, content
 * type, body, its x-hull-* and retry-after headers, and HTTP_FORWARD_NODE_HEADER: to_node).
 * Returns 0 once r is answered that way, or a negative errno with *e when the node could not be
 * reached or answered wrong (-ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT, -EFBIG, ...): r is not
 * answered then; the caller words the error. */
int http_forward(http_req *r, const char *base_url, const char *from_node, const char *to_node, hull_error *e);

/* The relays of one face (its forwarded streams and calls in flight), so that it can stop them. */
typedef struct http_relays {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned n;       /* in flight */
        atomic_bool stop; /* set: every relay's transfer ends, none starts */
} http_relays;

void http_relays_init(http_relays *rl);
/* Stop every relay (a stream relayed is cut) and wait at most wait_ms for them to end. Returns
 * true once none is left, false when one still runs (then leave rl be: never free it). */
bool http_relays_stop(http_relays *rl, uint64_t wait_ms);
/* Once http_relays_stop returned true. */
void http_relays_free(http_relays *rl);

/* Like http_forward, but the answer is relayed as it comes when it is an event stream (200,
 * text/event-stream: r is answered with a stream the holder's bytes go to unchanged, its own
 * keep-alives included, and this returns at once; the stream is cut when the holder's ends badly,
 * and the transfer stopped when the client goes), else kept whole (NODE_FORWARD_ANSWER_MAX) and
 * answered. No bound on the whole exchange (a run lasts what it lasts): connect
 * NODE_FORWARD_CONNECT_MS, and NODE_FORWARD_IDLE_MS without a byte. The transfer runs on a thread
 * counted in rl (-EUSERS past NODE_FORWARD_RELAYS_MAX, -ESHUTDOWN once rl is stopped). Returns 0
 * once r is answered, or a negative errno with *e when the holder could not be reached or sent no
 * answer: r is not answered then; the caller words the error. */
int http_forward_stream(http_req *r, const char *base_url, const char *from_node, const char *to_node, http_relays *rl,
                        hull_error *e);
