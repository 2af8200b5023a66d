/* test-schema.c: tool inputs checked against their JSON Schema: every keyword of the subset, the
 * exact lines a model reads, several problems at once, the bounds, and schemas refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "test.h"

static json_t *js(const char *text) {
        json_error_t je;
        json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
        if (!v)
                printf("# bad test JSON: %s: %s\n", text, je.text);
        return v;
}

/* Validate input against schema; returns the problems ("" when valid), malloc'd. */
static char *problems(const char *schema, const char *input) {
        json_t *s = js(schema), *v = js(input);
        char *out = NULL;
        hull_error e = {0};
        if (!s || !v || schema_check(s, &e) < 0) {
                printf("# schema refused: %s\n", e.msg);
                out = strdup("(bad test)");
        } else if (schema_validate(s, v, "input", &out) == 0)
                out = strdup("");
        json_decref(s);
        json_decref(v);
        return out;
}

#define CHECK_PROBLEMS(schema, input, want)                                                                            \
        do {                                                                                                           \
                char *_p = problems(schema, input);                                                                    \
                CHECK_EQ_STR(_p, want);                                                                                \
                free(_p);                                                                                              \
        } while (0)

static const char read_schema[] =
        "{\"type\": \"object\", \"properties\": {\"file_path\": {\"type\": \"string\"}, \"offset\": {\"type\": "
        "\"integer\", \"minimum\": 0}, \"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100}}, "
        "\"required\": [\"file_path\"], \"additionalProperties\": false}";

static void test_messages(void) {
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a.txt\"}", "");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a.txt\", \"offset\": 0, \"limit\": 100}", "");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a.txt\", \"limit\": 5.0}", ""); /* 5.0 is an integer */
        CHECK_PROBLEMS(read_schema, "{\"file_path\": 5}", "input.file_path: expected a string, got an integer");
        CHECK_PROBLEMS(read_schema, "{\"file_paht\": \"a\"}",
                       "input: missing required field \"file_path\"\n"
                       "input: unknown field \"file_paht\" (did you mean \"file_path\"?)");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"LIMIT\": 3}",
                       "input: unknown field \"LIMIT\" (did you mean \"limit\"?)");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"colour\": 3}", "input: unknown field \"colour\"");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"limit\": 0}", "input.limit: must be >= 1, got 0");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"limit\": 101}", "input.limit: must be <= 100, got 101");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"limit\": 1.5}",
                       "input.limit: expected an integer, got a number");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"offset\": \"10\"}",
                       "input.offset: expected an integer, got a string");
        CHECK_PROBLEMS(read_schema, "[1]", "input: expected an object, got an array");
        CHECK_PROBLEMS(read_schema, "{\"file_path\": null}", "input.file_path: expected a string, got null");
        /* control characters and quotes in a key are not echoed as they are */
        CHECK_PROBLEMS(read_schema, "{\"file_path\": \"a\", \"x\\n\\\"y\": 1}", "input: unknown field \"x??y\"");
}

static void test_keywords(void) {
        const char *s = "{\"type\": \"object\", \"properties\": {"
                        "\"mode\": {\"type\": \"string\", \"enum\": [\"content\", \"files_with_matches\", \"count\"]}, "
                        "\"name\": {\"type\": \"string\", \"minLength\": 2, \"maxLength\": 4}, "
                        "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 1, "
                        "\"maxItems\": 2}, "
                        "\"opt\": {\"type\": [\"string\", \"null\"]}, "
                        "\"n\": {\"type\": \"number\", \"minimum\": -1.5}, "
                        "\"flag\": {\"type\": \"boolean\"}, "
                        "\"nested\": {\"type\": \"object\", \"properties\": {\"k\": {\"type\": \"integer\"}}, "
                        "\"required\": [\"k\"]}, "
                        "\"free\": {\"description\": \"anything\"}}, "
                        "\"additionalProperties\": {\"type\": \"integer\"}}";
        CHECK_PROBLEMS(s,
                       "{\"mode\": \"count\", \"name\": \"ab\", \"tags\": [\"x\"], \"opt\": null, \"n\": -1.5, "
                       "\"flag\": false, \"nested\": {\"k\": 1}, \"free\": [1, {}], \"extra\": 3}",
                       "");
        CHECK_PROBLEMS(s, "{\"mode\": \"lines\"}",
                       "input.mode: must be one of \"content\", \"files_with_matches\", \"count\"");
        CHECK_PROBLEMS(s, "{\"name\": \"a\"}", "input.name: must be at least 2 characters long, got 1");
        CHECK_PROBLEMS(s, "{\"name\": \"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}", ""); /* 4 characters, 8 bytes */
        CHECK_PROBLEMS(s, "{\"name\": \"abcde\"}", "input.name: must be at most 4 characters long, got 5");
        CHECK_PROBLEMS(s, "{\"tags\": []}", "input.tags: must have at least 1 items, got 0");
        CHECK_PROBLEMS(
                s, "{\"tags\": [\"a\", 2, \"c\"]}",
                "input.tags: must have at most 2 items, got 3\ninput.tags[1]: expected a string, got an integer");
        CHECK_PROBLEMS(s, "{\"opt\": 3}", "input.opt: expected string or null, got an integer");
        CHECK_PROBLEMS(s, "{\"n\": -2}", "input.n: must be >= -1.5, got -2");
        CHECK_PROBLEMS(s, "{\"flag\": \"true\"}", "input.flag: expected a boolean, got a string");
        CHECK_PROBLEMS(s, "{\"nested\": {}}", "input.nested: missing required field \"k\"");
        CHECK_PROBLEMS(s, "{\"nested\": {\"k\": \"1\"}}", "input.nested.k: expected an integer, got a string");
        CHECK_PROBLEMS(s, "{\"extra\": \"x\"}", "input.extra: expected an integer, got a string");
}

