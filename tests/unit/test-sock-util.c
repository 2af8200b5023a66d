/* test-sock-util.c: fds over a unix socket, both ways, and the edges (EOF, truncation, too many
 * fds, extra fds closed). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sock-util.h"
#include "test.h"

int main(void) {
        int sv[2], p[2];
        CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        CHECK(pipe2(p, O_CLOEXEC) == 0);

        /* two fds and bytes; the received write end still writes into the pipe */
        CHECK_EQ_INT(sock_send_fds(sv[0], "hello", 5, p, 2, 0), 0);
        char buf[16] = {0};
        int fds[4] = {-1, -1, -1, -1}, trunc = -1;
        size_t n = 0;
        CHECK_EQ_INT(sock_recv_fds(sv[1], buf, sizeof(buf), 0, fds, 4, &n, &trunc), 5);
        CHECK(memcmp(buf, "hello", 5) == 0);
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_INT(trunc, 0);
        CHECK(fcntl(fds[0], F_GETFD) == FD_CLOEXEC);
        CHECK(write(fds[1], "x", 1) == 1);
        char c = 0;
        CHECK(read(p[0], &c, 1) == 1 && c == 'x');
        close(fds[0]);
        close(fds[1]);

        /* more fds than asked for: the rest are closed, not leaked */
        CHECK_EQ_INT(sock_send_fds(sv[0], "y", 1, p, 2, 0), 0);
        n = 9;
        CHECK_EQ_INT(sock_recv_fds(sv[1], buf, sizeof(buf), 0, fds, 1, &n, NULL), 1);
        CHECK_EQ_INT(n, 1);
        close(fds[0]);

        /* a message longer than the buffer is cut and says so */
        CHECK_EQ_INT(sock_send_fds(sv[0], "0123456789", 10, NULL, 0, 0), 0);
        CHECK_EQ_INT(sock_recv_fds(sv[1], buf, 4, 0, fds, 1, &n, &trunc), 4);
        CHECK_EQ_INT(trunc, 1);

        /* bounds and EOF */
        int many[SOCK_FDS_MAX + 1];
        for (size_t i = 0; i < SOCK_FDS_MAX + 1; i++)
                many[i] = p[0];
        CHECK_EQ_INT(sock_send_fds(sv[0], "z", 1, many, SOCK_FDS_MAX + 1, 0), -EINVAL);
        close(sv[0]);
        CHECK_EQ_INT(sock_recv_fds(sv[1], buf, sizeof(buf), 0, fds, 1, &n, NULL), 0);
        CHECK_EQ_INT(sock_send_fds(sv[1], "z", 1, NULL, 0, 0), -EPIPE);
        close(sv[1]);
        close(p[0]);
        close(p[1]);
        return test_done();
}
