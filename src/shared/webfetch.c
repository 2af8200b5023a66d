/* webfetch.c: a fetch through the egress guard, hop by hop (see webfetch.h). */
#include "webfetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

/* At most this many bytes of a URL quoted in a message. */
#define SHOWN 200

void webfetch_result_done(webfetch_result *r) {
        if (!r)
                return;
        free(r->url);
        free(r->body);
        *r = (webfetch_result){0};
}

/* The headers of one hop that matter here. */
typedef struct hop_headers {
        char *location;
        int64_t content_length; /* -1: none */
        bool location_too_long;
} hop_headers;

static int on_header(void *userdata, const char *name, const char *value) {
        hop_headers *h = userdata;
        uint64_t v;
        if (strcasecmp(name, "Location") == 0) {
                free(h->location);
                h->location = NULL;
                if (strlen(value) > EGRESS_URL_MAX) {
                        h->location_too_long = true;
                        return 0;
                }
                if (!(h->location = strdup(value)))
                        return -ENOMEM;
        } else if (strcasecmp(name, "Content-Length") == 0)
                h->content_length = parse_uint64(value, 0, INT64_MAX, &v) == 0 ? (int64_t) v : -1;
        return 0;
}

static bool is_redirect(long status) {
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* The message of an error at a redirect: the refused URL and where it came from named. */
static int redirect_refused(hull_error *e, int r, unsigned hop, const char *from, const hull_error *why) {
        const char *m = why->msg;
        if (strncmp(m, "egress: ", 8) == 0)
                m += 8;
        return hull_fail(e, r, "egress: redirect %u from %.*s refused: %s", hop, SHOWN, from, m);
}

int webfetch(httpc *c, const egress_policy *p, const webfetch_request *req, webfetch_result *ret, hull_error *e) {
        uint64_t deadline = req->deadline_mono_ms ? req->deadline_mono_ms : now_mono_ms() + WEBFETCH_TIMEOUT_MS_DEFAULT;
        unsigned max_redirects =
                req->max_redirects ? MIN(req->max_redirects, WEBFETCH_REDIRECTS_MAX) : WEBFETCH_REDIRECTS_MAX;
        size_t max_bytes = req->max_bytes ? req->max_bytes : WEBFETCH_MAX_BYTES_DEFAULT;
        const char *method = req->method ? req->method : "GET";
        const char *body = req->body;
        size_t body_len = req->body_len;
        _cleanup_free_ char *url = strdup(req->url ? req->url : "");
        _cleanup_free_ char *prev = NULL;
        int r;

        if (!url)
                return hull_err(e, -ENOMEM, "egress: out of memory");
        for (unsigned hopn = 0;; hopn++) {
                egress_target t = {0};
                hull_error why = {0};
                if (req->cancel && atomic_load(req->cancel))
                        return hull_fail(e, -ECANCELED, "egress: the fetch of %.*s was cancelled", SHOWN, url);
                uint64_t now = now_mono_ms();
                if (now >= deadline)
                        return hull_fail(e, -ETIMEDOUT, "egress: no time left to fetch %.*s", SHOWN, url);
                r = egress_check_url(p, url, deadline, &t, &why);
                if (r < 0) {
                        if (hopn > 0)
                                return redirect_refused(e, r, hopn, prev, &why);
                        if (e)
                                *e = why;
                        return r;
                }

                char pin[EGRESS_PIN_MAX];
                const char *pins[2] = {pin, NULL};
                if (!t.literal && egress_target_pin(&t, pin) < 0) {
                        egress_target_done(&t);
                        return hull_fail(e, -EINVAL, "egress: the host name of %.*s is too long", SHOWN, url);
                }
                char type[HTTPC_HEADER_VALUE_MAX + 16] = "";
                if (body && req->body_type)
                        snprintf(type, sizeof(type), "Content-Type: %s", req->body_type);
                const char *headers[] = {
                        "User-Agent: " WEBFETCH_USER_AGENT,
                        "Accept: text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
                        "Accept-Language: en-US,en;q=0.8",
                        type[0] ? type : NULL,
                        NULL,
                };
                hop_headers h = {.content_length = -1};
                httpc_answer a = {0};
                now = now_mono_ms();
                uint64_t left = deadline > now ? deadline - now : 1;
                httpc_request hr = {
                        .method = method,
                        .url = t.url,
                        .headers = headers,
                        .body_from = HTTPC_BODY_BUFFER,
                        .body = body,
                        .body_len = body_len,
                        .on_header = on_header,
                        .userdata = &h,
                        .cancel = req->cancel,
                        .connect_timeout_ms = MIN(left, (uint64_t) WEBFETCH_CONNECT_TIMEOUT_MS),
                        .timeout_ms = left,
                        .answer_max = max_bytes,
                        .answer_truncate = true,
                        .resolve = t.literal ? NULL : pins,
                };
                if (req->on_request)
                        req->on_request(req->userdata, hopn, t.url);
                r = httpc_perform(c, &hr, &a, e);
                if (r < 0) {
                        free(h.location);
                        egress_target_done(&t);
                        return r;
                }
                if (!is_redirect(a.status)) {
                        free(h.location);
                        webfetch_result res = {
                                .status = a.status,
                                .url = TAKE_PTR(t.url),
                                .body = TAKE_PTR(a.body),
                                .body_len = a.body_len,
                                .truncated = a.truncated,
                                .full_bytes = a.truncated ? h.content_length : -1,
                                .redirects = hopn,
                        };
                        memcpy(res.content_type, a.content_type, sizeof(res.content_type));
                        httpc_answer_done(&a);
                        egress_target_done(&t);
                        *ret = res;
                        return 0;
                }
                long status = a.status;
                httpc_answer_done(&a);
                free(prev);
                prev = TAKE_PTR(t.url);
                egress_target_done(&t);
                if (hopn >= max_redirects) {
                        free(h.location);
                        return hull_fail(e, -ELOOP, "egress: too many redirects (more than %u) from %.*s",
                                         max_redirects, SHOWN, req->url);
                }
                if (!h.location) {
                        return hull_fail(e, -EPROTO, "egress: %.*s answered %ld without a%s Location", SHOWN, prev,
                                         status, h.location_too_long ? " usable (too long)" : "");
                }
                char *next = NULL;
                r = egress_url_join(prev, h.location, &next, &why);
                free(h.location);
                if (r < 0)
                        return r == -ENOMEM ? hull_err(e, r, "egress: out of memory")
                                            : redirect_refused(e, -EPROTO, hopn + 1, prev, &why);
                free(url);
                url = next;
                /* 303 always, and 301/302 after a POST (what browsers do), continue as a GET */
                if (status == 303 || ((status == 301 || status == 302) && strcmp(method, "POST") == 0)) {
                        if (strcmp(method, "HEAD") != 0)
                                method = "GET";
                        body = NULL;
                        body_len = 0;
                }
        }
}
