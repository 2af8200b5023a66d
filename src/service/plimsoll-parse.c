/* plimsoll-parse.c: plimsoll protocol 3's requests (see plimsoll.h): the JSON body within its
 * bounds, the protocol gate, Run, OpenSession, SessionRun, CloseSession and Describe parsed
 * strictly (fields read with src/shared/protojson, refusals as invalid_argument + request),
 * admission (floor, software rule, grants), and the broker plan of a run. Every refusal says what
 * was wrong and that nothing ran. */
#include "plimsoll.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json-scan.h"
#include "macro.h"
#include "sbx.h"
#include "plimsoll-internal.h"
#include "protojson.h"
#include "sbx-record.h"
#include "utf8.h"

/* ---- request parsing ---- */

/* Parse body into an object, strictly and within the depth bound. */
int plim_body_parse(const char *body, size_t len, json_t **ret, plim_error *f) {
        json_error_t jerr;
        json_t *root = NULL;
        int q;
        if (len > SERVE_BODY_MAX)
                plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                          "the request body is over %u bytes" NOTHING_RAN, SERVE_BODY_MAX);
        else if ((q = json_prescan(body, len, PLIM_JSON_DEPTH_MAX, PLIM_JSON_VALUES_MAX)) == -ELOOP)
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

/* The ProtoJSON readers (src/shared/protojson) with plimsoll's refusal: what they say is wrong,
 * as invalid_argument + request (nothing ran); internal when memory ran out. */
static int plim_from_pj(const hull_error *e, plim_error *f) {
        if (e->err == -ENOMEM)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s" NOTHING_RAN, e->msg);
}

