/* sbx-cgroup.c: per-sandbox cgroups on v1 hierarchies, v2, or a mix of both. */
#include "sbx-cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

int sbx_cgroup_parse_self(const char *text, size_t len, const char *controller, char *ret, size_t size) {
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *line_end = nl ? nl : end;
                /* "ID:CONTROLLERS:PATH" */
                const char *c1 = memchr(p, ':', (size_t) (line_end - p));
                if (!c1)
                        return -EINVAL;
                const char *c2 = memchr(c1 + 1, ':', (size_t) (line_end - c1 - 1));
                if (!c2)
                        return -EINVAL;
                const char *ctl = c1 + 1, *path = c2 + 1;
                size_t ctl_len = (size_t) (c2 - ctl), path_len = (size_t) (line_end - path);
                bool match = false;
                if (!controller)
                        match = ctl_len == 0 && (size_t) (c1 - p) == 1 && p[0] == '0';
                else {
                        size_t want = strlen(controller);
                        for (const char *q = ctl; q < c2;) {
                                const char *comma = memchr(q, ',', (size_t) (c2 - q));
                                const char *item_end = comma ? comma : c2;
                                if ((size_t) (item_end - q) == want && memcmp(q, controller, want) == 0)
                                        match = true;
                                q = item_end + 1;
                        }
                }
                if (match) {
                        if (path_len == 0 || path[0] != '/')
                                return -EINVAL;
                        if (memchr(path, '\0', path_len))
                                return -EINVAL;
                        if (path_len + 1 > size)
                                return -ENAMETOOLONG;
                        memcpy(ret, path, path_len);
                        ret[path_len] = '\0';
                        return 0;
                }
                p = line_end + 1;
        }
        return -ENOENT;
}

static int read_file(const char *path, char *buf, size_t size, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ssize_t n = loop_read(fd, buf, size - 1);
        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        *ret_len = (size_t) n;
        return 0;
}

static int write_file(const char *dir, const char *file, const char *value) {
        char path[SBX_PATH_MAX];
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
                return -ENAMETOOLONG;
        return write_string_file(path, value);
}

static bool is_mount_of(const char *path, long magic) {
        struct statfs sf;
        return statfs(path, &sf) == 0 && sf.f_type == magic;
}

/* The caller's own directory in the hierarchy of controller (v1) or in v2 (controller NULL). The
 * buffers of cgroup and /proc files are on the heap: each page of stack hull exec touches is a
 * page fault, and those cost 10-20 us each in a VM. */
static int own_dir(const char *mount, const char *controller, char *ret, size_t size, hull_error *e) {
        char rel[SBX_PATH_MAX];
        size_t len;
        _cleanup_free_ char *text = malloc(SBX_CGROUP_FILE_MAX);
        if (!text)
                return hull_err(e, -ENOMEM, "cgroup: out of memory");
        int r = read_file("/proc/self/cgroup", text, SBX_CGROUP_FILE_MAX, &len);
        if (r < 0)
                return hull_err(e, r, "cgroup: cannot read /proc/self/cgroup");
        r = sbx_cgroup_parse_self(text, len, controller, rel, sizeof(rel));
        if (r < 0)
                return hull_err(e, r, "cgroup: cannot find this process's %s cgroup", controller ? controller : "v2");
        if (strstr(rel, "/..") || strcmp(rel, "/..") == 0)
                return hull_err(e, -EINVAL, "cgroup: refusing odd cgroup path %s", rel);
        if ((size_t) snprintf(ret, size, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel) >= size)
                return hull_err(e, -ENAMETOOLONG, "cgroup: path too long");
        return 0;
}

static int make_dir(const char *dir, const char *what, hull_error *e) {
        if (mkdir(dir, 0755) < 0)
                return hull_err_hint(
                        e, negative_errno(),
                        "run as root, delegate a cgroup to this user, or pass --no-cgroup to run without cgroup limits",
                        "cgroup: cannot create the %s cgroup %s", what, dir);
        return 0;
}

