/* plimsoll.c: protocol 3 of the plimsoll sandbox service: parsing, bounds, refusals, answers and
 * their run records. Every check says what was wrong and that nothing ran. */
#include "plimsoll.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "sbx-record.h"

#define NOTHING_RAN "; nothing ran"

int plim_fail(plim_error *f, plim_code code, plim_reason reason, const char *fmt, ...) {
        va_list ap;
        f->code = code;
        f->reason = reason;
        f->before_handler = false;
        va_start(ap, fmt);
        vsnprintf(f->message, sizeof(f->message), fmt, ap);
        va_end(ap);
        return -1;
}

static const struct {
        const char *name;
        unsigned status;
} codes[_PLIM_CODE_MAX] = {
        [PLIM_CODE_CANCELED] = { "canceled", 499 },
        [PLIM_CODE_UNKNOWN] = { "unknown", 500 },
        [PLIM_CODE_INVALID_ARGUMENT] = { "invalid_argument", 400 },
        [PLIM_CODE_DEADLINE_EXCEEDED] = { "deadline_exceeded", 504 },
        [PLIM_CODE_NOT_FOUND] = { "not_found", 404 },
        [PLIM_CODE_ALREADY_EXISTS] = { "already_exists", 409 },
        [PLIM_CODE_PERMISSION_DENIED] = { "permission_denied", 403 },
        [PLIM_CODE_RESOURCE_EXHAUSTED] = { "resource_exhausted", 429 },
        [PLIM_CODE_FAILED_PRECONDITION] = { "failed_precondition", 400 },
        [PLIM_CODE_ABORTED] = { "aborted", 409 },
        [PLIM_CODE_OUT_OF_RANGE] = { "out_of_range", 400 },
        [PLIM_CODE_UNIMPLEMENTED] = { "unimplemented", 501 },
        [PLIM_CODE_INTERNAL] = { "internal", 500 },
        [PLIM_CODE_UNAVAILABLE] = { "unavailable", 503 },
        [PLIM_CODE_DATA_LOSS] = { "data_loss", 500 },
        [PLIM_CODE_UNAUTHENTICATED] = { "unauthenticated", 401 },
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
        [PLIM_REASON_NONE] = { "", "" },
        [PLIM_REASON_REQUEST] = { "request", "CAE" },
        [PLIM_REASON_PERMISSION] = { "permission", "CAI" },
        [PLIM_REASON_PROTOCOL] = { "protocol", "CAM" },
        [PLIM_REASON_UNSUPPORTED] = { "unsupported", "CAQ" },
        [PLIM_REASON_ISOLATION] = { "isolation", "CAU" },
        [PLIM_REASON_CAPACITY] = { "capacity", "CAY" },
        [PLIM_REASON_ENVIRONMENT] = { "environment", "CAc" },
};

const char *plim_reason_to_string(plim_reason r) {
        return (unsigned) r < _PLIM_REASON_MAX ? reasons[r].name : "";
}

