/* test-v1-shape.c: the /v1 shapes of cma-api.md §2-5: every object built from its create body
 * with its defaults, round trips (what the API answers, sent back, changes nothing), update
 * semantics (version conflict, per-key metadata, clearing, no change), client events, and each
 * kind of bad input answered with the right status, type, code and a message naming the field. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "test.h"
#include "v1-shape.h"

#define NOW "2026-12-01T00:00:00Z"
#define LATER "2026-12-01T01:00:00Z"

static json_t *J(const char *s) {
        json_error_t err;
        json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &err);
        if (!j) {
                fprintf(stderr, "bad test JSON: %s: %s\n", err.text, s);
                abort();
        }
        return j;
}

/* o at a path of keys and indexes: "tools.0.configs.4.name". */
static json_t *at(json_t *o, const char *path) {
        char buf[256], *save = NULL;
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
                o = json_is_array(o) ? json_array_get(o, strtoul(t, NULL, 10)) : json_object_get(o, t);
        return o;
}

static const char *str_at(json_t *o, const char *path) {
        return json_string_value(at(o, path));
}

static bool same(json_t *a, const char *want) {
        json_auto_t *w = J(want);
        bool ok = json_equal(a, w);
        if (!ok) {
                char *s = json_dumps(a, JSON_COMPACT);
                printf("# got  %s\n# want %s\n", s ? s : "(null)", want);
                free(s);
        }
        return ok;
}

static void test_fail(void) {
        v1_err e;
        CHECK_EQ_INT(v1_fail(&e, 400, NULL, "x: %d", 1), -EINVAL);
        CHECK_EQ_STR(e.type, "invalid_request_error");
        CHECK_EQ_STR(e.code, "");
        CHECK_EQ_STR(e.msg, "x: 1");
        CHECK_EQ_INT(v1_fail(&e, 404, "session_not_found", "no"), -ENOENT);
        CHECK_EQ_STR(e.type, "not_found_error");
        CHECK_EQ_STR(e.code, "session_not_found");
        CHECK_EQ_INT(v1_fail(&e, 409, "version_conflict", "v"), -ESTALE);
        CHECK_EQ_STR(e.type, "conflict_error");
        CHECK_EQ_INT(v1_fail(&e, 409, "session_running", "r"), -EBUSY);
        v1_fail(&e, 401, NULL, "a");
        CHECK_EQ_STR(e.type, "authentication_error");
        v1_fail(&e, 403, NULL, "a");
        CHECK_EQ_STR(e.type, "permission_error");
        v1_fail(&e, 413, NULL, "a");
        CHECK_EQ_STR(e.type, "request_too_large");
        v1_fail(&e, 429, NULL, "a");
        CHECK_EQ_STR(e.type, "rate_limit_error");
        CHECK_EQ_INT(v1_fail(&e, 500, NULL, "a"), -EIO);
        CHECK_EQ_STR(e.type, "api_error");
        CHECK_EQ_INT(e.status, 500);
}

static const char *const AGENT_QS =
        "{\"name\":\"qs\",\"model\":\"claude-sonnet-4-6\",\"system\":\"be brief\","
        "\"tools\":[{\"type\":\"agent_toolset_20260401\",\"default_config\":{\"enabled\":false},"
        "\"configs\":[{\"name\":\"glob\",\"enabled\":true,\"permission_policy\":{\"type\":\"always_allow\"}}]}]}";