static int set_limit(const char *dir, const char *file, const char *value, hull_error *e) {
        int r = write_file(dir, file, value);
        if (r < 0)
                return hull_err(e, r, "cgroup: cannot set %s/%s to %s", dir, file, value);
        return 0;
}

static int join_path(char *ret, size_t size, const char *dir, const char *name, hull_error *e) {
        if ((size_t) snprintf(ret, size, "%s/%s", dir, name) >= size)
                return hull_err_hint(e, -ENAMETOOLONG, "pass --no-cgroup to run without cgroup limits",
                                     "cgroup: path too long (at most %zu bytes): %s/%s", size - 1, dir, name);
        return 0;
}

/* v1: the directory `name` below our own cgroup of controller, if its hierarchy is mounted. */
static int plan_v1(const char *controller, const char *name, char *ret, size_t size, hull_error *e) {
        char mount[SBX_PATH_MAX], own[SBX_PATH_MAX];
        snprintf(mount, sizeof(mount), CGROUP_ROOT "/%s", controller);
        if (!is_mount_of(mount, CGROUP_SUPER_MAGIC))
                return hull_err_hint(e, -ENOENT, "pass --no-cgroup to run without cgroup limits",
                                     "cgroup: no %s controller (neither cgroup v2 nor a v1 hierarchy at %s)",
                                     controller, mount);
        int r = own_dir(mount, controller, own, sizeof(own), e);
        if (r < 0)
                return r;
        return join_path(ret, size, own, name, e);
}

size_t sbx_cgroup_v1_hierarchies(const sbx_cgroup_limits *lim) {
        if (is_mount_of(CGROUP_ROOT, CGROUP2_SUPER_MAGIC))
                return 0;
        return (lim->memory_bytes ? 1 : 0) + (lim->pids ? 1 : 0) + (lim->millicpus ? 1 : 0);
}

int sbx_cgroup_plan(sbx_cgroup *cg, const char *name, const sbx_cgroup_limits *lim, hull_error *e) {
        int r = 0;
        *cg = (sbx_cgroup){.lim = *lim};
        /* Pure v2 is mounted at the top; a hybrid keeps v2 at .../unified, controllers on v1. */
        cg->v2 = is_mount_of(CGROUP_ROOT, CGROUP2_SUPER_MAGIC);
        if (cg->v2) {
                r = own_dir(CGROUP_ROOT, NULL, cg->v2_parent, sizeof(cg->v2_parent), e);
                if (r >= 0)
                        r = join_path(cg->memory, sizeof(cg->memory), cg->v2_parent, name, e);
        } else {
                if (lim->memory_bytes)
                        r = plan_v1("memory", name, cg->memory, sizeof(cg->memory), e);
                if (r >= 0 && lim->pids)
                        r = plan_v1("pids", name, cg->pids, sizeof(cg->pids), e);
                if (r >= 0 && lim->millicpus)
                        r = plan_v1("cpu", name, cg->cpu, sizeof(cg->cpu), e);
        }
        if (r < 0)
                *cg = (sbx_cgroup){0};
        return r;
}

static int make_v2(sbx_cgroup *cg, hull_error *e) {
        const sbx_cgroup_limits *lim = &cg->lim;
        char want[SBX_SHORT_STR_MAX], buf[SBX_SHORT_STR_MAX];
        int r;
        /* Controllers must be enabled for children. A cgroup that holds processes cannot enable
         * them (no internal processes), except the root: then hull must run in a delegated
         * subtree, which is the caller's job. */
        snprintf(want, sizeof(want), "%s%s%s", lim->memory_bytes ? " +memory" : "", lim->pids ? " +pids" : "",
                 lim->millicpus ? " +cpu" : "");
        if (want[0]) {
                r = write_file(cg->v2_parent, "cgroup.subtree_control", want + 1);
                if (r < 0)
                        return hull_err_hint(e, r,
                                             "start hull in a delegated cgroup without other processes, e.g. "
                                             "systemd-run --scope -p Delegate=yes, or pass --no-cgroup",
                                             "cgroup: cannot enable%s for children of %s", want, cg->v2_parent);
        }
        r = make_dir(cg->memory, "v2", e);
        if (r < 0)
                return r;
        cg->made = true;
        if (lim->memory_bytes) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->memory_bytes);
                if ((r = set_limit(cg->memory, "memory.max", buf, e)) < 0)
                        return r;
                (void) write_file(cg->memory, "memory.swap.max", "0"); /* absent without swap */
        }
        if (lim->pids) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->pids);
                if ((r = set_limit(cg->memory, "pids.max", buf, e)) < 0)
                        return r;
        }
        if (lim->millicpus) {
                snprintf(buf, sizeof(buf), "%" PRIu64 " 100000", lim->millicpus * 100);
                if ((r = set_limit(cg->memory, "cpu.max", buf, e)) < 0)
                        return r;
        }
        return 0;
}

