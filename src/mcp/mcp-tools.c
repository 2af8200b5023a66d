/* mcp-tools.c: see mcp-tools.h. */
#include "mcp-tools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "dynbuf.h"
#include "limits.h"
#include "macro.h"
#include "schema.h"

#define NAME_MAX_TOOL 64U

typedef enum mcp_tool_kind {
        MCP_KIND_TOOL,           /* tools/call */
        MCP_KIND_LIST_RESOURCES, /* resources/list, offered as SERVER__list_resources */
        MCP_KIND_READ_RESOURCE,  /* resources/read, offered as SERVER__read_resource */
} mcp_tool_kind;

typedef struct mcp_tool {
        mcp_client *client;
        mcp_tool_kind kind;
        char *tool; /* the server's name for it */
        char name[NAME_MAX_TOOL + 1];
        char *description;
        char *schema;
        char source[NAME_MAX_TOOL + MCP_SERVER_NAME_MAX + 8];
} mcp_tool;

struct mcp_toolset {
        mcp_tool *tools;
        tool_def *defs;
        size_t n;
};

static bool name_char(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
               ch == '-';
}

void mcp_tool_name(const char *server, const char *tool, char ret[NAME_MAX_TOOL + 1]) {
        char full[2 * NAME_MAX_TOOL + 8];
        size_t o = 0;
        uint32_t h = 2166136261U; /* FNV-1a of the whole name, to tell cut names apart */
        for (const char *p = server; *p; p++)
                h = (h ^ (unsigned char) *p) * 16777619U;
        h = (h ^ '/') * 16777619U;
        for (const char *p = tool; *p; p++)
                h = (h ^ (unsigned char) *p) * 16777619U;
        int k = snprintf(full, sizeof(full), "%s__%s", server, tool);
        size_t len = k < 0 ? 0 : MIN((size_t) k, sizeof(full) - 1);
        for (size_t i = 0; i < len; i++)
                full[i] = name_char(full[i]) ? full[i] : '_';
        if (len <= NAME_MAX_TOOL && (size_t) k < sizeof(full)) {
                memcpy(ret, full, len + 1);
                return;
        }
        o = NAME_MAX_TOOL - 9;
        memcpy(ret, full, o);
        snprintf(ret + o, NAME_MAX_TOOL + 1 - o, "_%08x", h);
}

/* The length of at most max bytes of s that does not end inside a UTF-8 character. */
static size_t utf8_cut(const char *s, size_t max) {
        size_t n = strlen(s);
        if (n <= max)
                return n;
        while (max > 0 && ((unsigned char) s[max] & 0xc0) == 0x80)
                max--;
        return max;
}

/* ---- results ---- */

static void add_line(dynbuf *b, const char *s, size_t n) {
        if (b->len > 0)
                (void) dynbuf_add(b, "\n", 1);
        (void) dynbuf_add(b, s, n);
}

