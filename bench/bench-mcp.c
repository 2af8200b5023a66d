/* bench-mcp.c: hull's MCP client timed on tools/call round trips (issue 11), driven by
 * bench/mcp-client.sh; run by hand, never a test.
 *
 *   bench-mcp stdio CALLS WARMUP COMMAND [ARGS...]   spawn the server over stdio
 *   bench-mcp http CALLS WARMUP URL                   connect over Streamable HTTP
 *
 * Connects (mcp_client_spawn / mcp_client_connect: initialize and notifications/initialized),
 * calls the server's "echo" tool WARMUP times untimed, then CALLS times, each timed with
 * CLOCK_MONOTONIC around mcp_client_call_tool (the request written, the answer read and parsed;
 * every answer must be "Echo: ping"). Prints each call's time in microseconds, one per line. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mcp-client.h"
#include "time-util.h"

static int call_once(mcp_client *c, const json_t *args, hull_error *e) {
        _cleanup_(json_decrefp) json_t *res = NULL;
        int r = mcp_client_call_tool(c, "echo", args, NULL, &res, e);
        if (r < 0)
                return r;
        const char *t = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
        if (!t || strcmp(t, "Echo: ping") != 0)
                return hull_fail(e, -EPROTO, "echo answered something else: %s", t ? t : "(no text)");
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 5 || (strcmp(argv[1], "stdio") != 0 && strcmp(argv[1], "http") != 0)) {
                fprintf(stderr, "usage: bench-mcp stdio|http CALLS WARMUP COMMAND ARGS...|URL\n");
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        long calls = strtol(argv[2], NULL, 10), warmup = strtol(argv[3], NULL, 10);
        hull_error e = {0};
        _cleanup_mcp_client_ mcp_client *c = NULL;
        int r;
        if (strcmp(argv[1], "stdio") == 0) {
                mcp_stdio_config sc = {.name = "bench", .argv = (const char *const *) argv + 4};
                r = mcp_client_spawn(&sc, &c, &e);
        } else {
                mcp_http_config hc = {.name = "bench", .url = argv[4]};
                r = mcp_client_connect(&hc, &c, &e);
        }
        if (r < 0) {
                fprintf(stderr, "bench-mcp: %s\n", e.msg);
                return 1;
        }
        _cleanup_(json_decrefp) json_t *args = json_pack("{s:s}", "message", "ping");
        uint64_t *us = calloc((size_t) (calls > 0 ? calls : 1), sizeof(*us));
        if (!args || !us)
                return 1;
        for (long i = 0; i < warmup + calls; i++) {
                uint64_t t0 = now_mono_us();
                r = call_once(c, args, &e);
                uint64_t t1 = now_mono_us();
                if (r < 0) {
                        fprintf(stderr, "bench-mcp: call %ld: %s\n", i, e.msg);
                        free(us);
                        return 1;
                }
                if (i >= warmup)
                        us[i - warmup] = t1 - t0;
        }
        for (long i = 0; i < calls; i++)
                printf("%" PRIu64 "\n", us[i]);
        free(us);
        return 0;
}
