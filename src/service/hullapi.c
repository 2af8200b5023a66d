/* hullapi.c: hull's Workspace and Sessions API on plimsoll sessions: routing, request parsing and
 * bounds, and the answers, in the Connect conventions plimsoll.c uses. */
#include "hullapi.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sha256.h"
#include "utf8.h"

#define NOTHING_RAN "; nothing ran"

static const char *const methods[_HULL_API_PROCEDURE_MAX] = {
        [HULL_API_NONE] = "",
        [HULL_API_UNKNOWN] = "unknown",
        [HULL_API_EXEC] = "Exec",
        [HULL_API_READ] = "Read",
        [HULL_API_WRITE] = "Write",
        [HULL_API_EDIT] = "Edit",
        [HULL_API_GLOB] = "Glob",
        [HULL_API_GREP] = "Grep",
        [HULL_API_PERSIST] = "Persist",
        [HULL_API_HYDRATE] = "Hydrate",
        [HULL_API_SESSIONS_LIST] = "List",
        [HULL_API_HANDLES_LIST] = "List",
        [HULL_API_HANDLES_INSPECT] = "Inspect",
        [HULL_API_HANDLES_QUERY] = "Query",
        [HULL_API_HANDLES_READ] = "Read",
        [HULL_API_HANDLES_ADD_INPUT] = "AddInput",
};

const char *hull_api_procedure_to_string(hull_api_procedure p) {
        return (unsigned) p < _HULL_API_PROCEDURE_MAX ? methods[p] : "unknown";
}

/* The method after service in path, when path is exactly {clean prefix}{service}{method}. */
static const char *method_of(const char *path, const char *service) {
        const char *p = strstr(path, service);
        if (!p || !plim_path_prefix_is_clean(path, (size_t) (p - path)))
                return NULL;
        return p + strlen(service);
}

hull_api_procedure hull_api_procedure_from_path(const char *path) {
        const char *m = method_of(path, HULL_API_WORKSPACE_PATH);
        if (m) {
                for (size_t i = HULL_API_EXEC; i <= HULL_API_HYDRATE; i++)
                        if (strcmp(m, methods[i]) == 0)
                                return (hull_api_procedure) i;
                return HULL_API_UNKNOWN;
        }
        m = method_of(path, HULL_API_SESSIONS_PATH);
        if (m)
                return strcmp(m, methods[HULL_API_SESSIONS_LIST]) == 0 ? HULL_API_SESSIONS_LIST : HULL_API_UNKNOWN;
        m = method_of(path, HULL_API_HANDLES_PATH);
        if (m) {
                for (size_t i = HULL_API_HANDLES_LIST; i <= HULL_API_HANDLES_ADD_INPUT; i++)
                        if (strcmp(m, methods[i]) == 0)
                                return (hull_api_procedure) i;
                return HULL_API_UNKNOWN;
        }
        return HULL_API_NONE;
}

void hull_api_request_done(hull_api_request *r) {
        free(r->handles.ids);
        free(r->handles.content);
        free(r->exec.env);
        free(r->write.content);
        free(r->hydrate.archive);
        json_decref(r->root);
        *r = (hull_api_request){0};
}

/* A required string of 1 to max bytes without NUL. */
static int required_string(const json_t *o, const char *camel, const char *snake, size_t max, const char **ret,
                           plim_error *f) {
        size_t n;
        if (plim_get_string(o, camel, snake, "", max, ret, &n, f) < 0)
                return -1;
        if (n == 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "%s is required" NOTHING_RAN,
                                 camel);
        if (memchr(*ret, '\0', n))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s contains a NUL character" NOTHING_RAN, camel);
        return 0;
}

/* An optional string: NULL when absent, else as required_string(). */
static int optional_string(const json_t *o, const char *camel, const char *snake, size_t max, const char **ret,
                           plim_error *f) {
        json_t *a = json_object_get(o, camel), *b = json_object_get(o, snake);
        if ((!a || json_is_null(a)) && (!b || json_is_null(b))) {
                *ret = NULL;
                return 0;
        }
        return required_string(o, camel, snake, max, ret, f);
}

