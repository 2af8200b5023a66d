/* plimsoll.c: protocol 3 of the plimsoll sandbox service: parsing, bounds, refusals, answers and
 * their run records. Every check says what was wrong and that nothing ran. */
#include "plimsoll.h"
#include "utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"
#include "sbx-record.h"

#define NOTHING_RAN "; nothing ran"

int plim_fail(plim_error *f, plim_code code, plim_reason reason, const char *fmt, ...) {
        va_list ap;
        f->code = code;
        f->reason = reason;
        f->before_handler = false;
        f->session_end = PLIM_SESSION_END_UNSPECIFIED;
        f->session_end_detail[0] = '\0';
        f->unanswered[0] = '\0';
        va_start(ap, fmt);
        vsnprintf(f->message, sizeof(f->message), fmt, ap);
        va_end(ap);
        return -1;
}

static const char *const session_ends[_PLIM_SESSION_END_MAX] = {
        [PLIM_SESSION_END_UNSPECIFIED] = "SESSION_END_UNSPECIFIED",
        [PLIM_SESSION_END_CLOSED] = "SESSION_END_CLOSED",
        [PLIM_SESSION_END_EXPIRED] = "SESSION_END_EXPIRED",
        [PLIM_SESSION_END_DISK_EXCEEDED] = "SESSION_END_DISK_EXCEEDED",
        [PLIM_SESSION_END_MAIN_PROCESS_ENDED] = "SESSION_END_MAIN_PROCESS_ENDED",
        [PLIM_SESSION_END_BOUNDARY_FAILED] = "SESSION_END_BOUNDARY_FAILED",
        [PLIM_SESSION_END_SANDBOX_CHANGED] = "SESSION_END_SANDBOX_CHANGED",
        [PLIM_SESSION_END_SHUTDOWN] = "SESSION_END_SHUTDOWN",
        [PLIM_SESSION_END_REPLACED] = "SESSION_END_REPLACED",
        [PLIM_SESSION_END_NOT_FOUND] = "SESSION_END_NOT_FOUND",
        [PLIM_SESSION_END_UNCLAIMED] = "SESSION_END_UNCLAIMED",
};

const char *plim_session_end_to_string(plim_session_end e) {
        return (unsigned) e < _PLIM_SESSION_END_MAX ? session_ends[e] : session_ends[0];
}

/* Copy at most size - 1 bytes of s, not cutting a UTF-8 sequence (the detail is a proto string). */
static void copy_utf8(char *dst, size_t size, const char *s) {
        size_t n = strlen(s);
        if (n >= size) {
                n = size - 1;
                while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80)
                        n--;
        }
        memcpy(dst, s, n);
        dst[n] = '\0';
}

void plim_error_session_ended(plim_error *f, plim_session_end end, const char *detail) {
        f->session_end = end;
        copy_utf8(f->session_end_detail, sizeof(f->session_end_detail), detail ? detail : "");
}

int plim_fail_session_not_found(plim_error *f) {
        plim_fail(f, PLIM_CODE_NOT_FOUND, PLIM_REASON_REQUEST,
                  "no open session of this caller has that sessionId" NOTHING_RAN);
        plim_error_session_ended(f, PLIM_SESSION_END_NOT_FOUND, "no such session");
        return -1;
}

int plim_fail_session_ended(plim_error *f, plim_session_end end, const char *detail) {
        plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_REQUEST, "the session has ended (%s%s%s)" NOTHING_RAN,
                  plim_session_end_to_string(end), detail && detail[0] ? ": " : "", detail ? detail : "");
        plim_error_session_ended(f, end, detail);
        return -1;
}