static int dump(json_t *o, char **ret, size_t *ret_len) {
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

int plim_error_json(const plim_error *f, char **ret, size_t *ret_len) {
        json_t *o = json_pack("{s:s, s:s}", "code", plim_code_to_string(f->code), "message", f->message);
        if (o && f->reason > PLIM_REASON_NONE && f->reason < _PLIM_REASON_MAX &&
            json_object_set_new(o, "details", json_pack("[{s:s, s:s}]", "type", "plimsoll.v1.NotDispatched", "value",
                                                        reasons[f->reason].detail)) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        return dump(o, ret, ret_len);
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
static bool prefix_is_clean(const char *path, size_t len) {
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
        if (!p || !prefix_is_clean(path, (size_t) (p - path)))
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
static int parse_object(const char *body, size_t len, json_t **ret, plim_error *f) {
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
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "the request must be a JSON object" NOTHING_RAN);
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

static int get_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max,
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
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s%s must be a string" NOTHING_RAN,
                                 where, camel);
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
static int get_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
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

static int get_array(const json_t *o, const char *camel, const char *snake, const char *where, size_t max,
                     json_t **ret, plim_error *f) {
        json_t *v;
        if (field(o, camel, snake, &v, f) < 0)
                return -1;
        if (v && !json_is_array(v))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s%s must be an array" NOTHING_RAN,
                                 where, camel);
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
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c && strchr("._:/@+-", c));
}

/* Refuse any field of o that names is not (each name is exactly one spelling). The digest of the
 * request refuses the same, so a request this parser accepts always gets its run record. */
static int only_fields(const json_t *o, const char *where, const char *const *names, size_t n, plim_error *f) {
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
        if (get_int(root, "protocol", "protocol", 0, UINT32_MAX, &present, &v, f) < 0)
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

static int parse_software_rule(const json_t *root, plim_request *r, plim_error *f) {
        json_t *rule, *ids;
        const char *mode;
        if (field(root, "softwareRule", "software_rule", &rule, f) < 0)
                return -1;
        if (!rule)
                return 0;
        if (!json_is_object(rule))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "softwareRule must be an object" NOTHING_RAN);
        static const char *const known[] = { "mode", "identities" };
        if (only_fields(rule, "softwareRule", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (get_string(rule, "mode", "mode", "softwareRule.", PLIM_STRING_MAX, &mode, NULL, f) < 0 ||
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
        r->has_software_rule = true;
        return 0;
}

static int parse_javascript(const json_t *p, plim_request *r, plim_error *f) {
        static const char *const known[] = { "code", "grantProfile", "grant_profile" };
        if (only_fields(p, "javascript", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (get_string(p, "code", "code", "javascript.", PLIM_CODE_MAX, &r->code, &r->code_len, f) < 0 ||
            get_string(p, "grantProfile", "grant_profile", "javascript.", PLIM_STRING_MAX, &r->grant_profile, NULL, f) < 0)
                return -1;
        if (r->code_len == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "javascript.code is empty: it must be 1 byte to %u KiB" NOTHING_RAN, PLIM_CODE_MAX >> 10);
        if (memchr(r->code, '\0', r->code_len))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "javascript.code contains a NUL character" NOTHING_RAN);
        return 0;
}

static int bad_path(plim_error *f, const char *what, size_t i) {
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                         "project.%s[%zu] is not a clean relative path (at most %u bytes; no leading '/', no empty, "
                         "'.' or '..' segment, no backslash or control character)" NOTHING_RAN,
                         what, i, PLIM_PATH_MAX);
}

static int parse_project(const json_t *p, plim_request *r, plim_error *f) {
        json_t *files, *steps, *arts;
        size_t total = 0;
        char where[SERVE_SHORT_STR_MAX];
        static const char *const known[] = { "files", "steps", "artifacts", "grantProfile", "grant_profile" };
        static const char *const file_known[] = { "path", "content" };

        if (only_fields(p, "project", known, ELEMENTSOF(known), f) < 0)
                return -1;
        if (get_string(p, "grantProfile", "grant_profile", "project.", PLIM_STRING_MAX, &r->grant_profile, NULL, f) < 0 ||
            get_array(p, "files", "files", "project.", PLIM_FILES_MAX, &files, f) < 0 ||
            get_array(p, "steps", "steps", "project.", PLIM_STEPS_MAX, &steps, f) < 0 ||
            get_array(p, "artifacts", "artifacts", "project.", PLIM_ARTIFACTS_MAX, &arts, f) < 0)
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
                                         "project.files[%zu] must be an object" NOTHING_RAN, i);
                snprintf(where, sizeof(where), "project.files[%zu]", i);
                if (only_fields(o, where, file_known, ELEMENTSOF(file_known), f) < 0)
                        return -1;
                snprintf(where, sizeof(where), "project.files[%zu].", i);
                size_t plen;
                if (get_string(o, "path", "path", where, PLIM_PATH_MAX, &x->path, &plen, f) < 0 ||
                    get_string(o, "content", "content", where, PLIM_FILES_BYTES_MAX, &x->content, &x->content_len, f) < 0)
                        return -1;
                if (!brk_path_is_clean(x->path, plen))
                        return bad_path(f, "files", i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(r->files[j].path, x->path) == 0)
                                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                                 "project.files[%zu] repeats the path of files[%zu]" NOTHING_RAN, i, j);
                total += x->content_len;
                if (total > PLIM_FILES_BYTES_MAX)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "project.files hold more than %u MiB of content" NOTHING_RAN,
                                         PLIM_FILES_BYTES_MAX >> 20);
        }

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
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "project.steps[%zu] must be a string of at most %u KiB without NUL" NOTHING_RAN,
                                         i, PLIM_STEP_MAX >> 10);
                r->steps[i] = json_string_value(v);
        }

        r->n_artifacts = json_array_size(arts);
        r->artifacts = calloc(MAX(r->n_artifacts, 1U), sizeof(char *));
        if (!r->artifacts)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        for (size_t i = 0; i < r->n_artifacts; i++) {
                json_t *v = json_array_get(arts, i);
                if (!json_is_string(v) || !brk_path_is_clean(json_string_value(v), json_string_length(v)))
                        return bad_path(f, "artifacts", i);
                r->artifacts[i] = json_string_value(v);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(r->artifacts[j], r->artifacts[i]) == 0)
                                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                                 "project.artifacts[%zu] repeats artifacts[%zu]" NOTHING_RAN, i, j);
        }
        return 0;
}