/* The body, its fields checked against names (sessionId added for Workspace requests), and the
 * sessionId. */
static int begin(hull_api_procedure p, const char *body, size_t len, const char *const *names, size_t n,
                 hull_api_request *r, plim_error *f) {
        const char *known[16];
        size_t k = 0;
        *r = (hull_api_request){.procedure = p};
        assert(n + 2 <= ELEMENTSOF(known));
        if (p != HULL_API_SESSIONS_LIST) {
                known[k++] = "sessionId";
                known[k++] = "session_id";
        }
        for (size_t i = 0; i < n; i++)
                known[k++] = names[i];
        if (plim_body_parse(body, len, &r->root, f) < 0)
                return -1;
        if (plim_only_fields(r->root, "the request", known, k, f) < 0)
                return -1;
        if (p != HULL_API_SESSIONS_LIST && plim_get_session_id(r->root, &r->session_id, f) < 0)
                return -1;
        return 0;
}

static int finish(int q, hull_api_request *r, hull_api_request *ret) {
        if (q < 0) {
                hull_api_request_done(r);
                return -1;
        }
        *ret = *r;
        return 0;
}

static bool env_name_ok(const char *s, size_t n) {
        if (n == 0 || n > HULL_API_ENV_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
                if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
                        return false;
        }
        return true;
}

static int parse_env(hull_api_request *r, plim_error *f) {
        json_t *env = json_object_get(r->root, "env");
        if (!env || json_is_null(env))
                return 0;
        if (!json_is_object(env))
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "env must be an object of NAME: value" NOTHING_RAN);
        size_t n = json_object_size(env);
        if (n > HULL_API_ENV_MAX)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "env has %zu entries, over the limit of %u" NOTHING_RAN, n, HULL_API_ENV_MAX);
        r->exec.env = calloc(MAX(n, 1U), sizeof(hull_api_env));
        if (!r->exec.env)
                return plim_fail(f, PLIM_CODE_INTERNAL, PLIM_REASON_NONE, "out of memory");
        for (void *it = json_object_iter(env); it; it = json_object_iter_next(env, it)) {
                const char *key = json_object_iter_key(it);
                json_t *v = json_object_iter_value(it);
                size_t k = r->exec.n_env;
                if (!env_name_ok(key, json_object_iter_key_len(it)) || strlen(key) != json_object_iter_key_len(it))
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "env names must match [A-Za-z_][A-Za-z0-9_]{0,%u}" NOTHING_RAN,
                                         HULL_API_ENV_NAME_MAX - 1);
                if (!json_is_string(v) || json_string_length(v) > HULL_API_ENV_VALUE_MAX ||
                    memchr(json_string_value(v), '\0', json_string_length(v)))
                        return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                         "env.%s must be a string of at most %u KiB without NUL" NOTHING_RAN, key,
                                         HULL_API_ENV_VALUE_MAX >> 10);
                r->exec.env[k] = (hull_api_env){.name = key, .value = json_string_value(v)};
                r->exec.n_env = k + 1;
        }
        return 0;
}

int hull_api_exec_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"command", "timeoutMs", "timeout_ms", "env"};
        hull_api_request r;
        bool present;
        int64_t t = 0;
        int q = begin(HULL_API_EXEC, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "command", "command", HULL_API_COMMAND_MAX, &r.exec.command, f);
        if (q == 0)
                q = plim_get_int(r.root, "timeoutMs", "timeout_ms", 0, UINT32_MAX, &present, &t, f);
        if (q == 0) {
                r.exec.timeout_ms = t == 0 ? PLIM_DEFAULT_TIMEOUT_MS : (uint32_t) MIN(t, (int64_t) PLIM_TIMEOUT_MS_MAX);
                q = parse_env(&r, f);
        }
        return finish(q, &r, ret);
}

