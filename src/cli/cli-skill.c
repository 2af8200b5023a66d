/* cli-skill.c: `hull skill add DIR|ZIP` and `hull skill list`: skills on a running hull serve's
 * /v1/skills. A directory is read and checked here as the server checks it (skill-pack.h: a
 * SKILL.md with its name and description, no links, the bounds) and sent as one zip; a zip or
 * tar archive is sent as it is. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-client.h"
#include "cli.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "macro.h"
#include "skill-pack.h"

#define CMD "skill"
#define SKILL_CLI_CALL_MS 120000U /* one call to hull serve */

enum {
        OPT_URL = 0x100,
        OPT_API_KEY,
        OPT_NAME,
        OPT_TO,
        OPT_JSON,
        OPT_INSECURE,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"url", required_argument, NULL, OPT_URL},
        {"api-key", required_argument, NULL, OPT_API_KEY},
        {"name", required_argument, NULL, OPT_NAME},
        {"to", required_argument, NULL, OPT_TO},
        {"json", no_argument, NULL, OPT_JSON},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {},
};

void cli_skill_help(void) {
        printf("Usage: hull skill add [--name TITLE] [--to SKILL_ID] DIR|ARCHIVE [--url URL] [--api-key KEY]\n"
               "       hull skill list [--json] [--url URL] [--api-key KEY]\n\n"
               "Skills on a running hull serve (its /v1/skills). A skill is a directory with a SKILL.md whose\n"
               "front matter names it and says when to use it:\n\n"
               "    ---\n"
               "    name: pdf-tools\n"
               "    description: Fill PDF forms with the bundled script.\n"
               "    ---\n"
               "    (instructions the model reads when it uses the skill)\n\n"
               "An agent that lists the skill in its \"skills\" ({\"type\": \"custom\", \"skill_id\": ...}) gets it\n"
               "read-only at /skills/DIR/ in its sessions' sandboxes, named (name and description) in its\n"
               "system prompt; the model reads SKILL.md when it needs it.\n\n"
               "  add PATH   upload a directory (checked here first, sent as a zip) or a zip or tar archive\n"
               "             of one; prints the skill's id and version\n"
               "  list       the skills: id, latest version, name\n\n"
               "Options:\n"
               "  --name TITLE     the skill's display name (default: its SKILL.md name)\n"
               "  --to SKILL_ID    add PATH as a new version of that skill\n"
               "  --url URL        hull serve's address (default $HULL_URL, else " CLI_SERVE_DEFAULT_URL ")\n"
               "  --api-key KEY    a /v1 API key (default $HULL_SERVE_KEY; 'hull key create' makes one)\n"
               "  --insecure       allow cleartext http to a host that is not loopback\n"
               "  --json           print the answers as JSON\n");
}

/* ---- a directory read into a pack ---- */

static int walk(int dfd, const char *rel, unsigned depth, skp_pack *p, hull_error *e) {
        _cleanup_close_ int fd = dup(dfd);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                return hull_err(e, -errno, "cannot read the directory %s", rel);
        TAKE_FD(fd);
        int r = 0;
        struct dirent *de;
        char path[SKILL_PATH_MAX];
        while (r >= 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if ((size_t) snprintf(path, sizeof(path), "%s/%s", rel, de->d_name) >= sizeof(path)) {
                        r = hull_fail(e, -E2BIG, "%s/%s: the path is too long", rel, de->d_name);
                        break;
                }
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = hull_err(e, -errno, "cannot look at %s", path);
                        break;
                }
                if (S_ISDIR(st.st_mode)) {
                        if (depth >= SKILL_DEPTH_MAX) {
                                r = hull_fail(e, -E2BIG, "%s: deeper than %u directories", path, SKILL_DEPTH_MAX);
                                break;
                        }
                        _cleanup_close_ int sub =
                                openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        r = sub < 0 ? hull_err(e, -errno, "cannot open %s", path) : walk(sub, path, depth + 1, p, e);
                } else if (S_ISREG(st.st_mode)) {
                        if ((uint64_t) st.st_size > SKILL_UNPACKED_MAX) {
                                r = hull_fail(e, -E2BIG, "%s: over %u bytes", path, SKILL_UNPACKED_MAX);
                                break;
                        }
                        _cleanup_close_ int f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                        _cleanup_free_ char *buf = malloc((size_t) st.st_size + 1);
                        ssize_t n = f >= 0 && buf ? loop_read(f, buf, (size_t) st.st_size) : -1;
                        if (n != st.st_size)
                                r = hull_err(e, n < 0 ? -errno : -EIO, "cannot read %s", path);
                        else
                                r = skp_pack_add(p, path, buf, (size_t) n, (st.st_mode & 0111) != 0, e);
                } else
                        r = hull_fail(e, -EINVAL, "%s: only files and directories go into a skill (not links)", path);
        }
        closedir(d);
        return r;
}