static void test_bounds(void) {
        /* many problems: the first SCHEMA_ERRORS_MAX, then a count */
        char input[4096];
        size_t o = (size_t) snprintf(input, sizeof(input), "{");
        for (int i = 0; i < 40; i++)
                o += (size_t) snprintf(input + o, sizeof(input) - o, "%s\"bad%d\": 1", i ? ", " : "", i);
        snprintf(input + o, sizeof(input) - o, "}");
        char *p = problems("{\"type\": \"object\", \"additionalProperties\": false}", input);
        size_t lines = 1;
        for (const char *c = p; c && *c; c++)
                lines += *c == '\n';
        CHECK_EQ_INT(lines, SCHEMA_ERRORS_MAX + 1);
        CHECK(p && strstr(p, "... and 24 more problems") != NULL);
        free(p);
        /* a schema nested deeper than the bound is refused */
        char deep[4096];
        o = 0;
        for (unsigned i = 0; i <= SCHEMA_DEPTH_MAX + 1; i++)
                o += (size_t) snprintf(deep + o, sizeof(deep) - o, "{\"items\": ");
        o += (size_t) snprintf(deep + o, sizeof(deep) - o, "{}");
        for (unsigned i = 0; i <= SCHEMA_DEPTH_MAX + 1; i++)
                o += (size_t) snprintf(deep + o, sizeof(deep) - o, "}");
        json_t *s = js(deep);
        hull_error e = {0};
        CHECK_EQ_INT(schema_check(s, &e), -EINVAL);
        CHECK(strstr(e.msg, "nested deeper than") != NULL);
        json_decref(s);
}

static void test_bad_schemas(void) {
        static const char *const bad[] = {
                "[]",
                "{\"type\": \"str\"}",
                "{\"type\": []}",
                "{\"type\": [\"string\", 3]}",
                "{\"properties\": []}",
                "{\"properties\": {\"a\": 3}}",
                "{\"properties\": {\"a\": {\"type\": \"strin\"}}}",
                "{\"required\": \"a\"}",
                "{\"required\": [1]}",
                "{\"additionalProperties\": 3}",
                "{\"items\": true}",
                "{\"enum\": []}",
                "{\"minimum\": \"1\"}",
                "{\"maxLength\": -1}",
                "{\"minItems\": 1.5}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *s = js(bad[i]);
                hull_error e = {0};
                int r = s ? schema_check(s, &e) : -EINVAL;
                TEST_RESULT(r == -EINVAL && e.msg[0], "refused: %s (%s)", bad[i], e.msg);
                json_decref(s);
        }
        json_t *s = js("{\"type\": \"object\", \"$schema\": \"x\", \"title\": \"t\", \"format\": \"uri\"}");
        hull_error e = {0};
        CHECK_EQ_INT(schema_check(s, &e), 0); /* keywords outside the subset are ignored */
        json_decref(s);
}

int main(void) {
        test_messages();
        test_keywords();
        test_bounds();
        test_bad_schemas();
        return test_done();
}