static const struct {
        const char *name;
        unsigned status;
} codes[_PLIM_CODE_MAX] = {
        [PLIM_CODE_CANCELED] = {"canceled", 499},
        [PLIM_CODE_UNKNOWN] = {"unknown", 500},
        [PLIM_CODE_INVALID_ARGUMENT] = {"invalid_argument", 400},
        [PLIM_CODE_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
        [PLIM_CODE_NOT_FOUND] = {"not_found", 404},
        [PLIM_CODE_ALREADY_EXISTS] = {"already_exists", 409},
        [PLIM_CODE_PERMISSION_DENIED] = {"permission_denied", 403},
        [PLIM_CODE_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
        [PLIM_CODE_FAILED_PRECONDITION] = {"failed_precondition", 400},
        [PLIM_CODE_ABORTED] = {"aborted", 409},
        [PLIM_CODE_OUT_OF_RANGE] = {"out_of_range", 400},
        [PLIM_CODE_UNIMPLEMENTED] = {"unimplemented", 501},
        [PLIM_CODE_INTERNAL] = {"internal", 500},
        [PLIM_CODE_UNAVAILABLE] = {"unavailable", 503},
        [PLIM_CODE_DATA_LOSS] = {"data_loss", 500},
        [PLIM_CODE_UNAUTHENTICATED] = {"unauthenticated", 401},
};

const char *plim_code_to_string(plim_code c) {
        return (unsigned) c < _PLIM_CODE_MAX ? codes[c].name : "unknown";
}

unsigned plim_code_http_status(plim_code c) {
        return (unsigned) c < _PLIM_CODE_MAX ? codes[c].status : 500;
}

/* Each reason's name and its NotDispatched detail: the protobuf `08 nn`, base64 unpadded. */
static const struct {
        const char *name, *detail;
} reasons[_PLIM_REASON_MAX] = {
        [PLIM_REASON_NONE] = {"", ""},
        [PLIM_REASON_REQUEST] = {"request", "CAE"},
        [PLIM_REASON_PERMISSION] = {"permission", "CAI"},
        [PLIM_REASON_PROTOCOL] = {"protocol", "CAM"},
        [PLIM_REASON_UNSUPPORTED] = {"unsupported", "CAQ"},
        [PLIM_REASON_ISOLATION] = {"isolation", "CAU"},
        [PLIM_REASON_CAPACITY] = {"capacity", "CAY"},
        [PLIM_REASON_ENVIRONMENT] = {"environment", "CAc"},
};

const char *plim_reason_to_string(plim_reason r) {
        return (unsigned) r < _PLIM_REASON_MAX ? reasons[r].name : "";
}

int plim_json_dump(json_t *o, char **ret, size_t *ret_len) {
        if (!o)
                return -ENOMEM;
        char *s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = strlen(s);
        return 0;
}

/* Standard base64 without padding of n bytes into dst (size at least 4 * ((n + 2) / 3) + 1), as
 * Connect writes error detail values. Returns the length. */
static size_t base64_unpadded(char *dst, const void *p, size_t n) {
        int len = base64_encode(p, n, dst);
        size_t k = len > 0 ? (size_t) len : 0;
        while (k > 0 && dst[k - 1] == '=')
                k--;
        dst[k] = '\0';
        return k;
}

static int add_detail(json_t *details, const char *type, const char *value) {
        return json_array_append_new(details, json_pack("{s:s, s:s}", "type", type, "value", value));
}

int plim_error_json(const plim_error *f, char **ret, size_t *ret_len) {
        /* A message may quote what the client sent (a parser's error text), cut anywhere: make it
         * valid UTF-8, or there is no JSON string to answer with. */
        _cleanup_free_ char *msg = NULL;
        size_t msg_len;
        if (utf8_make_valid(f->message, strlen(f->message), &msg, &msg_len) < 0)
                return -ENOMEM;
        json_t *o = json_pack("{s:s, s:s}", "code", plim_code_to_string(f->code), "message", msg);
        json_t *details = json_array();
        if (!o || !details)
                goto oom;
        if (f->reason > PLIM_REASON_NONE && f->reason < _PLIM_REASON_MAX &&
            add_detail(details, "plimsoll.v1.NotDispatched", reasons[f->reason].detail) < 0)
                goto oom;
        if (f->session_end > PLIM_SESSION_END_UNSPECIFIED && f->session_end < _PLIM_SESSION_END_MAX) {
                /* SessionEnded { reason = 1 (enum), detail = 2 (string) } */
                uint8_t pb[16 + PLIM_END_DETAIL_MAX];
                char b64[4 * (sizeof(pb) + 2) / 3 + 4];
                plim_pb b;
                plim_pb_init(&b, pb, sizeof(pb));
                plim_pb_varint(&b, 1, (uint64_t) f->session_end);
                plim_pb_string(&b, 2, f->session_end_detail);
                if (b.err < 0)
                        goto oom;
                base64_unpadded(b64, pb, b.len);
                if (add_detail(details, "plimsoll.v1.SessionEnded", b64) < 0)
                        goto oom;
        }
        if (f->unanswered[0] && add_detail(details, "plimsoll.v1.UnansweredCall", f->unanswered) < 0)
                goto oom;
        if (json_array_size(details) > 0 && json_object_set(o, "details", details) < 0)
                goto oom;
        json_decref(details);
        return plim_json_dump(o, ret, ret_len);
oom:
        json_decref(details);
        json_decref(o);
        return -ENOMEM;
}

bool plim_request_id_is_valid(const char *s) {
        size_t i = 0;
        for (; s[i]; i++)
                if (i >= PLIM_REQUEST_ID_LEN || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return i == PLIM_REQUEST_ID_LEN;
}

static const char *const procedures[] = {
        [PLIM_PROC_NONE] = "",
        [PLIM_PROC_UNKNOWN] = "unknown",
        [PLIM_PROC_DESCRIBE] = "Describe",
        [PLIM_PROC_RUN] = "Run",
        [PLIM_PROC_OPEN_SESSION] = "OpenSession",
        [PLIM_PROC_SESSION_RUN] = "SessionRun",
        [PLIM_PROC_CLOSE_SESSION] = "CloseSession",
};

/* True when path[0..len) is "" or "/seg/seg...": no empty, "." or ".." segment, so that no
 * other route (/metrics/../) can lead here. */
bool plim_path_prefix_is_clean(const char *path, size_t len) {
        size_t i = 0;
        while (i < len) {
                if (path[i] != '/')
                        return false;
                size_t j = ++i;
                while (j < len && path[j] != '/')
                        j++;
                size_t n = j - i;
                if (n == 0 || (n == 1 && path[i] == '.') || (n == 2 && path[i] == '.' && path[i + 1] == '.'))
                        return false;
                i = j;
        }
        return true;
}

plim_procedure plim_procedure_from_path(const char *path) {
        const char *p = strstr(path, PLIM_SERVICE_PATH);
        if (!p || !plim_path_prefix_is_clean(path, (size_t) (p - path)))
                return PLIM_PROC_NONE;
        p += strlen(PLIM_SERVICE_PATH);
        for (size_t i = PLIM_PROC_DESCRIBE; i < ELEMENTSOF(procedures); i++)
                if (strcmp(p, procedures[i]) == 0)
                        return (plim_procedure) i;
        return PLIM_PROC_UNKNOWN;
}

const char *plim_procedure_to_string(plim_procedure p) {
        return (size_t) p < ELEMENTSOF(procedures) ? procedures[p] : "unknown";
}

bool plim_content_type_is_json(const char *ct) {
        static const char json[] = "application/json";
        if (!ct || strncasecmp(ct, json, sizeof(json) - 1) != 0)
                return false;
        ct += sizeof(json) - 1;
        while (*ct == ' ' || *ct == '\t')
                ct++;
        return *ct == '\0' || *ct == ';';
}

const char *plim_kind_to_string(plim_kind k) {
        switch (k) {
        case PLIM_KIND_JAVASCRIPT:
                return "javascript";
        case PLIM_KIND_PROJECT:
                return "project";
        case PLIM_KIND_MODULE:
                return "module";
        case PLIM_KIND_CELL:
                return "cell";
        case PLIM_KIND_NONE:
                break;
        }
        return "";
}

/* ---- request parsing ---- */

/* Parse body into an object, strictly and within the depth bound. */
int plim_body_parse(const char *body, size_t len, json_t **ret, plim_error *f) {
        json_error_t jerr;
        json_t *root = NULL;
        int q;
        if (len > SERVE_BODY_MAX)
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request body is over %u bytes" NOTHING_RAN, SERVE_BODY_MAX);
        else if ((q = rec_json_prescan(body, len, PLIM_JSON_DEPTH_MAX, PLIM_JSON_VALUES_MAX)) == -ELOOP)
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request nests deeper than %u levels" NOTHING_RAN, PLIM_JSON_DEPTH_MAX);
        else if (q < 0)
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request holds more than %u JSON values" NOTHING_RAN, PLIM_JSON_VALUES_MAX);
        else if (!(root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr)))
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request is not valid JSON (%s at byte %d)" NOTHING_RAN, jerr.text, jerr.position);
        else if (!json_is_object(root)) {
                json_decref(root);
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request must be a JSON object" NOTHING_RAN);
        } else {
                *ret = root;
                return 0;
        }
        f->before_handler = true;
        return -1;
}

/* Look a field up by its ProtoJSON name or its proto name; null counts as absent. */
static int field(const json_t *o, const char *camel, const char *snake, json_t **ret, plim_error *f) {
        json_t *a = json_object_get(o, camel), *b = strcmp(camel, snake) ? json_object_get(o, snake) : NULL;
        if (json_is_null(a))
                a = NULL;
        if (json_is_null(b))
                b = NULL;
        if (a && b)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s is given twice (as %s and %s)" NOTHING_RAN, camel, camel, snake);
        *ret = a ? a : b;
        return 0;
}

int plim_get_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max,
                    const char **ret, size_t *ret_len, plim_error *f) {
        json_t *v;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (!v) {
                *ret = "";
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        if (!json_is_string(v))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s must be a string" NOTHING_RAN, where, camel);
        size_t n = json_string_length(v);
        if (n > max)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s is %zu bytes, over the limit of %zu" NOTHING_RAN, where, camel, n, max);
        if (!ret_len && memchr(json_string_value(v), '\0', n))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s contains a NUL character" NOTHING_RAN, where, camel);
        *ret = json_string_value(v);
        if (ret_len)
                *ret_len = n;
        return 0;
}

/* A ProtoJSON integer: a JSON integer or a decimal string, within [min, max]. */
int plim_get_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
                 int64_t *ret, plim_error *f) {
        json_t *v;
        int64_t x;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        *ret_present = v != NULL;
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v))
                x = json_integer_value(v);
        else if (json_is_string(v)) {
                /* By its length, not strlen: "3\u0000x" is not 3. */
                const char *s = json_string_value(v);
                size_t n = json_string_length(v), i = s[0] == '-';
                char *end;
                if (i == n || n > 20)
                        goto bad;
                for (; i < n; i++)
                        if (s[i] < '0' || s[i] > '9')
                                goto bad;
                errno = 0;
                x = strtoll(s, &end, 10);
                if (errno || end != s + n)
                        goto bad;
        } else
                goto bad;
        if (x < min || x > max)
                goto bad;
        *ret = x;
        return 0;
bad:
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "%s must be an integer from %" PRId64 " to %" PRId64 NOTHING_RAN, camel, min, max);
}

int plim_get_uint64(const json_t *o, const char *camel, const char *snake, uint64_t *ret, plim_error *f) {
        json_t *v;
        uint64_t x;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) >= 0)
                x = (uint64_t) json_integer_value(v);
        else if (json_is_string(v)) {
                const char *s = json_string_value(v);
                size_t n = json_string_length(v);
                char *end;
                if (n == 0 || n > 20)
                        goto bad;
                for (size_t i = 0; i < n; i++)
                        if (s[i] < '0' || s[i] > '9')
                                goto bad;
                errno = 0;
                x = strtoull(s, &end, 10);
                if (errno || end != s + n)
                        goto bad;
        } else
                goto bad;
        *ret = x;
        return 0;
bad:
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "%s must be an integer from 0 to %" PRIu64 NOTHING_RAN, camel, UINT64_MAX);
}

int plim_get_bool(const json_t *o, const char *camel, const char *snake, bool *ret, plim_error *f) {
        json_t *v;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (v && !json_is_boolean(v))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s must be true or false" NOTHING_RAN, camel);
        *ret = v && json_is_true(v);
        return 0;
}

static int b64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '-')
                return 62;
        if (c == '/' || c == '_')
                return 63;
        return -1;
}

int plim_base64_decode(const char *s, size_t n, void **ret, size_t *ret_len) {
        size_t pad = 0;
        while (pad < 2 && n > 0 && s[n - 1] == '=') {
                n--;
                pad++;
        }
        /* n digits carry n * 6 bits: n % 4 == 1 cannot be bytes; padding must complete a quantum. */
        if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0) || n > SIZE_MAX / 2)
                return -EINVAL;
        size_t full = (n + 3) / 4 * 4;
        _cleanup_free_ char *norm = malloc(full + 1);
        uint8_t *out = malloc(full / 4 * 3 + 1);
        if (!norm || !out) {
                free(out);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                int v = b64_value(s[i]);
                if (v < 0) {
                        free(out);
                        return -EINVAL;
                }
                norm[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[v];
        }
        memset(norm + n, '=', full - n);
        norm[full] = '\0';
        size_t len = 0;
        if (full > 0) {
                if (full > INT32_MAX) {
                        free(out);
                        return -EINVAL;
                }
                int k = base64_decode_block(norm, full, out);
                if (k < 0) {
                        free(out);
                        return k;
                }
                /* EVP_DecodeBlock counts the padding's bytes too: drop them. */
                len = (size_t) k - (full - n == 2 ? 2 : full - n == 1 ? 1 : 0);
        }
        out[len] = '\0';
        *ret = out;
        *ret_len = len;
        return 0;
}