static void test_agent_create(void) {
        v1_err e;
        json_auto_t *body = J(AGENT_QS);
        json_t *a = NULL;
        CHECK_EQ_INT(v1_agent_create(body, "agent_1", NOW, &a, &e), 0);
        CHECK(same(at(a, "model"), "{\"id\":\"claude-sonnet-4-6\",\"speed\":\"standard\"}"));
        CHECK_EQ_STR(str_at(a, "id"), "agent_1");
        CHECK_EQ_STR(str_at(a, "type"), "agent");
        CHECK(json_is_null(at(a, "description")));
        CHECK(json_is_null(at(a, "multiagent")) && json_is_null(at(a, "archived_at")));
        CHECK(same(at(a, "execution_identity"), "{\"type\":\"service_account\"}"));
        CHECK(same(at(a, "mcp_servers"), "[]") && same(at(a, "skills"), "[]") && same(at(a, "metadata"), "{}"));
        CHECK_EQ_INT(json_integer_value(at(a, "version")), 1);
        CHECK_EQ_STR(str_at(a, "created_at"), NOW);
        CHECK_EQ_STR(str_at(a, "updated_at"), NOW);
        CHECK(same(at(a, "tools.0.default_config"),
                   "{\"enabled\":false,\"permission_policy\":{\"type\":\"always_allow\"}}"));
        CHECK_EQ_INT(json_array_size(at(a, "tools.0.configs")), 8);
        CHECK(same(at(a, "tools.0.configs.4"), "{\"type\":\"glob\",\"name\":\"glob\",\"enabled\":true,"
                                               "\"permission_policy\":{\"type\":\"always_allow\"}}"));
        CHECK(same(at(a, "tools.0.configs.0"), "{\"type\":\"bash\",\"name\":\"bash\",\"enabled\":false,"
                                               "\"permission_policy\":{\"type\":\"always_allow\"}}"));
        CHECK_EQ_INT(json_object_size(a), 16);

        /* What the API answered, sent back as an update, changes nothing. */
        json_t *next = (json_t *) 1;
        json_auto_t *back =
                json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "name", at(a, "name"), "model",
                          at(a, "model"), "system", at(a, "system"), "description", at(a, "description"), "tools",
                          at(a, "tools"), "mcp_servers", at(a, "mcp_servers"), "skills", at(a, "skills"), "metadata",
                          at(a, "metadata"), "multiagent", at(a, "multiagent"), "execution_identity",
                          at(a, "execution_identity"), "version", at(a, "version"));
        CHECK_EQ_INT(v1_agent_update(a, back, LATER, &next, &e), 0);
        CHECK(next == NULL);
        json_decref(a);

        /* Every part of the documented shape. */
        json_auto_t *full =
                J("{\"name\":\"full\",\"description\":\"d\",\"model\":{\"id\":\"m\",\"effort\":\"high\",\"speed\":"
                  "\"fast\",\"inference_geo\":\"us\"},"
                  "\"tools\":[{\"type\":\"custom\",\"name\":\"get_weather\",\"description\":\"w\",\"input_schema\":"
                  "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
                  "{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"gh\",\"configs\":[{\"name\":\"search\"},{\"name\":"
                  "\"push\",\"permission_policy\":{\"type\":\"auto\"},\"enabled\":false}]},"
                  "{\"type\":\"hull_toolset_20261201\",\"configs\":[{\"name\":\"run_python\",\"permission_policy\":{"
                  "\"type\":\"always_ask\"}}]}],"
                  "\"mcp_servers\":[{\"type\":\"url\",\"name\":\"gh\",\"url\":\"https://mcp.example/gh\"}],"
                  "\"skills\":[{\"type\":\"anthropic\",\"skill_id\":\"xlsx\",\"version\":\"latest\"},{\"type\":"
                  "\"custom\",\"skill_id\":\"skill_1\"}],"
                  "\"metadata\":{\"team\":\"a\",\"gone\":\"\"},\"multiagent\":null,"
                  "\"execution_identity\":{\"type\":\"aws_role\",\"role_arn\":\"arn:aws:iam::1:role/x\"}}");
        CHECK_EQ_INT(v1_agent_create(full, "agent_2", NOW, &a, &e), 0);
        CHECK(same(at(a, "model"), "{\"id\":\"m\",\"effort\":{\"type\":\"high\"},\"speed\":\"fast\","
                                   "\"inference_geo\":\"us\"}"));
        CHECK_EQ_STR(str_at(a, "tools.0.input_schema.properties.city.type"), "string");
        CHECK(same(at(a, "tools.1"),
                   "{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"gh\",\"default_config\":{\"enabled\":true,"
                   "\"permission_policy\":{\"type\":\"always_ask\"}},\"configs\":[{\"type\":\"search\",\"name\":"
                   "\"search\",\"enabled\":true,\"permission_policy\":{\"type\":\"always_ask\"}},{\"type\":\"push\","
                   "\"name\":\"push\",\"enabled\":false,\"permission_policy\":{\"type\":\"auto\"}}]}"));
        CHECK_EQ_INT(json_array_size(at(a, "tools.2.configs")), 6);
        CHECK(same(at(a, "tools.2.configs.0.permission_policy"), "{\"type\":\"always_ask\"}"));
        CHECK(same(at(a, "tools.2.configs.1.permission_policy"), "{\"type\":\"always_allow\"}"));
        CHECK_EQ_STR(str_at(a, "tools.2.configs.4.name"), "publish_file");
        CHECK_EQ_STR(str_at(a, "tools.2.configs.5.name"), "read_document");
        CHECK_EQ_STR(str_at(a, "skills.0.version"), "latest");
        CHECK(at(a, "skills.1.version") == NULL);
        CHECK_EQ_STR(str_at(a, "execution_identity.role_arn"), "arn:aws:iam::1:role/x");
        CHECK_EQ_STR(str_at(a, "metadata.team"), "a");
        CHECK_EQ_INT(json_object_size(at(a, "metadata")), 1); /* "" is no value */
        /* The same round trip with mcp tools, custom tools and skills. */
        json_auto_t *back2 = json_pack("{s:O, s:O, s:O, s:O}", "tools", at(a, "tools"), "mcp_servers",
                                       at(a, "mcp_servers"), "skills", at(a, "skills"), "model", at(a, "model"));
        next = (json_t *) 1;
        CHECK_EQ_INT(v1_agent_update(a, back2, LATER, &next, &e), 0);
        CHECK(next == NULL);
        json_decref(a);

        json_auto_t *multi = J("{\"name\":\"m\",\"model\":\"x\",\"multiagent\":{\"type\":\"coordinator\","
                               "\"agents\":[]}}");
        a = NULL; /* a roster would be echoed and never run: refused by name */
        CHECK(v1_agent_create(multi, "agent_3", NOW, &a, &e) < 0 && a == NULL);
        CHECK(e.status == 400 && strcmp(e.code, "unsupported_capability") == 0 &&
              strstr(e.msg, "multiagent: a multiagent roster (coordinator) is not supported"));
}

struct bad {
        const char *body;
        unsigned status;
        const char *code;
        const char *in_msg; /* the field's path, and what was wrong */
};

static void check_bad(const char *what, int (*fn)(const json_t *, json_t **, v1_err *), const struct bad *b, size_t n) {
        for (size_t i = 0; i < n; i++) {
                json_auto_t *body = J(b[i].body);
                json_t *out = NULL;
                v1_err e = {0};
                int r = fn(body, &out, &e);
                TEST_RESULT(r < 0 && out == NULL && e.status == b[i].status && strcmp(e.code, b[i].code) == 0 &&
                                    strstr(e.msg, b[i].in_msg) && strcmp(e.type, "invalid_request_error") == 0,
                            "%s %zu refused: %d %u %s [%s] %s", what, i, r, e.status, e.type, e.code, e.msg);
                json_decref(out);
        }
}

static int agent_create(const json_t *body, json_t **ret, v1_err *e) {
        return v1_agent_create(body, "agent_x", NOW, ret, e);
}

