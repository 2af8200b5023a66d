/* sbx-oci-root.c: a kernel-tier bundle's root (see sbx-oci-root.h): its plan (from the host or a
 * --rootfs), writing it, and the shared skeleton single runs reuse (found and verified, or made
 * and put in place by rename), so a run creates and removes a handful of entries instead of its
 * whole root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-internal.h"
#include "sbx-oci-root.h"

/* Bump when what a skeleton holds changes meaning without its plan changing. */
#define ROOT_LAYOUT "hull-oci-root 1"

/* ---- the plan ---- */

static int add_item(sbx_oci_root_plan *p, char kind, const char *name, const char *text, hull_error *e) {
        if (p->n_items >= SBX_OCI_ROOT_ITEMS_MAX)
                return hull_err(e, -E2BIG, "kernel: too many root entries (at most %u)", SBX_OCI_ROOT_ITEMS_MAX);
        sbx_oci_root_item *it = &p->items[p->n_items];
        it->kind = kind;
        if ((size_t) snprintf(it->name, sizeof(it->name), "%s", name) >= sizeof(it->name))
                return hull_err(e, -ENAMETOOLONG, "kernel: root entry %s is too long", name);
        it->text = strdup(text ? text : "");
        if (!it->text)
                return hull_err(e, -ENOMEM, "kernel: out of memory");
        p->n_items++;
        return 0;
}

/* One entry of the new root, from host_path: a link is recreated in the root, a directory or a
 * regular file gets a mount point and a read-only bind; anything else is left out. */
