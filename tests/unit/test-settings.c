/* test-settings.c: flags before the environment before .env before config.json; the provider
 * inferred from the key that is set; clear errors for what is missing, ambiguous or misspelt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "settings.h"
#include "test.h"

static const char *const vars[] = {"HULL_PROVIDER",      "HULL_MODEL",          "HULL_BASE_URL",     "OPENAI_BASE_URL",
                                   "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",      "ANTHROPIC_API_KEY", "HULL_API_KEY",
                                   "TAVILY_API_KEY",     "HULL_SEARCH_BASE_URL"};

static void clear_env(void) {
        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
                unsetenv(vars[i]);
}

static char cfg_path[64];

static void write_cfg(const char *text) {
        FILE *f = fopen(cfg_path, "w");
        fputs(text, f);
        fclose(f);
}

static dotenv *env_of(const char *text) {
        dotenv *d = NULL;
        hull_error e;
        if (dotenv_parse(text, strlen(text), &d, &e) < 0)
                return NULL;
        return d;
}

static void test_inference(void) {
        settings s = {0};
        hull_error e = {0};

        clear_env();
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "ANTHROPIC_API_KEY") && strstr(e.msg, "mock-model"), "nothing set: %s", e.msg);

        setenv("ANTHROPIC_API_KEY", "sk-ant", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), 0);
        CHECK(s.model.api == MODEL_API_ANTHROPIC);
        CHECK_EQ_STR(s.model.api_key, "sk-ant");
        CHECK_EQ_STR(s.key_source, "ANTHROPIC_API_KEY");
        CHECK_EQ_STR(s.model.model, "claude-sonnet-4-6"); /* official endpoint: a default model */
        CHECK(s.model.base_url == NULL && s.model.stream);
        settings_done(&s);

        setenv("OPENAI_API_KEY", "sk-oai", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "both") && strstr(e.msg, "HULL_PROVIDER"), "both keys: %s", e.msg);
        setenv("HULL_PROVIDER", "openai", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), 0);
        CHECK(s.model.api == MODEL_API_OPENAI);
        CHECK_EQ_STR(s.model.api_key, "sk-oai");
        settings_done(&s);
        setenv("HULL_PROVIDER", "gemini", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "HULL_PROVIDER") && strstr(e.msg, "gemini"), "unknown provider: %s", e.msg);

        /* a local server: no key needed, but a model must be named */
        clear_env();
        setenv("HULL_BASE_URL", "http://127.0.0.1:11434/v1", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), -EINVAL);
        TEST_RESULT(strstr(e.msg, "--model") && strstr(e.msg, "127.0.0.1:11434"), "no model: %s", e.msg);
        setenv("HULL_MODEL", "qwen3", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), 0);
        CHECK(s.model.api == MODEL_API_OPENAI && s.model.api_key == NULL);
        CHECK_EQ_STR(s.model.base_url, "http://127.0.0.1:11434/v1");
        settings_done(&s);
        setenv("HULL_BASE_URL", "ftp://x", 1);
        CHECK_EQ_INT(settings_load(NULL, NULL, NULL, &s, &e), -EINVAL);
        CHECK(strstr(e.msg, "http://") != NULL);
        clear_env();
}

static void test_precedence(void) {
        settings s = {0};
        hull_error e = {0};
        dotenv *env = env_of("OPENAI_API_KEY=sk-dotenv\nHULL_MODEL=from-dotenv\n");

        clear_env();
        write_cfg("{\"provider\":\"openai\",\"model\":\"from-file\",\"api_key\":\"sk-file\","
                  "\"headers\":{\"X-Org\":\"o1\"},\"stream\":false,\"max_turns\":7,"
                  "\"tools\":{\"bash\":\"always_ask\"},\"web\":{\"allow_hosts\":[\"intranet.corp\"],"
                  "\"allow_cidrs\":[\"10.1.0.0/16\"]},\"search\":{\"api_key\":\"tv-file\"}}");
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), 0);
        CHECK_EQ_STR(s.model.model, "from-file");
        CHECK_EQ_STR(s.model.api_key, "sk-file");
        CHECK_EQ_STR(s.key_source, "config.json");
        CHECK(!s.model.stream && s.max_turns == 7);
        CHECK(s.model.n_headers == 1 && strcmp(s.model.headers[0], "X-Org: o1") == 0);
        CHECK(settings_policy_for(&s, "bash", TOOL_ALWAYS_ALLOW) == TOOL_ALWAYS_ASK);
        CHECK(settings_policy_for(&s, "read", TOOL_ALWAYS_ALLOW) == TOOL_ALWAYS_ALLOW);
        CHECK(s.n_allow_hosts == 1 && strcmp(s.allow_hosts[0], "intranet.corp") == 0);
        CHECK(s.n_allow_cidrs == 1 && strcmp(s.allow_cidrs[0], "10.1.0.0/16") == 0);
        CHECK_EQ_STR(s.search_api_key, "tv-file");
        settings_done(&s);

        CHECK_EQ_INT(settings_load(NULL, cfg_path, env, &s, &e), 0); /* .env over the file */
        CHECK_EQ_STR(s.model.model, "from-dotenv");
        CHECK_EQ_STR(s.model.api_key, "sk-dotenv");
        settings_done(&s);

        setenv("HULL_MODEL", "from-env", 1); /* the environment over .env */
        CHECK_EQ_INT(settings_load(NULL, cfg_path, env, &s, &e), 0);
        CHECK_EQ_STR(s.model.model, "from-env");
        settings_done(&s);

        const char *hdr[] = {"X-Flag: f"};
        settings_flags f = {.model = "from-flag", .api_key = "sk-flag", .stream = 1, .headers = hdr, .n_headers = 1};
        CHECK_EQ_INT(settings_load(&f, cfg_path, env, &s, &e), 0); /* flags over everything */
        CHECK_EQ_STR(s.model.model, "from-flag");
        CHECK_EQ_STR(s.key_source, "--api-key");
        CHECK(s.model.stream && s.model.n_headers == 2 && strcmp(s.model.headers[1], "X-Flag: f") == 0);
        settings_done(&s);
        const char *bad_hdr[] = {"no colon"};
        f.headers = bad_hdr;
        CHECK_EQ_INT(settings_load(&f, cfg_path, env, &s, &e), -EINVAL);
        dotenv_free(env);
        clear_env();
}

