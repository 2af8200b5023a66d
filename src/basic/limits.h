/* limits.h: every bound hull enforces, in one place. Change a bound here, nowhere else. */
#pragma once

#include <stdint.h>

/* Errors */
#define HULL_ERROR_MSG_MAX 512 /* bytes of a user-facing error message */

/* hull exec: defaults */
#define SBX_DEFAULT_TIMEOUT_MS 30000ULL
#define SBX_DEFAULT_MEMORY_BYTES (512ULL << 20)
#define SBX_DEFAULT_PIDS 256U
#define SBX_DEFAULT_TMP_BYTES (64ULL << 20)
#define SBX_DEFAULT_OUTPUT_BYTES (1ULL << 20) /* per stream: half head, half tail */
#define SBX_DEFAULT_NOFILE 1024U
#define SBX_DEFAULT_FSIZE_BYTES (1ULL << 30)

/* hull exec: what a caller may ask for */
#define SBX_TIMEOUT_MS_MAX (24ULL * 3600 * 1000)
#define SBX_MEMORY_BYTES_MIN (4ULL << 20)
#define SBX_MEMORY_BYTES_MAX (1ULL << 46)
#define SBX_PIDS_MAX 65536U
#define SBX_CPUS_MAX 1024.0
#define SBX_TMP_BYTES_MAX (1ULL << 40)
#define SBX_OUTPUT_BYTES_MIN 64ULL
#define SBX_OUTPUT_BYTES_MAX (256ULL << 20)
#define SBX_ENV_MAX 128U      /* --env entries */
#define SBX_ENV_ENTRY_MAX 8192U /* bytes of one K=V */
#define SBX_ARGV_MAX 4096U    /* arguments of the sandboxed command */
#define SBX_NOFILE_MAX 65536U

/* Sandbox construction */
#define SBX_KILL_GRACE_MS 1000U      /* SIGTERM to SIGKILL on timeout */
#define SBX_ROOTFS_ENTRIES_MAX 64U   /* top-level entries of --rootfs */
#define SBX_PATH_MAX 4096U           /* any path hull builds or accepts */
#define SBX_ETC_FILE_MAX 2048U       /* one generated /etc file */
#define SBX_CHILD_MSG_MAX 200U       /* what a failing child tells its parent */
#define SBX_CGROUP_FILE_MAX 65536U   /* bytes read from one cgroup or /proc file */
#define SBX_CGROUP_RMDIR_TRIES 22U   /* cgroup removal retries, backing off 1..128 ms (~2 s) */
#define SBX_SANDBOX_UID 1000U        /* uid and gid inside the sandbox */
#define SBX_ROOT_HOST_UID 65534U     /* host uid the sandbox user maps to when hull runs as root */
#define SBX_READ_CHUNK 65536U        /* bytes per read() of captured output */
#define SBX_EXEC_STACK_BYTES 65536U  /* stack of the sandboxed command between clone and execve */