static int plan_entry(sbx_oci_root_plan *p, const char *name, const char *host_path, bool must_exist, hull_error *e) {
        struct stat st;
        if (lstat(host_path, &st) < 0) {
                if (errno == ENOENT && !must_exist)
                        return 0;
                return hull_err(e, negative_errno(), "kernel: cannot inspect %s", host_path);
        }
        if (S_ISLNK(st.st_mode)) {
                char target[SBX_PATH_MAX];
                ssize_t n = readlink(host_path, target, sizeof(target) - 1);
                if (n < 0)
                        return hull_err(e, negative_errno(), "kernel: cannot read link %s", host_path);
                target[n] = '\0';
                return add_item(p, 'l', name, target, e);
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0;
        if (p->n >= SBX_OCI_BINDS_MAX)
                return hull_err(e, -E2BIG, "kernel: too many root entries (at most %u)", SBX_OCI_BINDS_MAX);
        int r = add_item(p, S_ISDIR(st.st_mode) ? 'd' : 'f', name, NULL, e);
        if (r < 0)
                return r;
        char *dst = NULL, *src = realpath(host_path, NULL);
        if (!src || asprintf(&dst, "/%s", name) < 0) {
                r = hull_err(e, src ? -ENOMEM : negative_errno(), "kernel: cannot resolve %s", host_path);
                free(src);
                return r;
        }
        p->binds[2 * p->n] = dst;
        p->binds[2 * p->n + 1] = src;
        p->binds[2 * ++p->n] = NULL;
        return 0;
}

/* The host's root as the container tier shows it: /usr, the /bin-style links, a few /etc files,
 * and hull's own passwd, group, hosts and nsswitch.conf for the sandbox user uid/gid. */
static int plan_host(sbx_oci_root_plan *p, uid_t uid, gid_t gid, bool dns, hull_error *e) {
        static const char *const top[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
        static const char *const etc[] = {"ld.so.cache", "alternatives", "localtime", "ssl/certs", "ssl/openssl.cnf"};
        char host[SBX_PATH_MAX], name[SBX_NAME_MAX], text[SBX_ETC_FILE_MAX];
        int r;
        for (size_t i = 0; i < ELEMENTSOF(top); i++) {
                snprintf(host, sizeof(host), "/%s", top[i]);
                if ((r = plan_entry(p, top[i], host, i == 0, e)) < 0)
                        return r;
        }
        if ((r = add_item(p, 'd', "etc", NULL, e)) < 0 || (r = add_item(p, 'd', "etc/ssl", NULL, e)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(etc); i++) {
                snprintf(host, sizeof(host), "/etc/%s", etc[i]);
                snprintf(name, sizeof(name), "etc/%s", etc[i]);
                if ((r = plan_entry(p, name, host, false, e)) < 0)
                        return r;
        }
        snprintf(text, sizeof(text),
                 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                 "sandbox:x:%u:%u:hull sandbox:/workspace:/bin/sh\n"
                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                 (unsigned) uid, (unsigned) gid);
        if (uid == 65534)
                snprintf(text, sizeof(text),
                         "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                         "sandbox:x:65534:65534:hull sandbox:/workspace:/bin/sh\n");
        if ((r = add_item(p, 'c', "etc/passwd", text, e)) < 0)
                return r;
        snprintf(text, sizeof(text), "root:x:0:\nsandbox:x:%u:\n", (unsigned) gid);
        if ((r = add_item(p, 'c', "etc/group", text, e)) < 0 ||
            (r = add_item(p, 'c', "etc/hosts", "127.0.0.1\tlocalhost hull\n::1\tlocalhost ip6-localhost ip6-loopback\n",
                          e)) < 0 ||
            (r = add_item(p, 'c', "etc/nsswitch.conf",
                          dns ? "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                              : "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
                          e)) < 0)
                return r;
        if (dns) { /* unrestricted: the host's nameservers that pasta can reach, as the container tier */
                char conf[SBX_ETC_FILE_MAX];
                _cleanup_close_ int fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
                ssize_t k = fd >= 0 ? read(fd, text, sizeof(text)) : -1;
                sbx_net_resolv_conf(text, k > 0 ? (size_t) k : 0, conf, sizeof(conf));
                if ((r = add_item(p, 'c', "etc/resolv.conf", conf, e)) < 0)
                        return r;
        }
        return 0;
}

/* A --rootfs: its top-level entries, but for the ones hull mounts itself. */
static int plan_rootfs(sbx_oci_root_plan *p, const char *rootfs, hull_error *e) {
        static const char *const ours[] = {".",   "..",      "proc", "dev",    "tmp", "workspace",
                                           "sys", "handles", "env",  "skills", "mnt"};
        char host[SBX_PATH_MAX];
        if (rootfs[0] != '/')
                return hull_err(e, -EINVAL, "exec: --rootfs must be an absolute path");
        DIR *d = opendir(rootfs);
        if (!d)
                return hull_err(e, negative_errno(), "exec: cannot list --rootfs %s", rootfs);
        int r = 0;
        for (struct dirent *de; (de = readdir(d));) {
                bool skip = false;
                for (size_t i = 0; i < ELEMENTSOF(ours); i++)
                        skip = skip || strcmp(de->d_name, ours[i]) == 0;
                if (skip)
                        continue;
                if ((size_t) snprintf(host, sizeof(host), "%s/%s", rootfs, de->d_name) >= sizeof(host)) {
                        r = hull_err(e, -ENAMETOOLONG, "exec: --rootfs path too long");
                        break;
                }
                if ((r = plan_entry(p, de->d_name, host, true, e)) < 0)
                        break;
        }
        closedir(d);
        return r;
}

void sbx_oci_root_plan_free(sbx_oci_root_plan *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_items; i++)
                free(p->items[i].text);
        for (size_t i = 0; i < 2 * p->n; i++)
                free((char *) p->binds[i]);
        free(p);
}

int sbx_oci_root_plan_make(sbx_oci_root_plan *p, const char *rootfs, uid_t uid, gid_t gid, bool dns, bool memory_link,
                           hull_error *e) {
        static const char *const points[] = {"proc",    "dev", "tmp",    "workspace", "sys",
                                             "handles", "env", "skills", "mnt"};
        int r = 0;
        p->binds[0] = NULL;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(points); i++)
                r = add_item(p, 'd', points[i], NULL, e);
        if (r >= 0)
                r = rootfs ? plan_rootfs(p, rootfs, e) : plan_host(p, uid, gid, dns, e);
        /* /mnt/memory: a /v1 session's memory stores in its workspace, as in the container tier */
        if (r >= 0 && memory_link)
                r = add_item(p, 'l', "mnt/memory", "/workspace/.memory", e);
        return r;
}

/* ---- writing and verifying ---- */

int sbx_oci_root_write(const sbx_oci_root_plan *p, int root_fd, hull_error *e) {
        /* the modes are set, not left to the umask: a skeleton is verified to be writable by
         * nobody else, and the sandbox user must read and search it */
        for (size_t i = 0; i < p->n_items; i++) {
                const sbx_oci_root_item *it = &p->items[i];
                int r = 0;
                if (it->kind == 'd')
                        r = mkdirat(root_fd, it->name, 0755) < 0 || fchmodat(root_fd, it->name, 0755, 0) < 0
                                    ? negative_errno()
                                    : 0;
                else if (it->kind == 'l')
                        r = symlinkat(it->text, root_fd, it->name) < 0 ? negative_errno() : 0;
                else {
                        _cleanup_close_ int fd =
                                openat(root_fd, it->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
                        r = fd < 0 || fchmod(fd, 0644) < 0 ? negative_errno()
                            : it->kind == 'c'              ? loop_write(fd, it->text, strlen(it->text))
                                                           : 0;
                }
                if (r < 0)
                        return hull_err(e, r, "kernel: cannot make /%s in the bundle's root", it->name);
        }
        return 0;
}

/* Ours: owned by the effective uid, writable by nobody else. */
static bool st_ours(const struct stat *st) {
        return st->st_uid == geteuid() && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* Whether the skeleton at dir_fd holds exactly the plan's entries as planned (extra entries
 * could only come from its owner: every directory is checked to be ours). */
static bool root_verify(const sbx_oci_root_plan *p, int dir_fd) {
        struct stat st;
        char buf[SBX_PATH_MAX];
        if (fstat(dir_fd, &st) < 0 || !S_ISDIR(st.st_mode) || !st_ours(&st) || (st.st_mode & 0555) != 0555)
                return false;
        for (size_t i = 0; i < p->n_items; i++) {
                const sbx_oci_root_item *it = &p->items[i];
                if (fstatat(dir_fd, it->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return false;
                if (it->kind == 'l') {
                        ssize_t n = readlinkat(dir_fd, it->name, buf, sizeof(buf) - 1);
                        if (!S_ISLNK(st.st_mode) || n < 0 || (size_t) n != strlen(it->text) ||
                            memcmp(buf, it->text, (size_t) n) != 0)
                                return false;
                        continue;
                }
                if (!st_ours(&st) || (it->kind == 'd' ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
                        return false;
                if (it->kind == 'f' && st.st_size != 0)
                        return false;
                if (it->kind == 'c') {
                        size_t len = strlen(it->text);
                        if ((size_t) st.st_size != len || len >= sizeof(buf))
                                return false;
                        _cleanup_close_ int fd = openat(dir_fd, it->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                        if (fd < 0 || loop_read(fd, buf, len) != (ssize_t) len || memcmp(buf, it->text, len) != 0)
                                return false;
                }
        }
        return true;
}

/* The skeleton's name: FNV-1a (64 bits) of the layout and every item. A name, not a check: the
 * content is verified entry by entry before each use. */
static uint64_t plan_hash(const sbx_oci_root_plan *p) {
        uint64_t h = 0xcbf29ce484222325ULL;
#define MIX(s, n)                                                                                                      \
        for (size_t k_ = 0; k_ < (n); k_++)                                                                            \
                h = (h ^ (uint8_t) (s)[k_]) * 0x100000001b3ULL;
        MIX(ROOT_LAYOUT, sizeof(ROOT_LAYOUT));
        for (size_t i = 0; i < p->n_items; i++) {
                const sbx_oci_root_item *it = &p->items[i];
                MIX(&it->kind, 1);
                MIX(it->name, strlen(it->name) + 1);
                MIX(it->text, strlen(it->text) + 1);
        }
#undef MIX
        return h;
}

/* Make a fresh skeleton next to name and put it in place: by rename when nothing is there, or
 * exchanged with what is there when that does not verify (its remains removed). */
static int root_publish(const sbx_oci_root_plan *p, int dir_fd, const char *name, hull_error *e) {
        char path[SBX_PATH_MAX];
        if ((size_t) snprintf(path, sizeof(path), "%s/%s.tmp-XXXXXX", SBX_KERNEL_DIR, name) >= sizeof(path))
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        if (!mkdtemp(path))
                return hull_err(e, negative_errno(), "kernel: cannot make a root below %s", SBX_KERNEL_DIR);
        const char *tmp = path + strlen(SBX_KERNEL_DIR) + 1;
        int fd = openat(dir_fd, tmp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                int r = hull_err(e, negative_errno(), "kernel: cannot open %s", path);
                (void) rm_rf_at(dir_fd, tmp);
                return r;
        }
        _cleanup_close_ int tmp_fd = fd;
        int r = fchmodat(dir_fd, tmp, 0755, 0) < 0 ? negative_errno() : 0;
        if (r >= 0)
                r = sbx_oci_root_write(p, tmp_fd, e);
        if (r >= 0 && renameat2(dir_fd, tmp, dir_fd, name, RENAME_NOREPLACE) == 0)
                return 0;
        if (r >= 0 && errno != EEXIST && errno != ENOTEMPTY)
                r = hull_err(e, negative_errno(), "kernel: cannot put the root %s/%s in place", SBX_KERNEL_DIR, name);
        if (r >= 0) {
                /* something is there: another run's skeleton (as good as ours), or a bad one */
                _cleanup_close_ int there = openat(dir_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (!(there >= 0 && root_verify(p, there)) && renameat2(dir_fd, tmp, dir_fd, name, RENAME_EXCHANGE) < 0)
                        r = hull_err(e, negative_errno(), "kernel: cannot replace the root %s/%s", SBX_KERNEL_DIR,
                                     name);
        }
        (void) rm_rf_at(dir_fd, tmp); /* ours unused, or what was in the way */
        return r;
}

int sbx_oci_root_shared(const sbx_oci_root_plan *p, char *ret, size_t size, hull_error *e) {
        struct stat st;
        char name[SBX_NAME_MAX];
        if (mkdir(SBX_KERNEL_DIR, 0700) < 0 && errno != EEXIST)
                return hull_err(e, negative_errno(), "kernel: cannot make %s", SBX_KERNEL_DIR);
        _cleanup_close_ int dir_fd = open(SBX_KERNEL_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dir_fd < 0 || fstat(dir_fd, &st) < 0)
                return hull_err(e, negative_errno(), "kernel: cannot open %s", SBX_KERNEL_DIR);
        if (!st_ours(&st))
                return hull_err_hint(e, -EPERM, "remove it (hull makes it again, mode 0700)",
                                     "kernel: %s is not hull's own (owner uid %u, mode %04o)", SBX_KERNEL_DIR,
                                     (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
        snprintf(name, sizeof(name), "root-%016" PRIx64, plan_hash(p));
        if ((size_t) snprintf(ret, size, "%s/%s", SBX_KERNEL_DIR, name) >= size)
                return hull_err(e, -ENAMETOOLONG, "kernel: path too long");
        _cleanup_close_ int fd = openat(dir_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && root_verify(p, fd))
                return 0;
        return root_publish(p, dir_fd, name, e);
}