int hull_api_read_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"path", "offset", "limit"};
        hull_api_request r;
        bool present;
        int64_t limit = 0;
        int q = begin(HULL_API_READ, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "path", "path", WS_PATH_MAX, &r.read.path, f);
        if (q == 0)
                q = plim_get_uint64(r.root, "offset", "offset", &r.read.offset, f);
        if (q == 0)
                q = plim_get_int(r.root, "limit", "limit", 0, UINT32_MAX, &present, &limit, f);
        if (q == 0)
                r.read.limit =
                        limit == 0 ? (size_t) WS_READ_DEFAULT_BYTES : (size_t) MIN((uint64_t) limit, WS_READ_MAX_BYTES);
        return finish(q, &r, ret);
}

int hull_api_write_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"path", "content", "append"};
        hull_api_request r;
        int q = begin(HULL_API_WRITE, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "path", "path", WS_PATH_MAX, &r.write.path, f);
        if (q == 0)
                q = plim_get_bytes(r.root, "content", "content", "", WS_WRITE_MAX_BYTES, &r.write.content,
                                   &r.write.content_len, f);
        if (q == 0)
                q = plim_get_bool(r.root, "append", "append", &r.write.append, f);
        return finish(q, &r, ret);
}

int hull_api_edit_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"path", "oldText", "old_text", "newText", "new_text"};
        hull_api_request r;
        int q = begin(HULL_API_EDIT, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "path", "path", WS_PATH_MAX, &r.edit.path, f);
        if (q == 0)
                q = plim_get_string(r.root, "oldText", "old_text", "", WS_EDIT_MAX_BYTES, &r.edit.old_text,
                                    &r.edit.old_len, f);
        if (q == 0 && r.edit.old_len == 0)
                q = plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                              "oldText is empty: an edit replaces one occurrence of a non-empty text" NOTHING_RAN);
        if (q == 0)
                q = plim_get_string(r.root, "newText", "new_text", "", WS_WRITE_MAX_BYTES, &r.edit.new_text,
                                    &r.edit.new_len, f);
        return finish(q, &r, ret);
}

int hull_api_glob_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"pattern", "hidden"};
        hull_api_request r;
        int q = begin(HULL_API_GLOB, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "pattern", "pattern", WS_PATH_MAX, &r.glob.pattern, f);
        if (q == 0)
                q = plim_get_bool(r.root, "hidden", "hidden", &r.glob.hidden, f);
        return finish(q, &r, ret);
}

int hull_api_grep_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"pattern",     "path",       "glob",       "ignoreCase",
                                            "ignore_case", "maxMatches", "max_matches"};
        hull_api_request r;
        bool present;
        int64_t m = 0;
        int q = begin(HULL_API_GREP, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = required_string(r.root, "pattern", "pattern", WS_GREP_PATTERN_MAX, &r.grep.pattern, f);
        if (q == 0)
                q = optional_string(r.root, "path", "path", WS_PATH_MAX, &r.grep.path, f);
        if (q == 0)
                q = optional_string(r.root, "glob", "glob", WS_NAME_MAX, &r.grep.glob, f);
        if (q == 0)
                q = plim_get_bool(r.root, "ignoreCase", "ignore_case", &r.grep.ignore_case, f);
        if (q == 0)
                q = plim_get_int(r.root, "maxMatches", "max_matches", 0, WS_GREP_MATCHES_MAX, &present, &m, f);
        if (q == 0)
                r.grep.max_matches = (uint32_t) m;
        return finish(q, &r, ret);
}

int hull_api_persist_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        hull_api_request r;
        return finish(begin(HULL_API_PERSIST, body, len, NULL, 0, &r, f), &r, ret);
}