static int make_v1(sbx_cgroup *cg, hull_error *e) {
        const sbx_cgroup_limits *lim = &cg->lim;
        char buf[SBX_SHORT_STR_MAX];
        int r;
        const char *dirs[] = {cg->memory, cg->pids, cg->cpu};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (dirs[i][0]) {
                        if ((r = make_dir(dirs[i], i == 0 ? "memory" : i == 1 ? "pids" : "cpu", e)) < 0)
                                return r;
                        cg->made = true;
                }
        if (lim->memory_bytes) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->memory_bytes);
                if ((r = set_limit(cg->memory, "memory.limit_in_bytes", buf, e)) < 0)
                        return r;
                (void) write_file(cg->memory, "memory.memsw.limit_in_bytes", buf); /* only with swap accounting */
        }
        if (lim->pids) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->pids);
                if ((r = set_limit(cg->pids, "pids.max", buf, e)) < 0)
                        return r;
        }
        if (lim->millicpus) {
                if ((r = set_limit(cg->cpu, "cpu.cfs_period_us", "100000", e)) < 0)
                        return r;
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->millicpus * 100);
                if ((r = set_limit(cg->cpu, "cpu.cfs_quota_us", buf, e)) < 0)
                        return r;
        }
        return 0;
}

int sbx_cgroup_make(sbx_cgroup *cg, hull_error *e) {
        int r = cg->v2 ? make_v2(cg, e) : make_v1(cg, e);
        if (r < 0)
                (void) sbx_cgroup_destroy(cg, NULL);
        return r;
}

int sbx_cgroup_tasks_paths(const sbx_cgroup *cg, const char *prefix, char ret[][SBX_CGROUP_TASKS_PATH_MAX], size_t max,
                           hull_error *e) {
        const char *dirs[] = {cg->memory, cg->pids, cg->cpu};
        size_t n = 0;
        if (cg->v2)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                if (!dirs[i][0])
                        continue;
                if (n >= max)
                        return hull_err(e, -E2BIG, "cgroup: too many hierarchies");
                if ((size_t) snprintf(ret[n], SBX_CGROUP_TASKS_PATH_MAX, "%s%s/tasks", prefix, dirs[i]) >=
                    SBX_CGROUP_TASKS_PATH_MAX)
                        return hull_err(e, -ENAMETOOLONG, "cgroup: path too long: %s", dirs[i]);
                n++;
        }
        return (int) n;
}

int sbx_cgroup_attach(const sbx_cgroup *cg, pid_t pid, hull_error *e) {
        char buf[SBX_SHORT_STR_MAX];
        snprintf(buf, sizeof(buf), "%d", (int) pid);
        const char *dirs[] = {cg->memory, cg->pids, cg->cpu};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                if (!dirs[i][0])
                        continue;
                int r = write_file(dirs[i], "cgroup.procs", buf);
                if (r < 0)
                        return hull_err(e, r, "cgroup: cannot move the sandbox into %s", dirs[i]);
        }
        return 0;
}

/* Value of "key N" in a flat-keyed cgroup file, or 0. */
static uint64_t read_keyed(const char *dir, const char *file, const char *key) {
        char path[SBX_PATH_MAX];
        size_t len, klen = strlen(key);
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
                return 0;
        _cleanup_free_ char *text = malloc(SBX_CGROUP_FILE_MAX);
        if (!text || read_file(path, text, SBX_CGROUP_FILE_MAX, &len) < 0)
                return 0;
        for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
                        return strtoull(p + klen + 1, NULL, 10);
        }
        return 0;
}