/* PATH as the bytes to upload: a directory checked and zipped, an archive read. */
static int upload_bytes(const char *arg, uint8_t **ret, size_t *ret_len, char ret_name[static SKILL_NAME_MAX + 8]) {
        struct stat st;
        hull_error e = {0};
        if (stat(arg, &st) < 0) {
                cli_error(CMD, "%s: %m", arg);
                return CLI_EXIT_USAGE;
        }
        if (!S_ISDIR(st.st_mode)) {
                _cleanup_free_ char *buf = NULL;
                size_t len = 0;
                int r = cli_read_input(arg, SKILL_UPLOAD_MAX, &buf, &len);
                if (r < 0) {
                        cli_error(CMD, "%s: %s", arg, r == -EFBIG ? "over the upload bound of 8 MiB" : strerror(-r));
                        return CLI_EXIT_FAILURE;
                }
                if (!skp_is_archive((const uint8_t *) buf, len)) {
                        cli_error(CMD, "%s is neither a directory nor a zip or tar archive", arg);
                        return CLI_EXIT_USAGE;
                }
                snprintf(ret_name, SKILL_NAME_MAX + 8, "skill.zip");
                *ret = (uint8_t *) TAKE_PTR(buf);
                *ret_len = len;
                return 0;
        }
        _cleanup_(skp_pack_done) skp_pack p = {0};
        _cleanup_close_ int dfd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char top[SKILL_NAME_MAX + 1];
        _cleanup_free_ char *real = realpath(arg, NULL);
        const char *base = real ? strrchr(real, '/') : NULL;
        snprintf(top, sizeof(top), "%s", base && base[1] ? base + 1 : "skill");
        int r = dfd < 0 ? hull_err(&e, -errno, "cannot open %s", arg) : walk(dfd, top, 0, &p, &e);
        if (r >= 0)
                r = skp_pack_finish(&p, &e);
        if (r >= 0)
                r = skp_pack_to_zip(&p, ret, ret_len, &e);
        if (r < 0) {
                cli_error(CMD, "%s: %s", arg, e.msg);
                return CLI_EXIT_FAILURE;
        }
        snprintf(ret_name, SKILL_NAME_MAX + 8, "%s.zip", p.directory);
        return 0;
}

/* ---- calls ---- */

typedef struct skill_args {
        const char *url, *key, *name, *to;
        bool json, insecure;
} skill_args;

static void report(const char *what, long status, const char *body, size_t len) {
        json_error_t je;
        _cleanup_(json_decrefp) json_t *o = json_loadb(body, len, 0, &je);
        const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
        if (msg)
                cli_error(CMD, "%s: HTTP %ld: %s", what, status, msg);
        else
                cli_error(CMD, "%s: HTTP %ld: %.*s", what, status, (int) MIN(len, (size_t) 300), body);
}