int hull_api_hydrate_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const names[] = {"archive"};
        hull_api_request r;
        int q = begin(HULL_API_HYDRATE, body, len, names, ELEMENTSOF(names), &r, f);
        if (q == 0)
                q = plim_get_bytes(r.root, "archive", "archive", "", SERVE_BODY_MAX, &r.hydrate.archive,
                                   &r.hydrate.archive_len, f);
        if (q == 0 && r.hydrate.archive_len == 0)
                q = plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST, "archive is required" NOTHING_RAN);
        return finish(q, &r, ret);
}

int hull_api_list_parse(const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        hull_api_request r = {.procedure = HULL_API_SESSIONS_LIST};
        if (len == 0) { /* an empty body is the empty message */
                *ret = r;
                return 0;
        }
        return finish(begin(HULL_API_SESSIONS_LIST, body, len, NULL, 0, &r, f), &r, ret);
}

/* A handle id as the store accepts it. */
static int handle_id(const json_t *o, const char *camel, const char *snake, const char **ret, plim_error *f) {
        if (required_string(o, camel, snake, HULL_API_HANDLE_ID_MAX, ret, f) < 0)
                return -1;
        const char *id = *ret;
        bool ok = (id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z') || (id[0] >= '0' && id[0] <= '9');
        for (const char *c = id + 1; ok && *c; c++)
                ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                     *c == '.' || *c == '-';
        if (!ok)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "%s must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}" NOTHING_RAN, camel);
        return 0;
}

int hull_api_input_format(const char *s, hd_format *ret) {
        static const struct {
                const char *name;
                hd_format format;
        } formats[] = {{"binary", HD_FORMAT_BINARY},
                       {"csv", HD_FORMAT_CSV},
                       {"tsv", HD_FORMAT_TSV},
                       {"json", HD_FORMAT_JSON_ARRAY},
                       {"jsonl", HD_FORMAT_JSON_LINES}};
        for (size_t i = 0; i < ELEMENTSOF(formats); i++)
                if (strcmp(s, formats[i].name) == 0) {
                        *ret = formats[i].format;
                        return 0;
                }
        return -EINVAL;
}

/* An input's format: binary (absent), csv, tsv, json (an array of objects) or jsonl. */
static int input_format(const json_t *o, hd_format *ret, plim_error *f) {
        const char *s = NULL;
        size_t n = 0;
        *ret = HD_FORMAT_BINARY;
        if (plim_get_string(o, "format", "format", "format", 16, &s, &n, f) < 0)
                return -1;
        if (n && hull_api_input_format(s, ret) < 0)
                return plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                 "format must be binary, csv, tsv, json (an array of objects) or jsonl" NOTHING_RAN);
        return 0;
}

