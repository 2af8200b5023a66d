/* sbx-container-internal.h: what the two halves of the container tier share: the plan the
 * parent (sbx-container.c) prepares and the child (sbx-container-child.c) executes, and the
 * child's entry point. Not for other files. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "limits.h"
#include "macro.h"
#include "sbx-cgroup.h"

/* The child mounts a small tmpfs on STAGE and pivots into it, so the host's root stays reachable
 * at /oldroot (even what STAGE covered) while the sandbox's root is built at /newroot. */
#define STAGE "/tmp"
#define OLDROOT "/oldroot"

typedef enum entry_kind {
        ENTRY_MKDIR, /* an empty directory in the new root, for entries below it */
        ENTRY_SYMLINK,
        ENTRY_DIR,
        ENTRY_FILE,
} entry_kind;

/* One top-level entry of the new root (or of /etc) copied from the host or the rootfs. Its
 * strings live in the plan's arena (plan_strdup): packed there, the dozen entries of a host root
 * touch one page instead of one each, and every page of the plan the parent writes is a page
 * fault, 10-20 us in a VM. The child has the plan at the same address, so the pointers hold. */
typedef struct root_entry {
        entry_kind kind;
        const char *name;   /* relative to the new root, e.g. "lib64" or "etc/ld.so.cache" */
        const char *source; /* bind source, or the link target; NULL for ENTRY_MKDIR */
        dev_t dev;          /* what the parent saw at source (binds), checked after */
        ino_t ino;
} root_entry;

#define ROOT_ENTRIES_MAX (SBX_ROOTFS_ENTRIES_MAX + 16)

typedef struct etc_file {
        const char *name;
        char content[SBX_ETC_FILE_MAX];
} etc_file;

typedef struct child_plan {
        int sync_fd, report_fd;
        int in_fd, out_fd, err_fd;
        char workdir_src[SBX_PATH_MAX];         /* OLDROOT + the work directory's real path, or "" */
        char workspace_opts[SBX_SHORT_STR_MAX]; /* tmpfs options when there is no work directory */
        dev_t workdir_dev;
        ino_t workdir_ino;
        char handles_src[SBX_PATH_MAX]; /* OLDROOT + the handle store's real path, or "" */
        dev_t handles_dev;
        ino_t handles_ino;
        root_entry entries[ROOT_ENTRIES_MAX];
        size_t n_entries;
        char strings[ROOT_ENTRIES_MAX * (SBX_NAME_MAX + SBX_PATH_MAX)]; /* the entries' names and sources */
        size_t strings_len;
        bool host_etc;   /* generate /etc files (host mode) */
        etc_file etc[5]; /* [4]: resolv.conf, only in unrestricted networking (name NULL else) */
        char tmp_opts[SBX_SHORT_STR_MAX], shm_opts[SBX_SHORT_STR_MAX];
        uid_t uid;
        gid_t gid;
        char cgroup_tasks[SBX_CGROUP_TASKS_MAX][SBX_CGROUP_TASKS_PATH_MAX]; /* v1: opened by the parent */
        size_t n_cgroup_tasks;
        bool set_groups;
        bool net_proxy; /* limited network: make the proxy's listening socket and hand it over */
        bool net_pasta; /* unrestricted: unreachable routes for the metadata addresses (pasta
                         * gives the namespace its interface) */
        /* capset(2) data, built in the parent: libcap's cap_set_proc() is not async-signal-safe
         * by contract, the raw call with ready data is. */
        struct __user_cap_data_struct caps_full[_LINUX_CAPABILITY_U32S_3], caps_none[_LINUX_CAPABILITY_U32S_3];
        int last_cap;
        char *const *argv;
        char *const *envp;
        struct rlimit nofile, fsize;
        _Alignas(16) char cmd_stack[SBX_EXEC_STACK_BYTES]; /* the command's stack until execve */
        /* A session init: the control socket and the state of its loop. */
        bool session;
        int ctl_fd;
        pid_t cmd;                          /* the running RUN call, 0 when none */
        int exempt[SBX_SESSION_INTERP_MAX]; /* interpreters: spared by sweeps */
        size_t n_exempt;
        char *cargv[SBX_SESSION_ARGS_MAX + 1], *cenvp[SBX_SESSION_ENV_MAX + 1];
        char *const *senv; /* K=V of the session (an environment's layer): over every call's own */
        size_t n_senv;
        int c_fds[4]; /* stdin, stdout, stderr, interpreter socket */
        int c_nfds;
        _Alignas(16) char msg[SBX_CTL_MSG_MAX];
} child_plan;

/* The child after clone(), pid 1 of the new namespaces: executes the plan (set-up, then the
 * command under a tiny init, or a session's init with p->session). Async-signal-safe; never
 * returns: a failure is reported over p->report_fd and the child _exits. */
_noreturn_ void sbx_container_child_main(child_plan *p);