int plim_get_bytes(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, void **ret,
                   size_t *ret_len, plim_error *f) {
        json_t *v;
        void *buf;
        size_t len;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (!v) {
                *ret = NULL;
                *ret_len = 0;
                return 0;
        }
        if (!json_is_string(v))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s must be a base64 string" NOTHING_RAN, where, camel);
        /* Bound before decoding: 4 digits per 3 bytes. */
        if (json_string_length(v) / 4 > max / 3 + 1)
                goto big;
        int q = plim_base64_decode(json_string_value(v), json_string_length(v), &buf, &len);
        if (q == -ENOMEM)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (q < 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s is not base64 (standard or URL-safe, padded or not)" NOTHING_RAN, where, camel);
        if (len > max) {
                free(buf);
                goto big;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
big:
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "%s%s is over the limit of %zu bytes" NOTHING_RAN, where, camel, max);
}

static int get_array(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, json_t **ret,
                     plim_error *f) {
        json_t *v;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (v && !json_is_array(v))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s must be an array" NOTHING_RAN, where, camel);
        if (v && json_array_size(v) > max)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s%s has %zu entries, over the limit of %zu" NOTHING_RAN, where, camel,
                                 json_array_size(v), max);
        *ret = v;
        return 0;
}

static bool is_trace_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
}

static bool is_identity_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               (c && strchr("._:/@+-", c));
}

/* Refuse any field of o that names is not (each name is exactly one spelling). The digest of the
 * request refuses the same, so a request this parser accepts always gets its run record. */
int plim_only_fields(const json_t *o, const char *where, const char *const *names, size_t n, plim_error *f) {
        char shown[SERVE_SHORT_STR_MAX];
        for (void *it = json_object_iter((json_t *) o); it; it = json_object_iter_next((json_t *) o, it)) {
                const char *key = json_object_iter_key(it);
                size_t klen = json_object_iter_key_len(it), i = 0;
                if (strlen(key) == klen)
                        for (; i < n; i++)
                                if (strcmp(key, names[i]) == 0)
                                        break;
                if (strlen(key) != klen || i == n) {
                        size_t k = 0;
                        for (; k < klen && k + 1 < sizeof(shown); k++)
                                shown[k] = is_trace_char(key[k]) ? key[k] : '?';
                        shown[k] = '\0';
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "%s has an unknown field \"%s\"" NOTHING_RAN, where, shown);
                }
        }
        return 0;
}

/* The protocol gate: read nothing else before it holds. */
static int protocol_gate(const json_t *root, uint32_t *ret, plim_error *f) {
        bool present;
        int64_t v;
        if (plim_get_int(root, "protocol", "protocol", 0, UINT32_MAX, &present, &v, f) < 0)
                return -1;
        if (v == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_PROTOCOL,
                                 "this daemon serves protocol %u and the request states 0; nothing ran", PLIM_PROTOCOL);
        if (v != PLIM_PROTOCOL)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_PROTOCOL,
                                 "this daemon serves protocol %u and the request states %" PRId64 "; nothing ran",
                                 PLIM_PROTOCOL, v);
        *ret = (uint32_t) v;
        return 0;
}

static int parse_software_rule(const json_t *root, bool *ret_has, plim_error *f) {
        json_t *rule, *ids;
        const char *mode;
        if (field(root, "softwareRule", "software_rule", &rule, f) < 0)
                return -1;
        if (!rule)
                return 0;
        if (!json_is_object(rule))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "softwareRule must be an object" NOTHING_RAN);
        static const char *const known[] = {"mode", "identities"};
        if (plim_only_fields(rule, "softwareRule", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (plim_get_string(rule, "mode", "mode", "softwareRule.", PLIM_STRING_MAX, &mode, NULL, f) < 0 ||
            get_array(rule, "identities", "identities", "softwareRule.", PLIM_IDENTITIES_MAX, &ids, f) < 0)
                return -1;
        size_t n = json_array_size(ids);
        if (!mode[0] && n == 0)
                return 0; /* the empty rule imposes nothing */
        if (strcmp(mode, "exact") != 0 && strcmp(mode, "approved") != 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "softwareRule.mode must be \"exact\" or \"approved\"" NOTHING_RAN);
        if (strcmp(mode, "exact") == 0 ? n != 1 : n < 1)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "softwareRule: \"exact\" takes one identity, \"approved\" 1 to %u" NOTHING_RAN,
                                 PLIM_IDENTITIES_MAX);
        for (size_t i = 0; i < n; i++) {
                json_t *v = json_array_get(ids, i);
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (!s || len == 0 || len > PLIM_IDENTITY_MAX)
                        goto bad;
                for (size_t k = 0; k < len; k++)
                        if (!is_identity_char(s[k]))
                                goto bad;
                for (size_t j = 0; j < i; j++)
                        if (json_equal(v, json_array_get(ids, j)))
                                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                                 "softwareRule.identities[%zu] repeats an identity" NOTHING_RAN, i);
                continue;
        bad:
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "softwareRule.identities[%zu] must be 1 to %u bytes of [A-Za-z0-9._:/@+-]" NOTHING_RAN,
                                 i, PLIM_IDENTITY_MAX);
        }
        *ret_has = true;
        return 0;
}

/* The softwareRuleId of the request's rule (either spelling; absent: ""). */
static int rule_id(const json_t *root, char ret[REC_RULE_ID_SIZE], plim_error *f) {
        hull_error e = {0};
        json_t *rule = json_object_get(root, "softwareRule");
        if (!rule)
                rule = json_object_get(root, "software_rule");
        if (rec_software_rule_id(rule, ret, &e) < 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "the request cannot have a run record (%s)" NOTHING_RAN, e.msg);
        return 0;
}

/* minimumIsolation: "" or a known tier ("none" is not a floor). */
static int parse_floor(const json_t *root, const char **ret, plim_error *f) {
        static const char *const floors[] = {"", "process", "container", "kernel", "vm"};
        if (plim_get_string(root, "minimumIsolation", "minimum_isolation", "", PLIM_STRING_MAX, ret, NULL, f) < 0)
                return -1;
        for (size_t i = 0; i < ELEMENTSOF(floors); i++)
                if (strcmp(*ret, floors[i]) == 0)
                        return 0;
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "minimumIsolation must be empty or one of process, container, kernel, vm%s" NOTHING_RAN,
                         strcmp(*ret, "none") == 0 ? " (\"none\" is not a floor)" : "");
}

/* traceId: kept when it matches [A-Za-z0-9._:-]{1,64}, dropped (never refused) otherwise. */
static int parse_trace(const json_t *root, const char **ret, bool *ret_dropped, plim_error *f) {
        const char *trace;
        if (plim_get_string(root, "traceId", "trace_id", "", PLIM_STRING_MAX, &trace, NULL, f) < 0)
                return -1;
        *ret = NULL;
        *ret_dropped = false;
        if (trace[0]) {
                bool ok = strlen(trace) <= PLIM_TRACE_ID_MAX;
                for (const char *c = trace; ok && *c; c++)
                        ok = is_trace_char(*c);
                *ret = ok ? trace : NULL;
                *ret_dropped = !ok;
        }
        return 0;
}

