/* sock-util.c: see sock-util.h. */
#include "sock-util.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sock_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags) {
        char cbuf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)];
        struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (nfds > SOCK_FDS_MAX)
                return -EINVAL;
        if (nfds > 0) {
                memset(cbuf, 0, sizeof(cbuf));
                mh.msg_control = cbuf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        ssize_t n;
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EMSGSIZE;
}

ssize_t sock_recv_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max_fds, size_t *ret_nfds,
                      int *ret_truncated) {
        char cbuf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)];
        struct iovec iov = {.iov_base = buf, .iov_len = len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        size_t got = 0;
        ssize_t n;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (got < max_fds)
                                        fds[got++] = fd;
                                else
                                        close(fd);
                        }
        if (ret_nfds)
                *ret_nfds = got;
        if (ret_truncated)
                *ret_truncated = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
        return n;
}

bool sock_fd_hung_up(int fd) {
        struct pollfd p = {.fd = fd, .events = SOCK_HANGUP_EVENTS};
        return fd >= 0 && poll(&p, 1, 0) > 0 && sock_hung_up(p.revents);
}
