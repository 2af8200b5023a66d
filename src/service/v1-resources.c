/* v1-resources.c: see v1-resources.h. The resource directory is written only here, with openat
 * below a directory fd and O_NOFOLLOW at every step, from mount paths already checked; what the
 * sandbox sees of it is a read-only bind. */
#include "v1-resources.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "utf8.h"
#include "v1-repo.h"
#include "v1-run.h"

#define MNT_SESSION "/mnt/session/"
#define UPLOADS MNT_SESSION "uploads/"

int v1_mount_path_resolve(const char *given, const char *file_id, const char *path, char ret[V1_MOUNT_PATH_MAX],
                          v1_err *err) {
        size_t n;
        if (!given || !given[0])
                n = (size_t) snprintf(ret, V1_MOUNT_PATH_MAX, "%s%s", UPLOADS, file_id);
        else if (given[0] == '/')
                n = (size_t) snprintf(ret, V1_MOUNT_PATH_MAX, "%s", given);
        else
                n = (size_t) snprintf(ret, V1_MOUNT_PATH_MAX, "%s%s", UPLOADS, given);
        if (n >= V1_MOUNT_PATH_MAX)
                return v1_fail(err, 400, NULL, "%s.mount_path: longer than %u bytes", path, V1_MOUNT_PATH_MAX - 1);
        if (strncmp(ret, MNT_SESSION, strlen(MNT_SESSION)) != 0 || !ret[strlen(MNT_SESSION)])
                return v1_fail(err, 400, NULL,
                               "%s.mount_path: '%.80s' is outside /mnt/session/, where hull mounts a session's files "
                               "(give a path below /mnt/session/, or a relative one: it goes below %s)",
                               path, ret, UPLOADS);
        if (!utf8_is_valid(ret, n))
                return v1_fail(err, 400, NULL, "%s.mount_path: not UTF-8", path);
        for (const char *p = ret; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f || *p == '\\')
                        return v1_fail(err, 400, NULL, "%s.mount_path: holds a control character or a backslash", path);
        for (const char *seg = ret + 1; *seg;) {
                size_t k = strcspn(seg, "/");
                if (k == 0 || (k == 1 && seg[0] == '.') || (k == 2 && seg[0] == '.' && seg[1] == '.'))
                        return v1_fail(err, 400, NULL,
                                       "%s.mount_path: '%.80s' has an empty, '.' or '..' segment: give a plain path "
                                       "below /mnt/session/",
                                       path, ret);
                seg += k;
                if (*seg == '/')
                        seg++;
                else
                        break;
        }
        if (ret[n - 1] == '/')
                return v1_fail(err, 400, NULL, "%s.mount_path: names a directory; end it with the file's name", path);
        return 0;
}

int v1_resource_make(v1_files *f, const settings *st, const char *mnt_root, const json_t *body, const char *path,
                     const char *now, json_t **ret, v1_err *err) {
        const char *type = json_string_value(json_object_get(body, "type"));
        if (!json_is_object(body) || !type)
                return v1_fail(err, 400, NULL, "%s: a resource is an object with a \"type\"", path);
        if (strcmp(type, "github_repository") == 0)
                return v1_repo_make(st, mnt_root, body, path, now, ret, err);
        if (strcmp(type, "file") != 0)
                return v1_fail(err, 400, NULL,
                               "%s.type: this route adds file and github_repository resources ('%.40s': a "
                               "memory_store is attached at session create)",
                               path, type);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *) body, key, v) {
                if (strcmp(key, "type") != 0 && strcmp(key, "file_id") != 0 && strcmp(key, "mount_path") != 0)
                        return v1_fail(err, 400, NULL,
                                       "%s.%.40s: unknown field (a file resource has type, file_id, "
                                       "mount_path)",
                                       path, key);
        }
        if (!f)
                return v1_fail(err, 400, NULL, "%s.type: this server serves no files to mount", path);
        const char *fid = json_string_value(json_object_get(body, "file_id"));
        const json_t *mp = json_object_get(body, "mount_path");
        if (!fid || !fid[0])
                return v1_fail(err, 400, NULL, "%s.file_id: required, the id of an uploaded file", path);
        if (mp && !json_is_null(mp) && !json_is_string(mp))
                return v1_fail(err, 400, NULL, "%s.mount_path: a string or null", path);
        char mount[V1_MOUNT_PATH_MAX];
        int r = v1_mount_path_resolve(json_string_value(mp), fid, path, mount, err);
        if (r < 0)
                return r;
        json_auto_t *file = NULL;
        if ((r = v1_file_get(f, fid, &file, err)) < 0)
                return r == -ENOENT ? v1_fail(err, 404, "file_not_found", "%s.file_id: no file %.64s", path, fid) : r;
        char id[STORE_ID_MAX];
        v1_id_new("sesrsc_", id);
        *ret = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "file", "file_id", fid, "mount_path",
                         mount, "created_at", now, "updated_at", now);
        return *ret ? 0 : v1_fail(err, 500, "", "out of memory");
}

