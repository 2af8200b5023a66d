/* plimsoll.c: the vocabulary of plimsoll protocol 3 (see plimsoll.h): Connect errors with their
 * NotDispatched, SessionEnded and UnansweredCall details, codes and reasons, procedure routing,
 * the request-ID and session-ID rules, and the small protobuf writer the details and records
 * need. Requests are parsed in plimsoll-parse.c, answered in plimsoll-answer.c. */
#include "plimsoll.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"
#include "plimsoll-internal.h"
#include "utf8.h"

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
void plim_copy_utf8(char *dst, size_t size, const char *s) {
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
        plim_copy_utf8(f->session_end_detail, sizeof(f->session_end_detail), detail ? detail : "");
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
                /* Connect writes detail values as base64 without padding. */
                if (base64_encode_to(b64, sizeof(b64), pb, b.len, false, NULL) < 0 ||
                    add_detail(details, "plimsoll.v1.SessionEnded", b64) < 0)
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

bool plim_session_id_is_valid(const char *s, size_t n) {
        if (n == 0 || n > PLIM_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
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