/* method path with a body (content_type, or NULL: none): a 2xx JSON object into *ret. */
static int call(cli_client *c, const skill_args *a, const char *method, const char *path, const char *content_type,
                const char *body, size_t len, const char *what, json_t **ret) {
        char url[HTTPC_URL_MAX], key_header[AUTH_TOKEN_MAX + 16] = "", ct[128] = "";
        if ((size_t) snprintf(url, sizeof(url), "%s%s", c->base, path) >= sizeof(url)) {
                cli_error(CMD, "%s: the URL is too long", what);
                return CLI_EXIT_FAILURE;
        }
        const char *key = a->key ? a->key : getenv("HULL_SERVE_KEY");
        if (key && key[0])
                snprintf(key_header, sizeof(key_header), "x-api-key: %s", key);
        if (content_type)
                snprintf(ct, sizeof(ct), "content-type: %s", content_type);
        const char *headers[4] = {"anthropic-version: 2023-06-01"};
        size_t nh = 1;
        if (key_header[0] || c->auth[0])
                headers[nh++] = key_header[0] ? key_header : c->auth;
        if (ct[0])
                headers[nh++] = ct;
        httpc_request hr = {.method = method,
                            .url = url,
                            .unix_socket = c->unix_path,
                            .headers = headers,
                            .body = body,
                            .body_len = len,
                            .timeout_ms = SKILL_CLI_CALL_MS,
                            .answer_max = V1_BODY_MAX};
        httpc_answer ans;
        hull_error e = {0};
        int k = httpc_perform(c->http, &hr, &ans, &e);
        explicit_bzero(key_header, sizeof(key_header));
        if (k < 0) {
                cli_error(CMD, "%s: %s%s", what, e.msg,
                          k == -ECONNREFUSED ? " (is 'hull serve' running there? see --url)" : "");
                return CLI_EXIT_FAILURE;
        }
        if (ans.status < 200 || ans.status > 299) {
                report(what, ans.status, ans.body, ans.body_len);
                httpc_answer_done(&ans);
                return CLI_EXIT_FAILURE;
        }
        json_error_t je;
        json_t *o = json_loadb(ans.body, ans.body_len, 0, &je);
        httpc_answer_done(&ans);
        if (!json_is_object(o)) {
                json_decref(o);
                cli_error(CMD, "%s: the answer is not a JSON object", what);
                return CLI_EXIT_FAILURE;
        }
        *ret = o;
        return 0;
}

static int add(cli_client *c, const skill_args *a, const char *arg) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t len = 0;
        char fname[SKILL_NAME_MAX + 8];
        int k = upload_bytes(arg, &bytes, &len, fname);
        if (k)
                return k;
        uint8_t rnd[12];
        char boundary[40], ctype[80], path[64 + STORE_ID_MAX];
        (void) getrandom(rnd, sizeof(rnd), 0);
        int n = snprintf(boundary, sizeof(boundary), "hull-skill-");
        for (size_t i = 0; i < sizeof(rnd); i++)
                n += snprintf(boundary + n, sizeof(boundary) - (size_t) n, "%02x", rnd[i]);
        snprintf(ctype, sizeof(ctype), "multipart/form-data; boundary=%s", boundary);
        _cleanup_(dynbuf_freep) dynbuf body;
        dynbuf_init(&body, SKILL_UPLOAD_MAX + 4096);
        int r = 0;
        if (a->name && !a->to)
                r = dynbuf_addf(&body, "--%s\r\nContent-Disposition: form-data; name=\"display_name\"\r\n\r\n%s\r\n",
                                boundary, a->name);
        r = r
                    ?: dynbuf_addf(&body,
                                   "--%s\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"%s\"\r\n"
                                   "Content-Type: application/zip\r\n\r\n",
                                   boundary, fname);
        r = r ?: dynbuf_add(&body, bytes, len);
        r = r ?: dynbuf_addf(&body, "\r\n--%s--\r\n", boundary);
        if (r < 0) {
                cli_error(CMD, "%s: over the upload bound of %u bytes", arg, SKILL_UPLOAD_MAX);
                return CLI_EXIT_FAILURE;
        }
        if (a->to)
                snprintf(path, sizeof(path), "/v1/skills/%.64s/versions", a->to);
        else
                snprintf(path, sizeof(path), "/v1/skills");
        _cleanup_(json_decrefp) json_t *o = NULL;
        if ((k = call(c, a, "POST", path, ctype, body.buf, body.len, "uploading the skill", &o)) != 0)
                return k;
        if (a->json) {
                _cleanup_free_ char *s = json_dumps(o, JSON_INDENT(2));
                printf("%s\n", s ? s : "{}");
        } else if (a->to)
                printf("%s version %s (%s)\n", a->to, json_string_value(json_object_get(o, "id")) ?: "?",
                       json_string_value(json_object_get(o, "name")) ?: "?");
        else
                printf("%s version %s (%s)\n", json_string_value(json_object_get(o, "id")) ?: "?",
                       json_string_value(json_object_get(o, "latest_version_id")) ?: "?",
                       json_string_value(json_object_get(o, "display_name")) ?: "?");
        return 0;
}

