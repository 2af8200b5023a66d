/* settings.c: see settings.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "macro.h"
#include "settings.h"

#define DEFAULT_MODEL_ANTHROPIC "claude-sonnet-4-6"
#define DEFAULT_MODEL_OPENAI "gpt-5.4"

static void free_strv(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void settings_done(settings *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_policies; i++)
                free(s->policies[i].tool);
        free(s->policies);
        free_strv(s->allow_hosts, s->n_allow_hosts);
        free_strv(s->allow_cidrs, s->n_allow_cidrs);
        free(s->search_api_key);
        free(s->search_base_url);
        free(s->s_base_url);
        free(s->s_api_key);
        free(s->s_model);
        free_strv(s->s_headers, s->n_s_headers);
        for (size_t i = 0; i < s->n_mcp; i++) {
                free(s->mcp[i].argv); /* its strings are the file's */
                for (size_t j = 0; s->mcp[i].env && s->mcp[i].env[j]; j++)
                        free(s->mcp[i].env[j]);
                for (size_t j = 0; s->mcp[i].headers && s->mcp[i].headers[j]; j++)
                        free(s->mcp[i].headers[j]);
                free(s->mcp[i].env);
                free(s->mcp[i].headers);
                free(s->mcp[i].allow_hosts); /* its strings are the file's */
        }
        free(s->mcp);
        json_decref(s->file);
        *s = (settings){0};
}

/* The environment's value of name: the process's, then the .env's; NULL or "" is none. */
static const char *env_get(const dotenv *env, const char *name) {
        const char *v = getenv(name);
        if (v && v[0])
                return v;
        v = dotenv_get(env, name);
        return v && v[0] ? v : NULL;
}

static const char *file_str(const json_t *file, const char *key) {
        const json_t *v = json_object_get(file, key);
        return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* A server's name as hull takes it: it prefixes its tools' names (mcp-client.h's rule). */
static bool mcp_name_ok(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > MCP_SERVER_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
                      (name[i] >= '0' && name[i] <= '9') || name[i] == '_' || name[i] == '-'))
                        return false;
        return true;
}

/* Whether every member of o is a string. */
static bool object_of_strings(const json_t *o) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *) o, k, x) if (!json_is_string(x)) return false;
        return true;
}

/* A variable's name as hull exec --pass-env takes it: a letter or '_', then letters, digits, '_'. */
static bool var_name_ok(const char *s) {
        if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (; *s; s++)
                if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
                        return false;
        return true;
}

/* A stdio entry's "sandbox": absent, a boolean, or {"allow_hosts": [...], "allow_package_managers":
 * bool, "workdir": "DIR", "net_allow_loopback": bool}. */
static int check_mcp_sandbox(const char *name, const json_t *sb, const json_t *env, const char *path, hull_error *e) {
        static const char *const keys[] = {"allow_hosts", "allow_package_managers", "workdir", "net_allow_loopback"};
        const char *key;
        json_t *x;
        if (!sb || json_is_false(sb))
                return 0;
        if (!json_is_true(sb) && !json_is_object(sb))
                return hull_fail(e, -EINVAL,
                                 "%s: mcp.%s.sandbox must be true, false or {\"allow_hosts\": [...], "
                                 "\"allow_package_managers\": false, \"workdir\": \"DIR\"}",
                                 path, name);
        json_object_foreach((json_t *) env, key, x) if (!var_name_ok(key)) return hull_fail(
                e, -EINVAL, "%s: mcp.%s.env: \"%.64s\" is not a variable name a sandbox takes (letters, digits, _)",
                path, name, key);
        json_object_foreach((json_t *) sb, key, x) {
                size_t i;
                for (i = 0; i < ELEMENTSOF(keys); i++)
                        if (strcmp(key, keys[i]) == 0)
                                break;
                if (i == ELEMENTSOF(keys))
                        return hull_fail(e, -EINVAL,
                                         "%s: unknown key \"mcp.%s.sandbox.%.64s\" (allow_hosts, "
                                         "allow_package_managers, workdir, net_allow_loopback)",
                                         path, name, key);
                if (i == 0) {
                        size_t k;
                        json_t *h;
                        if (!json_is_array(x) || json_array_size(x) > SBX_NET_ALLOW_MAX)
                                return hull_fail(e, -EINVAL,
                                                 "%s: mcp.%s.sandbox.allow_hosts must be an array of at most %u "
                                                 "host names",
                                                 path, name, SBX_NET_ALLOW_MAX);
                        json_array_foreach(x, k, h) if (!json_is_string(h) || !json_string_length(h)) return hull_fail(
                                e, -EINVAL, "%s: mcp.%s.sandbox.allow_hosts[%zu] must be a host name", path, name, k);
                } else if (i == 2 ? !json_is_string(x) || !json_string_length(x) : !json_is_boolean(x))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.sandbox.%s must be %s", path, name, key,
                                         i == 2 ? "a directory" : "true or false");
        }
        return 0;
}