static bool session_id_is_valid(const char *s, size_t n) {
        if (n == 0 || n > PLIM_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* sessionId: a missing one is a malformed request; one we could never have issued names no
 * session (the same answer as an unknown one, so IDs cannot be probed by shape). */
int plim_get_session_id(const json_t *root, const char **ret, plim_error *f) {
        const char *s;
        size_t n;
        if (plim_get_string(root, "sessionId", "session_id", "", SIZE_MAX, &s, &n, f) < 0)
                return -1;
        if (n == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "the request names no sessionId" NOTHING_RAN);
        if (!session_id_is_valid(s, n))
                return plim_fail_session_not_found(f);
        *ret = s;
        return 0;
}

/* Code of a javascript payload or a cell: 1 byte to PLIM_CODE_MAX, no NUL. */
static int parse_code(const json_t *p, const char *where, plim_request *r, plim_error *f) {
        if (plim_get_string(p, "code", "code", where, PLIM_CODE_MAX, &r->code, &r->code_len, f) < 0)
                return -1;
        if (r->code_len == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%scode is empty: it must be 1 byte to %u KiB" NOTHING_RAN, where,
                                 PLIM_CODE_MAX >> 10);
        if (memchr(r->code, '\0', r->code_len))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%scode contains a NUL character" NOTHING_RAN, where);
        return 0;
}

static int parse_javascript(const json_t *p, plim_request *r, plim_error *f) {
        static const char *const known[] = {"code", "grantProfile", "grant_profile"};
        if (plim_only_fields(p, "javascript", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (parse_code(p, "javascript.", r, f) < 0 || plim_get_string(p, "grantProfile", "grant_profile", "javascript.",
                                                                      PLIM_STRING_MAX, &r->grant_profile, NULL, f) < 0)
                return -1;
        return 0;
}

static int bad_path(plim_error *f, const char *kind, const char *what, size_t i) {
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "%s.%s[%zu] is not a clean relative path (at most %u bytes; no leading '/', no empty, "
                         "'.' or '..' segment, no backslash or control character)" NOTHING_RAN,
                         kind, what, i, PLIM_PATH_MAX);
}

/* files[] of a project or a cell (kind names which): the same rules for both. */
static int parse_files(const json_t *p, const char *kind, plim_request *r, plim_error *f) {
        json_t *files;
        size_t total = 0;
        char where[SERVE_SHORT_STR_MAX];
        static const char *const file_known[] = {"path", "content"};

        snprintf(where, sizeof(where), "%s.", kind);
        if (get_array(p, "files", "files", where, PLIM_FILES_MAX, &files, f) < 0)
                return -1;
        r->n_files = json_array_size(files);
        r->files = calloc(MAX(r->n_files, 1U), sizeof(plim_file));
        if (!r->files)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        for (size_t i = 0; i < r->n_files; i++) {
                json_t *o = json_array_get(files, i);
                plim_file *x = &r->files[i];
                if (!json_is_object(o))
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "%s.files[%zu] must be an object" NOTHING_RAN, kind, i);
                snprintf(where, sizeof(where), "%s.files[%zu]", kind, i);
                if (plim_only_fields(o, where, file_known, ELEMENTSOF(file_known), f) < 0)
                        return -1;
                snprintf(where, sizeof(where), "%s.files[%zu].", kind, i);
                size_t plen;
                if (plim_get_string(o, "path", "path", where, PLIM_PATH_MAX, &x->path, &plen, f) < 0 ||
                    plim_get_string(o, "content", "content", where, PLIM_FILES_BYTES_MAX, &x->content, &x->content_len,
                                    f) < 0)
                        return -1;
                if (!brk_path_is_clean(x->path, plen))
                        return bad_path(f, kind, "files", i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(r->files[j].path, x->path) == 0)
                                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                                 "%s.files[%zu] repeats the path of files[%zu]" NOTHING_RAN, kind, i,
                                                 j);
                total += x->content_len;
                if (total > PLIM_FILES_BYTES_MAX)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "%s.files hold more than %u MiB of content" NOTHING_RAN, kind,
                                         PLIM_FILES_BYTES_MAX >> 20);
        }
        return 0;
}

static int parse_project(const json_t *p, plim_request *r, plim_error *f) {
        json_t *steps, *arts;
        static const char *const known[] = {"files", "steps", "artifacts", "grantProfile", "grant_profile"};

        if (plim_only_fields(p, "project", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (plim_get_string(p, "grantProfile", "grant_profile", "project.", PLIM_STRING_MAX, &r->grant_profile, NULL,
                            f) < 0 ||
            get_array(p, "steps", "steps", "project.", PLIM_STEPS_MAX, &steps, f) < 0 ||
            get_array(p, "artifacts", "artifacts", "project.", PLIM_ARTIFACTS_MAX, &arts, f) < 0 ||
            parse_files(p, "project", r, f) < 0)
                return -1;

        r->n_steps = json_array_size(steps);
        if (r->n_steps == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "project.steps is empty: a project runs 1 to %u steps" NOTHING_RAN, PLIM_STEPS_MAX);
        r->steps = calloc(r->n_steps, sizeof(char *));
        if (!r->steps)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        for (size_t i = 0; i < r->n_steps; i++) {
                json_t *v = json_array_get(steps, i);
                if (!json_is_string(v) || json_string_length(v) > PLIM_STEP_MAX ||
                    memchr(json_string_value(v), '\0', json_string_length(v)))
                        return plim_fail(
                                f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                "project.steps[%zu] must be a string of at most %u KiB without NUL" NOTHING_RAN, i,
                                PLIM_STEP_MAX >> 10);
                r->steps[i] = json_string_value(v);
        }

        r->n_artifacts = json_array_size(arts);
        r->artifacts = calloc(MAX(r->n_artifacts, 1U), sizeof(char *));
        if (!r->artifacts)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        for (size_t i = 0; i < r->n_artifacts; i++) {
                json_t *v = json_array_get(arts, i);
                if (!json_is_string(v) || !brk_path_is_clean(json_string_value(v), json_string_length(v)))
                        return bad_path(f, "project", "artifacts", i);
                r->artifacts[i] = json_string_value(v);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(r->artifacts[j], r->artifacts[i]) == 0)
                                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                                 "project.artifacts[%zu] repeats artifacts[%zu]" NOTHING_RAN, i, j);
        }
        return 0;
}

static bool is_language(const char *s) {
        return strcmp(s, "python") == 0 || strcmp(s, "javascript") == 0;
}

static int parse_cell(const json_t *p, plim_request *r, plim_error *f) {
        static const char *const known[] = {"language", "code", "files"};
        if (plim_only_fields(p, "cell", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (plim_get_string(p, "language", "language", "cell.", PLIM_STRING_MAX, &r->cell_language, NULL, f) < 0)
                return -1;
        if (!is_language(r->cell_language))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "cell.language must be \"python\" or \"javascript\"" NOTHING_RAN);
        if (parse_code(p, "cell.", r, f) < 0 || parse_files(p, "cell", r, f) < 0)
                return -1;
        return 0;
}

static int parse_payload(const json_t *root, plim_request *r, bool session, plim_error *f) {
        static const struct {
                const char *name;
                plim_kind kind;
        } kinds[] = {
                {"javascript", PLIM_KIND_JAVASCRIPT},
                {"project", PLIM_KIND_PROJECT},
                {"module", PLIM_KIND_MODULE},
                {"cell", PLIM_KIND_CELL},
        };
        json_t *payload = NULL;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                json_t *v = json_object_get(root, kinds[i].name);
                if (!v || json_is_null(v))
                        continue;
                if (r->kind != PLIM_KIND_NONE)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "the request names more than one payload (%s and %s)" NOTHING_RAN,
                                         plim_kind_to_string(r->kind), kinds[i].name);
                if (!json_is_object(v))
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "%s must be an object" NOTHING_RAN, kinds[i].name);
                r->kind = kinds[i].kind;
                payload = v;
        }
        switch (r->kind) {
        case PLIM_KIND_NONE:
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "the request has no payload: name one of javascript%s" NOTHING_RAN,
                                 session ? ", project or cell" : " or project");
        case PLIM_KIND_CELL:
                if (!session)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "a cell runs only in a session (SessionRun), never in Run" NOTHING_RAN);
                return parse_cell(payload, r, f);
        case PLIM_KIND_MODULE:
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "hull serve runs no module payloads (Describe says supportsModule false)" NOTHING_RAN);
        case PLIM_KIND_JAVASCRIPT:
                return parse_javascript(payload, r, f);
        case PLIM_KIND_PROJECT:
                return parse_project(payload, r, f);
        }
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "unknown payload kind");
}

void plim_request_done(plim_request *r) {
        free(r->files);
        free(r->steps);
        free(r->artifacts);
        json_decref(r->root);
        *r = (plim_request){0};
}