static int parse_payload(const json_t *root, plim_request *r, plim_error *f) {
        static const struct {
                const char *name;
                plim_kind kind;
        } kinds[] = {
                { "javascript", PLIM_KIND_JAVASCRIPT },
                { "project", PLIM_KIND_PROJECT },
                { "module", PLIM_KIND_MODULE },
                { "cell", PLIM_KIND_CELL },
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
                                 "the request has no payload: name one of javascript or project" NOTHING_RAN);
        case PLIM_KIND_CELL:
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "a cell runs only in a session (SessionRun), never in Run" NOTHING_RAN);
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
        *r = (plim_request){ 0 };
}

int plim_run_parse(const char *body, size_t len, plim_request *ret, plim_error *f) {
        plim_request r = { 0 };
        const char *trace;
        bool present;
        int64_t timeout;

        if (parse_object(body, len, &r.root, f) < 0)
                return -1;
        if (protocol_gate(r.root, &r.protocol, f) < 0)
                goto fail;
        if (json_object_get(r.root, "sessionId") || json_object_get(r.root, "session_id")) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "Run takes no sessionId: a call in a session is a SessionRun" NOTHING_RAN);
                goto fail;
        }
        static const char *const fields[] = { "protocol", "minimumIsolation", "minimum_isolation", "traceId", "trace_id",
                                             "timeoutMs", "timeout_ms", "softwareRule", "software_rule", "javascript",
                                             "project", "module", "cell" };
        if (only_fields(r.root, "the request", fields, ELEMENTSOF(fields), f) < 0)
                goto fail;
        if (get_string(r.root, "minimumIsolation", "minimum_isolation", "", PLIM_STRING_MAX, &r.minimum_isolation, NULL, f) < 0)
                goto fail;
        static const char *const floors[] = { "", "process", "container", "kernel", "vm" };
        bool known = false;
        for (size_t i = 0; i < ELEMENTSOF(floors); i++)
                known = known || strcmp(r.minimum_isolation, floors[i]) == 0;
        if (!known) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "minimumIsolation must be empty or one of process, container, kernel, vm%s" NOTHING_RAN,
                          strcmp(r.minimum_isolation, "none") == 0 ? " (\"none\" is not a floor)" : "");
                goto fail;
        }
        if (get_string(r.root, "traceId", "trace_id", "", PLIM_STRING_MAX, &trace, NULL, f) < 0)
                goto fail;
        if (trace[0]) {
                bool ok = strlen(trace) <= PLIM_TRACE_ID_MAX;
                for (const char *c = trace; ok && *c; c++)
                        ok = is_trace_char(*c);
                r.trace_id = ok ? trace : NULL;
                r.trace_id_dropped = !ok;
        }
        if (get_int(r.root, "timeoutMs", "timeout_ms", INT32_MIN, INT32_MAX, &present, &timeout, f) < 0)
                goto fail;
        r.timeout_ms = (int32_t) timeout;
        r.effective_timeout_ms = timeout <= 0 ? PLIM_DEFAULT_TIMEOUT_MS : (uint32_t) MIN(timeout, (int64_t) PLIM_TIMEOUT_MS_MAX);
        if (parse_software_rule(r.root, &r, f) < 0 || parse_payload(r.root, &r, f) < 0)
                goto fail;
        /* The record's digests are made now, before anything runs: a request that cannot have a
         * record is refused here, not answered with an error after its run. */
        hull_error e = { 0 };
        json_t *rule = json_object_get(r.root, "softwareRule");
        if (!rule)
                rule = json_object_get(r.root, "software_rule");
        if (rec_request_digest(r.root, r.request_sha256, &e) < 0 ||
            rec_software_rule_id(rule, r.software_rule_id, &e) < 0) {
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request cannot have a run record (%s)" NOTHING_RAN, e.msg);
                goto fail;
        }
        *ret = r;
        return 0;