static int field(const json_t *o, const char *camel, const char *snake, json_t **ret, plim_error *f) {
        hull_error e;
        return pj_field(o, camel, snake, ret, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

int plim_get_string(const json_t *o, const char *camel, const char *snake, const char *where, size_t max,
                    const char **ret, size_t *ret_len, plim_error *f) {
        hull_error e;
        return pj_string(o, camel, snake, where, max, ret, ret_len, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

int plim_get_int(const json_t *o, const char *camel, const char *snake, int64_t min, int64_t max, bool *ret_present,
                 int64_t *ret, plim_error *f) {
        hull_error e;
        return pj_int(o, camel, snake, min, max, ret_present, ret, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

int plim_get_uint64(const json_t *o, const char *camel, const char *snake, uint64_t *ret, plim_error *f) {
        hull_error e;
        return pj_uint64(o, camel, snake, ret, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

int plim_get_bool(const json_t *o, const char *camel, const char *snake, bool *ret, plim_error *f) {
        hull_error e;
        return pj_bool(o, camel, snake, ret, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

int plim_get_bytes(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, void **ret,
                   size_t *ret_len, plim_error *f) {
        hull_error e;
        return pj_bytes(o, camel, snake, where, max, ret, ret_len, &e) < 0 ? plim_from_pj(&e, f) : 0;
}

static int get_array(const json_t *o, const char *camel, const char *snake, const char *where, size_t max, json_t **ret,
                     plim_error *f) {
        hull_error e;
        return pj_array(o, camel, snake, where, max, ret, &e) < 0 ? plim_from_pj(&e, f) : 0;
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
        if (!plim_session_id_is_valid(s, n))
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
                if (!sbx_plan_path_is_clean(x->path, plen))
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
                if (!json_is_string(v) || !sbx_plan_path_is_clean(json_string_value(v), json_string_length(v)))
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

/* hull's extension hullEnvironment (or hull_environment): the `hull env` environment whose layer
 * and network the run or session gets; "" (ProtoJSON's zero value) or absent: none. */
static int parse_environment(const json_t *root, const char **ret, plim_error *f) {
        const char *s = NULL;
        size_t n = 0;
        if (plim_get_string(root, "hullEnvironment", "hull_environment", "", SIZE_MAX, &s, &n, f) < 0)
                return -1;
        if (s && n > 0) {
                bool ok = n < ENV_NAME_MAX;
                for (size_t i = 0; ok && i < n; i++) {
                        char c = s[i];
                        ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                             (i > 0 && (c == '.' || c == '_' || c == '-'));
                }
                if (!ok)
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "hullEnvironment must be an environment's name: 1 to %u characters of "
                                         "[a-z0-9._-] (see 'hull env list')" NOTHING_RAN,
                                         ENV_NAME_MAX - 1);
        }
        *ret = s ? s : "";
        return 0;
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
        static const char *const fields[] = {"protocol",
                                             "minimumIsolation",
                                             "minimum_isolation",
                                             "traceId",
                                             "trace_id",
                                             "timeoutMs",
                                             "timeout_ms",
                                             "softwareRule",
                                             "software_rule",
                                             "javascript",
                                             "project",
                                             "module",
                                             "cell",
                                             "sessionId",
                                             "session_id",
                                             "hullEnvironment",
                                             "hull_environment"};
        /* SessionRun knows every field but the last two (hull's extension hullEnvironment: the
         * session has its environment); Run knows them all (a sessionId was refused above). */
        if (plim_only_fields(r.root, "the request", fields, ELEMENTSOF(fields) - (session ? 2 : 0), f) < 0)
                goto fail;
        if (session && plim_get_session_id(r.root, &r.session_id, f) < 0)
                goto fail;
        if (parse_floor(r.root, &r.minimum_isolation, f) < 0 ||
            parse_trace(r.root, &r.trace_id, &r.trace_id_dropped, f) < 0)
                goto fail;
        if (!session) {
                const char *env;
                if (parse_environment(r.root, &env, f) < 0)
                        goto fail;
                memcpy(r.environment, env, strlen(env) + 1); /* bounded by parse_environment */
                (void) json_object_del(r.root, "hullEnvironment");
                (void) json_object_del(r.root, "hull_environment");
        }
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
                "owner",       "hullEnvironment",  "hull_environment"};

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
        size_t n = 0;
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
        if (parse_environment(r.root, &r.environment, f) < 0)
                goto fail;
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
        /* DescribeRequest {}: it is where a client learns the protocol number, so it need not
         * state one; one that does passes the gate of the other procedures. Any other field is
         * unknown. */
        static const char *const fields[] = {"protocol"};
        uint32_t protocol;
        json_t *p = json_object_get(root, "protocol");
        int q = p && !json_is_null(p) ? protocol_gate(root, &protocol, f) : 0;
        if (q == 0)
                q = plim_only_fields(root, "the request", fields, ELEMENTSOF(fields), f);
        json_decref(root);
        return q < 0 ? -1 : 0;
}

/* ---- admission ---- */

static int tier_rank(const char *t) {
        static const char *const order[] = {"none", "process", "container", "kernel", "vm"};
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if (strcmp(t, order[i]) == 0)
                        return (int) i;
        return -1;
}

/* What every request is checked for: its floor against our tier, and a software rule, which
 * hull cannot meet. */
static int admit_floor_and_rule(const char *minimum_isolation, bool has_software_rule, const char *tier,
                                plim_error *f) {
        if (minimum_isolation[0] && tier_rank(tier) < tier_rank(minimum_isolation))
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ISOLATION,
                                 "the request's floor is %s and this daemon's tier is %s" NOTHING_RAN,
                                 minimum_isolation, tier);
        if (has_software_rule)
                return plim_fail(f, PLIM_CODE_FAILED_PRECONDITION, PLIM_REASON_ENVIRONMENT,
                                 "hull serve cannot establish a software identity for its sandbox (it runs the "
                                 "host's /usr), so no software rule can be met" NOTHING_RAN);
        return 0;
}

int plim_run_admit(const plim_request *r, const plim_evidence *ev, plim_error *f) {
        if (admit_floor_and_rule(r->minimum_isolation, r->has_software_rule, ev->isolation, f) < 0)
                return -1;
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
        /* sessions of the kernel tier where the host can run them (kernel_sessions) */
        const char *tier = plim_session_tier(ev);
        if (ev->kernel_sessions && tier_rank(tier) < tier_rank("kernel"))
                tier = "kernel";
        return admit_floor_and_rule(r->minimum_isolation, r->has_software_rule, tier, f);
}

bool plim_open_kernel(const plim_open_request *r, const plim_evidence *ev) {
        return ev->kernel_sessions &&
               (strcmp(r->minimum_isolation, "kernel") == 0 || strcmp(plim_session_tier(ev), "kernel") == 0);
}

const char *plim_session_tier(const plim_evidence *ev) {
        return ev->session_isolation ? ev->session_isolation : ev->isolation;
}

const char *plim_run_tier(const plim_request *r, const plim_evidence *ev) {
        if (tier_rank(ev->isolation) <= tier_rank("container"))
                return ev->isolation;
        return strcmp(r->minimum_isolation, "kernel") == 0 ? "kernel" : "container";
}

/* ---- the plan ---- */

void plim_plan_done(sbx_plan *p) {
        free(p->files);
        for (uint32_t i = 0; p->steps && i < p->n_steps; i++)
                free(p->steps[i].argv);
        free(p->steps);
        free(p->artifacts);
        free(p->layer_dir); /* the environment's, owned (api-plimsoll's run_environment) */
        for (uint32_t i = 0; p->net_hosts && i < p->n_net_hosts; i++)
                free(p->net_hosts[i]);
        free(p->net_hosts);
        *p = (sbx_plan){0};
}

/* Code written for `node -e` (plimsoll's clients send require('fs')) runs unchanged beside ES
 * module imports: node first loads this module, which makes a global require (CommonJS, resolving
 * from the work directory, as `node -e` does). A global, not a binding of the code's module, so
 * code that makes its own `const require = createRequire(...)` still compiles. */
#define PLIM_JS_REQUIRE_ARG                                                                                            \
        "--import=data:text/javascript,import{createRequire}from\"node:module\";"                                      \
        "globalThis.require=createRequire(process.cwd()+\"/\")"

/* A node started ahead of a javascript run (the broker's spare, brk_config.warm_javascript).
 * While it waits it runs what a first module import and a first write to stdout would set up
 * (an empty module of its own in /tmp, the stdout and stderr streams: about 4 ms of a run);
 * then it reads the code from its stdin to the end, puts it in a module file in the work
 * directory (relative imports resolve from there, as with `node -e`) and imports it;
 * process.argv is node's alone, as with `-e`. The file is removed once the module has run. */
const char *const plim_js_warm_argv[] = {
        "/usr/bin/node",
        PLIM_JS_REQUIRE_ARG,
        "--input-type=module",
        "-e",
        "import{readFileSync as r,writeFileSync as w,rmSync as u}from\"node:fs\";"
        "{const g=\"/tmp/.hull-warm.mjs\";w(g,\"export{}\");await import(\"file://\"+g);u(g)}"
        "process.stdout;process.stderr;"
        "const c=r(0),f=process.cwd()+\"/.hull-main.mjs\";w(f,c,{mode:0o600});process.argv.length=1;"
        "try{await import(\"file://\"+f)}finally{u(f,{force:true})}",
        NULL};

static char **argv_new(const char *a, const char *b, const char *c) {
        char **argv = calloc(4, sizeof(char *));
        if (argv) {
                argv[0] = (char *) a;
                argv[1] = (char *) b;
                argv[2] = (char *) c;
        }
        return argv;
}

int plim_plan(const plim_request *r, const plim_evidence *ev, sbx_plan *ret) {
        sbx_plan p = {
                .timeout_ms = r->effective_timeout_ms,
                .memory_bytes = ev->memory_bytes,
                .pids = ev->pids,
                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                .artifact_bytes = PLIM_ARTIFACTS_BYTES_MAX,
                .tier = strcmp(plim_run_tier(r, ev), "kernel") == 0 ? SBX_TIER_KERNEL : SBX_TIER_CONTAINER,
        };
        if (p.tier == SBX_TIER_KERNEL && ev->kernel_platform)
                snprintf(p.kernel_platform, sizeof(p.kernel_platform), "%s", ev->kernel_platform);
        if (r->kind == PLIM_KIND_JAVASCRIPT) {
                p.output_bytes = PLIM_JS_OUTPUT_BYTES;
                p.flags = SBX_PLAN_JAVASCRIPT;
                p.n_steps = 1;
                p.steps = calloc(1, sizeof(sbx_plan_step));
                p.files = calloc(1, sizeof(sbx_plan_file));
                if (!p.files || !p.steps)
                        goto oom;
                if (r->code_len <= PLIM_JS_EVAL_MAX) {
                        /* An ES module given on the command line: node's loader skips the entry
                         * file's resolution (about 3 ms of a 40 ms start). */
                        char **argv = calloc(6, sizeof(char *));
                        if (!argv)
                                goto oom;
                        argv[0] = (char *) "/usr/bin/node";
                        argv[1] = (char *) "--input-type=module";
                        argv[2] = (char *) PLIM_JS_REQUIRE_ARG;
                        argv[3] = (char *) "-e";
                        argv[4] = (char *) r->code;
                        p.steps[0] = (sbx_plan_step){.argv = argv, .argc = 5};
                } else {
                        /* Over what one argument may hold (MAX_ARG_STRLEN): a file, the last argument. */
                        p.n_files = 1;
                        p.files[0] = (sbx_plan_file){
                                .path = (char *) "main.mjs", .data = (char *) r->code, .len = r->code_len};
                        p.steps[0] = (sbx_plan_step){.argv = argv_new("/usr/bin/node", PLIM_JS_REQUIRE_ARG, "main.mjs"),
                                                     .argc = 3};
                        if (!p.steps[0].argv)
                                goto oom;
                }
        } else {
                p.output_bytes = PLIM_STEP_OUTPUT_BYTES;
                p.flags = SBX_PLAN_STOP_ON_FAILURE;
                p.n_files = (uint32_t) r->n_files;
                p.files = calloc(MAX(r->n_files, 1U), sizeof(sbx_plan_file));
                p.n_steps = (uint32_t) r->n_steps;
                p.steps = calloc(r->n_steps, sizeof(sbx_plan_step));
                p.n_artifacts = (uint32_t) r->n_artifacts;
                p.artifacts = calloc(MAX(r->n_artifacts, 1U), sizeof(char *));
                if (!p.files || !p.steps || !p.artifacts)
                        goto oom;
                for (size_t i = 0; i < r->n_files; i++)
                        p.files[i] = (sbx_plan_file){.path = (char *) r->files[i].path,
                                                     .data = (char *) r->files[i].content,
                                                     .len = r->files[i].content_len};
                for (size_t i = 0; i < r->n_steps; i++) {
                        p.steps[i] = (sbx_plan_step){.argv = argv_new("/bin/sh", "-c", r->steps[i]), .argc = 3};
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