int mcp_result_to_output(const json_t *result, const char *source, tool_output *ret) {
        _cleanup_dynbuf_ dynbuf text;
        tool_output out = {0};
        const json_t *content = json_object_get(result, "content"), *block;
        size_t i, binaries = 0;
        dynbuf_init(&text, (size_t) MCP_MESSAGE_MAX + 4096);

        json_array_foreach(content, i, block) {
                const char *type = json_string_value(json_object_get(block, "type"));
                const json_t *res = json_object_get(block, "resource");
                const char *data = NULL, *mime = NULL, *uri = NULL;
                char line[512];
                if (!type)
                        continue;
                if (strcmp(type, "text") == 0) {
                        const json_t *t = json_object_get(block, "text");
                        if (json_is_string(t))
                                add_line(&text, json_string_value(t), json_string_length(t));
                        continue;
                }
                if (strcmp(type, "resource_link") == 0) {
                        snprintf(line, sizeof(line), "[resource link: %.100s <%.300s>%s%.60s]",
                                 json_string_value(json_object_get(block, "name")) ?: "",
                                 json_string_value(json_object_get(block, "uri")) ?: "",
                                 json_object_get(block, "mimeType") ? " " : "",
                                 json_string_value(json_object_get(block, "mimeType")) ?: "");
                        add_line(&text, line, strlen(line));
                        continue;
                }
                if (strcmp(type, "resource") == 0 && json_is_string(json_object_get(res, "text"))) {
                        const json_t *t = json_object_get(res, "text");
                        snprintf(line, sizeof(line), "[resource <%.300s>]",
                                 json_string_value(json_object_get(res, "uri")) ?: "");
                        add_line(&text, line, strlen(line));
                        add_line(&text, json_string_value(t), json_string_length(t));
                        continue;
                }
                if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
                        data = json_string_value(json_object_get(block, "data"));
                        mime = json_string_value(json_object_get(block, "mimeType"));
                } else if (strcmp(type, "resource") == 0) {
                        data = json_string_value(json_object_get(res, "blob"));
                        mime = json_string_value(json_object_get(res, "mimeType"));
                        uri = json_string_value(json_object_get(res, "uri"));
                        type = "blob";
                } else {
                        snprintf(line, sizeof(line), "[a content block of type %.60s, not shown]", type);
                        add_line(&text, line, strlen(line));
                        continue;
                }
                void *bytes = NULL;
                size_t n = 0;
                if (!data || base64_decode(data, strlen(data), &bytes, &n) < 0) {
                        snprintf(line, sizeof(line), "[%s %.60s: its data is not base64]", type, mime ?: "");
                        add_line(&text, line, strlen(line));
                        continue;
                }
                if (binaries++ == 0) {
                        out.spill_data = bytes;
                        out.spill_len = n;
                        out.spill_format = "binary";
                        snprintf(line, sizeof(line), "[%s %.60s%s%.300s, %zu bytes: kept as the handle below]", type,
                                 mime ?: "", uri ? " " : "", uri ?: "", n);
                } else {
                        free(bytes);
                        snprintf(line, sizeof(line),
                                 "[%s %.60s%s%.300s, %zu bytes: not kept (only the first binary block of a result "
                                 "is)]",
                                 type, mime ?: "", uri ? " " : "", uri ?: "", n);
                }
                add_line(&text, line, strlen(line));
        }
        out.is_error = json_is_true(json_object_get(result, "isError"));
        const json_t *sc = json_object_get(result, "structuredContent");
        if (sc && !json_is_null(sc) && !out.spill_data) {
                /* the value when the text says nothing more than its JSON */
                json_t *parsed = text.len ? json_loadb(text.buf, text.len, JSON_DECODE_ANY, NULL) : NULL;
                bool same = !text.len || (parsed && json_equal(parsed, sc));
                json_decref(parsed);
                if (same) {
                        out.value = json_deep_copy(sc);
                        if (!out.value)
                                return -ENOMEM;
                        /* the text is the value's JSON already: a big one is kept from it */
                        if (text.len)
                                out.value_json = dynbuf_take(&text, &out.value_json_len);
                        *ret = out;
                        return 0;
                }
        }
        if (out.spill_data) {
                out.spill_source = strdup(source);
                out.value = json_pack("{s:s%}", "text", text.buf ? text.buf : "", text.len);
                if (!out.spill_source || !out.value) {
                        tool_output_done(&out);
                        return -ENOMEM;
                }
                *ret = out;
                return 0;
        }
        out.text = text.len ? dynbuf_take(&text, NULL)
                            : strdup(out.is_error ? "(the tool failed and said nothing)" : "(no output)");
        if (!out.text)
                return -ENOMEM;
        *ret = out;
        return 0;
}

/* ---- calls ---- */

typedef struct progress_ctx {
        const tool_ctx *c;
        const mcp_tool *t;
} progress_ctx;

static void on_progress(void *ud, double progress, double total, const char *message) {
        progress_ctx *p = ud;
        char note[256];
        if (!p->c->progress)
                return;
        if (total > 0)
                snprintf(note, sizeof(note), "mcp:%s: %g/%g%s%.180s", mcp_client_name(p->t->client), progress, total,
                         message ? " " : "", message ?: "");
        else
                snprintf(note, sizeof(note), "mcp:%s: %g%s%.180s", mcp_client_name(p->t->client), progress,
                         message ? " " : "", message ?: "");
        p->c->progress(p->c->progress_ud, note);
}

/* resources/list or resources/read for the model: the list as a value (a handle when big); the
 * contents read as a CallToolResult's embedded resources (text, or a blob kept as a handle). */
static int run_resources(const mcp_tool *t, const json_t *input, const mcp_call_opts *o, json_t **ret, hull_error *e) {
        bool list = t->kind == MCP_KIND_LIST_RESOURCES;
        const char *arg = json_string_value(json_object_get(input, list ? "cursor" : "uri"));
        json_t *params = arg ? json_pack("{s:s}", list ? "cursor" : "uri", arg) : NULL;
        if (arg && !params)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        _cleanup_(json_decrefp) json_t *res = NULL;
        int r = mcp_client_request(t->client, list ? "resources/list" : "resources/read", params, o, &res, e);
        if (r < 0)
                return r;
        json_t *content = json_array();
        if (!content)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        if (list) {
                /* structuredContent alone: the model gets the value (a handle when big) */
                json_t *found = json_object_get(res, "resources");
                const char *next = json_string_value(json_object_get(res, "nextCursor"));
                json_t *arr = json_is_array(found) ? json_incref(found) : json_array();
                *ret = json_pack("{s:o, s:{s:o, s:s*}}", "content", content, "structuredContent", "resources", arr,
                                 "nextCursor", next);
        } else {
                size_t i;
                json_t *c;
                json_array_foreach(json_object_get(res, "contents"), i, c)
                        json_array_append_new(content, json_pack("{s:s, s:O}", "type", "resource", "resource", c));
                *ret = json_pack("{s:o}", "content", content);
        }
        return *ret ? 0 : hull_err(e, -ENOMEM, "mcp: out of memory");
}

