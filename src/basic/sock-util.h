/* sock-util.h: one message with file descriptors over a unix socket (SCM_RIGHTS), both ways.
 * No allocation (the control buffer is on the stack), so a forked child may use them too. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#define SOCK_FDS_MAX 8U /* fds one message carries */

/* Send len bytes (one message on SOCK_SEQPACKET) with nfds (at most SOCK_FDS_MAX) fds, retrying
 * EINTR. Returns 0, -EMSGSIZE (sent short), -EINVAL (too many fds) or a negative errno. */
int sock_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags);

/* Receive one message of at most len bytes and at most max_fds fds (MSG_CMSG_CLOEXEC; fds beyond
 * max_fds are closed), retrying EINTR. Returns the byte count (0: EOF) with *ret_nfds fds in
 * fds, or a negative errno. *ret_truncated is set when the message or its fds were cut. */
ssize_t sock_recv_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max_fds, size_t *ret_nfds,
                      int *ret_truncated);
