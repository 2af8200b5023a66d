/* test-env-spec.c: an environment's spec: package specs of each manager with and without
 * versions, the JSON form (the /v1 config included), every refusal naming its field, and the
 * canonical package spec (sorted, deduplicated) that keys a layer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "env-spec.h"
#include "macro.h"
#include "test.h"

static int parse(const char *s, env_spec *ret, hull_error *e) {
        return env_spec_parse(s, strlen(s), ret, e);
}

static void test_packages(void) {
        static const struct {
                env_pm pm;
                const char *spec, *name, *version;
        } good[] = {
                {ENV_PM_APT, "jq", "jq", NULL},
                {ENV_PM_APT, "jq=1.6-2.1", "jq", "1.6-2.1"},
                {ENV_PM_APT, "libstdc++6=12.2.0-14", "libstdc++6", "12.2.0-14"},
                {ENV_PM_APT, "python3-sklearn", "python3-sklearn", NULL},
                {ENV_PM_APT, "foo=1:2.0~rc1+deb12u3", "foo", "1:2.0~rc1+deb12u3"},
                {ENV_PM_NPM, "left-pad@1.3.0", "left-pad", "1.3.0"},
                {ENV_PM_NPM, "is-number", "is-number", NULL},
                {ENV_PM_NPM, "@types/node@^20.1.0", "@types/node", "^20.1.0"},
                {ENV_PM_NPM, "lodash.get@~4.4", "lodash.get", "~4.4"},
                {ENV_PM_PIP, "requests==2.31.0", "requests", "==2.31.0"},
                {ENV_PM_PIP, "scikit-learn>=1.3", "scikit-learn", ">=1.3"},
                {ENV_PM_PIP, "PyYAML", "PyYAML", NULL},
        };
        static const struct {
                env_pm pm;
                const char *spec;
        } bad[] = {
                {ENV_PM_APT, ""},         {ENV_PM_APT, "-o"},
                {ENV_PM_APT, "j"},        {ENV_PM_APT, "Jq"},
                {ENV_PM_APT, "jq="},      {ENV_PM_APT, "jq=abc"},
                {ENV_PM_APT, "jq;rm"},    {ENV_PM_APT, "jq 1"},
                {ENV_PM_NPM, "@types"},   {ENV_PM_NPM, "a b"},
                {ENV_PM_NPM, "x@"},       {ENV_PM_NPM, ".hidden"},
                {ENV_PM_NPM, "--global"}, {ENV_PM_NPM, "x@$(id)"},
                {ENV_PM_NPM, "../x"},     {ENV_PM_PIP, "requests=="},
                {ENV_PM_PIP, "-r"},       {ENV_PM_PIP, "a=b"},
                {ENV_PM_PIP, "x==1 ; y"}, {ENV_PM_PIP, "git+https://x"},
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                env_pkg p;
                hull_error e = {0};
                int r = env_pkg_parse(good[i].pm, good[i].spec, "packages.x[0]", &p, &e);
                TEST_RESULT(r == 0, "%s is a valid %s package (%s)", good[i].spec, env_pm_to_string(good[i].pm), e.msg);
                if (r < 0)
                        continue;
                CHECK_EQ_STR(p.name, good[i].name);
                TEST_RESULT(good[i].version ? p.version && strcmp(p.version, good[i].version) == 0 : !p.version,
                            "%s: version %s", good[i].spec, p.version ? p.version : "(none)");
                env_pkg_done(&p);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                env_pkg p;
                hull_error e = {0};
                int r = env_pkg_parse(bad[i].pm, bad[i].spec, "packages.x[3]", &p, &e);
                TEST_RESULT(r == -EINVAL && strstr(e.msg, "packages.x[3]"), "'%s' is refused naming the field: %s",
                            bad[i].spec, e.msg);
                if (r == 0)
                        env_pkg_done(&p);
        }
}

static void test_json(void) {
        env_spec s = {0};
        hull_error e = {0};
        int r = parse("{\"packages\": {\"apt\": [\"jq\", \"hello\", \"jq\"], \"npm\": [\"is-number@7.0.0\"]},"
                      " \"networking\": {\"type\": \"limited\", \"allowed_hosts\": [\"Example.com\", \"*.npmjs.org\"],"
                      " \"allow_package_managers\": true}}",
                      &s, &e);
        CHECK_EQ_INT(r, 0);
        CHECK(s.n_pkgs[ENV_PM_APT] == 2);
        CHECK(s.n_pkgs[ENV_PM_NPM] == 1);
        CHECK(s.net == ENV_NET_LIMITED);
        CHECK(s.n_allowed_hosts == 2 && strcmp(s.allowed_hosts[0], "example.com") == 0);
        CHECK(s.allow_package_managers && !s.allow_mcp_servers);
        char *canon = NULL;
        CHECK_EQ_INT(env_spec_packages_canonical(&s, &canon), 0);
        CHECK_EQ_STR(canon, "{\"apt\":[\"hello\",\"jq\"],\"npm\":[\"is-number@7.0.0\"],\"pip\":[]}");
        free(canon);

        /* The JSON form parses back to the same spec. */
        json_t *j = env_spec_to_json(&s);
        env_spec s2 = {0};
        CHECK_EQ_INT(env_spec_from_json(j, &s2, &e), 0);
        json_t *j2 = env_spec_to_json(&s2);
        CHECK(json_equal(j, j2));
        json_decref(j);
        json_decref(j2);
        env_spec_done(&s2);
        env_spec_done(&s);

        /* A /v1 environment's config. */
        r = parse("{\"type\": \"cloud\", \"networking\": {\"type\": \"unrestricted\"}, \"packages\": {\"type\": "
                  "\"packages\", \"apt\": [], \"cargo\": [], \"gem\": [], \"go\": [], \"npm\": [], \"pip\": []}}",
                  &s, &e);
        TEST_RESULT(r == 0, "a /v1 config parses: %s", e.msg);
        CHECK(!env_spec_has_packages(&s) && s.net == ENV_NET_UNRESTRICTED);
        env_spec_done(&s);
        CHECK_EQ_INT(parse("{}", &s, &e), 0);
        CHECK(s.net == ENV_NET_NONE);
        env_spec_done(&s);
}