static void test_agent_bad(void) {
        static const struct bad bad[] = {
                {"[]", 400, "", "body: must be an object"},
                {"{\"model\":\"m\"}", 400, "", "name: required"},
                {"{\"name\":\"a\"}", 400, "", "model: required"},
                {"{\"name\":\"a\",\"model\":\"m\",\"colour\":1}", 400, "", "colour: unknown field"},
                {"{\"name\":\"\",\"model\":\"m\"}", 400, "", "name: a name of 1 to"},
                {"{\"name\":7,\"model\":\"m\"}", 400, "", "name: must be a string"},
                {"{\"name\":\"a\",\"model\":\"\"}", 400, "", "model: a model id"},
                {"{\"name\":\"a\",\"model\":{\"id\":\"m\",\"speed\":\"warp\"}}", 400, "", "model.speed: unknown value"},
                {"{\"name\":\"a\",\"model\":{\"id\":\"m\",\"effort\":\"huge\"}}", 400, "", "model.effort: unknown"},
                {"{\"name\":\"a\",\"model\":{\"effort\":\"low\"}}", 400, "", "model.id: required"},
                {"{\"name\":\"a\",\"model\":\"m\",\"system\":5}", 400, "", "system: must be a string or null"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":{}}", 400, "", "tools: must be an array"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"hull_toolset_20261201\"},{\"type\":"
                 "\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bask\"}]}]}",
                 400, "", "tools[1].configs[0].name: unknown tool 'bask' (one of bash, edit"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"agent_toolset_20260401\"},{\"type\":"
                 "\"agent_toolset_20260401\"}]}",
                 400, "", "tools[1].type: a second agent_toolset_20260401"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"toolbox\"}]}", 400, "",
                 "tools[0].type: unknown value 'toolbox'"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"hull_toolset_20261201\",\"configs\":[{"
                 "\"name\":\"bash\"}]}]}",
                 400, "", "tools[0].configs[0].name: unknown tool 'bash' (one of run_python"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{"
                 "\"name\":\"bash\"},{\"name\":\"bash\"}]}]}",
                 400, "", "tools[0].configs[1].name: tool 'bash' configured twice"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{"
                 "\"name\":\"bash\",\"permission_policy\":{\"type\":\"sometimes\"}}]}]}",
                 400, "", "tools[0].configs[0].permission_policy.type: unknown value 'sometimes'"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"agent_toolset_20260401\",\"default_config\":{"
                 "\"enabled\":\"yes\"}}]}",
                 400, "", "tools[0].default_config.enabled: must be a boolean"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{"
                 "\"name\":\"bash\",\"type\":\"edit\"}]}]}",
                 400, "", "tools[0].configs[0].type: must equal the name"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"bad name\","
                 "\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}}]}",
                 400, "", "tools[0].name: 'bad name' is not a tool name"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"bash\","
                 "\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}},{\"type\":\"agent_toolset_20260401\"}]"
                 "}",
                 400, "", "tools[0].name: a tool named 'bash' already exists"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\","
                 "\"input_schema\":{\"type\":\"object\"}},{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\","
                 "\"input_schema\":{\"type\":\"object\"}}]}",
                 400, "", "tools[1].name: a tool named 't' already exists"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\","
                 "\"input_schema\":{\"type\":\"array\"}}]}",
                 400, "", "tools[0].input_schema.type: must be \"object\""},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"input_schema\":{"
                 "\"type\":\"object\"}}]}",
                 400, "", "tools[0].description: required"},
                {"{\"name\":\"a\",\"model\":\"m\",\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"gh\"}]}",
                 400, "", "tools[0].mcp_server_name: no server named 'gh' in mcp_servers"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"gh\",\"url\":"
                 "\"https://x\"}]}",
                 400, "", "mcp_servers[0]: server 'gh' is not used by any tool"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"gh\",\"url\":"
                 "\"ftp://x\"}]}",
                 400, "", "mcp_servers[0].url: must be an http:// or https:// URL"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"git hub\",\"url\":"
                 "\"https://x\"}]}",
                 400, "", "mcp_servers[0].name: 'git hub' is not a server name"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"gh\",\"url\":"
                 "\"https://x\"},{\"type\":\"url\",\"name\":\"g.h\",\"url\":\"https://y\"}]}",
                 400, "", "mcp_servers[1].name: 'g.h' is not a server name"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":"
                 "\"a23456789012345678901234567890123\",\"url\":\"https://x\"}]}",
                 400, "", "mcp_servers[0].name: 'a23456789012345678901234567890123' is not a server name"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"gh\",\"url\":"
                 "\"https://x\"},{\"type\":\"url\",\"name\":\"gh\",\"url\":\"https://y\"}]}",
                 400, "", "mcp_servers[1].name: a second server named 'gh'"},
                {"{\"name\":\"a\",\"model\":\"m\",\"mcp_servers\":[{\"type\":\"stdio\",\"name\":\"gh\",\"url\":"
                 "\"https://x\"}]}",
                 400, "", "mcp_servers[0].type: unknown value 'stdio' (one of url)"},
                {"{\"name\":\"a\",\"model\":\"m\",\"skills\":[{\"type\":\"anthropic\"}]}", 400, "",
                 "skills[0].skill_id: required"},
                {"{\"name\":\"a\",\"model\":\"m\",\"metadata\":{\"k\":1}}", 400, "", "metadata.k: must be a string"},
                {"{\"name\":\"a\",\"model\":\"m\",\"execution_identity\":{\"type\":\"aws_role\"}}", 400, "",
                 "execution_identity.role_arn: required"},
                {"{\"name\":\"a\",\"model\":\"m\",\"execution_identity\":{\"type\":\"service_account\",\"role_arn\":"
                 "\"x\"}}",
                 400, "", "execution_identity.role_arn: only with"},
                {"{\"name\":\"a\",\"model\":\"m\",\"multiagent\":{\"type\":\"swarm\"}}", 400, "",
                 "multiagent.type: unknown value"},
        };
        check_bad("agent", agent_create, bad, ELEMENTSOF(bad));
}

/* Bounds: metadata keys, key and value lengths, names, tools, servers. */
static void test_agent_bounds(void) {
        v1_err e;
        json_t *a = NULL;
        json_auto_t *b = J("{\"name\":\"a\",\"model\":\"m\",\"metadata\":{}}");
        for (unsigned i = 0; i <= V1_METADATA_KEYS_MAX; i++) {
                char k[16];
                snprintf(k, sizeof(k), "k%u", i);
                json_object_set_new(json_object_get(b, "metadata"), k, json_string("v"));
        }
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "metadata: 17 keys, at most 16"));
        char big[V1_METADATA_VALUE_MAX + 2];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        json_object_set_new(b, "metadata", json_pack("{s:s}", "k", big));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "metadata.k: too long"));
        big[V1_METADATA_KEY_MAX + 1] = '\0';
        json_object_set_new(b, "metadata", json_pack("{s:s}", big, "v"));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "a key must have 1 to 64 bytes"));
        json_object_del(b, "metadata");
        big[V1_METADATA_KEY_MAX] = '\0';
        json_object_set_new(b, "metadata", json_pack("{s:s}", big, "v"));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == 0);
        json_decref(a);
        json_object_del(b, "metadata");

        char name[V1_NAME_MAX + 2];
        memset(name, 'n', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        json_object_set_new(b, "name", json_string(name));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "name:"));
        name[V1_NAME_MAX] = '\0';
        json_object_set_new(b, "name", json_string(name));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == 0);
        json_decref(a);

        json_t *tools = json_array();
        json_object_set_new(b, "tools", tools);
        for (unsigned i = 0; i < V1_TOOLS_MAX; i++) {
                char n[16];
                snprintf(n, sizeof(n), "t%u", i);
                json_array_append_new(tools, json_pack("{s:s, s:s, s:s, s:{s:s}}", "type", "custom", "name", n,
                                                       "description", "d", "input_schema", "type", "object"));
        }
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == 0);
        json_decref(a);
        json_array_append_new(tools, json_pack("{s:s}", "type", "agent_toolset_20260401"));
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "tools: "));
        json_object_del(b, "tools");

        json_t *srv = json_array(), *ts = json_array();
        json_object_set_new(b, "mcp_servers", srv);
        json_object_set_new(b, "tools", ts);
        for (unsigned i = 0; i <= V1_MCP_SERVERS_MAX; i++) {
                char n[16];
                snprintf(n, sizeof(n), "s%u", i);
                json_array_append_new(srv, json_pack("{s:s, s:s, s:s}", "type", "url", "name", n, "url", "http://x"));
                json_array_append_new(ts, json_pack("{s:s, s:s}", "type", "mcp_toolset", "mcp_server_name", n));
        }
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == -EINVAL && strstr(e.msg, "mcp_servers: 21 servers, at most 20"));
        json_array_remove(srv, 0);
        json_array_remove(ts, 0);
        CHECK(v1_agent_create(b, "a", NOW, &a, &e) == 0);
        CHECK_EQ_STR(str_at(a, "tools.0.default_config.permission_policy.type"), "always_ask");
        json_decref(a);
}