static uint64_t read_number(const char *dir, const char *file) {
        char path[SBX_PATH_MAX], text[SBX_SHORT_STR_MAX];
        size_t len;
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
                return 0;
        if (read_file(path, text, sizeof(text), &len) < 0)
                return 0;
        return strtoull(text, NULL, 10);
}

void sbx_cgroup_read_stats(const sbx_cgroup *cg, sbx_cgroup_stats *ret) {
        *ret = (sbx_cgroup_stats){0};
        if (!cg->memory[0])
                return;
        if (cg->v2) {
                ret->oom_killed = read_keyed(cg->memory, "memory.events", "oom_kill") > 0;
                ret->peak_memory_bytes = read_number(cg->memory, "memory.peak");
        } else {
                ret->oom_killed = read_keyed(cg->memory, "memory.oom_control", "oom_kill") > 0;
                ret->peak_memory_bytes = read_number(cg->memory, "memory.max_usage_in_bytes");
        }
}

/* Returns 0, or the negative errno of the last attempt when the directory stays. */
static int remove_dir(char *dir) {
        int r = 0;
        if (!dir[0])
                return 0;
        /* The last tasks may still be leaving: back off from 1 ms to 128 ms (about 2 s). */
        long wait_ns = 1000000;
        for (unsigned i = 0; i < SBX_CGROUP_RMDIR_TRIES; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT) {
                        r = 0;
                        break;
                }
                r = negative_errno();
                if (errno != EBUSY)
                        break;
                nanosleep(&(struct timespec){.tv_nsec = wait_ns}, NULL);
                if (wait_ns < 128000000)
                        wait_ns *= 2;
        }
        dir[0] = '\0';
        return r;
}

int sbx_cgroup_destroy(sbx_cgroup *cg, hull_error *e) {
        char *dirs[] = {cg->memory, cg->pids, cg->cpu};
        int first = 0;
        if (!cg->made)
                return 0;
        cg->made = false;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                char dir[SBX_PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", dirs[i]);
                int r = remove_dir(dirs[i]);
                if (r < 0 && first == 0)
                        first = hull_err_hint(
                                e, r, "a process of the sandbox user's host uid may have joined it; remove it by hand",
                                "cgroup: %s was left behind", dir);
        }
        return first;
}

int sbx_cgroup_sweep_stale(unsigned *ret_removed, hull_error *e) {
        sbx_cgroup cg;
        sbx_cgroup_limits lim = {.memory_bytes = 1, .pids = 1, .millicpus = 1};
        unsigned removed = 0;
        int r = sbx_cgroup_plan(&cg, "x", &lim, e);
        if (r < 0)
                return r;
        const char *planned[3] = {cg.memory, cg.pids, cg.cpu};
        for (size_t i = 0; i < ELEMENTSOF(planned); i++) {
                char parent[SBX_PATH_MAX];
                if (!planned[i][0])
                        continue;
                snprintf(parent, sizeof(parent), "%s", planned[i]);
                char *slash = strrchr(parent, '/');
                if (!slash)
                        continue;
                *slash = '\0';
                DIR *d = opendir(parent);
                if (!d)
                        continue;
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (strncmp(de->d_name, "hull-", 5) != 0 || de->d_type != DT_DIR)
                                continue;
                        char *end;
                        errno = 0;
                        long pid = strtol(de->d_name + 5, &end, 10);
                        if (errno || end == de->d_name + 5 || *end != '-' || pid <= 0 || pid > INT32_MAX)
                                continue;
                        if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                                continue; /* its owner still runs (or the pid was reused): leave it */
                        char path[SBX_PATH_MAX];
                        if ((size_t) snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) < sizeof(path) &&
                            rmdir(path) == 0)
                                removed++;
                }
                closedir(d);
        }
        if (ret_removed)
                *ret_removed = removed;
        return 0;
}