fail:
        plim_request_done(&r);
        return -1;
}

int plim_session_refuse(const char *body, size_t len, plim_procedure p, plim_error *f) {
        json_t *root;
        uint32_t protocol;
        if (parse_object(body, len, &root, f) < 0)
                return -1;
        int r = protocol_gate(root, &protocol, f);
        json_decref(root);
        if (r < 0)
                return -1;
        return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED,
                         "hull serve does not offer sessions yet (%s; Describe says supportsSessions false)" NOTHING_RAN,
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
        if (parse_object(body, len, &root, f) < 0)
                return -1;
        json_decref(root);
        return 0;
}

/* ---- admission ---- */

static int tier_rank(const char *t) {
        static const char *const order[] = { "none", "process", "container", "kernel", "vm" };
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
        return 0;
}

/* ---- the plan ---- */

void plim_plan_done(brk_request *p) {
        free(p->files);
        for (uint32_t i = 0; p->steps && i < p->n_steps; i++)
                free(p->steps[i].argv);
        free(p->steps);
        free(p->artifacts);
        *p = (brk_request){ 0 };
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
                p.n_files = 1;
                p.files = calloc(1, sizeof(brk_file));
                p.n_steps = 1;
                p.steps = calloc(1, sizeof(brk_step));
                if (!p.files || !p.steps)
                        goto oom;
                p.files[0] = (brk_file){ .path = (char *) "main.mjs", .data = (char *) r->code, .len = r->code_len };
                p.steps[0] = (brk_step){ .argv = argv_new("/usr/bin/node", "main.mjs", NULL), .argc = 2 };
                if (!p.steps[0].argv)
                        goto oom;
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
                        p.files[i] = (brk_file){ .path = (char *) r->files[i].path, .data = (char *) r->files[i].content,
                                                 .len = r->files[i].content_len };
                for (size_t i = 0; i < r->n_steps; i++) {
                        p.steps[i] = (brk_step){ .argv = argv_new("/bin/sh", "-c", r->steps[i]), .argc = 3 };
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

static json_t *json_base64(const char *p, size_t n) {
        if (n > (size_t) INT32_MAX / 2)
                return NULL;
        char *b = malloc(4 * ((n + 2) / 3) + 1);
        if (!b)
                return NULL;
        int len = EVP_EncodeBlock((unsigned char *) b, (const unsigned char *) p, (int) n);
        json_t *s = len >= 0 ? json_stringn(b, (size_t) len) : NULL;
        free(b);
        return s;
}

static json_t *json_int64_string(int64_t v) {
        char buf[sizeof("-9223372036854775808")];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
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
                              "protocol", (int) PLIM_PROTOCOL,
                              "javascriptEnvironment", "maxTimeoutMs", (json_int_t) max_timeout(ev->javascript), "languages",
                              "projectEnvironment", "maxTimeoutMs", (json_int_t) max_timeout(true), "languages", langs,
                              "resources", "memoryMb", (json_int_t) (ev->memory_bytes >> 20), "pids", (json_int_t) ev->pids,
                              "supportsSessions", 0);
        if (o && ev->javascript) {
                json_t *js = json_object_get(json_object_get(o, "javascriptEnvironment"), "languages");
                if (json_array_append_new(js, json_string("javascript")) < 0) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        return dump(o, ret, ret_len);
}

static json_t *stream_result(const brk_step_result *s) {
        json_t *o = json_object();
        if (!o || !set(o, "stdout", json_base64(s->out, s->out_len)) || !set(o, "stderr", json_base64(s->err, s->err_len)) ||
            !set(o, "exitCode", json_integer(s->status)) ||
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
                    !set(s, "durationMs", json_int64_string((int64_t) (res->steps[i].wall_us / 1000))) ||
                    json_array_append_new(steps, s) < 0) {
                        json_decref(s);
                        goto fail;
                }
        }
        for (uint32_t i = 0; i < res->n_artifacts; i++) {
                json_t *a = json_object();
                if (!a || !set(a, "path", json_string(res->artifacts[i].path)) ||
                    !set(a, "content", json_base64(res->artifacts[i].data, res->artifacts[i].len)) ||
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

/* The v2 record of a single run: digests of the request as received and of the result as it
 * will be sent, the evidence, the times, empty session fields, then its own digest. */
static int record_fill(const plim_request *r, json_t *answer, const plim_evidence *ev, uint64_t received,
                       uint64_t ended, plim_error *f) {
        char res[REC_DIGEST_HEX_SIZE], rec[REC_DIGEST_HEX_SIZE];
        const char *req = r->request_sha256, *rule = r->software_rule_id;
        hull_error e = { 0 };
        if (rec_result_digest(answer, res, &e) < 0)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s", e.msg);
        json_t *record = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:s, s:s}",
                                   "version", 2, "requestSha256", req, "resultSha256", res, "provider", ev->sandbox,
                                   "isolation", ev->isolation, "environment", "", "policy", "",
                                   "startedUnixMs", json_int64_string((int64_t) received),
                                   "endedUnixMs", json_int64_string((int64_t) ended), "session", "", "sequence", "0",
                                   "previousSha256", "", "softwareIdentity", "", "softwareRuleId", rule);
        if (!record)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        if (rec_record_digest(record, rec, &e) < 0 || !set(record, "recordSha256", json_string(rec)) ||
            !set(answer, "record", record)) {
                json_decref(record);
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the run record cannot be made: %s",
                                 e.msg[0] ? e.msg : "out of memory");
        }
        return 0;
}

int plim_run_answer(const plim_request *r, const brk_result *res, const plim_evidence *ev, uint64_t received_unix_ms,
                    uint64_t ended_unix_ms, char **ret, size_t *ret_len, plim_error *f) {
        switch ((brk_outcome) res->outcome) {
        case BRK_OUTCOME_NOT_STARTED:
                return plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY, "the run was not started: %s" NOTHING_RAN,
                                 res->detail ? res->detail : "");
        case BRK_OUTCOME_CANCELLED:
                return plim_fail(f, PLIM_CODE_UNAVAILABLE, PLIM_REASON_NONE,
                                 "the run was stopped because hull serve is shutting down (%s); it may have run in part",
                                 res->detail ? res->detail : "");
        case BRK_OUTCOME_ERROR:
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox failed: %s",
                                 res->detail ? res->detail : "");
        case BRK_OUTCOME_SETUP_FAILED:
        case BRK_OUTCOME_COMPLETED:
        case BRK_OUTCOME_TIMED_OUT:
                break;
        }
        json_t *result;
        if (r->kind == PLIM_KIND_JAVASCRIPT) {
                if (res->n_steps != 1)
                        return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "the sandbox did not run the code: %s",
                                         res->detail ? res->detail : "");
                result = stream_result(&res->steps[0]);
        } else
                result = project_result(r, res);
        uint64_t duration = res->ended_unix_ms >= res->started_unix_ms ? res->ended_unix_ms - res->started_unix_ms : 0;
        json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s}", "sandbox", ev->sandbox, "isolation", ev->isolation,
                              "durationMs", json_int64_string((int64_t) duration), "softwareIdentity", "", "environment", "");
        if (!o || !set(o, plim_kind_to_string(r->kind), result)) {
                json_decref(o);
                return -ENOMEM;
        }
        if (record_fill(r, o, ev, received_unix_ms, ended_unix_ms, f) < 0) {
                json_decref(o);
                return -1;
        }
        return dump(o, ret, ret_len);
}