static void test_agent_update(void) {
        v1_err e;
        json_auto_t *body = J(AGENT_QS);
        json_auto_t *a = NULL;
        json_t *next = NULL;
        CHECK_EQ_INT(v1_agent_create(body, "agent_1", NOW, &a, &e), 0);
        json_object_set_new(a, "metadata", J("{\"a\":\"1\",\"b\":\"2\"}"));

        json_auto_t *u1 = J("{\"description\":\"new\",\"version\":1,\"metadata\":{\"a\":null,\"c\":\"3\",\"b\":\"\"}}");
        CHECK_EQ_INT(v1_agent_update(a, u1, LATER, &next, &e), 0);
        CHECK_EQ_INT(json_integer_value(at(next, "version")), 2);
        CHECK_EQ_STR(str_at(next, "description"), "new");
        CHECK_EQ_STR(str_at(next, "updated_at"), LATER);
        CHECK_EQ_STR(str_at(next, "created_at"), NOW);
        CHECK(same(at(next, "metadata"), "{\"c\":\"3\"}"));
        CHECK(json_equal(at(next, "tools"), at(a, "tools")));
        CHECK_EQ_STR(str_at(next, "system"), "be brief");

        /* The same update on version 2 with version 1: a conflict. */
        json_t *n2 = NULL;
        CHECK_EQ_INT(v1_agent_update(next, u1, LATER, &n2, &e), -ESTALE);
        CHECK(n2 == NULL && e.status == 409 && strcmp(e.code, "version_conflict") == 0 &&
              strcmp(e.type, "conflict_error") == 0 && strstr(e.msg, "version"));
        /* Without version, the same body again changes nothing. */
        json_object_del(u1, "version");
        n2 = (json_t *) 1;
        CHECK_EQ_INT(v1_agent_update(next, u1, LATER, &n2, &e), 0);
        CHECK(n2 == NULL);

        /* Clearing: system by "" and description by null; tools, skills by null and []. */
        json_auto_t *u2 = J("{\"system\":\"\",\"description\":null,\"tools\":null,\"skills\":[]}");
        CHECK_EQ_INT(v1_agent_update(next, u2, LATER, &n2, &e), 0);
        CHECK(json_is_null(at(n2, "system")) && json_is_null(at(n2, "description")));
        CHECK(same(at(n2, "tools"), "[]"));
        CHECK_EQ_INT(json_integer_value(at(n2, "version")), 3);
        json_decref(n2);

        /* tools replaced whole; model as a string becomes the object. */
        json_auto_t *u3 = J("{\"tools\":[{\"type\":\"hull_toolset_20261201\"}],\"model\":\"other\"}");
        CHECK_EQ_INT(v1_agent_update(next, u3, LATER, &n2, &e), 0);
        CHECK_EQ_INT(json_array_size(at(n2, "tools")), 1);
        CHECK_EQ_STR(str_at(n2, "tools.0.type"), "hull_toolset_20261201");
        CHECK(same(at(n2, "model"), "{\"id\":\"other\",\"speed\":\"standard\"}"));
        json_decref(n2);

        static const char *const bad[][2] = {
                {"{\"name\":null}", "name: cannot be cleared"},
                {"{\"mcp_servers\":[{\"type\":\"url\",\"name\":\"s/1\",\"url\":\"https://s\"}],\"tools\":[{\"type\":"
                 "\"mcp_toolset\",\"mcp_server_name\":\"s/1\"}]}",
                 "mcp_servers[0].name: 's/1' is not a server name"},
                {"{\"model\":null}", "model: cannot be cleared"},
                {"{\"version\":\"1\"}", "version: must be an integer"},
                {"{\"id\":\"agent_2\"}", "id: unknown field"},
                {"{\"metadata\":{\"x\":5}}", "metadata.x: must be a string"},
                {"{\"mcp_servers\":[{\"type\":\"url\",\"name\":\"s\",\"url\":\"https://s\"}]}",
                 "mcp_servers[0]: server"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_auto_t *u = J(bad[i][0]);
                n2 = NULL;
                int r = v1_agent_update(next, u, LATER, &n2, &e);
                TEST_RESULT(r == -EINVAL && !n2 && e.status == 400 && strstr(e.msg, bad[i][1]), "update %zu: %s", i,
                            e.msg);
        }

        /* An archived agent cannot be updated. */
        json_object_set_new(next, "archived_at", json_string(LATER));
        json_auto_t *u4 = J("{\"description\":\"x\"}");
        n2 = NULL;
        CHECK(v1_agent_update(next, u4, LATER, &n2, &e) == -EINVAL && e.status == 400 && !n2 &&
              strstr(e.msg, "archived"));
        json_decref(next);
}

static int env_create(const json_t *body, json_t **ret, v1_err *e) {
        return v1_environment_create(body, "env_x", NOW, ret, e);
}

static void test_environment(void) {
        v1_err e;
        json_t *env = NULL, *next = NULL;
        json_auto_t *qs =
                J("{\"name\":\"qs\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}");
        CHECK_EQ_INT(v1_environment_create(qs, "env_1", NOW, &env, &e), 0);
        CHECK(same(env, "{\"id\":\"env_1\",\"type\":\"environment\",\"name\":\"qs\",\"description\":null,"
                        "\"metadata\":{},\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},"
                        "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],\"go\":[],\"npm\":[],"
                        "\"pip\":[]}},\"scope\":\"organization\",\"created_at\":\"" NOW "\",\"updated_at\":\"" NOW
                        "\",\"archived_at\":null}"));
        /* Its response sent back is no change. */
        json_auto_t *back = json_pack("{s:O, s:O, s:O, s:O, s:O}", "name", at(env, "name"), "config", at(env, "config"),
                                      "description", at(env, "description"), "metadata", at(env, "metadata"), "scope",
                                      at(env, "scope"));
        next = (json_t *) 1;
        CHECK_EQ_INT(v1_environment_update(env, back, LATER, &next, &e), 0);
        CHECK(next == NULL);

        json_auto_t *name_only = J("{\"name\":\"n\"}");
        json_t *env2 = NULL;
        CHECK_EQ_INT(v1_environment_create(name_only, "env_2", NOW, &env2, &e), 0);
        CHECK(json_equal(at(env2, "config"), at(env, "config")));
        json_decref(env2);

        json_auto_t *lim = J("{\"name\":\"l\",\"scope\":\"workspace\",\"description\":\"d\",\"metadata\":{\"k\":\"v\"},"
                             "\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\",\"allowed_hosts\":["
                             "\"pypi.org\"]},\"packages\":{\"pip\":[\"numpy\"],\"apt\":[\"jq\"]}}}");
        CHECK_EQ_INT(v1_environment_create(lim, "env_3", NOW, &env2, &e), 0);
        CHECK(same(at(env2, "config.networking"), "{\"type\":\"limited\",\"allowed_hosts\":[\"pypi.org\"],"
                                                  "\"allow_mcp_servers\":false,\"allow_package_managers\":false}"));
        CHECK(same(at(env2, "config.packages"), "{\"type\":\"packages\",\"apt\":[\"jq\"],\"cargo\":[],\"gem\":[],"
                                                "\"go\":[],\"npm\":[],\"pip\":[\"numpy\"]}"));
        CHECK_EQ_STR(str_at(env2, "scope"), "workspace");
        CHECK_EQ_STR(str_at(env2, "description"), "d");
        json_decref(env2);

        json_auto_t *sh = J("{\"name\":\"s\",\"config\":{\"type\":\"self_hosted\"}}");
        CHECK_EQ_INT(v1_environment_create(sh, "env_4", NOW, &env2, &e), 0);
        CHECK(same(at(env2, "config"), "{\"type\":\"self_hosted\"}"));
        json_decref(env2);

        /* Updates: metadata per key, description cleared, config replaced, its type fixed. */
        json_auto_t *u = J("{\"metadata\":{\"a\":\"1\"},\"description\":\"x\",\"config\":{\"type\":\"cloud\","
                           "\"networking\":{\"type\":\"limited\",\"allow_mcp_servers\":true}}}");
        CHECK_EQ_INT(v1_environment_update(env, u, LATER, &next, &e), 0);
        CHECK(same(at(next, "metadata"), "{\"a\":\"1\"}"));
        CHECK_EQ_STR(str_at(next, "updated_at"), LATER);
        CHECK(json_is_true(at(next, "config.networking.allow_mcp_servers")));
        CHECK(same(at(next, "config.networking.allowed_hosts"), "[]"));
        json_auto_t *u2 = J("{\"metadata\":{\"a\":null},\"description\":\"\"}");
        json_t *n2 = NULL;
        CHECK_EQ_INT(v1_environment_update(next, u2, LATER, &n2, &e), 0);
        CHECK(same(at(n2, "metadata"), "{}") && json_is_null(at(n2, "description")));
        json_decref(n2);
        json_auto_t *u3 = J("{\"config\":{\"type\":\"self_hosted\"}}");
        n2 = NULL;
        CHECK(v1_environment_update(next, u3, LATER, &n2, &e) == -EINVAL && !n2 &&
              strcmp(e.code, "invalid_config_type_change") == 0 && strstr(e.msg, "config.type"));
        json_decref(next);
        json_object_set_new(env, "archived_at", json_string(LATER));
        CHECK(v1_environment_update(env, u2, LATER, &n2, &e) == -EINVAL && strcmp(e.code, "environment_archived") == 0);
        json_decref(env);

        static const struct bad bad[] = {
                {"{}", 400, "", "name: required"},
                {"{\"name\":\"a\",\"cfg\":{}}", 400, "", "cfg: unknown field"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"moon\"}}", 400, "", "config.type: unknown value 'moon'"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\",\"networking\":{}}}", 400, "",
                 "config.networking: unknown field"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\","
                 "\"allowed_hosts\":[]}}}",
                 400, "", "config.networking.allowed_hosts: unknown field"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
                 "\"allowed_hosts\":[1]}}}",
                 400, "", "config.networking.allowed_hosts[0]: must be a string"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"packages\":{\"brew\":[]}}}", 400, "",
                 "config.packages.brew: unknown field"},
                {"{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"packages\":{\"pip\":\"numpy\"}}}", 400, "",
                 "config.packages.pip: must be an array"},
                {"{\"name\":\"a\",\"scope\":\"planet\"}", 400, "", "scope: unknown value 'planet'"},
                {"{\"name\":\"a\",\"metadata\":[]}", 400, "", "metadata: must be an object"},
        };
        check_bad("environment", env_create, bad, ELEMENTSOF(bad));
}

static json_t *make_agent(void) {
        v1_err e;
        json_auto_t *body = J(AGENT_QS);
        json_t *a = NULL;
        if (v1_agent_create(body, "agent_1", NOW, &a, &e) < 0)
                abort();
        json_object_set_new(a, "metadata", J("{\"m\":\"1\"}"));
        return a;
}

static int session_parse(const json_t *body, json_t **ret, v1_err *e) {
        v1_session_req req;
        *ret = NULL;
        return v1_session_parse(body, &req, e);
}

static void test_session_create(void) {
        v1_err e;
        json_auto_t *agent = make_agent();
        v1_session_req req;

        json_auto_t *b1 = J("{\"agent\":\"agent_1\",\"environment_id\":\"env_1\"}");
        CHECK_EQ_INT(v1_session_parse(b1, &req, &e), 0);
        CHECK_EQ_STR(req.agent_id, "agent_1");
        CHECK_EQ_STR(req.environment_id, "env_1");
        CHECK(req.agent_version == 0 && req.overrides == NULL && req.initial_events == NULL);
        json_t *s = NULL;
        CHECK_EQ_INT(v1_session_create(b1, &req, agent, "sesn_1", NOW, &s, &e), 0);
        json_t *snap = at(s, "agent");
        CHECK_EQ_STR(str_at(snap, "type"), "agent");
        CHECK_EQ_STR(str_at(snap, "id"), "agent_1");
        CHECK_EQ_INT(json_integer_value(at(snap, "version")), 1);
        CHECK(!at(snap, "created_at") && !at(snap, "updated_at") && !at(snap, "archived_at") && !at(snap, "metadata"));
        CHECK(json_equal(at(snap, "tools"), at(agent, "tools")) && json_equal(at(snap, "model"), at(agent, "model")));
        CHECK(at(snap, "execution_identity") && at(snap, "skills") && at(snap, "mcp_servers") &&
              json_is_null(at(snap, "multiagent")));
        json_object_set_new(s, "agent", json_null());
        CHECK(same(s, "{\"id\":\"sesn_1\",\"type\":\"session\",\"status\":\"idle\",\"title\":null,"
                      "\"environment_id\":\"env_1\",\"agent\":null,\"resources\":[],\"vault_ids\":[],\"metadata\":{},"
                      "\"budget\":null,\"outcome_evaluations\":[],\"stats\":{\"active_seconds\":0,"
                      "\"duration_seconds\":0},\"usage\":{\"input_tokens\":0,\"output_tokens\":0,"
                      "\"cache_read_input_tokens\":0,\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,"
                      "\"ephemeral_1h_input_tokens\":0}},\"created_at\":\"" NOW "\",\"updated_at\":\"" NOW
                      "\",\"archived_at\":null}"));
        json_decref(s);
}

/* A session from a create body with every field, checked; a new reference. */
static json_t *session_with_every_field(const json_t *agent) {
        v1_err e;
        v1_session_req req;
        json_t *s = NULL;
        json_auto_t *b2 = J(
                "{\"agent\":{\"type\":\"agent_with_overrides\",\"id\":\"agent_1\",\"version\":1,\"system\":\"over\","
                "\"model\":{\"id\":\"m2\"},\"tools\":[{\"type\":\"custom\",\"name\":\"c\",\"description\":\"d\","
                "\"input_schema\":{\"type\":\"object\"}}]},\"environment_id\":\"env_1\",\"title\":\"t\","
                "\"metadata\":{\"k\":\"v\"},\"resources\":[{\"type\":\"file\",\"file_id\":\"file_1\",\"mount_path\":"
                "\"/data/x\"}],\"vault_ids\":[],\"budget\":{\"type\":\"limit\",\"max_list_cost\":{\"amount\":\"2500\","
                "\"currency\":\"USD\"}},\"initial_events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\","
                "\"text\":\"hi\"}]}]}");
        CHECK_EQ_INT(v1_session_parse(b2, &req, &e), 0);
        CHECK(req.agent_version == 1 && req.overrides == at(b2, "agent") &&
              req.initial_events == at(b2, "initial_events"));
        CHECK_EQ_INT(v1_session_create(b2, &req, agent, "sesn_2", NOW, &s, &e), 0);
        CHECK_EQ_STR(str_at(s, "agent.system"), "over");
        CHECK(same(at(s, "agent.model"), "{\"id\":\"m2\",\"speed\":\"standard\"}"));
        CHECK_EQ_STR(str_at(s, "agent.tools.0.name"), "c");
        CHECK_EQ_STR(str_at(s, "agent.name"), "qs");
        CHECK_EQ_STR(str_at(s, "title"), "t");
        CHECK_EQ_STR(str_at(s, "metadata.k"), "v");
        CHECK_EQ_STR(str_at(s, "resources.0.mount_path"), "/data/x");
        CHECK_EQ_STR(str_at(s, "budget.max_list_cost.amount"), "2500");
        return s;
}

static void test_session_update(void) {
        v1_err e;
        json_auto_t *agent = make_agent();
        json_t *s = session_with_every_field(agent);

        /* Updates: title, metadata per key, budget; the changed fields alone. */
        json_t *next = NULL, *changed = NULL;
        json_auto_t *u1 = J("{\"title\":\"t2\",\"metadata\":{\"k\":null,\"n\":\"1\"},\"budget\":null}");
        CHECK_EQ_INT(v1_session_update(s, u1, LATER, &next, &changed, &e), 0);
        CHECK(same(changed, "{\"title\":\"t2\",\"metadata\":{\"n\":\"1\"},\"budget\":null}"));
        CHECK_EQ_STR(str_at(next, "updated_at"), LATER);
        CHECK_EQ_STR(str_at(next, "title"), "t2");
        json_decref(changed);
        json_t *n2 = (json_t *) 1, *c2 = (json_t *) 1;
        CHECK_EQ_INT(v1_session_update(next, u1, LATER, &n2, &c2, &e), 0);
        CHECK(n2 == NULL && c2 == NULL);
        json_decref(next);

        json_auto_t *u2 = J("{\"agent\":{\"tools\":[{\"type\":\"agent_toolset_20260401\"}]}}");
        CHECK_EQ_INT(v1_session_update(s, u2, LATER, &next, &changed, &e), 0);
        CHECK_EQ_STR(str_at(changed, "agent.tools.0.type"), "agent_toolset_20260401");
        CHECK_EQ_STR(str_at(next, "agent.system"), "over");
        CHECK(json_object_size(changed) == 1);
        json_decref(changed);
        json_decref(next);
        json_object_set_new(s, "status", json_string("running"));
        next = NULL;
        CHECK(v1_session_update(s, u2, LATER, &next, &changed, &e) == -EBUSY && !next && e.status == 409 &&
              strcmp(e.code, "session_running") == 0 && strcmp(e.type, "conflict_error") == 0);
        CHECK_EQ_INT(v1_session_update(s, u1, LATER, &next, &changed, &e), 0); /* the rest still can change */
        json_decref(next);
        json_decref(changed);
        static const char *const ubad[][2] = {
                {"{\"vault_ids\":[\"vlt_1\"]}", "vault_ids: cannot change after the session is created"},
                {"{\"status\":\"idle\"}", "status: unknown field"},
                {"{\"agent\":{\"model\":\"x\"}}", "agent.model: unknown field"},
                {"{\"title\":5}", "title: must be a string"},
                {"{\"budget\":{\"type\":\"limit\",\"max_list_cost\":{\"amount\":\"1e3\",\"currency\":\"USD\"}}}",
                 "budget.max_list_cost.amount: '1e3' is not an amount: a whole number of cents"},
                {"{\"budget\":{\"type\":\"limit\",\"max_list_cost\":{\"amount\":\"25.00\",\"currency\":\"USD\"}}}",
                 "budget.max_list_cost.amount: '25.00' is not an amount"},
                {"{\"budget\":{\"type\":\"limit\",\"max_list_cost\":{\"amount\":\"007\",\"currency\":\"USD\"}}}",
                 "budget.max_list_cost.amount: '007' is not an amount"},
        };
        json_object_set_new(s, "status", json_string("idle"));
        for (size_t i = 0; i < ELEMENTSOF(ubad); i++) {
                json_auto_t *u = J(ubad[i][0]);
                next = NULL;
                int r = v1_session_update(s, u, LATER, &next, &changed, &e);
                TEST_RESULT(r == -EINVAL && !next && e.status == 400 && strstr(e.msg, ubad[i][1]),
                            "session update %zu: %s", i, e.msg);
        }
        json_decref(s);
}

static void test_session_bad(void) {
        v1_err e;
        json_auto_t *agent = make_agent();
        v1_session_req req;
        json_t *s;

        /* Overrides that leave an mcp_toolset without its server are refused at create. */
        json_auto_t *b3 = J("{\"agent\":{\"type\":\"agent_with_overrides\",\"id\":\"agent_1\",\"tools\":[{\"type\":"
                            "\"mcp_toolset\",\"mcp_server_name\":\"gh\"}]},\"environment_id\":\"env_1\"}");
        CHECK_EQ_INT(v1_session_parse(b3, &req, &e), 0);
        s = NULL;
        CHECK(v1_session_create(b3, &req, agent, "sesn_3", NOW, &s, &e) == -EINVAL && !s &&
              strstr(e.msg, "agent.tools[0].mcp_server_name: no server named 'gh'"));

        static const struct bad bad[] = {
                {"{\"environment_id\":\"env_1\"}", 400, "", "agent: required"},
                {"{\"agent\":\"agent_1\"}", 400, "", "environment_id: required"},
                {"{\"agent\":\"agent_1\",\"environment_id\":\"env_1\",\"x\":1}", 400, "", "x: unknown field"},
                {"{\"agent\":{\"type\":\"agent\",\"id\":\"a\",\"system\":\"s\"},\"environment_id\":\"e\"}", 400, "",
                 "agent.system: unknown field"},
                {"{\"agent\":{\"type\":\"agent\",\"id\":\"a\",\"version\":0},\"environment_id\":\"e\"}", 400, "",
                 "agent.version: must be an integer >= 1"},
                {"{\"agent\":{\"type\":\"bot\",\"id\":\"a\"},\"environment_id\":\"e\"}", 400, "",
                 "agent.type: unknown value 'bot'"},
                {"{\"agent\":{\"type\":\"agent_with_overrides\",\"id\":\"a\",\"name\":\"n\"},\"environment_id\":\"e\"}",
                 400, "", "agent.name: unknown field"},
                {"{\"agent\":{\"type\":\"agent_with_overrides\",\"id\":\"a\",\"tools\":[{\"type\":"
                 "\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bask\"}]}]},\"environment_id\":\"e\"}",
                 400, "", "agent.tools[0].configs[0].name: unknown tool 'bask'"},
                {"{\"agent\":5,\"environment_id\":\"e\"}", 400, "", "agent: must be an agent id or an object"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"resources\":[{\"type\":\"gitlab_repository\",\"url\":"
                 "\"https://gitlab.com/x/y\"}]}",
                 400, "", "resources[0].type: unknown resource type 'gitlab_repository'"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"resources\":[{\"type\":\"memory_store\","
                 "\"memory_store_id\":\"m\",\"access\":\"write\"}]}",
                 400, "", "resources[0].access"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"resources\":[{\"type\":\"memory_store\"}]}", 400, "",
                 "resources[0].memory_store_id"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"resources\":[{\"type\":\"file\"}]}", 400, "",
                 "resources[0].file_id: required"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"vault_ids\":[5]}", 400, "",
                 "vault_ids[0]: must be a vault id"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"budget\":{\"type\":\"limit\",\"max_list_cost\":{"
                 "\"amount\":\"5\",\"currency\":\"EUR\"}}}",
                 400, "", "budget.max_list_cost.currency: unknown value 'EUR'"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"initial_events\":[{\"type\":\"user.interrupt\"}]}", 400,
                 "", "initial_events[0].type: only user.message and user.define_outcome"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"initial_events\":[{\"type\":\"user.define_outcome\","
                 "\"description\":\"d\"}]}",
                 400, "", "initial_events[0].rubric: required"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"metadata\":{\"k\":[]}}", 400, "",
                 "metadata.k: must be a string"},
                {"{\"agent\":\"a\",\"environment_id\":\"e\",\"title\":{}}", 400, "", "title: must be a string"},
        };
        check_bad("session", session_parse, bad, ELEMENTSOF(bad));

        /* initial_events: at most 50. */
        json_auto_t *many = J("{\"agent\":\"a\",\"environment_id\":\"e\",\"initial_events\":[]}");
        for (unsigned i = 0; i <= V1_EVENTS_PER_SEND_MAX; i++)
                json_array_append_new(
                        at(many, "initial_events"),
                        J("{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}"));
        CHECK(v1_session_parse(many, &req, &e) == -EINVAL && strstr(e.msg, "initial_events: 51 events, at most 50"));
        json_array_remove(at(many, "initial_events"), 0);
        CHECK(v1_session_parse(many, &req, &e) == 0 && json_array_size(req.initial_events) == 50);
}

static int events_parse(const json_t *body, json_t **ret, v1_err *e) {
        return v1_events_parse(body, ret, e);
}

static void test_events(void) {
        v1_err e;
        json_t *ev = NULL;
        static const char *const good =
                "{\"events\":["
                "{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\","
                "\"source\":{\"type\":\"url\",\"url\":\"https://x/a.png\"}},{\"type\":\"document\",\"source\":{"
                "\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"abc\"},\"title\":\"notes\"},{\"type\":"
                "\"redacted\"}]},"
                "{\"type\":\"user.interrupt\"},"
                "{\"type\":\"user.interrupt\",\"session_thread_id\":\"sthr_1\"},"
                "{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"sevt_1\",\"result\":\"allow\"},"
                "{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"sevt_2\",\"result\":\"deny\","
                "\"deny_message\":\"no\"},"
                "{\"type\":\"user.custom_tool_result\",\"custom_tool_use_id\":\"sevt_3\"},"
                "{\"type\":\"user.custom_tool_result\",\"custom_tool_use_id\":\"sevt_4\",\"is_error\":true,"
                "\"content\":[{\"type\":\"text\",\"text\":\"42\"}]},"
                "{\"type\":\"system.message\",\"content\":[{\"type\":\"text\",\"text\":\"be brief\"}]}]}";
        json_auto_t *body = J(good);
        CHECK_EQ_INT(v1_events_parse(body, &ev, &e), 0);
        CHECK(json_equal(ev, at(body, "events")));
        char *text = v1_user_message_text(json_array_get(ev, 0));
        CHECK_EQ_STR(text, "look\n\n[image (url) https://x/a.png]\n\n[document: notes (text)]\n\n[redacted block]");
        free(text);
        json_decref(ev);

        /* an outcome: max_iterations 3 when absent or null; a file rubric kept as its id */
        json_auto_t *oc = J("{\"events\":[{\"type\":\"user.define_outcome\",\"description\":\"d\",\"rubric\":{"
                            "\"type\":\"text\",\"content\":\"r\"}},{\"type\":\"user.define_outcome\",\"description\":"
                            "\"d\",\"rubric\":{\"type\":\"file\",\"file_id\":\"file_1\"},\"max_iterations\":20}]}");
        CHECK_EQ_INT(v1_events_parse(oc, &ev, &e), 0);
        CHECK(json_integer_value(json_object_get(json_array_get(ev, 0), "max_iterations")) == 3);
        CHECK(json_integer_value(json_object_get(json_array_get(ev, 1), "max_iterations")) == 20);
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(json_array_get(ev, 1), "rubric"), "file_id")),
                     "file_1");
        json_decref(ev);

        static const struct bad bad[] = {
                {"{}", 400, "", "events: required"},
                {"{\"events\":[]}", 400, "", "events: 0 events, at least 1"},
                {"{\"events\":[],\"x\":1}", 400, "", "x: unknown field"},
                {"{\"events\":{}}", 400, "", "events: must be an array"},
                {"{\"events\":[5]}", 400, "", "events[0]: must be an event object"},
                {"{\"events\":[{\"type\":\"user.shout\"}]}", 400, "",
                 "events[0].type: unknown event type 'user.shout'"},
                {"{\"events\":[{}]}", 400, "", "events[0].type: required"},
                {"{\"events\":[{\"type\":\"user.message\"}]}", 400, "", "events[0].content: must be an array"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[]}]}", 400, "",
                 "events[0].content: must not be empty"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":\"hi\"}]}", 400, "",
                 "events[0].content: must be an array"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\"}]}]}", 400, "",
                 "events[0].content[0].text: required"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":1}]}]}", 400, "",
                 "events[0].content[0].text: must be a string"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"cite\":1}]}]"
                 "}",
                 400, "", "events[0].content[0].cite: unknown field"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"video\"}]}]}", 400, "",
                 "events[0].content[0].type: unknown value 'video'"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":"
                 "\"text\"}}]}]}",
                 400, "", "events[0].content[0].source.type: unknown value 'text'"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"id\":"
                 "\"x\"}]}",
                 400, "", "events[0].id: unknown field"},
                {"{\"events\":[{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"s\",\"result\":\"allow\","
                 "\"deny_message\":\"m\"}]}",
                 400, "", "events[0].deny_message: only with"},
                {"{\"events\":[{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"s\",\"result\":\"maybe\"}]}", 400,
                 "", "events[0].result: unknown value 'maybe'"},
                {"{\"events\":[{\"type\":\"user.tool_confirmation\",\"result\":\"allow\"}]}", 400, "",
                 "events[0].tool_use_id: required"},
                {"{\"events\":[{\"type\":\"user.custom_tool_result\",\"custom_tool_use_id\":\"s\",\"is_error\":1}]}",
                 400, "", "events[0].is_error: must be a boolean"},
                {"{\"events\":[{\"type\":\"user.tool_result\",\"custom_tool_use_id\":\"s\"}]}", 400, "",
                 "events[0].custom_tool_use_id: unknown field"},
                {"{\"events\":[{\"type\":\"user.tool_result\"}]}", 400, "", "events[0].tool_use_id: required"},
                {"{\"events\":[{\"type\":\"user.define_outcome\",\"description\":\"d\"}]}", 400, "",
                 "events[0].rubric: required"},
                {"{\"events\":[{\"type\":\"user.define_outcome\",\"description\":\"d\",\"rubric\":{\"type\":\"text\","
                 "\"content\":\"r\"},\"max_iterations\":21}]}",
                 400, "", "events[0].max_iterations: must be a whole number from 1 to 20"},
                {"{\"events\":[{\"type\":\"user.define_outcome\",\"description\":\"d\",\"rubric\":{\"type\":\"file\"}}]"
                 "}",
                 400, "", "events[0].rubric.file_id: required"},
                {"{\"events\":[{\"type\":\"system.message\",\"content\":[{\"type\":\"text\",\"text\":\"s\"}]}]}", 400,
                 "", "events[0]: a system.message must directly follow"},
                {"{\"events\":[{\"type\":\"user.interrupt\"},{\"type\":\"system.message\",\"content\":[{\"type\":"
                 "\"text\",\"text\":\"s\"}]}]}",
                 400, "", "events[1]: a system.message must directly follow"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},{\"type\":"
                 "\"system.message\",\"content\":[{\"type\":\"text\",\"text\":\"s\"}]},{\"type\":\"user.interrupt\"}]}",
                 400, "", "events[1]: a system.message must be the last"},
                {"{\"events\":[{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},{\"type\":"
                 "\"system.message\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"url\"}}]}]}",
                 400, "", "events[1].content[0].type: unknown value 'image' (one of text)"},
        };
        check_bad("events", events_parse, bad, ELEMENTSOF(bad));

        /* user.tool_result (a self_hosted session's built-in tools), a system.message after it */
        json_auto_t *tres = J("{\"events\":[{\"type\":\"user.tool_result\",\"tool_use_id\":\"sevt_1\",\"is_error\":"
                              "false,\"content\":[{\"type\":\"text\",\"text\":\"out\"}]},{\"type\":\"system.message\","
                              "\"content\":[{\"type\":\"text\",\"text\":\"s\"}]}]}");
        CHECK_EQ_INT(v1_events_parse(tres, &ev, &e), 0);
        CHECK_EQ_STR(str_at(json_array_get(ev, 0), "tool_use_id"), "sevt_1");
        CHECK_EQ_INT(json_array_size(ev), 2);
        json_decref(ev);
        ev = NULL;

        json_auto_t *many = J("{\"events\":[]}");
        for (unsigned i = 0; i < V1_EVENTS_PER_SEND_MAX; i++)
                json_array_append_new(at(many, "events"), J("{\"type\":\"user.interrupt\"}"));
        CHECK_EQ_INT(v1_events_parse(many, &ev, &e), 0);
        CHECK_EQ_INT(json_array_size(ev), V1_EVENTS_PER_SEND_MAX);
        json_decref(ev);
        json_array_append_new(at(many, "events"), J("{\"type\":\"user.interrupt\"}"));
        ev = NULL;
        CHECK(v1_events_parse(many, &ev, &e) == -EINVAL && !ev && strstr(e.msg, "events: 51 events, at most 50"));
}

int main(void) {
        test_fail();
        test_agent_create();
        test_agent_bad();
        test_agent_bounds();
        test_agent_update();
        test_environment();
        test_session_create();
        test_session_update();
        test_session_bad();
        test_events();
        return test_done();
}
