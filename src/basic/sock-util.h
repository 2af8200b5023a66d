/* sock-util.h: one message with file descriptors over a unix socket (SCM_RIGHTS), both ways.
 * No allocation (the control buffer is on the stack), so a forked child may use them too. And the
 * one definition of "the caller hung up" for every place that watches a caller's connection. */
#pragma once

#include <poll.h>
#include <stdbool.h>
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

/* The caller hung up: its connection was reset (TCP: POLLERR, POLLHUP) or closed (a unix
 * socket's peer: POLLHUP). A half-close (shutdown(SHUT_WR): POLLRDHUP, EOF on read) is NOT a
 * hang-up: such a caller has sent its whole request and still reads the answer. Over TCP a
 * client that closes cleanly (FIN) cannot be told from a half-close: it is noticed only when its
 * answer is written (and the peer resets). Watch a connection with a pollfd whose events are
 * SOCK_HANGUP_EVENTS (nothing asked: POLLHUP and POLLERR are always reported, readable data
 * does not wake the poll) and test its revents with sock_hung_up(). */
#define SOCK_HANGUP_EVENTS 0
static inline bool sock_hung_up(short revents) {
        return (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Whether fd's peer has hung up, now (a poll that does not wait). */
bool sock_fd_hung_up(int fd);