/* A RunRequest or (session) a SessionRunRequest: the same envelope and rules, in the same order. */
static int parse_run(const char *body, size_t len, bool session, plim_request *ret, plim_error *f) {
        plim_request r = {0};
        bool present;
        int64_t timeout;

        if (plim_body_parse(body, len, &r.root, f) < 0)
                return -1;
        if (protocol_gate(r.root, &r.protocol, f) < 0)
                goto fail;
        if (!session && (json_object_get(r.root, "sessionId") || json_object_get(r.root, "session_id"))) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "Run takes no sessionId: a call in a session is a SessionRun" NOTHING_RAN);
                goto fail;
        }
        static const char *const fields[] = {"protocol",      "minimumIsolation", "minimum_isolation", "traceId",
                                             "trace_id",      "timeoutMs",        "timeout_ms",        "softwareRule",
                                             "software_rule", "javascript",       "project",           "module",
                                             "cell",          "sessionId",        "session_id"};
        /* Run knows every field but the last two. */
        if (plim_only_fields(r.root, "the request", fields, ELEMENTSOF(fields) - (session ? 0 : 2), f) < 0)
                goto fail;
        if (session && plim_get_session_id(r.root, &r.session_id, f) < 0)
                goto fail;
        if (parse_floor(r.root, &r.minimum_isolation, f) < 0 ||
            parse_trace(r.root, &r.trace_id, &r.trace_id_dropped, f) < 0)
                goto fail;
        if (plim_get_int(r.root, "timeoutMs", "timeout_ms", INT32_MIN, INT32_MAX, &present, &timeout, f) < 0)
                goto fail;
        r.timeout_ms = (int32_t) timeout;
        r.effective_timeout_ms =
                timeout <= 0 ? PLIM_DEFAULT_TIMEOUT_MS : (uint32_t) MIN(timeout, (int64_t) PLIM_TIMEOUT_MS_MAX);
        if (parse_software_rule(r.root, &r.has_software_rule, f) < 0 || parse_payload(r.root, &r, session, f) < 0)
                goto fail;
        /* The record's digests are made now, before anything runs: a request that cannot have a
         * record is refused here, not answered with an error after its run. The digest never
         * covers sessionId or traceId. */
        hull_error e = {0};
        if (rec_request_digest(r.root, r.request_sha256, &e) < 0) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request cannot have a run record (%s)" NOTHING_RAN, e.msg);
                goto fail;
        }
        if (rule_id(r.root, r.software_rule_id, f) < 0)
                goto fail;
        *ret = r;
        return 0;
fail:
        plim_request_done(&r);
        return -1;
}

int plim_run_parse(const char *body, size_t len, plim_request *ret, plim_error *f) {
        return parse_run(body, len, false, ret, f);
}

int plim_session_run_parse(const char *body, size_t len, plim_request *ret, plim_error *f) {
        return parse_run(body, len, true, ret, f);
}

void plim_open_request_done(plim_open_request *r) {
        json_decref(r->root);
        *r = (plim_open_request){0};
}

static int parse_languages(const json_t *root, plim_open_request *r, plim_error *f) {
        json_t *langs;
        if (get_array(root, "languages", "languages", "", PLIM_LANGUAGES_MAX, &langs, f) < 0)
                return -1;
        for (size_t i = 0; i < json_array_size(langs); i++) {
                json_t *v = json_array_get(langs, i);
                const char *s = json_string_value(v);
                if (!s || strlen(s) != json_string_length(v) || !is_language(s))
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "languages[%zu] must be \"python\" or \"javascript\"" NOTHING_RAN, i);
                bool *which = strcmp(s, "python") == 0 ? &r->python : &r->javascript;
                if (*which)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "languages[%zu] repeats \"%s\"" NOTHING_RAN, i, s);
                *which = true;
        }
        return 0;
}

int plim_open_parse(const char *body, size_t len, plim_open_request *ret, plim_error *f) {
        plim_open_request r = {0};
        bool present;
        int64_t v;
        static const char *const fields[] = {
                "protocol",    "minimumIsolation", "minimum_isolation", "traceId",      "trace_id",      "lifetimeMs",
                "lifetime_ms", "idleTimeoutMs",    "idle_timeout_ms",   "softwareRule", "software_rule", "languages",
                "owner"};

        if (plim_body_parse(body, len, &r.root, f) < 0)
                return -1;
        if (protocol_gate(r.root, &r.protocol, f) < 0 ||
            plim_only_fields(r.root, "the request", fields, ELEMENTSOF(fields), f) < 0 ||
            parse_floor(r.root, &r.minimum_isolation, f) < 0 ||
            parse_trace(r.root, &r.trace_id, &r.trace_id_dropped, f) < 0)
                goto fail;
        if (plim_get_int(r.root, "lifetimeMs", "lifetime_ms", 0, UINT32_MAX, &present, &v, f) < 0)
                goto fail;
        r.lifetime_ms = (uint32_t) v;
        if (plim_get_int(r.root, "idleTimeoutMs", "idle_timeout_ms", 0, UINT32_MAX, &present, &v, f) < 0)
                goto fail;
        r.idle_timeout_ms = (uint32_t) v;
        if (parse_software_rule(r.root, &r.has_software_rule, f) < 0 || rule_id(r.root, r.software_rule_id, f) < 0 ||
            parse_languages(r.root, &r, f) < 0)
                goto fail;
        size_t n;
        if (plim_get_string(r.root, "owner", "owner", "", SIZE_MAX, &r.owner, &n, f) < 0)
                goto fail;
        if (json_object_get(r.root, "owner") && !json_is_null(json_object_get(r.root, "owner"))) {
                bool ok = n >= 1 && n <= PLIM_OWNER_MAX;
                for (size_t i = 0; ok && i < n; i++)
                        ok = is_trace_char(r.owner[i]);
                if (!ok) {
                        plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                  "owner must be 1 to %u characters of [A-Za-z0-9._:-]" NOTHING_RAN, PLIM_OWNER_MAX);
                        goto fail;
                }
        }
        *ret = r;
        return 0;
fail:
        plim_open_request_done(&r);
        return -1;
}

int plim_close_parse(const char *body, size_t len, char ret_session_id[PLIM_SESSION_ID_MAX + 1], plim_error *f) {
        json_t *root;
        uint32_t protocol;
        const char *id;
        static const char *const fields[] = {"protocol", "sessionId", "session_id"};
        if (plim_body_parse(body, len, &root, f) < 0)
                return -1;
        int q = protocol_gate(root, &protocol, f);
        if (q == 0)
                q = plim_only_fields(root, "the request", fields, ELEMENTSOF(fields), f);
        if (q == 0)
                q = plim_get_session_id(root, &id, f);
        if (q == 0)
                memcpy(ret_session_id, id, strlen(id) + 1);
        json_decref(root);
        return q < 0 ? -1 : 0;
}

int plim_session_refuse(const char *body, size_t len, plim_procedure p, plim_error *f) {
        json_t *root;
        uint32_t protocol;
        if (plim_body_parse(body, len, &root, f) < 0)
                return -1;
        int r = protocol_gate(root, &protocol, f);
        json_decref(root);
        if (r < 0)
                return -1;
        return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                         "this hull serve does not offer sessions (%s; Describe says supportsSessions false; start it "
                         "without --max-sessions 0)" NOTHING_RAN,
                         plim_procedure_to_string(p));
}

int plim_describe_parse(const char *body, size_t len, plim_error *f) {
        json_t *root;
        if (len == 0)
                return 0;
        if (len > PLIM_DESCRIBE_BODY_MAX) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "a DescribeRequest is {}: this one is over %u bytes" NOTHING_RAN, PLIM_DESCRIBE_BODY_MAX);
                f->before_handler = true;
                return -1;
        }
        if (plim_body_parse(body, len, &root, f) < 0)
                return -1;
        json_decref(root);
        return 0;
}

/* ---- admission ---- */

static int tier_rank(const char *t) {
        static const char *const order[] = {"none", "process", "container", "kernel", "vm"};
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if (strcmp(t, order[i]) == 0)
                        return (int) i;
        return -1;
}

int plim_run_admit(const plim_request *r, const plim_evidence *ev, plim_error *f) {
        if (r->minimum_isolation[0] && tier_rank(ev->isolation) < tier_rank(r->minimum_isolation))
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION,
                                 "the request's floor is %s and this daemon's tier is %s" NOTHING_RAN,
                                 r->minimum_isolation, ev->isolation);
        if (r->has_software_rule)
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                                 "hull serve cannot establish a software identity for its sandbox (it runs the "
                                 "host's /usr), so no software rule can be met" NOTHING_RAN);
        if (r->grant_profile && r->grant_profile[0])
                return plim_fail(f, PLIM_CODE_PERMISSION_DENIED, PLIM_REASON_PERMISSION,
                                 "grant profiles are not available on this daemon" NOTHING_RAN);
        if (r->kind == PLIM_KIND_JAVASCRIPT && !ev->javascript)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "this host has no JavaScript engine (/usr/bin/node is missing)" NOTHING_RAN);
        if (r->kind == PLIM_KIND_CELL &&
            !(strcmp(r->cell_language, "python") == 0 ? ev->session_python : ev->session_javascript))
                return plim_fail(
                        f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                        "this daemon runs no %s cells (see Describe's sessionEnvironment.languages)" NOTHING_RAN,
                        r->cell_language);
        return 0;
}

