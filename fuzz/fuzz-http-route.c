/* fuzz-http-route.c: the route pattern matcher on arbitrary patterns and paths ("PATTERN\nPATH"),
 * and, as an oracle, on the input as a path against plimsoll's procedure routes, which must
 * agree with plim_procedure_from_path (the rule the routes replaced) where the service's name
 * occurs once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-server.h"
#include "plimsoll.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        char *nl = strchr(s, '\n');
        if (nl) {
                *nl = '\0';
                const char *path = nl + 1;
                size_t len = strlen(path);
                http_params p;
                if (http_route_match(s, path, &p) == 1)
                        for (size_t i = 0; i < p.n; i++)
                                if (p.v[i].value < path || p.v[i].value + p.v[i].value_len > path + len ||
                                    (i > 0 && memchr(p.v[i].value, '/', p.v[i].value_len)))
                                        abort(); /* a value is a part of the path; only a base spans '/' */
        }
        static const char *const methods[] = {"Describe", "Run", "OpenSession", "SessionRun", "CloseSession"};
        static const plim_procedure procs[] = {PLIM_PROC_DESCRIBE, PLIM_PROC_RUN, PLIM_PROC_OPEN_SESSION,
                                               PLIM_PROC_SESSION_RUN, PLIM_PROC_CLOSE_SESSION};
        /* The old rule took the first "/plimsoll.v1.SandboxService/" as the service; the route takes
         * the last two segments, so a base may hold that name (the spec's {base} is any clean
         * path). Where it occurs once, both must agree. */
        const char *first = strstr(s, PLIM_SERVICE_PATH);
        if (first && strstr(first + 1, PLIM_SERVICE_PATH)) {
                free(s);
                return 0;
        }
        plim_procedure want = plim_procedure_from_path(s);
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
                char pattern[128];
                snprintf(pattern, sizeof(pattern), "{base...}%s%s", PLIM_SERVICE_PATH, methods[i]);
                if ((http_route_match(pattern, s, NULL) == 1) != (want == procs[i]))
                        abort(); /* the route and the old rule disagree */
        }
        free(s);
        return 0;
}