int hull_api_handles_parse(hull_api_procedure p, const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        static const char *const list_names[] = {"sessionId"};
        static const char *const inspect_names[] = {"id", "head", "tail", "stats"};
        static const char *const query_names[] = {"sql", "handles", "maxRows", "max_rows"};
        static const char *const read_names[] = {"id", "offset", "limit"};
        static const char *const add_names[] = {"inputId", "input_id", "name", "content", "format"};
        hull_api_request r;
        bool present;
        int64_t v = 0;
        int q;
        switch (p) {
        case HULL_API_HANDLES_LIST:
                q = begin(p, body, len, list_names, 0, &r, f);
                break;
        case HULL_API_HANDLES_INSPECT:
                q = begin(p, body, len, inspect_names, ELEMENTSOF(inspect_names), &r, f);
                if (q == 0)
                        q = handle_id(r.root, "id", "id", &r.handles.id, f);
                if (q == 0 &&
                    (q = plim_get_int(r.root, "head", "head", 0, HULL_API_INSPECT_ROWS_MAX, &present, &v, f)) == 0)
                        r.handles.head = (uint32_t) v;
                if (q == 0 &&
                    (q = plim_get_int(r.root, "tail", "tail", 0, HULL_API_INSPECT_ROWS_MAX, &present, &v, f)) == 0)
                        r.handles.tail = (uint32_t) v;
                if (q == 0)
                        q = plim_get_bool(r.root, "stats", "stats", &r.handles.stats, f);
                break;
        case HULL_API_HANDLES_QUERY: {
                q = begin(p, body, len, query_names, ELEMENTSOF(query_names), &r, f);
                if (q == 0)
                        q = required_string(r.root, "sql", "sql", HULL_API_SQL_MAX, &r.handles.sql, f);
                json_t *a = q == 0 ? json_object_get(r.root, "handles") : NULL;
                if (q == 0 && a && !json_is_null(a)) {
                        if (!json_is_array(a) || json_array_size(a) > HULL_API_QUERY_HANDLES_MAX)
                                q = plim_fail(f, PLIM_CODE_INVALID_ARGUMENT, PLIM_REASON_REQUEST,
                                              "handles must be a list of at most %u handle ids" NOTHING_RAN,
                                              HULL_API_QUERY_HANDLES_MAX);
                        else if (json_array_size(a) > 0) {
                                r.handles.ids = calloc(json_array_size(a), sizeof(char *));
                                if (!r.handles.ids)
                                        q = plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                                      "out of memory" NOTHING_RAN);
                                for (size_t i = 0; q == 0 && i < json_array_size(a); i++) {
                                        json_t *holder = json_pack("{s:O}", "handle", json_array_get(a, i));
                                        const char *id = NULL;
                                        q = holder ? handle_id(holder, "handle", "handle", &id, f)
                                                   : plim_fail(f, PLIM_CODE_RESOURCE_EXHAUSTED, PLIM_REASON_CAPACITY,
                                                               "out of memory" NOTHING_RAN);
                                        if (q == 0) {
                                                /* the string lives in the array, which root owns */
                                                r.handles.ids[r.handles.n_ids++] =
                                                        json_string_value(json_array_get(a, i));
                                        }
                                        json_decref(holder);
                                }
                        }
                }
                if (q == 0)
                        q = plim_get_uint64(r.root, "maxRows", "max_rows", &r.handles.max_rows, f);
                break;
        }
        case HULL_API_HANDLES_READ:
                q = begin(p, body, len, read_names, ELEMENTSOF(read_names), &r, f);
                if (q == 0)
                        q = handle_id(r.root, "id", "id", &r.handles.id, f);
                if (q == 0)
                        q = plim_get_uint64(r.root, "offset", "offset", &r.handles.offset, f);
                if (q == 0)
                        q = plim_get_uint64(r.root, "limit", "limit", &r.handles.limit, f);
                break;
        case HULL_API_HANDLES_ADD_INPUT:
                q = begin(p, body, len, add_names, ELEMENTSOF(add_names), &r, f);
                if (q == 0)
                        q = handle_id(r.root, "inputId", "input_id", &r.handles.input_id, f);
                if (q == 0)
                        q = required_string(r.root, "name", "name", HULL_API_INPUT_NAME_MAX, &r.handles.name, f);
                if (q == 0)
                        q = plim_get_bytes(r.root, "content", "content", "", HULL_API_INPUT_BYTES_MAX,
                                           &r.handles.content, &r.handles.content_len, f);
                if (q == 0)
                        q = input_format(r.root, &r.handles.format, f);
                break;
        case HULL_API_NONE:
        case HULL_API_UNKNOWN:
        case HULL_API_EXEC:
        case HULL_API_READ:
        case HULL_API_WRITE:
        case HULL_API_EDIT:
        case HULL_API_GLOB:
        case HULL_API_GREP:
        case HULL_API_PERSIST:
        case HULL_API_HYDRATE:
        case HULL_API_SESSIONS_LIST:
        case _HULL_API_PROCEDURE_MAX:
        default:
                return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure" NOTHING_RAN);
        }
        return finish(q, &r, ret);
}