static int run_mcp(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        const mcp_tool *t = c->env;
        progress_ctx p = {.c = c, .t = t};
        mcp_call_opts o = {.deadline_mono_ms = c->deadline_mono_ms,
                           .cancel_fd = c->cancel_fd,
                           .progress = on_progress,
                           .progress_ud = &p};
        _cleanup_(json_decrefp) json_t *res = NULL;
        int r = t->kind == MCP_KIND_TOOL ? mcp_client_call_tool(t->client, t->tool, input, &o, &res, e)
                                         : run_resources(t, input, &o, &res, e);
        if (r == -EREMOTEIO) {
                /* the server refused the call: the model reads why and may adapt */
                *ret = (tool_output){.text = strdup(e ? e->msg : "the MCP server refused the call"), .is_error = true};
                return ret->text ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        r = mcp_result_to_output(res, t->source, ret);
        return r < 0 ? hull_err(e, r, "mcp: %s: out of memory", mcp_client_name(t->client)) : 0;
}

/* ---- the set ---- */

static void tool_done(mcp_tool *t) {
        free(t->tool);
        free(t->description);
        free(t->schema);
}

void mcp_toolset_free(mcp_toolset *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                tool_done(&s->tools[i]);
        free(s->tools);
        free(s->defs);
        free(s);
}

size_t mcp_toolset_count(const mcp_toolset *s) {
        return s ? s->n : 0;
}

const tool_def *mcp_toolset_def(const mcp_toolset *s, size_t i) {
        return &s->defs[i];
}

/* The description and schema the model gets for one server tool. */
static int describe(mcp_tool *t, const json_t *tool, hull_error *e) {
        const char *server = mcp_client_name(t->client);
        const char *desc = json_string_value(json_object_get(tool, "description"));
        const char *title = json_string_value(json_object_get(tool, "title"));
        _cleanup_(json_decrefp) json_t *schema = json_deep_copy(json_object_get(tool, "inputSchema"));
        _cleanup_dynbuf_ dynbuf d;
        hull_error se = {0};
        if (!schema)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        json_object_del(schema, "$schema");
        _cleanup_free_ char *dumped = json_dumps(schema, JSON_COMPACT);
        if (!dumped)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        bool understood = strlen(dumped) <= MCP_SCHEMA_MAX && schema_check(schema, &se) == 0 &&
                          json_is_string(json_object_get(schema, "type")) &&
                          strcmp(json_string_value(json_object_get(schema, "type")), "object") == 0;
        dynbuf_init(&d, MCP_TOOL_DESCRIPTION_MAX + MCP_SCHEMA_MAX + 256);
        (void) dynbuf_addf(&d, "[MCP server %s] ", server);
        if (title && (!desc || !strstr(desc, title)))
                (void) dynbuf_addf(&d, "%.*s: ", (int) utf8_cut(title, 200), title);
        if (desc)
                (void) dynbuf_add(&d, desc, utf8_cut(desc, MCP_TOOL_DESCRIPTION_MAX));
        if (!understood && strlen(dumped) <= MCP_SCHEMA_MAX)
                (void) dynbuf_addf(&d, "\nIts input, as the server's JSON Schema: %s", dumped);
        t->description = dynbuf_take(&d, NULL);
        t->schema = understood ? TAKE_PTR(dumped) : strdup("{\"type\":\"object\"}");
        if (!t->description || !t->schema)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        return 0;
}

static tool_def def_of(const mcp_tool *t) {
        return (tool_def){
                .name = t->name,
                .description = t->description,
                .input_schema = t->schema,
                .default_policy = TOOL_ALWAYS_ALLOW,
                .mcp_server = mcp_client_name(t->client),
                .mcp_tool = t->tool,
                .run = run_mcp,
                .env = t,
        };
}

/* SERVER__list_resources or SERVER__read_resource, unless the server has a tool of that name. */
static int add_resource_tool(mcp_toolset *s, mcp_client *c, mcp_tool_kind kind, hull_error *e) {
        bool list = kind == MCP_KIND_LIST_RESOURCES;
        const char *name = list ? "list_resources" : "read_resource";
        const char *server = mcp_client_name(c);
        char full[NAME_MAX_TOOL + 1];
        mcp_tool_name(server, name, full);
        for (size_t j = 0; j < s->n; j++)
                if (strcmp(s->tools[j].name, full) == 0)
                        return 0;
        if (s->n >= AGENT_TOOLS_MAX)
                return hull_fail(e, -E2BIG, "mcp: the servers offer more than %u tools", AGENT_TOOLS_MAX);
        mcp_tool *t = &s->tools[s->n];
        *t = (mcp_tool){.client = c, .kind = kind};
        snprintf(t->name, sizeof(t->name), "%s", full);
        snprintf(t->source, sizeof(t->source), "mcp:%s/%s", server, list ? "resources/list" : "resources/read");
        t->tool = strdup(name);
        s->n++;
        _cleanup_dynbuf_ dynbuf d;
        dynbuf_init(&d, MCP_TOOL_DESCRIPTION_MAX);
        int r;
        if (list) {
                r = dynbuf_addf(&d,
                                "List the resources of the MCP server %s (resources/list): their "
                                "uri, name, description and mimeType; nextCursor, when there are "
                                "more, goes back as cursor. Read one with %s__read_resource.",
                                server, server);
                t->schema = strdup("{\"type\":\"object\",\"properties\":{\"cursor\":{\"type\":\"string\"}},"
                                   "\"additionalProperties\":false}");
        } else {
                r = dynbuf_addf(&d,
                                "Read a resource of the MCP server %s by its uri (resources/read; "
                                "%s__list_resources lists them). Binary contents are kept as a handle.",
                                server, server);
                t->schema = strdup("{\"type\":\"object\",\"properties\":{\"uri\":{\"type\":\"string\"}},"
                                   "\"required\":[\"uri\"],\"additionalProperties\":false}");
        }
        t->description = r < 0 ? NULL : dynbuf_take(&d, NULL);
        if (!t->tool || !t->description || !t->schema)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        s->defs[s->n - 1] = def_of(t);
        return 0;
}

int mcp_toolset_new(mcp_client *const *clients, size_t n, const atomic_bool *cancel, mcp_toolset **ret, hull_error *e) {
        _cleanup_(mcp_toolset_freep) mcp_toolset *s = calloc(1, sizeof(*s));
        if (!s)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        s->tools = calloc(AGENT_TOOLS_MAX, sizeof(*s->tools));
        s->defs = calloc(AGENT_TOOLS_MAX, sizeof(*s->defs));
        if (!s->tools || !s->defs)
                return hull_err(e, -ENOMEM, "mcp: out of memory");
        for (size_t k = 0; k < n; k++) {
                _cleanup_(json_decrefp) json_t *list = NULL;
                mcp_call_opts o = {.cancel_fd = -1, .cancel = cancel};
                int r = mcp_client_list_tools(clients[k], &o, &list, e);
                if (r < 0)
                        return r;
                size_t i;
                json_t *tool;
                json_array_foreach(list, i, tool) {
                        const char *name = json_string_value(json_object_get(tool, "name"));
                        if (s->n >= AGENT_TOOLS_MAX)
                                return hull_fail(e, -E2BIG, "mcp: the servers offer more than %u tools",
                                                 AGENT_TOOLS_MAX);
                        mcp_tool *t = &s->tools[s->n];
                        t->client = clients[k];
                        mcp_tool_name(mcp_client_name(clients[k]), name, t->name);
                        for (size_t j = 0; j < s->n; j++)
                                if (strcmp(s->tools[j].name, t->name) == 0)
                                        return hull_fail(e, -EINVAL,
                                                         "mcp: %s: two tools are named %s once made safe (%.64s and "
                                                         "%.64s)",
                                                         mcp_client_name(clients[k]), t->name, s->tools[j].tool, name);
                        snprintf(t->source, sizeof(t->source), "mcp:%s/%.*s", mcp_client_name(clients[k]),
                                 (int) utf8_cut(name, 64), name);
                        t->tool = strdup(name);
                        s->n++;
                        if (!t->tool)
                                return hull_err(e, -ENOMEM, "mcp: out of memory");
                        r = describe(t, tool, e);
                        if (r < 0)
                                return r;
                        s->defs[s->n - 1] = def_of(t);
                }
                if (json_is_object(json_object_get(mcp_client_capabilities(clients[k]), "resources"))) {
                        int r2 = add_resource_tool(s, clients[k], MCP_KIND_LIST_RESOURCES, e);
                        if (r2 >= 0)
                                r2 = add_resource_tool(s, clients[k], MCP_KIND_READ_RESOURCE, e);
                        if (r2 < 0)
                                return r2;
                }
        }
        *ret = TAKE_PTR(s);
        return 0;
}