void v1_resources_forget(const char *mnt_root, const char *dir, const json_t *list) {
        size_t i;
        json_t *res;
        json_array_foreach(list, i, res) v1_resource_unplace(mnt_root, dir, res, true);
}

int v1_resources_resolve(v1_files *f, const settings *st, const char *mnt_root, json_t *session, v1_err *err) {
        json_t *given = json_object_get(session, "resources");
        json_auto_t *out = json_array();
        if (!out)
                return v1_fail(err, 500, "", "out of memory");
        const char *now = json_string_value(json_object_get(session, "created_at"));
        size_t i;
        json_t *res;
        json_array_foreach(given, i, res) {
                char path[64];
                snprintf(path, sizeof(path), "resources[%zu]", i);
                if (strcmp(json_string_value(json_object_get(res, "type")) ?: "", "memory_store") == 0) {
                        /* v1-memory-mount.c resolves it (v1_memory_resources_resolve) */
                        if (json_array_append(out, res) < 0)
                                return v1_fail(err, 500, "", "out of memory");
                        continue;
                }
                json_t *made = NULL;
                int r = v1_resource_make(f, st, mnt_root, res, path, now ? now : "", &made, err);
                if (r < 0) {
                        v1_resources_forget(mnt_root, "", out);
                        return r;
                }
                size_t j;
                json_t *other;
                json_array_foreach(out, j, other) {
                        if (json_equal(json_object_get(other, "mount_path"), json_object_get(made, "mount_path"))) {
                                v1_resource_unplace(mnt_root, "", made, true);
                                v1_resources_forget(mnt_root, "", out);
                                json_decref(made);
                                return v1_fail(err, 409, NULL, "%s.mount_path: resources[%zu] is mounted there already",
                                               path, j);
                        }
                }
                json_array_append_new(out, made);
        }
        return json_object_set(session, "resources", out) < 0 ? v1_fail(err, 500, "", "out of memory") : 0;
}

/* The directory of a mount path's parent below dfd (made, 0755), as an fd; *ret_leaf its name. */
static int parent_of(int dfd, const char *mount, const char **ret_leaf) {
        const char *rel = mount + strlen("/mnt/");
        int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        for (;;) {
                const char *slash = strchr(rel, '/');
                if (!slash || cur < 0) {
                        *ret_leaf = rel;
                        return cur;
                }
                char seg[V1_MOUNT_PATH_MAX];
                snprintf(seg, sizeof(seg), "%.*s", (int) (slash - rel), rel);
                if (mkdirat(cur, seg, 0755) < 0 && errno != EEXIST) {
                        int r = -errno;
                        safe_close(cur);
                        return r;
                }
                int next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int r = -errno;
                safe_close(cur);
                if (next < 0)
                        return r;
                cur = next;
                rel = slash + 1;
        }
}

int v1_resource_mkdir_parent(const char *dir, const char *mount) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        const char *leaf;
        int pfd = parent_of(dfd, mount, &leaf);
        if (pfd < 0)
                return pfd;
        safe_close(pfd);
        return 0;
}

