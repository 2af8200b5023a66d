/* v1-repo.c: see v1-repo.h. git runs as a child of hull serve under timeout(1), with a scrubbed
 * environment (no user or system git config, no prompt, http and https only, redirects not
 * followed, the guard's addresses pinned with http.curloptResolve); the token is only in that
 * child's environment. */
#include "v1-repo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "svc-agent.h"
#include "home.h"
#include "macro.h"
#include "ss.h"
#include "time-util.h"
#include "v1-resources.h"
#include "v1-run.h"
#include "vault-seal.h"

#define WS_MOUNT "/workspace/"
#define REPO_TAR_MAX (WS_TAR_BYTES_DEFAULT)
#define GIT_ENV_MAX 16

/* argv run (timeout(1) first) with env; git's messages into out. Returns the exit status (124:
 * the time ran out), or a negative errno. */
static int run(char *const argv[], char *const env[], char *out, size_t size) {
        int fds[2];
        out[0] = '\0';
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                safe_close(fds[0]);
                safe_close(fds[1]);
                return r;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY);
                if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
                        _exit(127);
                execve(argv[0], argv, env);
                _exit(127);
        }
        safe_close(fds[1]);
        size_t n = 0;
        for (;;) {
                char buf[512];
                ssize_t k = read(fds[0], buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                size_t take = MIN((size_t) k, size - 1 - n);
                memcpy(out + n, buf, take);
                n += take;
        }
        out[n] = '\0';
        safe_close(fds[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* git with args (NULL-ended, at most 12) under the clone's time bound; token and pin NULL when
 * not wanted. */
static int git(const char *const *args, const char *token, const char *pin, char *out, size_t size) {
        char tmo[16], count[32], *header = NULL, *resolve = NULL;
        snprintf(tmo, sizeof(tmo), "%u", V1_REPO_CLONE_TIMEOUT_S);
        const char *argv[20] = {"/usr/bin/timeout", "-k", "5", tmo, "/usr/bin/git"};
        size_t a = 5;
        for (size_t i = 0; args[i] && a < ELEMENTSOF(argv) - 1; i++)
                argv[a++] = args[i];
        argv[a] = NULL;
        const char *env[GIT_ENV_MAX + 8] = {"PATH=/usr/bin:/bin",
                                            "HOME=/nonexistent",
                                            "LC_ALL=C",
                                            "GIT_CONFIG_NOSYSTEM=1",
                                            "GIT_CONFIG_GLOBAL=/dev/null",
                                            "GIT_TERMINAL_PROMPT=0",
                                            "GIT_ASKPASS=/bin/false",
                                            "GIT_ALLOW_PROTOCOL=http:https",
                                            "GIT_CONFIG_KEY_0=http.followRedirects",
                                            "GIT_CONFIG_VALUE_0=false"};
        size_t e = 10, k = 1;
        if (token && asprintf(&header, "GIT_CONFIG_VALUE_%zu=Authorization: Bearer %s", k, token) >= 0) {
                env[e++] = "GIT_CONFIG_KEY_1=http.extraHeader"; /* the first after redirects */
                env[e++] = header;
                k++;
        }
        char key[48];
        if (pin && asprintf(&resolve, "GIT_CONFIG_VALUE_%zu=%s", k, pin) >= 0) {
                snprintf(key, sizeof(key), "GIT_CONFIG_KEY_%zu=http.curloptResolve", k);
                env[e++] = key;
                env[e++] = resolve;
                k++;
        }
        snprintf(count, sizeof(count), "GIT_CONFIG_COUNT=%zu", k);
        env[e++] = count;
        env[e] = NULL;
        int r = run((char *const *) argv, (char *const *) env, out, size);
        if (header) {
                explicit_bzero(header, strlen(header));
                free(header);
        }
        free(resolve);
        return r;
}

static void rm_tree(const char *p) {
        char out[256];
        const char *argv[] = {"/usr/bin/rm", "-rf", "--one-file-system", "--", p, NULL};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        (void) run((char *const *) argv, (char *const *) env, out, sizeof(out));
}

/* git's messages for an error: the last line, the token (should git ever echo it) masked. */
static const char *said(char *out, const char *token) {
        if (token && token[0])
                for (char *p; (p = strstr(out, token));)
                        memset(p, '*', strlen(token));
        size_t n = strlen(out);
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
                out[--n] = '\0';
        char *nl = strrchr(out, '\n');
        return nl ? nl + 1 : out;
}

/* url through the egress guard with st's allowlist: pin its checked addresses (CURLOPT_RESOLVE). */
static int guard(const settings *st, const char *url, const char *path, char *pin, bool *ret_pinned, v1_err *err) {
        _cleanup_(egress_target_done) egress_target t = {0};
        char what[96];
        hull_error e = {0};
        snprintf(what, sizeof(what), "%s.url", path);
        if (svc_egress_check(st, what, url, VAULT_TOKEN_TIMEOUT_MS, &t, &e) < 0)
                return v1_fail(err, 400, NULL, "%s", e.msg);
        *ret_pinned = !t.literal;
        if (!t.literal && egress_target_pin(&t, pin) < 0)
                return v1_fail(err, 400, NULL, "%s.url: the host name is too long", path);
        return 0;
}

/* The repository's name from url's last path segment (".git" dropped); -EINVAL when it has none. */
static int repo_name(const char *url, char ret[V1_MOUNT_PATH_MAX]) {
        const char *s = strstr(url, "://");
        s = s ? strchr(s + 3, '/') : NULL;
        if (!s)
                return -EINVAL;
        size_t n = strcspn(s, "?#");
        while (n > 0 && s[n - 1] == '/')
                n--;
        const char *b = s + n;
        while (b > s && b[-1] != '/')
                b--;
        size_t k = (size_t) (s + n - b);
        if (k > 4 && strncmp(b + k - 4, ".git", 4) == 0)
                k -= 4;
        if (k == 0 || k >= 128 || (k <= 2 && b[0] == '.' && (k == 1 || b[1] == '.')))
                return -EINVAL;
        for (size_t i = 0; i < k; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", b[i]))
                        return -EINVAL;
        snprintf(ret, V1_MOUNT_PATH_MAX, "%.*s", (int) k, b);
        return 0;
}

/* The checkout ({type: branch, name} | {type: commit, sha} | null) checked: *ret_ref the branch
 * or the commit (NULL: the default branch), *ret_commit which. */
static int checkout_of(const json_t *c, const char *path, const char **ret_ref, bool *ret_commit, v1_err *err) {
        *ret_ref = NULL;
        *ret_commit = false;
        if (!c || json_is_null(c))
                return 0;
        const char *type = json_string_value(json_object_get(c, "type"));
        bool commit = type && strcmp(type, "commit") == 0;
        if (!json_is_object(c) || !type || (!commit && strcmp(type, "branch") != 0) || json_object_size(c) != 2)
                return v1_fail(err, 400, NULL,
                               "%s.checkout: {\"type\":\"branch\",\"name\"} or {\"type\":\"commit\",\"sha\"} or null",
                               path);
        const char *v = json_string_value(json_object_get(c, commit ? "sha" : "name"));
        size_t n = v ? strlen(v) : 0;
        if (!v || n == 0 || n > 255 || v[0] == '-')
                return v1_fail(err, 400, NULL, "%s.checkout.%s: required, a %s", path, commit ? "sha" : "name",
                               commit ? "commit's hex sha" : "branch name (not starting with '-')");
        for (size_t i = 0; i < n; i++)
                if (commit ? !strchr("0123456789abcdefABCDEF", v[i])
                           : ((unsigned char) v[i] <= 0x20 || v[i] == 0x7f || strchr("~^:?*[\\", v[i])))
                        return v1_fail(err, 400, NULL, "%s.checkout.%s: '%.80s' is not a %s", path,
                                       commit ? "sha" : "name", v, commit ? "hex sha" : "branch name");
        if (commit && (n < 7 || n > 64))
                return v1_fail(err, 400, NULL, "%s.checkout.sha: 7 to 64 hex digits", path);
        *ret_ref = v;
        *ret_commit = commit;
        return 0;
}

static int repos_dir(const char *mnt_root, char *ret, size_t size) {
        if ((size_t) snprintf(ret, size, "%s/.repos", mnt_root) >= size)
                return -ENAMETOOLONG;
        if (mkdir(mnt_root, 0711) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(ret, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Clone url into dst (absent) at ref; the commit checked out into sha. */
static int clone(const char *url, const char *ref, bool commit, const char *token, const char *pin, const char *dst,
                 const char *path, char sha[65], v1_err *err) {
        char out[V1_REPO_GIT_OUTPUT_MAX];
        const char *full[] = {"clone", "--quiet", "--no-checkout", "--", url, dst, NULL};
        const char *branch[] = {"clone", "--quiet", "--depth", "1", "--single-branch", "--branch", ref,
                                "--",    url,       dst,       NULL};
        const char *dflt[] = {"clone", "--quiet", "--depth", "1", "--single-branch", "--", url, dst, NULL};
        int r = git(commit ? full : ref ? branch : dflt, token, pin, out, sizeof(out));
        if (r != 0) {
                bool auth = strstr(out, "could not read Username") || strstr(out, "Authentication failed") ||
                            strstr(out, " 401") || strstr(out, " 403");
                return v1_fail(err, 400, NULL, "%s: cloning %.200s failed%s: %.300s%s", path, url,
                               r == 124 ? " (it took too long)" : "", said(out, token),
                               auth ? " (the server refused the credentials: check authorization_token)" : "");
        }
        if (commit) {
                const char *co[] = {"-C", dst, "checkout", "--quiet", "--detach", ref, "--", NULL};
                if (git(co, NULL, NULL, out, sizeof(out)) != 0)
                        return v1_fail(err, 400, NULL, "%s.checkout.sha: %.200s has no commit %.64s: %.300s", path, url,
                                       ref, said(out, NULL));
        }
        const char *rev[] = {"-C", dst, "rev-parse", "HEAD", NULL};
        if (git(rev, NULL, NULL, out, sizeof(out)) != 0 || strspn(out, "0123456789abcdef") < 40)
                return v1_fail(err, 500, NULL, "%s: the clone of %.200s has no commit checked out", path, url);
        snprintf(sha, 65, "%.*s", (int) strspn(out, "0123456789abcdef"), out);
        return 0;
}

static int seal_token(const char *mnt_root, const char *rid, const char *token, v1_err *err) {
        char home[SBX_PATH_MAX], p[4200];
        hull_error e = {0};
        _cleanup_(vault_keyring_wipep) vault_keyring k = {0};
        _cleanup_free_ char *sealed = NULL;
        snprintf(p, sizeof(p), "%s/.repos/%s.token", mnt_root, rid);
        if (!token) {
                (void) unlink(p);
                return 0;
        }
        int r = home_resolve(home, &e);
        if (r >= 0)
                r = vault_keyring_load(home, &k, &e);
        if (r >= 0)
                r = vault_seal(&k, rid, token, strlen(token), &sealed, &e);
        if (r < 0)
                return v1_fail(err, 500, NULL, "the repository's token cannot be sealed: %s", e.msg);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, sealed, strlen(sealed)) != (ssize_t) strlen(sealed))
                return v1_fail(err, 500, NULL, "the repository's sealed token cannot be written");
        return 0;
}

int v1_repo_set_token(const char *mnt_root, const json_t *res, const char *token, v1_err *err) {
        const char *rid = json_string_value(json_object_get(res, "id"));
        if (!mnt_root || !rid)
                return v1_fail(err, 500, NULL, "the resource has no clone to keep a token for");
        if (token && strlen(token) >= V1_REPO_TOKEN_MAX)
                return v1_fail(err, 400, NULL, "authorization_token: longer than %u bytes", V1_REPO_TOKEN_MAX - 1);
        return seal_token(mnt_root, rid, token, err);
}

/* The mount path: given (NULL: WS_MOUNT<name>; relative: below WS_MOUNT), below /workspace/ (a
 * writable checkout in the session's workspace) or below /mnt/session/ (read-only, checked like
 * a file's). */
static int mount_of(const json_t *mp, const char *url, const char *path, char ret[V1_MOUNT_PATH_MAX], v1_err *err) {
        char name[V1_MOUNT_PATH_MAX], full[V1_MOUNT_PATH_MAX + 32];
        const char *given = json_string_value(mp);
        if (mp && !json_is_null(mp) && !json_is_string(mp))
                return v1_fail(err, 400, NULL, "%s.mount_path: a string or null", path);
        if (!given || !given[0]) {
                if (repo_name(url, name) < 0)
                        return v1_fail(err, 400, NULL,
                                       "%s.url: no repository name at the end of its path to mount it by: give a "
                                       "mount_path",
                                       path);
                snprintf(full, sizeof(full), "%s%s", WS_MOUNT, name);
        } else
                snprintf(full, sizeof(full), "%s%s", given[0] == '/' ? "" : WS_MOUNT, given);
        size_t n = strlen(full);
        if (n > 1 && full[n - 1] == '/')
                return v1_fail(err, 400, NULL, "%s.mount_path: '%.80s' ends with '/': name the checkout's directory",
                               path, full);
        if (strncmp(full, "/mnt/session/", 13) == 0)
                return v1_mount_path_resolve(full, "", path, ret, err);
        if (strncmp(full, WS_MOUNT, strlen(WS_MOUNT)) != 0)
                return v1_fail(err, 400, NULL,
                               "%s.mount_path: '%.80s' is neither below /workspace/ (a writable checkout, the "
                               "default /workspace/<repo>) nor below /mnt/session/ (read-only)",
                               path, full);
        hull_error e = {0};
        const char *rel = full + strlen(WS_MOUNT);
        if (n >= V1_MOUNT_PATH_MAX || n >= WS_PATH_MAX)
                return v1_fail(err, 400, NULL, "%s.mount_path: longer than %u bytes", path,
                               MIN(V1_MOUNT_PATH_MAX, WS_PATH_MAX) - 1);
        for (const char *p = full; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f || *p == '\\')
                        return v1_fail(err, 400, NULL, "%s.mount_path: holds a control character or a backslash", path);
        if (!rel[0] || ws_path_check(rel, strlen(rel), &e) < 0 || strstr(full, "//") || strstr(full, "/./") ||
            strcmp(rel, ".") == 0)
                return v1_fail(err, 400, NULL,
                               "%s.mount_path: '%.80s' is not a plain path below /workspace/ (no '..', '.' or empty "
                               "segment; not /workspace itself)",
                               path, full);
        if (strncmp(rel, ".memory", 7) == 0 && (rel[7] == '/' || !rel[7]))
                return v1_fail(err, 400, NULL, "%s.mount_path: /workspace/.memory holds the memory stores", path);
        memcpy(ret, full, n + 1);
        return 0;
}

int v1_repo_make(const settings *st, const char *mnt_root, const json_t *body, const char *path, const char *now,
                 json_t **ret, v1_err *err) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *) body, key, v) {
                char k[64];
                snprintf(k, sizeof(k), " %.40s ", key);
                if (!strstr(" type url mount_path checkout authorization_token ", k))
                        return v1_fail(err, 400, NULL,
                                       "%s.%.40s: unknown field (a github_repository resource has type, url, "
                                       "mount_path, checkout, authorization_token)",
                                       path, key);
        }
        if (!mnt_root)
                return v1_fail(err, 400, NULL, "%s.type: this server mounts no session resources", path);
        const char *url = json_string_value(json_object_get(body, "url"));
        const json_t *tok = json_object_get(body, "authorization_token");
        const char *token = json_string_value(tok);
        if (!url || (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0) ||
            strlen(url) >= V1_REPO_URL_MAX)
                return v1_fail(err, 400, NULL,
                               "%s.url: required, the repository's https:// (or http://) URL, e.g. "
                               "https://github.com/owner/repo",
                               path);
        if (tok && !json_is_null(tok) && (!token || strlen(token) >= V1_REPO_TOKEN_MAX))
                return v1_fail(err, 400, NULL, "%s.authorization_token: a string of at most %u bytes, or null", path,
                               V1_REPO_TOKEN_MAX - 1);
        if (token && (!token[0] || strpbrk(token, "\r\n")))
                return v1_fail(err, 400, NULL, "%s.authorization_token: empty or holds a line break", path);
        const char *ref;
        bool commit;
        char mount[V1_MOUNT_PATH_MAX], pin[EGRESS_PIN_MAX], dir[4200], dst[4300], part[4300], sha[65];
        bool pinned = false;
        int r = checkout_of(json_object_get(body, "checkout"), path, &ref, &commit, err);
        if (r >= 0)
                r = mount_of(json_object_get(body, "mount_path"), url, path, mount, err);
        if (r >= 0)
                r = guard(st, url, path, pin, &pinned, err);
        if (r < 0)
                return r;
        if (repos_dir(mnt_root, dir, sizeof(dir)) < 0)
                return v1_fail(err, 500, NULL, "%s: cannot make %s/.repos", path, mnt_root);
        char id[STORE_ID_MAX];
        v1_id_new("sesrsc_", id);
        snprintf(dst, sizeof(dst), "%s/%s", dir, id);
        snprintf(part, sizeof(part), "%s/.%s.part", dir, id);
        rm_tree(part);
        r = clone(url, ref, commit, token, pinned ? pin : NULL, part, path, sha, err);
        if (r >= 0 && rename(part, dst) < 0)
                r = v1_fail(err, 500, NULL, "%s: cannot keep the clone of %.200s", path, url);
        if (r < 0) {
                rm_tree(part);
                return r;
        }
        if ((r = seal_token(mnt_root, id, token, err)) < 0) {
                rm_tree(dst);
                return r;
        }
        json_t *co = json_deep_copy(json_object_get(body, "checkout"));
        *ret = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:s}", "id", id, "type", "github_repository", "url", url,
                         "mount_path", mount, "checkout", co ? co : json_null(), "checkout_sha", sha, "created_at", now,
                         "updated_at", now);
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

int v1_repo_place(const char *mnt_root, const char *dir, const json_t *res, hull_error *e) {
        const char *mount = json_string_value(json_object_get(res, "mount_path"));
        const char *rid = json_string_value(json_object_get(res, "id"));
        if (mount && strncmp(mount, WS_MOUNT, strlen(WS_MOUNT)) == 0)
                return 0; /* in the workspace, by v1_repo_workspace when the sandbox opens */
        if (!mnt_root || !mount || !rid || strncmp(mount, "/mnt/session/", 13) != 0 || strchr(rid, '/'))
                return hull_fail(e, -EINVAL, "resources: a repository without a clone or a mount path");
        char src[4300], dst[4300], part[4400];
        snprintf(src, sizeof(src), "%s/.repos/%s", mnt_root, rid);
        snprintf(dst, sizeof(dst), "%s/%s", dir, mount + strlen("/mnt/"));
        snprintf(part, sizeof(part), "%s.part", dst);
        if (access(dst, F_OK) == 0)
                return 0;
        int r = v1_resource_mkdir_parent(dir, mount);
        if (r < 0)
                return hull_err(e, r, "resources: cannot make the directory of %s", mount);
        char out[V1_REPO_GIT_OUTPUT_MAX];
        const char *argv[] = {"/usr/bin/cp", "-a", "--no-preserve=ownership", "--", src, part, NULL};
        const char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
        rm_tree(part);
        if (run((char *const *) argv, (char *const *) env, out, sizeof(out)) != 0 || rename(part, dst) < 0) {
                rm_tree(part);
                return hull_fail(e, -EIO, "resources: cannot place the repository at %s: %.200s", mount, out);
        }
        return 0;
}

void v1_repo_unplace(const char *dir, const json_t *res) {
        const char *mount = json_string_value(json_object_get(res, "mount_path"));
        char dst[4300];
        if (!mount || strncmp(mount, "/mnt/session/", 13) != 0)
                return;
        snprintf(dst, sizeof(dst), "%s/%s", dir, mount + strlen("/mnt/"));
        rm_tree(dst);
}

void v1_repo_forget(const char *mnt_root, const json_t *res) {
        const char *rid = json_string_value(json_object_get(res, "id"));
        char p[4300];
        if (!mnt_root || !rid || strchr(rid, '/'))
                return;
        snprintf(p, sizeof(p), "%s/.repos/%s", mnt_root, rid);
        rm_tree(p);
        snprintf(p, sizeof(p), "%s/.repos/%s.token", mnt_root, rid);
        (void) unlink(p);
}

/* A tar (pax) of the clone src in *ret, its entries below rel (GNU tar's --transform; link
 * targets left as they are). */
static int tar_of(const char *src, const char *rel, void **ret, size_t *ret_len, hull_error *e) {
        char xf[2 * WS_PATH_MAX + 32] = "s,^\\.,";
        size_t k = strlen(xf);
        for (const char *p = rel; *p && k + 4 < sizeof(xf); p++) {
                if (strchr("\\,&", *p))
                        xf[k++] = '\\';
                xf[k++] = *p;
        }
        snprintf(xf + k, sizeof(xf) - k, ",S");
        _cleanup_close_ int fd = memfd_create("hull-repo-tar", MFD_CLOEXEC);
        if (fd < 0)
                return hull_err(e, -errno, "resources: cannot make a buffer for the repository");
        const char *argv[] = {"/usr/bin/tar",
                              "-C",
                              src,
                              "--format=pax",
                              "--numeric-owner",
                              "--owner=0",
                              "--group=0",
                              "--transform",
                              xf,
                              "-cf",
                              "-",
                              ".",
                              NULL};
        const char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
        pid_t pid = fork();
        if (pid < 0)
                return hull_err(e, -errno, "resources: cannot run tar");
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                if (null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(null, 2) < 0)
                        _exit(127);
                execve(argv[0], (char *const *) argv, (char *const *) env);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return hull_err(e, -errno, "resources: tar was lost");
        struct stat st;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || fstat(fd, &st) < 0)
                return hull_fail(e, -EIO, "resources: cannot pack the clone of %s", rel);
        if ((uint64_t) st.st_size > REPO_TAR_MAX)
                return hull_fail(e, -EFBIG, "resources: the clone of %s is larger than %llu bytes", rel,
                                 (unsigned long long) REPO_TAR_MAX);
        void *buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "resources: out of memory");
        if (pread(fd, buf, (size_t) st.st_size, 0) != (ssize_t) st.st_size) {
                free(buf);
                return hull_fail(e, -EIO, "resources: cannot read the packed clone of %s", rel);
        }
        *ret = buf;
        *ret_len = (size_t) st.st_size;
        return 0;
}