int hull_api_parse(hull_api_procedure p, const char *body, size_t len, hull_api_request *ret, plim_error *f) {
        switch (p) {
        case HULL_API_EXEC:
                return hull_api_exec_parse(body, len, ret, f);
        case HULL_API_READ:
                return hull_api_read_parse(body, len, ret, f);
        case HULL_API_WRITE:
                return hull_api_write_parse(body, len, ret, f);
        case HULL_API_EDIT:
                return hull_api_edit_parse(body, len, ret, f);
        case HULL_API_GLOB:
                return hull_api_glob_parse(body, len, ret, f);
        case HULL_API_GREP:
                return hull_api_grep_parse(body, len, ret, f);
        case HULL_API_PERSIST:
                return hull_api_persist_parse(body, len, ret, f);
        case HULL_API_HYDRATE:
                return hull_api_hydrate_parse(body, len, ret, f);
        case HULL_API_SESSIONS_LIST:
                return hull_api_list_parse(body, len, ret, f);
        case HULL_API_HANDLES_LIST:
        case HULL_API_HANDLES_INSPECT:
        case HULL_API_HANDLES_QUERY:
        case HULL_API_HANDLES_READ:
        case HULL_API_HANDLES_ADD_INPUT:
                return hull_api_handles_parse(p, body, len, ret, f);
        case HULL_API_NONE:
        case HULL_API_UNKNOWN:
        case _HULL_API_PROCEDURE_MAX:
                break;
        }
        return plim_fail(f, PLIM_CODE_UNIMPLEMENTED, PLIM_REASON_UNSUPPORTED, "no such procedure" NOTHING_RAN);
}

void hull_api_grep_opts(const hull_api_request *r, ws_grep_opts *ret) {
        *ret = (ws_grep_opts){
                .path = r->grep.path,
                .glob = r->grep.glob,
                .ignore_case = r->grep.ignore_case,
                .matches_max = r->grep.max_matches,
        };
}

/* ---- answers ---- */

static bool set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0;
}

/* A JSON string of raw bytes, repaired to UTF-8 where they are not. */
static json_t *json_utf8(const char *p, size_t n) {
        if (utf8_is_valid(p, n))
                return json_stringn(p, n);
        char *s;
        size_t len;
        if (utf8_make_valid(p, n, &s, &len) < 0)
                return NULL;
        json_t *v = json_stringn(s, len);
        free(s);
        return v;
}

/* Adds the record (when there is one) and dumps o. */
static int dump_with_record(json_t *o, const json_t *record, char **ret, size_t *ret_len) {
        if (o && record && !set(o, "record", json_deep_copy(record))) {
                json_decref(o);
                return -ENOMEM;
        }
        return plim_json_dump(o, ret, ret_len);
}

int hull_api_exec_answer(const ss_output *s, char **ret, size_t *ret_len) {
        json_t *o = json_object();
        if (!o || !set(o, "exitCode", json_integer(s->exit_code)) || !set(o, "timedOut", json_boolean(s->timed_out)) ||
            !set(o, "stdout", pj_new_bytes(s->out, s->out_len)) ||
            !set(o, "stderr", pj_new_bytes(s->err, s->err_len)) ||
            !set(o, "stdoutTruncated", json_boolean(s->out_truncated)) ||
            !set(o, "stderrTruncated", json_boolean(s->err_truncated)) ||
            !set(o, "durationMs", pj_new_uint64(s->wall_us / 1000))) {
                json_decref(o);
                return -ENOMEM;
        }
        return dump_with_record(o, s->record, ret, ret_len);
}

int hull_api_read_answer(const ws_read_result *r, char **ret, size_t *ret_len) {
        return plim_json_dump(json_pack("{s:o, s:o, s:b}", "content", pj_new_bytes(r->data, r->len), "size",
                                        pj_new_uint64(r->size), "eof", r->eof),
                              ret, ret_len);
}

