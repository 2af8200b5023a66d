/* sbx-container.h: the container tier as the rest of src/sandbox/ uses it (sbx_run, sessions):
 * run a command in a container, or launch one (a session's init). Internal to src/sandbox/. */
#pragma once

#include <sys/types.h>

#include "error.h"
#include "sbx-cgroup.h"
#include "sbx.h"

/* The container tier's entry point; the caller (sbx_run) has filled the common parts of *ret.
 * workdir is NULL for a container without --workdir (it gets a tmpfs). */
int sbx_run_container(const sbx_spec *spec, const char *workdir, sbx_result *ret, hull_error *e);

/* A started container (see sbx_container_launch). */
typedef struct sbx_launch {
        pid_t pid;
        int rep_fd; /* read end of the set-up report pipe */
        uint64_t start_us;
        uid_t host_uid;
        gid_t host_gid;
        sbx_cgroup cg;
        char **env;
        int net_fd;      /* limited network: the proxy's listening socket in the sandbox, or -1 */
        pid_t pasta_pid; /* unrestricted: pasta (sbx_net_pasta_stop), 0: none */
} sbx_launch;

/* Plan, clone and set up a container. Without ctl_fd (-1) its init runs spec->argv with the
 * given stdio; with ctl_fd it becomes a session init serving that socket. On success *ret holds
 * the running child; free its parts with sbx_launch_done (which removes nothing in the kernel:
 * cgroups stay until sbx_cgroup_destroy). On failure nothing is left behind. */
int sbx_container_launch(const sbx_spec *spec, const char *workdir, int in_fd, int out_fd, int err_fd, int ctl_fd,
                         sbx_launch *ret, hull_error *e);
void sbx_launch_done(sbx_launch *l);
/* After a failed start, with the child dead: the child's own error from the report pipe. */
void sbx_launch_child_error(int rep_fd, hull_error *e);