/* res's checkout into the workspace at rel, when nothing is there (the agent's edits in a live
 * workspace are kept; a link planted there is not followed: ws_read refuses it). */
static int workspace_one(const char *mnt_root, ss_manager *ss, ss_session *box, const json_t *res, const char *rel,
                         hull_error *e) {
        const char *rid = json_string_value(json_object_get(res, "id"));
        if (!rid || strchr(rid, '/'))
                return hull_fail(e, -EINVAL, "resources: a repository without a clone");
        ws_read_result rr = {0};
        hull_error re = {0};
        int r = ss_read(ss, box, rel, 0, 1, &rr, &re);
        ws_read_result_done(&rr);
        if (r != -ENOENT)
                return 0; /* there already (a directory, the agent's, or something it made) */
        char src[4300];
        snprintf(src, sizeof(src), "%s/.repos/%s", mnt_root, rid);
        _cleanup_free_ void *tar = NULL;
        size_t len = 0;
        if ((r = tar_of(src, rel, &tar, &len, e)) < 0)
                return r;
        ws_tar_stats st = {0};
        return ss_hydrate(ss, box, tar, len, &st, NULL, e);
}

int v1_repo_workspace(const char *mnt_root, ss_manager *ss, ss_session *box, const json_t *resources, hull_error *e) {
        size_t i;
        json_t *res;
        bool begun = false;
        int r = 0;
        json_array_foreach((json_t *) resources, i, res) {
                const char *mount = json_string_value(json_object_get(res, "mount_path"));
                if (strcmp(json_string_value(json_object_get(res, "type")) ?: "", "github_repository") != 0 || !mount ||
                    strncmp(mount, WS_MOUNT, strlen(WS_MOUNT)) != 0)
                        continue;
                if (!mnt_root)
                        return hull_fail(e, -EINVAL, "resources: this server keeps no clones");
                if (!begun && (r = ss_call_begin(ss, box, -1, e)) < 0)
                        return r;
                begun = true;
                if ((r = workspace_one(mnt_root, ss, box, res, mount + strlen(WS_MOUNT), e)) < 0)
                        break;
        }
        if (begun)
                ss_call_end(ss, box);
        return r;
}