int plim_open_admit(const plim_open_request *r, const plim_evidence *ev, plim_error *f) {
        if (!ev->sessions)
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                                 "this daemon offers no sessions (Describe says supportsSessions false)" NOTHING_RAN);
        if (r->minimum_isolation[0] && tier_rank(ev->isolation) < tier_rank(r->minimum_isolation))
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION,
                                 "the request's floor is %s and this daemon's tier is %s" NOTHING_RAN,
                                 r->minimum_isolation, ev->isolation);
        if (r->has_software_rule)
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                                 "hull serve cannot establish a software identity for its sandbox (it runs the "
                                 "host's /usr), so no software rule can be met" NOTHING_RAN);
        return 0;
}

/* ---- the plan ---- */

void plim_plan_done(brk_request *p) {
        free(p->files);
        for (uint32_t i = 0; p->steps && i < p->n_steps; i++)
                free(p->steps[i].argv);
        free(p->steps);
        free(p->artifacts);
        *p = (brk_request){0};
}

static char **argv_new(const char *a, const char *b, const char *c) {
        char **argv = calloc(4, sizeof(char *));
        if (argv) {
                argv[0] = (char *) a;
                argv[1] = (char *) b;
                argv[2] = (char *) c;
        }
        return argv;
}

int plim_plan(const plim_request *r, const plim_evidence *ev, brk_request *ret) {
        brk_request p = {
                .timeout_ms = r->effective_timeout_ms,
                .memory_bytes = ev->memory_bytes,
                .pids = ev->pids,
                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                .artifact_bytes = PLIM_ARTIFACTS_BYTES_MAX,
        };
        if (r->kind == PLIM_KIND_JAVASCRIPT) {
                p.output_bytes = PLIM_JS_OUTPUT_BYTES;
                p.n_steps = 1;
                p.steps = calloc(1, sizeof(brk_step));
                p.files = calloc(1, sizeof(brk_file));
                if (!p.files || !p.steps)
                        goto oom;
                if (r->code_len <= PLIM_JS_EVAL_MAX) {
                        /* An ES module given on the command line: node's loader skips the entry
                         * file's resolution (about 3 ms of a 40 ms start). */
                        char **argv = calloc(5, sizeof(char *));
                        if (!argv)
                                goto oom;
                        argv[0] = (char *) "/usr/bin/node";
                        argv[1] = (char *) "--input-type=module";
                        argv[2] = (char *) "-e";
                        argv[3] = (char *) r->code;
                        p.steps[0] = (brk_step){.argv = argv, .argc = 4};
                } else {
                        /* Over what one argument may hold (MAX_ARG_STRLEN): a file. */
                        p.n_files = 1;
                        p.files[0] =
                                (brk_file){.path = (char *) "main.mjs", .data = (char *) r->code, .len = r->code_len};
                        p.steps[0] = (brk_step){.argv = argv_new("/usr/bin/node", "main.mjs", NULL), .argc = 2};
                        if (!p.steps[0].argv)
                                goto oom;
                }
        } else {
                p.output_bytes = PLIM_STEP_OUTPUT_BYTES;
                p.flags = BRK_STOP_ON_FAILURE;
                p.n_files = (uint32_t) r->n_files;
                p.files = calloc(MAX(r->n_files, 1U), sizeof(brk_file));
                p.n_steps = (uint32_t) r->n_steps;
                p.steps = calloc(r->n_steps, sizeof(brk_step));
                p.n_artifacts = (uint32_t) r->n_artifacts;
                p.artifacts = calloc(MAX(r->n_artifacts, 1U), sizeof(char *));
                if (!p.files || !p.steps || !p.artifacts)
                        goto oom;
                for (size_t i = 0; i < r->n_files; i++)
                        p.files[i] = (brk_file){.path = (char *) r->files[i].path,
                                                .data = (char *) r->files[i].content,
                                                .len = r->files[i].content_len};
                for (size_t i = 0; i < r->n_steps; i++) {
                        p.steps[i] = (brk_step){.argv = argv_new("/bin/sh", "-c", r->steps[i]), .argc = 3};
                        if (!p.steps[i].argv)
                                goto oom;
                }
                for (size_t i = 0; i < r->n_artifacts; i++)
                        p.artifacts[i] = (char *) r->artifacts[i];
        }
        *ret = p;
        return 0;
oom:
        plim_plan_done(&p);
        return -ENOMEM;
}

/* ---- answers ---- */

json_t *plim_json_base64(const void *p, size_t n) {
        if (n > (size_t) INT32_MAX / 2)
                return NULL;
        char *b = malloc(BASE64_ENCODED_SIZE(n));
        if (!b)
                return NULL;
        int len = base64_encode(p, n, b);
        json_t *s = len >= 0 ? json_stringn(b, (size_t) len) : NULL;
        free(b);
        return s;
}

json_t *plim_json_int64_string(int64_t v) {
        char buf[sizeof("-9223372036854775808")];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        return json_string(buf);
}

json_t *plim_json_uint64_string(uint64_t v) {
        char buf[sizeof("18446744073709551615")];
        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return json_string(buf);
}

/* Set o[key] = v, taking v; false (and v released) on failure or when v is NULL. */
static bool set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0;
}

static uint32_t max_timeout(bool supported) {
        return supported ? PLIM_TIMEOUT_MS_MAX : 0;
}