int v1_resource_place(v1_files *f, const char *mnt_root, const char *dir, const json_t *res, hull_error *e) {
        if (strcmp(json_string_value(json_object_get(res, "type")) ?: "", "github_repository") == 0)
                return v1_repo_place(mnt_root, dir, res, e);
        const char *mount = json_string_value(json_object_get(res, "mount_path"));
        const char *fid = json_string_value(json_object_get(res, "file_id"));
        if (!mount || !fid || strncmp(mount, MNT_SESSION, strlen(MNT_SESSION)) != 0)
                return hull_fail(e, -EINVAL, "resources: a resource without a file or a mount path");
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, -errno, "resources: cannot open %s", dir);
        const char *leaf;
        _cleanup_close_ int pfd = parent_of(dfd, mount, &leaf);
        if (pfd < 0)
                return hull_err(e, pfd, "resources: cannot make the directory of %s", mount);
        int src = -1;
        uint64_t size = 0;
        v1_err err = {0};
        if (v1_file_open(f, fid, &src, &size, NULL, &err) < 0)
                return hull_fail(e, err.status == 404 ? -ENOENT : -EIO, "resources: %s", err.msg);
        _cleanup_close_ int in = src;
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".%s.part", fid);
        _cleanup_close_ int out = openat(pfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (out < 0)
                return hull_err(e, -errno, "resources: cannot write %s", mount);
        for (uint64_t done = 0; done < size;) {
                ssize_t n = sendfile(out, in, NULL, size - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        int r = n < 0 ? -errno : -EIO;
                        (void) unlinkat(pfd, tmp, 0);
                        return hull_err(e, r, "resources: cannot copy file %s to %s", fid, mount);
                }
                done += (uint64_t) n;
        }
        if (fchmod(out, 0444) < 0 || renameat(pfd, tmp, pfd, leaf) < 0) {
                int r = -errno;
                (void) unlinkat(pfd, tmp, 0);
                return hull_err(e, r, "resources: cannot place %s", mount);
        }
        return 0;
}

void v1_resource_unplace(const char *mnt_root, const char *dir, const json_t *res, bool forget) {
        if (strcmp(json_string_value(json_object_get(res, "type")) ?: "", "github_repository") == 0) {
                if (dir[0])
                        v1_repo_unplace(dir, res);
                if (forget)
                        v1_repo_forget(mnt_root, res);
                return;
        }
        if (!dir[0])
                return;
        const char *mount = json_string_value(json_object_get(res, "mount_path"));
        if (!mount || strncmp(mount, MNT_SESSION, strlen(MNT_SESSION)) != 0)
                return;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return;
        const char *leaf;
        _cleanup_close_ int pfd = parent_of(dfd, mount, &leaf);
        if (pfd >= 0)
                (void) unlinkat(pfd, leaf, 0);
}

int v1_resources_materialize(v1_files *f, const char *mnt_root, const char *session_id, const json_t *resources,
                             char *ret, size_t size, hull_error *e) {
        if ((size_t) snprintf(ret, size, "%s/%s", mnt_root, session_id) >= size)
                return hull_fail(e, -ENAMETOOLONG, "resources: the path of a session's resources is too long");
        if (mkdir(mnt_root, 0711) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "resources: cannot make %s", mnt_root);
        if (mkdir(ret, 0755) < 0 && errno != EEXIST)
                return hull_err(e, -errno, "resources: cannot make %s", ret);
        /* /mnt is this directory once bound: /mnt/memory (a session's memory stores, written in its
         * workspace by v1-memory-mount.c) must stay a link there, as in a sandbox without it. */
        _cleanup_close_ int dfd = open(ret, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return hull_err(e, -errno, "resources: cannot open %s", ret);
        if (symlinkat("/workspace/.memory", dfd, "memory") < 0 && errno != EEXIST)
                return hull_err(e, -errno, "resources: cannot link memory in %s", ret);
        size_t i;
        json_t *res;
        json_array_foreach(resources, i, res) {
                const char *type = json_string_value(json_object_get(res, "type")) ?: "";
                if (strcmp(type, "file") != 0 && strcmp(type, "github_repository") != 0)
                        continue; /* memory stores are in the workspace (v1-memory-mount.c) */
                int r = v1_resource_place(f, mnt_root, ret, res, e);
                if (r < 0)
                        return r;
        }
        return 0;
}