/* One entry of "mcp": {"command", "args"?, "env"?, "cwd"?} (stdio) or {"url", "headers"?}
 * (Streamable HTTP), with an optional "type" ("stdio" or "http") that must agree. */
static int check_mcp_entry(const char *name, const json_t *v, const char *path, hull_error *e) {
        static const char *const keys[] = {"type", "command", "args", "env", "cwd", "url", "headers", "sandbox"};
        const char *key;
        json_t *x;
        if (!mcp_name_ok(name))
                return hull_fail(e, -EINVAL,
                                 "%s: mcp.%.64s: a server name is 1 to %u letters, digits, _ and - (it prefixes its "
                                 "tools' names)",
                                 path, name, MCP_SERVER_NAME_MAX);
        if (!json_is_object(v))
                return hull_fail(e, -EINVAL,
                                 "%s: mcp.%s must be an object: {\"command\": ..., \"args\": [...]} or {\"url\": ...}",
                                 path, name);
        json_object_foreach((json_t *) v, key, x) {
                size_t i;
                for (i = 0; i < ELEMENTSOF(keys); i++)
                        if (strcmp(key, keys[i]) == 0)
                                break;
                if (i == ELEMENTSOF(keys))
                        return hull_fail(e, -EINVAL,
                                         "%s: unknown key \"mcp.%s.%.64s\" (type, command, args, env, cwd, sandbox, "
                                         "url, headers)",
                                         path, name, key);
        }
        const json_t *cmd = json_object_get(v, "command"), *url = json_object_get(v, "url");
        const json_t *type = json_object_get(v, "type"), *args = json_object_get(v, "args");
        if (!cmd == !url)
                return hull_fail(e, -EINVAL,
                                 "%s: mcp.%s: give either \"command\" (a stdio server) or \"url\" (over HTTP)", path,
                                 name);
        if (type && (!json_is_string(type) ||
                     (strcmp(json_string_value(type), "stdio") != 0 && strcmp(json_string_value(type), "http") != 0)))
                return hull_fail(e, -EINVAL, "%s: mcp.%s.type must be \"stdio\" or \"http\"", path, name);
        if (type && strcmp(json_string_value(type), cmd ? "stdio" : "http") != 0)
                return hull_fail(e, -EINVAL, "%s: mcp.%s.type is \"%s\" but the entry has %s", path, name,
                                 json_string_value(type), cmd ? "a \"command\"" : "a \"url\"");
        if (cmd) {
                if (!json_is_string(cmd) || !json_string_length(cmd))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.command must be a non-empty string", path, name);
                if (json_object_get(v, "headers"))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.headers: only a server with a \"url\" takes headers",
                                         path, name);
                if (args && !json_is_array(args))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.args must be an array of strings", path, name);
                if (json_array_size(args) + 1 > MCP_ARGV_MAX)
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.args: more than %u arguments", path, name,
                                         MCP_ARGV_MAX - 1);
                size_t i;
                json_array_foreach(args, i, x) if (!json_is_string(x)) return hull_fail(
                        e, -EINVAL, "%s: mcp.%s.args[%zu] must be a string", path, name, i);
                const json_t *env = json_object_get(v, "env"), *cwd = json_object_get(v, "cwd");
                if (env && (!json_is_object(env) || !object_of_strings(env)))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.env must be an object of strings", path, name);
                if (json_object_size(env) > MCP_ENV_MAX)
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.env: more than %u variables", path, name, MCP_ENV_MAX);
                json_object_foreach((json_t *) env, key, x) if (!key[0] || strchr(key, '=')) return hull_fail(
                        e, -EINVAL, "%s: mcp.%s.env: \"%.64s\" is not a variable name", path, name, key);
                if (cwd && (!json_is_string(cwd) || !json_string_length(cwd)))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.cwd must be a non-empty string", path, name);
                return check_mcp_sandbox(name, json_object_get(v, "sandbox"), env, path, e);
        }
        if (json_object_get(v, "sandbox"))
                return hull_fail(e, -EINVAL, "%s: mcp.%s.sandbox: only a server with a \"command\" takes it", path,
                                 name);
        for (size_t i = 0; i < 3; i++)
                if (json_object_get(v, keys[2 + i]))
                        return hull_fail(e, -EINVAL, "%s: mcp.%s.%s: only a server with a \"command\" takes it", path,
                                         name, keys[2 + i]);
        const char *u = json_string_value(url);
        if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
                return hull_fail(e, -EINVAL, "%s: mcp.%s.url must be an http:// or https:// URL", path, name);
        const json_t *h = json_object_get(v, "headers");
        if (h && (!json_is_object(h) || !object_of_strings(h)))
                return hull_fail(e, -EINVAL, "%s: mcp.%s.headers must be an object of strings", path, name);
        json_object_foreach(
                (json_t *) h, key,
                x) if (!key[0] || strpbrk(key, ": \r\n") ||
                       strpbrk(json_string_value(x), "\r\n")) return hull_fail(e, -EINVAL,
                                                                               "%s: mcp.%s.headers.%.64s: not a header "
                                                                               "name and one-line value",
                                                                               path, name, key);
        return 0;
}