int plim_describe_json(const plim_evidence *ev, char **ret, size_t *ret_len) {
        json_t *langs = json_array();
        if (!langs)
                return -ENOMEM;
        if ((ev->javascript && json_array_append_new(langs, json_string("javascript")) < 0) ||
            (ev->python && json_array_append_new(langs, json_string("python")) < 0)) {
                json_decref(langs);
                return -ENOMEM;
        }
        json_t *o = json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:{s:I, s:[]}, s:{s:I, s:o}, s:{s:I, s:I}, s:b}",
                              "sandbox", ev->sandbox, "isolation", ev->isolation, "supportsProject", 1,
                              "supportsJavascriptGrants", 0, "supportsProjectGrants", 0, "supportsModule", 0,
                              "protocol", (int) PLIM_PROTOCOL, "javascriptEnvironment", "maxTimeoutMs",
                              (json_int_t) max_timeout(ev->javascript), "languages", "projectEnvironment",
                              "maxTimeoutMs", (json_int_t) max_timeout(true), "languages", langs, "resources",
                              "memoryMb", (json_int_t) (ev->memory_bytes >> 20), "pids", (json_int_t) ev->pids,
                              "supportsSessions", ev->sessions);
        if (o && ev->javascript) {
                json_t *js = json_object_get(json_object_get(o, "javascriptEnvironment"), "languages");
                if (json_array_append_new(js, json_string("javascript")) < 0) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        if (o && ev->sessions) {
                /* The session fields, as numbers: ProtoJSON readers take numbers for every integer
                 * type, strings only for 64-bit ones, and these fit in 32 bits. */
                json_t *cells = json_array();
                if (!cells || (ev->session_javascript && json_array_append_new(cells, json_string("javascript")) < 0) ||
                    (ev->session_python && json_array_append_new(cells, json_string("python")) < 0) ||
                    !set(o, "sessionLifetimeMs",
                         json_integer((json_int_t) MIN(ev->session_lifetime_ms, (uint64_t) UINT32_MAX))) ||
                    !set(o, "sessionIdleTimeoutMs",
                         json_integer((json_int_t) MIN(ev->session_idle_timeout_ms, (uint64_t) UINT32_MAX))) ||
                    !set(o, "sessionEnvironment",
                         json_pack("{s:I, s:o}", "maxTimeoutMs", (json_int_t) PLIM_TIMEOUT_MS_MAX, "languages",
                                   cells)) ||
                    (ev->max_sessions_per_caller &&
                     !set(o, "maxSessionsPerCaller", json_integer(ev->max_sessions_per_caller))) ||
                    (ev->max_sessions_per_owner &&
                     !set(o, "maxSessionsPerOwner", json_integer(ev->max_sessions_per_owner)))) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        return plim_json_dump(o, ret, ret_len);
}

static json_t *stream_result(const brk_step_result *s) {
        json_t *o = json_object();
        if (!o || !set(o, "stdout", plim_json_base64(s->out, s->out_len)) ||
            !set(o, "stderr", plim_json_base64(s->err, s->err_len)) || !set(o, "exitCode", json_integer(s->status)) ||
            !set(o, "timedOut", json_boolean(s->flags & BRK_STEP_TIMED_OUT)) ||
            !set(o, "stdoutTruncated", json_boolean(s->flags & BRK_STEP_OUT_TRUNCATED)) ||
            !set(o, "stderrTruncated", json_boolean(s->flags & BRK_STEP_ERR_TRUNCATED))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static json_t *project_result(const plim_request *r, const brk_result *res) {
        static const char *const outcomes[] = {
                [BRK_OUTCOME_COMPLETED] = "PROJECT_OUTCOME_COMPLETED",
                [BRK_OUTCOME_SETUP_FAILED] = "PROJECT_OUTCOME_SETUP_FAILED",
                [BRK_OUTCOME_TIMED_OUT] = "PROJECT_OUTCOME_TIMED_OUT",
        };
        json_t *o = json_object(), *steps = json_array(), *arts = json_array();
        if (!o || !steps || !arts)
                goto fail;
        for (uint32_t i = 0; i < res->n_steps && i < r->n_steps; i++) {
                json_t *s = stream_result(&res->steps[i]);
                if (!s || !set(s, "command", json_string(r->steps[i])) ||
                    !set(s, "durationMs", plim_json_int64_string((int64_t) (res->steps[i].wall_us / 1000))) ||
                    json_array_append_new(steps, s) < 0) {
                        json_decref(s);
                        goto fail;
                }
        }
        for (uint32_t i = 0; i < res->n_artifacts; i++) {
                json_t *a = json_object();
                if (!a || !set(a, "path", json_string(res->artifacts[i].path)) ||
                    !set(a, "content", plim_json_base64(res->artifacts[i].data, res->artifacts[i].len)) ||
                    json_array_append_new(arts, a) < 0) {
                        json_decref(a);
                        goto fail;
                }
        }
        const char *detail = res->outcome == BRK_OUTCOME_COMPLETED ? "" : res->detail;
        if (!set(o, "steps", TAKE_PTR(steps)) || !set(o, "outcome", json_string(outcomes[res->outcome])) ||
            !set(o, "artifacts", TAKE_PTR(arts)) || !set(o, "outcomeDetail", json_string(detail ? detail : "")) ||
            !set(o, "artifactsTruncated", json_boolean(res->artifacts_truncated)))
                goto fail;
        return o;
fail:
        json_decref(o);
        json_decref(steps);
        json_decref(arts);
        return NULL;
}

/* ---- records ---- */

/* The RunRecord as JSON, as the wire and the audit log carry it: every field present (version 3
 * without resultSha256, versions 1 and 2 without unanswered), int64 and uint64 as strings. */
static json_t *record_json(const plim_record *v) {
        json_t *o = json_pack("{s:i, s:s}", "version", (int) v->version, "requestSha256", v->request_sha256);
        if (!o)
                return NULL;
        if (!(v->version == 3 ? set(o, "unanswered", json_string(v->unanswered))
                              : set(o, "resultSha256", json_string(v->result_sha256))) ||
            !set(o, "provider", json_string(v->provider)) || !set(o, "isolation", json_string(v->isolation)) ||
            !set(o, "environment", json_string(v->environment)) || !set(o, "policy", json_string(v->policy)) ||
            !set(o, "startedUnixMs", plim_json_int64_string((int64_t) v->started_unix_ms)) ||
            !set(o, "endedUnixMs", plim_json_int64_string((int64_t) v->ended_unix_ms)) ||
            !set(o, "session", json_string(v->session)) || !set(o, "sequence", plim_json_uint64_string(v->sequence)) ||
            !set(o, "previousSha256", json_string(v->previous_sha256)) ||
            !set(o, "softwareIdentity", json_string(v->software_identity)) ||
            !set(o, "softwareRuleId", json_string(v->software_rule_id))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* Fill v for request r answered by ev: single runs (chain NULL) have no session fields; a session
 * call is the chain's next one. */
static void record_init(plim_record *v, uint32_t version, const plim_request *r, const plim_evidence *ev,
                        const plim_chain *chain, uint64_t received, uint64_t ended) {
        *v = (plim_record){
                .version = version,
                .request_sha256 = r->request_sha256,
                .result_sha256 = "",
                .provider = ev->sandbox,
                .isolation = ev->isolation,
                .environment = "",
                .policy = "",
                .started_unix_ms = received,
                .ended_unix_ms = ended,
                .session = chain ? chain->session : "",
                .sequence = chain ? chain->calls + 1 : 0,
                .previous_sha256 = chain ? chain->last_sha256 : "",
                .record_sha256 = "",
                .software_identity = "",
                .software_rule_id = r->software_rule_id,
                .unanswered = "",
        };
}

/* Make the record of v (its digest into ret_sha256), as a new JSON object. */
static int record_make(const plim_record *v, char ret_sha256[REC_DIGEST_HEX_SIZE], json_t **ret, plim_error *f) {
        hull_error e = {0};
        json_t *record = record_json(v);
        if (!record)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (rec_record_digest(record, ret_sha256, &e) < 0 || !set(record, "recordSha256", json_string(ret_sha256))) {
                json_decref(record);
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s",
                                 e.msg[0] ? e.msg : "out of memory");
        }
        *ret = record;
        return 0;
}

/* The version 2 record of an answer: digests of the request as received and of the result as it
 * will be sent, the evidence, the times, the session fields (empty for a single run), then its
 * own digest. Sets answer.record; returns the record digest in ret_sha256. */
static int record_fill(const plim_request *r, json_t *answer, const plim_evidence *ev, const plim_chain *chain,
                       uint64_t received, uint64_t ended, char ret_sha256[REC_DIGEST_HEX_SIZE], plim_error *f) {
        char res[REC_DIGEST_HEX_SIZE];
        hull_error e = {0};
        plim_record v;
        json_t *record;
        if (rec_result_digest(answer, res, &e) < 0)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s", e.msg);
        record_init(&v, 2, r, ev, chain, received, ended);
        v.result_sha256 = res;
        if (record_make(&v, ret_sha256, &record, f) < 0)
                return -1;
        if (!set(answer, "record", record))
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        return 0;
}

/* ---- answers ---- */

/* The error for a broker result that is not an answer, or 0 when it is one. */
static int outcome_check(const brk_result *res, plim_error *f) {
        switch ((brk_outcome) res->outcome) {
        case BRK_OUTCOME_NOT_STARTED:
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                 "the run was not started: %s" NOTHING_RAN, res->detail ? res->detail : "");
        case BRK_OUTCOME_CANCELLED:
                return plim_fail(
                        f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_NONE,
                        "the run was stopped because hull serve is shutting down (%s); it may have run in part",
                        res->detail ? res->detail : "");
        case BRK_OUTCOME_ERROR:
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox failed: %s",
                                 res->detail ? res->detail : "");
        case BRK_OUTCOME_SETUP_FAILED:
        case BRK_OUTCOME_COMPLETED:
        case BRK_OUTCOME_TIMED_OUT:
                return 0;
        }
        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox gave an unknown outcome %" PRIu32,
                         res->outcome);
}

static json_t *cell_result(const plim_cell_result *c) {
        json_t *o = json_object();
        if (!o || !set(o, "stdout", plim_json_base64(c->out, c->out_len)) ||
            !set(o, "stderr", plim_json_base64(c->err, c->err_len)) ||
            !set(o, "exitCode", json_integer(c->exit_code)) || !set(o, "timedOut", json_boolean(c->timed_out)) ||
            !set(o, "stdoutTruncated", json_boolean(c->out_truncated)) ||
            !set(o, "stderrTruncated", json_boolean(c->err_truncated)) ||
            !set(o, "interpreterStarted", json_boolean(c->interpreter_started)) ||
            !set(o, "interpreterEnded", json_boolean(c->interpreter_ended))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* The RunResponse of r (without its record): from res for javascript and project, from cell for
 * a cell. Returns 0 with *ret, -1 with *f (not an answer), or -ENOMEM. */
static int run_response(const plim_request *r, const brk_result *res, const plim_cell_result *cell,
                        const plim_evidence *ev, json_t **ret, plim_error *f) {
        json_t *result;
        uint64_t duration;
        if (r->kind == PLIM_KIND_CELL) {
                if (!cell)
                        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the cell has no result");
                result = cell_result(cell);
                duration = cell->wall_us / 1000;
        } else {
                if (!res)
                        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run has no result");
                if (outcome_check(res, f) < 0)
                        return -1;
                if (r->kind == PLIM_KIND_JAVASCRIPT) {
                        if (res->n_steps != 1)
                                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE,
                                                 "the sandbox did not run the code: %s",
                                                 res->detail ? res->detail : "");
                        result = stream_result(&res->steps[0]);
                } else
                        result = project_result(r, res);
                duration = res->ended_unix_ms >= res->started_unix_ms ? res->ended_unix_ms - res->started_unix_ms : 0;
        }
        json_t *o =
                json_pack("{s:s, s:s, s:o, s:s, s:s}", "sandbox", ev->sandbox, "isolation", ev->isolation, "durationMs",
                          plim_json_int64_string((int64_t) duration), "softwareIdentity", "", "environment", "");
        if (!o || !set(o, plim_kind_to_string(r->kind), result)) {
                json_decref(o);
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

int plim_run_answer(const plim_request *r, const brk_result *res, const plim_evidence *ev, uint64_t received_unix_ms,
                    uint64_t ended_unix_ms, char **ret, size_t *ret_len, plim_error *f) {
        char digest[REC_DIGEST_HEX_SIZE];
        json_t *o;
        if (r->kind == PLIM_KIND_CELL)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "a cell is answered only in a session");
        int q = run_response(r, res, NULL, ev, &o, f);
        if (q < 0)
                return q;
        if (record_fill(r, o, ev, NULL, received_unix_ms, ended_unix_ms, digest, f) < 0) {
                json_decref(o);
                return -1;
        }
        return plim_json_dump(o, ret, ret_len);
}

/* ---- sessions ---- */

int plim_chain_init(plim_chain *c, const char *session_id) {
        if (!session_id_is_valid(session_id, strlen(session_id)))
                return -EINVAL;
        plim_chain n = {.calls = 0};
        int q = rec_fingerprint(session_id, strlen(session_id), n.session);
        if (q < 0)
                return q;
        *c = n;
        return 0;
}

void plim_call_record_done(plim_call_record *c) {
        json_decref(c->record);
        json_decref(c->request);
        json_decref(c->result);
        *c = (plim_call_record){0};
}

void plim_chain_advance(plim_chain *chain, const plim_call_record *c) {
        chain->calls = c->sequence;
        memcpy(chain->last_sha256, c->record_sha256, sizeof(chain->last_sha256));
}

int plim_open_answer(const char *session_id, const plim_evidence *ev, uint64_t expires_unix_ms,
                     uint32_t idle_timeout_ms, char **ret, size_t *ret_len) {
        plim_chain c;
        int q = plim_chain_init(&c, session_id);
        if (q < 0)
                return q;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:s}", "sessionId", session_id, "session", c.session,
                              "sandbox", ev->sandbox, "isolation", ev->isolation, "expiresUnixMs",
                              plim_json_int64_string((int64_t) expires_unix_ms), "idleTimeoutMs",
                              (json_int_t) idle_timeout_ms, "softwareIdentity", "");
        return plim_json_dump(o, ret, ret_len);
}

int plim_session_run_answer(const plim_request *r, const brk_result *res, const plim_cell_result *cell,
                            const plim_evidence *ev, const plim_chain *chain, uint64_t received_unix_ms,
                            uint64_t ended_unix_ms, plim_session_end ended, const char *end_detail, char **ret,
                            size_t *ret_len, plim_call_record *ret_record, plim_error *f) {
        plim_call_record c = {.sequence = chain->calls + 1};
        json_t *run, *o = NULL;
        int q = run_response(r, res, cell, ev, &run, f);
        if (q < 0)
                return q;
        if (record_fill(r, run, ev, chain, received_unix_ms, ended_unix_ms, c.record_sha256, f) < 0) {
                json_decref(run);
                return -1;
        }
        c.record = json_incref(json_object_get(run, "record"));
        c.request = json_incref(r->root);
        c.result = json_pack("{s:O}", plim_kind_to_string(r->kind), json_object_get(run, plim_kind_to_string(r->kind)));
        o = json_pack("{s:o}", "run", run);
        if (!o || !c.result)
                goto oom;
        if (ended > PLIM_SESSION_END_UNSPECIFIED && ended < _PLIM_SESSION_END_MAX) {
                char detail[PLIM_END_DETAIL_MAX];
                copy_utf8(detail, sizeof(detail), end_detail ? end_detail : "");
                if (!set(o, "ended", json_string(plim_session_end_to_string(ended))) ||
                    (detail[0] && !set(o, "endDetail", json_string(detail))))
                        goto oom;
        }
        q = plim_json_dump(TAKE_PTR(o), ret, ret_len);
        if (q < 0)
                goto oom;
        *ret_record = c;
        return 0;
oom:
        json_decref(o);
        plim_call_record_done(&c);
        return -ENOMEM;
}

int plim_unanswered_error(const plim_request *r, const plim_evidence *ev, const plim_chain *chain,
                          uint64_t received_unix_ms, uint64_t ended_unix_ms, plim_error *f,
                          plim_call_record *ret_record) {
        plim_call_record c = {.sequence = chain->calls + 1};
        plim_record v;
        plim_error g;
        if (f->reason != PLIM_REASON_NONE)
                return -EINVAL;
        record_init(&v, 3, r, ev, chain, received_unix_ms, ended_unix_ms);
        v.unanswered = plim_code_to_string(f->code);
        if (record_make(&v, c.record_sha256, &c.record, &g) < 0)
                return -ENOMEM;
        v.record_sha256 = c.record_sha256;

        /* UnansweredCall { record = 1 (RunRecord) } */
        uint8_t inner[PLIM_UNANSWERED_DETAIL_MAX / 2], outer[PLIM_UNANSWERED_DETAIL_MAX / 2];
        plim_pb a, b;
        plim_pb_init(&a, inner, sizeof(inner));
        plim_pb_run_record(&a, &v);
        plim_pb_init(&b, outer, sizeof(outer));
        if (a.err == 0)
                plim_pb_bytes(&b, 1, inner, a.len);
        if (a.err < 0 || b.err < 0 || 4 * ((b.len + 2) / 3) >= sizeof(f->unanswered)) {
                plim_call_record_done(&c);
                return -ENOBUFS;
        }
        c.request = json_incref(r->root);
        base64_unpadded(f->unanswered, outer, b.len);
        *ret_record = c;
        return 0;
}

int plim_close_answer(const char *fingerprint, uint64_t calls, const char *last_record_sha256, plim_session_end ended,
                      char **ret, size_t *ret_len) {
        json_t *o = json_pack("{s:s, s:o, s:s, s:s}", "session", fingerprint, "calls", plim_json_uint64_string(calls),
                              "lastRecordSha256", last_record_sha256 ? last_record_sha256 : "", "ended",
                              plim_session_end_to_string(ended));
        return plim_json_dump(o, ret, ret_len);
}

/* ---- protobuf ---- */

void plim_pb_init(plim_pb *b, uint8_t *buf, size_t size) {
        *b = (plim_pb){.buf = buf, .size = size};
}

static void pb_raw_varint(plim_pb *b, uint64_t v) {
        do {
                if (b->err)
                        return;
                if (b->len >= b->size) {
                        b->err = -ENOBUFS;
                        return;
                }
                uint8_t byte = v & 0x7F;
                v >>= 7;
                b->buf[b->len++] = byte | (v ? 0x80 : 0);
        } while (v);
}

void plim_pb_varint(plim_pb *b, uint32_t field, uint64_t v) {
        if (v == 0)
                return;
        pb_raw_varint(b, (uint64_t) field << 3 | 0);
        pb_raw_varint(b, v);
}

void plim_pb_bytes(plim_pb *b, uint32_t field, const void *p, size_t n) {
        if (n == 0)
                return;
        pb_raw_varint(b, (uint64_t) field << 3 | 2);
        pb_raw_varint(b, n);
        if (b->err)
                return;
        if (n > b->size - b->len) {
                b->err = -ENOBUFS;
                return;
        }
        memcpy(b->buf + b->len, p, n);
        b->len += n;
}

void plim_pb_string(plim_pb *b, uint32_t field, const char *s) {
        plim_pb_bytes(b, field, s, strlen(s));
}

void plim_pb_run_record(plim_pb *b, const plim_record *r) {
        plim_pb_varint(b, 1, r->version);
        plim_pb_string(b, 2, r->request_sha256);
        plim_pb_string(b, 3, r->result_sha256);
        plim_pb_string(b, 4, r->provider);
        plim_pb_string(b, 5, r->isolation);
        plim_pb_string(b, 6, r->environment);
        plim_pb_string(b, 7, r->policy);
        plim_pb_varint(b, 8, r->started_unix_ms); /* int64: two's complement; ours are never negative */
        plim_pb_varint(b, 9, r->ended_unix_ms);
        plim_pb_string(b, 10, r->session);
        plim_pb_varint(b, 11, r->sequence);
        plim_pb_string(b, 12, r->previous_sha256);
        plim_pb_string(b, 13, r->record_sha256);
        plim_pb_string(b, 14, r->software_identity);
        plim_pb_string(b, 15, r->software_rule_id);
        plim_pb_string(b, 16, r->unanswered);
}
