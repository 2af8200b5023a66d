/* broker-internal.h: what the broker's files share (broker.c: the broker's loop and the
 * daemon's side; broker-worker.c: a run's worker and a session's keeper, in processes of their
 * own; the frames both ends speak). Not for use outside src/service/broker*.c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "broker.h"

enum {
        CTL_RUN = 1,     /* carries one fd: the broker's end of a run's socketpair */
        CTL_CANCEL = 2,  /* stop every run, refuse new ones */
        CTL_SESSION = 3, /* carries one fd: the broker's end of a session's socketpair */
        CTL_RUN_JS = 4,  /* CTL_RUN of a javascript run: the next spare warms a node */
};

/* daemon ↔ keeper, SOCK_SEQPACKET messages */
#define KEEPER_MAGIC 0x686b7031U /* "hkp1" */
typedef struct keeper_req {
        uint32_t magic;
        uint64_t memory_bytes, pids, millicpus, tmp_bytes;
        char handles_dir[SBX_PATH_MAX]; /* "" for none */
        char layer_dir[SBX_PATH_MAX];   /* "" for none */
        char skills_dir[SBX_PATH_MAX];  /* "" for none */
        char mnt_dir[SBX_PATH_MAX];     /* "" for none */
        uint32_t net;                   /* sbx_net_mode */
        uint32_t allow_package_managers, allow_loopback;
        uint32_t n_hosts, n_cidrs;
        uint32_t has_log; /* the log's fd rides along */
        uint32_t tier;    /* sbx_tier: SBX_TIER_CONTAINER or SBX_TIER_KERNEL */
        char hosts[SBX_NET_ALLOW_MAX][EGRESS_HOST_MAX + 1];
        char cidrs[BRK_NET_CIDRS_MAX][BRK_NET_CIDR_TEXT];
} keeper_req;

typedef struct keeper_reply {
        uint32_t magic;
        int32_t err; /* 0: started; the fds ride along */
        uint32_t n_cg_fds;
        uint32_t host_uid, host_gid;
        uint32_t kernel;     /* the kernel tier: ctl, ws and the shim's pidfd ride along, no seccomp memfd */
        uint32_t has_cg_dir; /* the cgroup's directory (O_PATH) rides along after the cgroup files */
        char msg[HULL_ERROR_MSG_MAX];
} keeper_reply;

typedef struct keeper_end {
        uint32_t magic;
        uint32_t oom;
        int32_t status;
} keeper_end;

/* ---- frames: a u64 little-endian length, then the bytes (broker-worker.c) ---- */
int brk_frame_send(int fd, const char *buf, size_t len, uint64_t deadline_ms);
int brk_frame_recv(int fd, size_t max, uint64_t deadline_ms, char **ret, size_t *ret_len);
int brk_wait_fd(int fd, short events, uint64_t deadline_ms);
int brk_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms);
int brk_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms);
/* Answer a run the broker will not start (a SBX_PLAN_NOT_STARTED result). */
void brk_refuse_run(int fd, const char *why);

/* One run, in the worker process: the request from fd, the result to it; cancel_fd (a signalfd)
 * cancels; box: the spare's pre-made sandbox or NULL. Never returns an error: it answers. */
struct sbx_held;
/* box: the spare's sandbox set up in advance, or NULL; held: a node waiting in it for a
 * javascript run's code (in_fd -1: none). */
void brk_worker_run(const brk_config *cfg, int fd, int cancel_fd, sbx_session_box *box, struct sbx_held *held);
/* A session's keeper, in its process: the session's sandbox until the daemon's end closes. */
void brk_keeper_run(const brk_config *cfg, int fd, int term_fd);