static void test_file_errors(void) {
        static const struct {
                const char *text, *want;
        } bad[] = {
                {"{\"modle\":\"x\"}", "unknown key \"modle\""},
                {"{\"pricing\":[]}", "\"pricing\" must be an object"},
                {"{\"pricing\":{\"m\":{\"input\":1}}}", "pricing.m must be an object with at least"},
                {"{\"pricing\":{\"m\":{\"input\":1,\"output\":-2}}}", "pricing.m.output"},
                {"{\"pricing\":{\"m\":{\"input\":1,\"output\":2,\"cache\":1}}}", "pricing.m.cache"},
                {"{\"pricing\":{\"m\":{\"input\":\"3\",\"output\":2}}}", "pricing.m must be an object"},
                {"{\"model\":5}", "\"model\" must be a string"},
                {"{\"stream\":\"yes\"}", "true or false"},
                {"{\"max_turns\":0}", "positive integer"},
                {"{\"tools\":{\"bash\":\"sometimes\"}}", "tools.bash"},
                {"{\"web\":{\"allow_hostz\":[]}}", "web.allow_hostz"},
                {"{\"web\":{\"allow_hosts\":[1]}}", "allow_hosts[0]"},
                {"{\"model\":\"a\",\"model\":\"b\"}", "line 1"},
                {"{\"mcp\":[]}", "\"mcp\" must be an object"},
                {"{\"mcp\":{\"a b\":{\"command\":\"x\"}}}", "mcp.a b: a server name"},
                {"{\"mcp\":{\"s\":\"npx\"}}", "mcp.s must be an object"},
                {"{\"mcp\":{\"s\":{}}}", "mcp.s: give either"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"url\":\"http://h/\"}}}", "mcp.s: give either"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"argz\":[]}}}", "mcp.s.argz"},
                {"{\"mcp\":{\"s\":{\"command\":\"\"}}}", "mcp.s.command"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"args\":[\"a\",2]}}}", "mcp.s.args[1]"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"args\":\"a\"}}}", "mcp.s.args must"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"env\":{\"K\":1}}}}", "mcp.s.env"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"cwd\":7}}}", "mcp.s.cwd"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"headers\":{}}}}", "mcp.s.headers"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"type\":\"http\"}}}", "mcp.s.type"},
                {"{\"mcp\":{\"s\":{\"url\":\"ftp://h/\"}}}", "mcp.s.url"},
                {"{\"mcp\":{\"s\":{\"url\":\"http://h/\",\"args\":[]}}}", "mcp.s.args"},
                {"{\"mcp\":{\"s\":{\"url\":\"http://h/\",\"headers\":{\"A\":\"x\\ny\"}}}}", "mcp.s.headers.A"},
                {"{\"mcp\":{\"s\":{\"url\":\"http://h/\",\"type\":\"sse\"}}}", "mcp.s.type"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":1}}}", "mcp.s.sandbox must be"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":{\"hosts\":[]}}}}", "mcp.s.sandbox.hosts"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":{\"allow_hosts\":\"h\"}}}}",
                 "mcp.s.sandbox.allow_hosts must"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":{\"allow_hosts\":[\"\"]}}}}",
                 "mcp.s.sandbox.allow_hosts[0]"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":{\"workdir\":false}}}}", "mcp.s.sandbox.workdir"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"sandbox\":{\"allow_package_managers\":\"y\"}}}}",
                 "mcp.s.sandbox.allow_package_managers"},
                {"{\"mcp\":{\"s\":{\"command\":\"x\",\"env\":{\"A-B\":\"v\"},\"sandbox\":true}}}", "mcp.s.env"},
                {"{\"mcp\":{\"s\":{\"url\":\"http://h/\",\"sandbox\":true}}}", "mcp.s.sandbox"},
                {"[1]", "JSON object"},
                {"{", "line"},
        };
        setenv("OPENAI_API_KEY", "k", 1);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                settings s = {0};
                hull_error e = {0};
                write_cfg(bad[i].text);
                int r = settings_load(NULL, cfg_path, NULL, &s, &e);
                TEST_RESULT(r == -EINVAL && strstr(e.msg, bad[i].want) && strstr(e.msg, cfg_path), "refused %s: %s",
                            bad[i].text, e.msg);
        }
        settings s = {0};
        hull_error e = {0};
        write_cfg("{\"//\":\"a comment\",\"// model\":\"another\",\"model\":\"m\"}"); /* comments ignored */
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), 0);
        CHECK_EQ_STR(s.model.model, "m");
        settings_done(&s);
        /* MCP servers: a stdio one and an HTTP one, in the file's order */
        write_cfg("{\"mcp\":{\"fs\":{\"type\":\"stdio\",\"command\":\"npx\",\"args\":[\"-y\",\"srv\"],"
                  "\"env\":{\"K\":\"v=1\"},\"cwd\":\"/srv\"},\"web\":{\"url\":\"https://h/mcp\","
                  "\"headers\":{\"Authorization\":\"Bearer t\"}}}}");
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), 0);
        CHECK(s.n_mcp == 2);
        if (s.n_mcp == 2) {
                CHECK_EQ_STR(s.mcp[0].name, "fs");
                CHECK(s.mcp[0].url == NULL && s.mcp[0].headers == NULL);
                CHECK_EQ_STR(s.mcp[0].argv[0], "npx");
                CHECK_EQ_STR(s.mcp[0].argv[1], "-y");
                CHECK_EQ_STR(s.mcp[0].argv[2], "srv");
                CHECK(s.mcp[0].argv[3] == NULL);
                CHECK_EQ_STR(s.mcp[0].env[0], "K=v=1");
                CHECK(s.mcp[0].env[1] == NULL);
                CHECK_EQ_STR(s.mcp[0].cwd, "/srv");
                CHECK_EQ_STR(s.mcp[1].name, "web");
                CHECK_EQ_STR(s.mcp[1].url, "https://h/mcp");
                CHECK_EQ_STR(s.mcp[1].headers[0], "Authorization: Bearer t");
                CHECK(s.mcp[1].headers[1] == NULL && s.mcp[1].argv == NULL);
                CHECK(!s.mcp[0].sandbox && !s.mcp[1].sandbox);
        }
        settings_done(&s);
        /* "sandbox": true, or its settings */
        write_cfg("{\"mcp\":{\"a\":{\"command\":\"x\",\"sandbox\":true},\"b\":{\"command\":\"y\",\"sandbox\":"
                  "{\"allow_hosts\":[\"h.example\",\"*.x.example\"],\"allow_package_managers\":true,"
                  "\"workdir\":\"/w\"}},\"c\":{\"command\":\"z\",\"sandbox\":false}}}");
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), 0);
        CHECK(s.n_mcp == 3);
        if (s.n_mcp == 3) {
                CHECK(s.mcp[0].sandbox && !s.mcp[0].allow_hosts && !s.mcp[0].allow_package_managers);
                CHECK(s.mcp[0].workdir == NULL && !s.mcp[0].net_allow_loopback);
                CHECK(s.mcp[1].sandbox && s.mcp[1].allow_package_managers);
                CHECK_EQ_STR(s.mcp[1].allow_hosts[0], "h.example");
                CHECK_EQ_STR(s.mcp[1].allow_hosts[1], "*.x.example");
                CHECK(s.mcp[1].allow_hosts[2] == NULL);
                CHECK_EQ_STR(s.mcp[1].workdir, "/w");
                CHECK(!s.mcp[2].sandbox);
        }
        settings_done(&s);
        write_cfg("{\"/ model\":\"x\"}"); /* not a comment */
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), -EINVAL);
        unlink(cfg_path);
        CHECK_EQ_INT(settings_load(NULL, cfg_path, NULL, &s, &e), 0); /* a missing file is no file */
        settings_done(&s);
        clear_env();
}

int main(void) {
        snprintf(cfg_path, sizeof(cfg_path), "/tmp/test-settings.%d.json", (int) getpid());
        test_inference();
        test_precedence();
        test_file_errors();
        unlink(cfg_path);
        return test_done();
}