static int list(cli_client *c, const skill_args *a) {
        _cleanup_(json_decrefp) json_t *all = json_array();
        char path[64 + STORE_CURSOR_MAX] = "/v1/skills?limit=100";
        for (unsigned pages = 0; all && pages < 1000; pages++) {
                _cleanup_(json_decrefp) json_t *o = NULL;
                int k = call(c, a, "GET", path, NULL, NULL, 0, "listing skills", &o);
                if (k)
                        return k;
                json_array_extend(all, json_object_get(o, "data"));
                const char *next = json_string_value(json_object_get(o, "next_page"));
                if (!next || !next[0] || json_array_size(json_object_get(o, "data")) == 0)
                        break;
                snprintf(path, sizeof(path), "/v1/skills?limit=100&page=%.*s", (int) STORE_CURSOR_MAX, next);
        }
        if (a->json) {
                _cleanup_free_ char *s = json_dumps(all, JSON_INDENT(2));
                printf("%s\n", s ? s : "[]");
                return 0;
        }
        size_t i;
        json_t *s;
        json_array_foreach(all, i, s) printf("%-32s %-18s %s\n", json_string_value(json_object_get(s, "id")) ?: "",
                                             json_string_value(json_object_get(s, "latest_version_id")) ?: "-",
                                             json_string_value(json_object_get(s, "display_name")) ?: "");
        return 0;
}

#define usage_error(...) cli_usage_error(CMD, CLI_EXIT_USAGE, __VA_ARGS__)

int cli_skill_main(int argc, char **argv) {
        skill_args a = {0};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_skill_help();
                        return 0;
                case OPT_URL:
                        a.url = optarg;
                        break;
                case OPT_API_KEY:
                        a.key = optarg;
                        break;
                case OPT_NAME:
                        a.name = optarg;
                        break;
                case OPT_TO:
                        a.to = optarg;
                        break;
                case OPT_JSON:
                        a.json = true;
                        break;
                case OPT_INSECURE:
                        a.insecure = true;
                        break;
                default:
                        return CLI_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                cli_skill_help();
                return CLI_EXIT_USAGE;
        }
        const char *sub = argv[optind];
        bool is_add = strcmp(sub, "add") == 0, is_list = strcmp(sub, "list") == 0;
        if (!is_add && !is_list)
                return usage_error("no subcommand '%s' (add, list)", sub);
        if (is_add && optind + 2 != argc)
                return usage_error("add takes one DIR or ARCHIVE");
        if (is_list && optind + 1 != argc)
                return usage_error("list takes no argument");
        _cleanup_(cli_client_done) cli_client cl = {0};
        int k = cli_client_setup(&cl, CMD, a.url, NULL, NULL, a.insecure);
        if (k)
                return k;
        return is_add ? add(&cl, &a, argv[optind + 1]) : list(&cl, &a);
}