/* The file's shape, strictly: a typo in a key must not silently do nothing. */
static int check_file(const json_t *f, const char *path, hull_error *e) {
        static const struct {
                const char *key;
                json_type type;
        } keys[] = {
                {"provider", JSON_STRING},
                {"model", JSON_STRING},
                {"base_url", JSON_STRING},
                {"api_key", JSON_STRING},
                {"headers", JSON_OBJECT},
                {"stream", JSON_TRUE},
                {"max_output_tokens", JSON_INTEGER},
                {"max_turns", JSON_INTEGER},
                {"max_tool_calls", JSON_INTEGER},
                {"context_tokens", JSON_INTEGER},
                {"tools", JSON_OBJECT},
                {"web", JSON_OBJECT},
                {"search", JSON_OBJECT},
                {"mcp", JSON_OBJECT},
                {"pricing", JSON_OBJECT},
        };
        const char *key;
        json_t *v;

        if (!json_is_object(f))
                return hull_fail(e, -EINVAL, "%s: expected a JSON object", path);
        json_object_foreach((json_t *) f, key, v) {
                size_t i;
                if (strncmp(key, "//", 2) == 0) /* a comment (JSON has none): "//", "// model", ... */
                        continue;
                for (i = 0; i < ELEMENTSOF(keys); i++)
                        if (strcmp(key, keys[i].key) == 0)
                                break;
                if (i == ELEMENTSOF(keys))
                        return hull_fail(e, -EINVAL, "%s: unknown key \"%.64s\" (see docs/AGENT.md for the keys)", path,
                                         key);
                bool ok = keys[i].type == JSON_TRUE      ? json_is_boolean(v)
                          : keys[i].type == JSON_INTEGER ? json_is_integer(v) && json_integer_value(v) > 0
                                                         : json_typeof(v) == keys[i].type;
                if (!ok)
                        return hull_fail(e, -EINVAL, "%s: \"%s\" must be %s", path, key,
                                         keys[i].type == JSON_STRING    ? "a string"
                                         : keys[i].type == JSON_OBJECT  ? "an object"
                                         : keys[i].type == JSON_INTEGER ? "a positive integer"
                                                                        : "true or false");
        }
        json_object_foreach(json_object_get(f, "headers"), key, v) if (!json_is_string(v)) return hull_fail(
                e, -EINVAL, "%s: headers.%.64s must be a string", path, key);
        json_object_foreach(json_object_get(f, "tools"), key, v) if (
                !json_is_string(v) ||
                tool_policy_from_string(json_string_value(v)) <
                        0) return hull_fail(e, -EINVAL,
                                            "%s: tools.%.64s must be \"always_allow\", \"always_ask\" or \"deny\"",
                                            path, key);
        json_object_foreach(json_object_get(f, "web"), key, v) {
                if (strcmp(key, "max_bytes") == 0) {
                        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                                return hull_fail(e, -EINVAL, "%s: web.max_bytes must be a positive integer", path);
                        continue;
                }
                if (strcmp(key, "allow_hosts") != 0 && strcmp(key, "allow_cidrs") != 0)
                        return hull_fail(e, -EINVAL,
                                         "%s: unknown key \"web.%.64s\" (allow_hosts, allow_cidrs, max_bytes)", path,
                                         key);
                size_t i;
                json_t *x;
                if (!json_is_array(v))
                        return hull_fail(e, -EINVAL, "%s: web.%s must be an array of strings", path, key);
                json_array_foreach(v, i, x) if (!json_is_string(x) || !json_string_length(x)) return hull_fail(
                        e, -EINVAL, "%s: web.%s[%zu] must be a non-empty string", path, key, i);
        }
        json_object_foreach(
                json_object_get(f, "search"), key,
                v) if ((strcmp(key, "api_key") != 0 && strcmp(key, "base_url") != 0) ||
                       !json_is_string(
                               v)) return hull_fail(e, -EINVAL,
                                                    "%s: search.%.64s: expected \"api_key\" or \"base_url\", a string",
                                                    path, key);
        json_object_foreach(json_object_get(f, "pricing"), key, v) {
                static const char *const rates[] = {"input", "output", "cache_read", "cache_write"};
                const char *rk;
                json_t *rv;
                if (!json_is_object(v) || !json_is_number(json_object_get(v, "input")) ||
                    !json_is_number(json_object_get(v, "output")))
                        return hull_fail(e, -EINVAL,
                                         "%s: pricing.%.64s must be an object with at least \"input\" and \"output\" "
                                         "(US dollars per million tokens; \"cache_read\", \"cache_write\" optional)",
                                         path, key);
                json_object_foreach(v, rk, rv) {
                        size_t k = 0;
                        while (k < ELEMENTSOF(rates) && strcmp(rk, rates[k]) != 0)
                                k++;
                        if (k == ELEMENTSOF(rates) || !json_is_number(rv) || json_number_value(rv) < 0 ||
                            json_number_value(rv) > V1_PRICE_PER_MTOK_MAX)
                                return hull_fail(
                                        e, -EINVAL,
                                        "%s: pricing.%.64s.%.32s: expected one of input, output, cache_read, "
                                        "cache_write, a number of US dollars per million tokens from 0 to %.0f",
                                        path, key, rk, V1_PRICE_PER_MTOK_MAX);
                }
        }
        if (json_object_size(json_object_get(f, "mcp")) > MCP_SERVERS_MAX)
                return hull_fail(e, -EINVAL, "%s: mcp: more than %u servers", path, MCP_SERVERS_MAX);
        json_object_foreach(json_object_get(f, "mcp"), key, v) {
                int r = check_mcp_entry(key, v, path, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_file(const char *path, json_t **ret, hull_error *e) {
        json_error_t je;
        FILE *fp;
        json_t *j;

        *ret = NULL;
        if (!path)
                return 0;
        fp = fopen(path, "re");
        if (!fp) {
                if (errno == ENOENT)
                        return 0;
                return hull_err(e, -errno, "%s: cannot open it", path);
        }
        j = json_loadf(fp, JSON_REJECT_DUPLICATES, &je);
        fclose(fp);
        if (!j)
                return hull_fail(e, -EINVAL, "%s: line %d: %s", path, je.line, je.text);
        int r = check_file(j, path, e);
        if (r < 0) {
                json_decref(j);
                return r;
        }
        *ret = j;
        return 0;
}

static int strv_from_json(const json_t *a, char ***ret, size_t *ret_n) {
        size_t i, n = json_array_size(a);
        json_t *x;
        char **v;

        if (!n)
                return 0;
        v = calloc(n, sizeof(*v));
        if (!v)
                return -ENOMEM;
        json_array_foreach(a, i, x) {
                v[i] = strdup(json_string_value(x));
                if (!v[i]) {
                        free_strv(v, i);
                        return -ENOMEM;
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static bool is_official(const char *base_url, const char *host) {
        const char *p;
        if (!base_url)
                return true;
        p = strstr(base_url, "://");
        if (!p)
                return false;
        p += 3;
        size_t n = strlen(host);
        return strncmp(p, host, n) == 0 && (p[n] == '/' || p[n] == '\0' || p[n] == ':');
}

static int dup_into(char **dst, const char *v) {
        if (!v)
                return 0;
        *dst = strdup(v);
        return *dst ? 0 : -ENOMEM;
}

/* a, sep and b as one new string in *ret (left NULL on failure). */
static int join3(char **ret, const char *a, const char *sep, const char *b) {
        size_t na = strlen(a), ns = strlen(sep), nb = strlen(b);
        char *p = malloc(na + ns + nb + 1);
        if (!p)
                return -ENOMEM;
        memcpy(p, a, na);
        memcpy(p + na, sep, ns);
        memcpy(p + na + ns, b, nb + 1);
        *ret = p;
        return 0;
}

/* The file's "mcp" (checked by check_file) as s->mcp: the strings point into s->file. */
static int mcp_from_file(settings *s, const json_t *mcp) {
        const char *name, *k;
        json_t *v, *x;
        if (!json_object_size(mcp))
                return 0;
        s->mcp = calloc(json_object_size(mcp), sizeof(*s->mcp));
        if (!s->mcp)
                return -ENOMEM;
        json_object_foreach((json_t *) mcp, name, v) {
                settings_mcp *m = &s->mcp[s->n_mcp++];
                const json_t *args = json_object_get(v, "args"), *env = json_object_get(v, "env"),
                             *hdr = json_object_get(v, "headers");
                size_t i;
                m->name = name;
                m->url = json_string_value(json_object_get(v, "url"));
                m->cwd = json_string_value(json_object_get(v, "cwd"));
                if (m->url) {
                        m->headers = calloc(json_object_size(hdr) + 1, sizeof(*m->headers));
                        if (!m->headers)
                                return -ENOMEM;
                        i = 0;
                        json_object_foreach((json_t *) hdr, k, x) {
                                if (join3(&m->headers[i++], k, ": ", json_string_value(x)) < 0)
                                        return -ENOMEM;
                        }
                        continue;
                }
                const json_t *sb = json_object_get(v, "sandbox"), *hosts = json_object_get(sb, "allow_hosts");
                m->sandbox = json_is_true(sb) || json_is_object(sb);
                m->allow_package_managers = json_is_true(json_object_get(sb, "allow_package_managers"));
                m->net_allow_loopback = json_is_true(json_object_get(sb, "net_allow_loopback"));
                m->workdir = json_string_value(json_object_get(sb, "workdir"));
                if (json_array_size(hosts)) {
                        m->allow_hosts = calloc(json_array_size(hosts) + 1, sizeof(*m->allow_hosts));
                        if (!m->allow_hosts)
                                return -ENOMEM;
                        json_array_foreach(hosts, i, x) m->allow_hosts[i] = (char *) json_string_value(x);
                }
                m->argv = calloc(json_array_size(args) + 2, sizeof(*m->argv));
                m->env = calloc(json_object_size(env) + 1, sizeof(*m->env));
                if (!m->argv || !m->env)
                        return -ENOMEM;
                m->argv[0] = (char *) json_string_value(json_object_get(v, "command"));
                json_array_foreach(args, i, x) m->argv[i + 1] = (char *) json_string_value(x);
                i = 0;
                json_object_foreach((json_t *) env, k, x) {
                        if (join3(&m->env[i++], k, "=", json_string_value(x)) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* The model: provider, base URL, key, model and headers (the flags', the environment's, then
 * the file's). Returns 0 or a negative errno (with *e for what the user set wrong). */
static int load_model(settings *s, const settings_flags *f, const char *config_path, const dotenv *env, hull_error *e) {
        const char *provider, *provider_from = NULL, *key = NULL, *base, *model;
        const char *okey, *akey;
        int api;

        /* the provider */
        provider = f->provider, provider_from = "--provider";
        if (!provider)
                provider = env_get(env, "HULL_PROVIDER"), provider_from = "HULL_PROVIDER";
        if (!provider)
                provider = file_str(s->file, "provider"), provider_from = config_path;
        okey = env_get(env, "OPENAI_API_KEY");
        akey = env_get(env, "ANTHROPIC_API_KEY");
        base = f->base_url ? f->base_url : env_get(env, "HULL_BASE_URL");
        if (provider) {
                api = model_api_from_string(provider);
                if (api < 0)
                        return hull_fail(e, -EINVAL, "%s: unknown provider \"%.64s\" (openai or anthropic)",
                                         provider_from, provider);
        } else if (akey && okey && !f->api_key && !env_get(env, "HULL_API_KEY") && !file_str(s->file, "api_key"))
                return hull_fail(e, -EINVAL,
                                 "both ANTHROPIC_API_KEY and OPENAI_API_KEY are set: choose one with --provider or "
                                 "HULL_PROVIDER");
        else if (akey && !okey)
                api = MODEL_API_ANTHROPIC;
        else if (okey && !akey)
                api = MODEL_API_OPENAI;
        else if (base || file_str(s->file, "base_url") || env_get(env, "OPENAI_BASE_URL"))
                api = MODEL_API_OPENAI; /* a local OpenAI-compatible server */
        else if (env_get(env, "ANTHROPIC_BASE_URL"))
                api = MODEL_API_ANTHROPIC;
        else
                return hull_fail(
                        e, -EINVAL,
                        "no model provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or "
                        "HULL_BASE_URL for a local OpenAI-compatible server (or try `hull mock-model` offline)");
        s->model.api = (model_api) api;

        /* the base URL */
        if (!base)
                base = env_get(env, api == MODEL_API_OPENAI ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL");
        if (!base)
                base = file_str(s->file, "base_url");
        if (base && strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
                return hull_fail(e, -EINVAL, "the base URL \"%.128s\" is not an http:// or https:// URL", base);
        if (dup_into(&s->s_base_url, base) < 0)
                return -ENOMEM;

        /* the key */
        if (f->api_key)
                key = f->api_key, s->key_source = "--api-key";
        else if ((key = env_get(env, api == MODEL_API_OPENAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY")))
                s->key_source = api == MODEL_API_OPENAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
        else if ((key = env_get(env, "HULL_API_KEY")))
                s->key_source = "HULL_API_KEY";
        else if ((key = file_str(s->file, "api_key")))
                s->key_source = "config.json";
        if (!key && !base)
                return hull_fail(e, -EINVAL, "no API key for %s: set %s (or pass --api-key)", model_api_to_string(api),
                                 api == MODEL_API_OPENAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY");
        if (dup_into(&s->s_api_key, key) < 0)
                return -ENOMEM;

        /* the model */
        model = f->model ? f->model : env_get(env, "HULL_MODEL");
        if (!model)
                model = file_str(s->file, "model");
        if (!model) {
                bool official = api == MODEL_API_OPENAI ? is_official(base, "api.openai.com")
                                                        : is_official(base, "api.anthropic.com");
                if (!official)
                        return hull_fail(e, -EINVAL, "no model named for %.128s: pass --model or set HULL_MODEL", base);
                model = api == MODEL_API_OPENAI ? DEFAULT_MODEL_OPENAI : DEFAULT_MODEL_ANTHROPIC;
        }
        if (dup_into(&s->s_model, model) < 0)
                return -ENOMEM;

        /* headers: the file's, then the flags' */
        const json_t *fh = json_object_get(s->file, "headers");
        size_t nh = json_object_size(fh) + f->n_headers;
        if (nh) {
                const char *hk;
                json_t *hv;
                s->s_headers = calloc(nh + 1, sizeof(char *));
                if (!s->s_headers)
                        return -ENOMEM;
                json_object_foreach((json_t *) fh, hk, hv) if (asprintf(&s->s_headers[s->n_s_headers++], "%s: %s", hk,
                                                                        json_string_value(hv)) < 0) return -ENOMEM;
                for (size_t i = 0; i < f->n_headers; i++) {
                        if (!strchr(f->headers[i], ':'))
                                return hull_fail(e, -EINVAL, "--header \"%.64s\": expected \"Name: value\"",
                                                 f->headers[i]);
                        if (dup_into(&s->s_headers[s->n_s_headers++], f->headers[i]) < 0)
                                return -ENOMEM;
                }
        }

        s->model.base_url = s->s_base_url;
        s->model.api_key = s->s_api_key;
        s->model.model = s->s_model;
        s->model.headers = (const char *const *) s->s_headers;
        s->model.n_headers = s->n_s_headers;
        s->model.compat = -1;
        s->model.stream = f->stream >= 0 ? f->stream
                          : json_is_boolean(json_object_get(s->file, "stream"))
                                  ? json_is_true(json_object_get(s->file, "stream"))
                                  : true;
        s->model.max_output_tokens =
                (uint32_t) (f->max_output_tokens
                                    ? f->max_output_tokens
                                    : (uint64_t) json_integer_value(json_object_get(s->file, "max_output_tokens")));
        s->model.max_retries = MODEL_RETRIES_DEFAULT;
        return 0;
}

/* Tool policies, web_fetch's limits and the search key. Returns 0 or -ENOMEM. */
static int load_tools(settings *s, const dotenv *env) {
        const json_t *tools = json_object_get(s->file, "tools");
        if (json_object_size(tools)) {
                const char *tk;
                json_t *tv;
                s->policies = calloc(json_object_size(tools), sizeof(*s->policies));
                if (!s->policies)
                        return -ENOMEM;
                json_object_foreach((json_t *) tools, tk, tv) {
                        s->policies[s->n_policies].tool = strdup(tk);
                        if (!s->policies[s->n_policies].tool)
                                return -ENOMEM;
                        s->policies[s->n_policies++].policy =
                                (tool_policy) tool_policy_from_string(json_string_value(tv));
                }
        }
        const json_t *web = json_object_get(s->file, "web");
        if (strv_from_json(json_object_get(web, "allow_hosts"), &s->allow_hosts, &s->n_allow_hosts) < 0 ||
            strv_from_json(json_object_get(web, "allow_cidrs"), &s->allow_cidrs, &s->n_allow_cidrs) < 0)
                return -ENOMEM;
        s->web_max_bytes = (uint64_t) json_integer_value(json_object_get(web, "max_bytes"));
        const json_t *search = json_object_get(s->file, "search");
        const char *skey = env_get(env, "TAVILY_API_KEY"), *sbase = env_get(env, "HULL_SEARCH_BASE_URL");
        if (!skey)
                skey = file_str(search, "api_key");
        if (!sbase)
                sbase = file_str(search, "base_url");
        if (dup_into(&s->search_api_key, skey) < 0 || dup_into(&s->search_base_url, sbase) < 0)
                return -ENOMEM;
        return 0;
}

int settings_load(const settings_flags *f, const char *config_path, const dotenv *env, settings *ret, hull_error *e) {
        static const settings_flags none = {.stream = -1};
        _cleanup_(settings_done) settings s = {0};
        int r;

        if (!f)
                f = &none;
        r = load_file(config_path, &s.file, e);
        if (r < 0)
                return r;
        r = load_model(&s, f, config_path, env, e);
        if (r < 0)
                return r;
        s.max_turns = (unsigned) json_integer_value(json_object_get(s.file, "max_turns"));
        s.max_tool_calls = (unsigned) json_integer_value(json_object_get(s.file, "max_tool_calls"));
        s.context_tokens = (uint64_t) json_integer_value(json_object_get(s.file, "context_tokens"));

        r = load_tools(&s, env);
        if (r < 0)
                return r;

        r = mcp_from_file(&s, json_object_get(s.file, "mcp"));
        if (r < 0)
                return r;

        *ret = s;
        s = (settings){0};
        return 0;
}

tool_policy settings_policy_for(const settings *s, const char *tool, tool_policy def) {
        for (size_t i = 0; s && i < s->n_policies; i++)
                if (strcmp(s->policies[i].tool, tool) == 0)
                        return s->policies[i].policy;
        return def;
}