int hull_api_write_answer(uint64_t bytes, const json_t *record, char **ret, size_t *ret_len) {
        return dump_with_record(json_pack("{s:o}", "bytes", pj_new_uint64(bytes)), record, ret, ret_len);
}

int hull_api_edit_answer(const json_t *record, char **ret, size_t *ret_len) {
        return dump_with_record(json_pack("{s:i}", "replaced", 1), record, ret, ret_len);
}

int hull_api_glob_answer(const ws_glob_result *r, char **ret, size_t *ret_len) {
        json_t *paths = json_array();
        for (size_t i = 0; paths && i < r->count; i++)
                if (json_array_append_new(paths, json_utf8(r->paths[i], strlen(r->paths[i]))) < 0) {
                        json_decref(paths);
                        return -ENOMEM;
                }
        return plim_json_dump(paths ? json_pack("{s:o, s:b}", "paths", paths, "truncated", r->stopped != 0) : NULL, ret,
                              ret_len);
}

int hull_api_grep_answer(const ws_grep_result *r, char **ret, size_t *ret_len) {
        json_t *matches = json_array();
        for (size_t i = 0; matches && i < r->count; i++) {
                const ws_grep_match *m = &r->matches[i];
                json_t *x = json_object();
                if (!x || !set(x, "path", json_utf8(m->path, strlen(m->path))) ||
                    !set(x, "line", json_integer((json_int_t) MIN(m->line, (uint64_t) UINT32_MAX))) ||
                    !set(x, "text", json_utf8(m->text, m->text_len)) || json_array_append_new(matches, x) < 0) {
                        json_decref(x);
                        json_decref(matches);
                        return -ENOMEM;
                }
        }
        unsigned budget = WS_STOP_ENTRIES | WS_STOP_TIME | WS_STOP_BYTES | WS_STOP_DEPTH | WS_STOP_MATCH_LIMIT;
        return plim_json_dump(matches ? json_pack("{s:o, s:b, s:b}", "matches", matches, "truncated",
                                                  (r->stopped & WS_STOP_RESULTS) != 0, "budgetExceeded",
                                                  (r->stopped & budget) != 0)
                                      : NULL,
                              ret, ret_len);
}

int hull_api_persist_answer(const void *archive, size_t len, char **ret, size_t *ret_len) {
        char hex[SHA256_HEX_SIZE];
        if (len > HULL_API_PERSIST_BYTES_MAX)
                return -E2BIG;
        int q = sha256_hex(archive, len, hex);
        if (q < 0)
                return q;
        return plim_json_dump(json_pack("{s:o, s:o, s:s}", "archive", pj_new_bytes(archive, len), "bytes",
                                        pj_new_uint64(len), "sha256", hex),
                              ret, ret_len);
}

int hull_api_hydrate_answer(const ws_tar_stats *s, const json_t *record, char **ret, size_t *ret_len) {
        return dump_with_record(
                json_pack("{s:o, s:o}", "files", pj_new_uint64(s->files), "bytes", pj_new_uint64(s->bytes)), record,
                ret, ret_len);
}

int hull_api_list_answer(const hull_api_session_info *s, size_t n, char **ret, size_t *ret_len) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < n; i++) {
                json_t *x = json_pack("{s:s, s:s, s:o, s:o, s:I, s:o, s:s}", "sessionId", s[i].session_id, "session",
                                      s[i].fingerprint, "openedUnixMs", pj_new_uint64(s[i].opened_unix_ms),
                                      "expiresUnixMs", pj_new_uint64(s[i].expires_unix_ms), "idleTimeoutMs",
                                      (json_int_t) s[i].idle_timeout_ms, "calls", pj_new_uint64(s[i].calls), "owner",
                                      s[i].owner ? s[i].owner : "");
                if (json_array_append_new(list, x) < 0) {
                        json_decref(list);
                        return -ENOMEM;
                }
        }
        return plim_json_dump(list ? json_pack("{s:o}", "sessions", list) : NULL, ret, ret_len);
}
