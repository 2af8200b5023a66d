/* test-http.c: the pure parts of the HTTP layer and the metrics page: --listen addresses, the
 * loopback rule that decides whether tokens are required, the Prometheus text, and the URL
 * escaping of a request forwarded to another node (http-forward.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "http-forward.h"
#include "http-server.h"
#include "serve-metrics.h"
#include "test.h"

static void test_listen(void) {
        struct sockaddr_storage ss;
        socklen_t len;
        CHECK(http_listen_parse("127.0.0.1:8750", &ss, &len) == 0);
        CHECK(ss.ss_family == AF_INET && ntohs(((struct sockaddr_in *) &ss)->sin_port) == 8750);
        CHECK(http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("localhost:0", &ss, &len) == 0 && http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("127.9.9.9:1", &ss, &len) == 0 && http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("0.0.0.0:80", &ss, &len) == 0 && !http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("10.1.2.3:80", &ss, &len) == 0 && !http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("[::1]:8750", &ss, &len) == 0 && ss.ss_family == AF_INET6 &&
              http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("[::]:8750", &ss, &len) == 0 && !http_addr_is_loopback((struct sockaddr *) &ss));
        CHECK(http_listen_parse("[::ffff:127.0.0.1]:1", &ss, &len) == 0 &&
              http_addr_is_loopback((struct sockaddr *) &ss));
        static const char *const bad[] = {
                "",    "8750",           "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x",
                ":80", "example.com:80", "[::1]",     "[::1]80",    "::1:80",          "256.0.0.1:80"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                TEST_RESULT(http_listen_parse(bad[i], &ss, &len) < 0, "'%s' refused", bad[i]);
}

static void test_metrics(void) {
        metrics m;
        char *s;
        size_t n;
        metrics_init(&m);
        CHECK(serve_metrics_register(&m) == 0);
        CHECK(metrics_http_register(&m) >= 0);
        CHECK(serve_metrics_register(&m) == 0); /* again: the same families, none added */
        CHECK(m.n_fam == 10);
        metrics_run_started(&m);
        metrics_run_started(&m);
        metrics_run_ended(&m, METRICS_RUN_OK, 42000);            /* 0.042 s: the 0.05 bucket */
        metrics_run_ended(&m, METRICS_RUN_TIMED_OUT, 400000000); /* 400 s: only +Inf */
        metrics_refusal(&m, PLIM_REASON_PROTOCOL);
        metrics_refusal(&m, PLIM_REASON_NONE);
        metrics_http(&m, 200);
        metrics_http(&m, 418);
        metrics_http_short(&m, true);
        metrics_http_short(&m, true);
        metrics_http_short(&m, false);
        CHECK(metrics_render(&m, &s, &n) == 0);
        CHECK(strlen(s) == n);
        CHECK(strstr(s, "hull_runs_total{outcome=\"ok\"} 1\n"));
        CHECK(strstr(s, "hull_runs_total{outcome=\"timed_out\"} 1\n"));
        CHECK(strstr(s, "hull_runs_in_flight 0\n"));
        CHECK(strstr(s, "hull_run_duration_seconds_bucket{le=\"0.025\"} 0\n"));
        CHECK(strstr(s, "hull_run_duration_seconds_bucket{le=\"0.05\"} 1\n"));
        CHECK(strstr(s, "hull_run_duration_seconds_bucket{le=\"300\"} 1\n"));
        CHECK(strstr(s, "hull_run_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
        CHECK(strstr(s, "hull_run_duration_seconds_count 2\n"));
        CHECK(strstr(s, "hull_refusals_total{reason=\"protocol\"} 1\n"));
        CHECK(strstr(s, "hull_http_requests_total{code=\"200\"} 1\n"));
        CHECK(strstr(s, "hull_http_requests_total{code=\"other\"} 1\n"));
        CHECK(strstr(s, "hull_http_short_calls_total{thread=\"polling_thread\"} 2\n"));
        CHECK(strstr(s, "hull_http_short_calls_total{thread=\"own_thread\"} 1\n"));
        CHECK(strstr(s, "# TYPE hull_runs_in_flight gauge\n"));
        CHECK(strstr(s, "hull_sessions_ended_total{reason=\"SESSION_END_CLOSED\"} 0\n"));
        free(s);
}

static void test_forward_escape(void) {
        char buf[64];
        CHECK(http_forward_escape("/v1/sessions/sesn_1/handles/a b", true, buf, sizeof(buf)) > 0);
        CHECK(strcmp(buf, "/v1/sessions/sesn_1/handles/a%20b") == 0);
        CHECK(http_forward_escape("a/b&c=d?\xff", false, buf, sizeof(buf)) > 0);
        CHECK(strcmp(buf, "a%2Fb%26c%3Dd%3F%FF") == 0);
        CHECK(http_forward_escape("", false, buf, sizeof(buf)) == 0 && buf[0] == 0);
        CHECK(http_forward_escape("abcd", false, buf, 5) == 4);
        CHECK(http_forward_escape("abcde", false, buf, 5) == -ENAMETOOLONG);
        CHECK(http_forward_escape("abc ", false, buf, 6) == -ENAMETOOLONG); /* "%20" does not fit */
}

int main(void) {
        test_listen();
        test_forward_escape();
        test_metrics();
        return test_done();
}