static void test_refused(void) {
        static const struct {
                const char *json, *field;
        } bad[] = {
                {"[]", "JSON object"},
                {"{\"packages\": {\"apt\": [\"jq\", 3]}}", "packages.apt[1]"},
                {"{\"packages\": {\"apt\": \"jq\"}}", "packages.apt"},
                {"{\"packages\": {\"cargo\": [\"ripgrep\"]}}", "packages.cargo"},
                {"{\"packages\": {\"npm\": [\"a@1\", \"a@2\"]}}", "listed twice"},
                {"{\"networking\": {\"type\": \"open\"}}", "networking.type"},
                {"{\"networking\": {\"type\": \"none\", \"allowed_hosts\": [\"a.com\"]}}", "limited networking only"},
                {"{\"networking\": {\"type\": \"limited\", \"allowed_hosts\": [\"a..com\"]}}",
                 "networking.allowed_hosts[0]"},
                {"{\"networking\": {\"type\": \"limited\", \"allowed_hosts\": [\"10.0.0.1:80\"]}}",
                 "networking.allowed_hosts[0]"},
                {"{\"networking\": {\"type\": \"limited\", \"allow_package_managers\": 1}}",
                 "networking.allow_package_managers"},
                {"{\"networking\": {\"type\": \"limited\", \"proxy\": 1}}", "networking.proxy"},
                {"{\"pakages\": {}}", "pakages"},
                {"{\"packages\": {}, \"packages\": {}}", "not JSON"},
                {"{\"type\": \"self_hosted\"}", "type"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                env_spec s = {0};
                hull_error e = {0};
                int r = parse(bad[i].json, &s, &e);
                TEST_RESULT(r == -EINVAL && strstr(e.msg, bad[i].field), "%s is refused naming %s: %s", bad[i].json,
                            bad[i].field, e.msg);
                env_spec_done(&s);
        }
}

static void test_names(void) {
        CHECK(env_name_is_valid("data-science"));
        CHECK(env_name_is_valid("py3.11_x"));
        CHECK(!env_name_is_valid(""));
        CHECK(!env_name_is_valid("-x"));
        CHECK(!env_name_is_valid("A"));
        CHECK(!env_name_is_valid("a/b"));
        CHECK(!env_name_is_valid("a=b"));
        char longname[ENV_NAME_MAX + 1];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[ENV_NAME_MAX] = '\0';
        CHECK(!env_name_is_valid(longname));
        longname[ENV_NAME_MAX - 1] = '\0';
        CHECK(env_name_is_valid(longname));
}

/* How run records name an environment. */
static void test_describe(void) {
        char d[ENV_DESC_MAX];
        CHECK_EQ_INT(env_describe("demo", "3", "0ef63f1e", "limited", d), 0);
        CHECK_EQ_STR(d, "hull-env:demo@3 layer=sha256:0ef63f1e net=limited");
        CHECK_EQ_INT(env_describe("env_01abc", NULL, NULL, "none", d), 0);
        CHECK_EQ_STR(d, "hull-env:env_01abc layer=none net=none");
        CHECK_EQ_INT(env_describe("demo", "", "", "unrestricted", d), 0);
        CHECK_EQ_STR(d, "hull-env:demo layer=none net=unrestricted");
        CHECK_EQ_INT(env_describe("", "1", NULL, "none", d), -EINVAL);
        CHECK_EQ_INT(env_describe("a b", "1", NULL, "none", d), -EINVAL);
        CHECK_EQ_INT(env_describe("a", "1\n", NULL, "none", d), -EINVAL);
        CHECK_EQ_INT(env_describe("a", "1", NULL, NULL, d), -EINVAL);
        char longname[ENV_DESC_MAX + 1];
        memset(longname, 'x', ENV_DESC_MAX);
        longname[ENV_DESC_MAX] = '\0';
        CHECK_EQ_INT(env_describe(longname, "1", NULL, "none", d), -ENAMETOOLONG);
        /* the longest a hull env can make fits: a 63-byte name, a 20-digit version, a digest */
        char name[ENV_NAME_MAX], digest[65];
        memset(name, 'n', ENV_NAME_MAX - 1);
        name[ENV_NAME_MAX - 1] = '\0';
        memset(digest, 'f', 64);
        digest[64] = '\0';
        CHECK_EQ_INT(env_describe(name, "18446744073709551615", digest, "unrestricted", d), 0);
}

int main(void) {
        test_packages();
        test_json();
        test_refused();
        test_names();
        test_describe();
        return test_done();
}
