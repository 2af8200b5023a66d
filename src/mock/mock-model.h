/* mock-model.h: hull mock-model's server: a scripted model (mock-script.h) on hull's HTTP
 * server. POST /v1/chat/completions speaks OpenAI's wire format, POST /v1/messages Anthropic's;
 * each request takes the script's next step. Every request is recorded (a JSON line to a file,
 * and GET /_mock/requests answers them all as one JSON array). Streams are fed by a thread of
 * their own each, paced as the step says. */
#pragma once

#include <stdbool.h>

#include "dlog.h"
#include "http-server.h"
#include "mock-script.h"

typedef struct mock_config {
        const mock_script *script;
        const char *api_key; /* NULL: any credential (or none) is accepted */
        int record_fd;       /* each request as a JSON line; -1: none */
        const dlog *log;
} mock_config;

typedef struct mock_server mock_server;

/* The pointed-to parts of cfg must outlive it. Returns 0 with *ret, or -ENOMEM. */
int mock_server_new(const mock_config *cfg, mock_server **ret);

/* The API that words refusals of requests without a route (unknown paths: 404 in the envelope of
 * the API the caller speaks); give it, with m as its data, to http_config's fallback. */
extern const http_api mock_fallback_api;

/* Add the routes to s. Returns 0 or -E2BIG. */
int mock_server_register(mock_server *m, http_server *s);

/* Stop: delays end early, streams end where they are. Any thread. */
void mock_server_stop(mock_server *m);

/* The stream threads still running (after mock_server_stop, wait for 0 before freeing). */
unsigned mock_server_streams(mock_server *m);

/* Free it (NULL: nothing). Only once mock_server_streams() is 0 and the HTTP server is stopped. */
void mock_server_free(mock_server *m);
