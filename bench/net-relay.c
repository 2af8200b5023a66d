/* net-relay.c: a bare TCP relay on 127.0.0.1 for bench/net-relay.sh, never a test. It models
 * the relay of a limited sandbox's proxy (src/sandbox/sbx-net.c: socket → pipe → socket with
 * splice(2), poll(2) between) without the sandbox, the request head or the checks, so variants
 * of the relay can be measured side by side with a direct transfer on the same machine:
 *
 *   net-relay LISTEN_PORT SERVER_PORT MODE [SOCKBUF [PIPE [NODELAY]]]
 *
 * MODE poll: one thread per connection, non-blocking splices and poll (as sbx-net.c does);
 * MODE threads: one thread per direction, blocking splices, no poll. SOCKBUF (bytes, 0 = the
 * kernel's autotuning) sets SO_RCVBUF and SO_SNDBUF on both sockets; PIPE the pipe size (256 KiB
 * as sbx-net.c); NODELAY 1 sets TCP_NODELAY on the client's side too (sbx-net.c sets it on the
 * server's side only). Errors end the connection; this is a measuring tool. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct options {
        int server_port;
        bool threads;
        int sockbuf, pipe_size;
        bool nodelay_client;
} options;

typedef struct direction {
        int from, to, pipe_size;
} direction;

typedef struct pipe_buf {
        int r, w;
        size_t len, cap;
        bool eof, full, shut;
} pipe_buf;

static int open_pipe(int pipe_size, int flags, int fds[2]) {
        if (pipe2(fds, O_CLOEXEC | flags) < 0)
                return -1;
        int cap = fcntl(fds[1], F_SETPIPE_SZ, pipe_size);
        if (cap < 0) {
                close(fds[0]);
                close(fds[1]);
        }
        return cap;
}

/* One direction, blocking: splice in, splice all of it out, again. */
static void *pump_blocking(void *arg) {
        direction *d = arg;
        int p[2];
        if (open_pipe(d->pipe_size, 0, p) < 0)
                return NULL;
        for (;;) {
                ssize_t k = splice(d->from, NULL, p[1], NULL, (size_t) d->pipe_size, SPLICE_F_MOVE);
                if (k <= 0)
                        break;
                while (k > 0) {
                        ssize_t o = splice(p[0], NULL, d->to, NULL, (size_t) k, SPLICE_F_MOVE);
                        if (o <= 0)
                                goto out;
                        k -= o;
                }
        }
out:
        (void) shutdown(d->to, SHUT_WR);
        close(p[0]);
        close(p[1]);
        return NULL;
}

static bool room(const pipe_buf *b) {
        return !b->eof && !b->full && b->len < b->cap;
}

static int pump_in(int from, pipe_buf *b) {
        ssize_t k = splice(from, NULL, b->w, NULL, b->cap - b->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (k > 0)
                b->len += (size_t) k;
        else if (k == 0)
                b->eof = true;
        else if (errno == EAGAIN && b->len > 0)
                b->full = true;
        else if (errno != EAGAIN)
                return -1;
        return 0;
}

static int pump_out(int to, pipe_buf *b) {
        ssize_t k = splice(b->r, NULL, to, NULL, b->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (k < 0)
                return errno == EAGAIN ? 0 : -1;
        b->len -= (size_t) k;
        if (k > 0)
                b->full = false;
        return 0;
}

/* Both directions in one thread, as sbx-net.c's relay(). */
static void relay_poll(int a, int b, int pipe_size) {
        pipe_buf up = {0}, down = {0};
        int p[2], q[2], cu, cd;
        if ((cu = open_pipe(pipe_size, O_NONBLOCK, p)) < 0)
                return;
        if ((cd = open_pipe(pipe_size, O_NONBLOCK, q)) < 0)
                goto out_up;
        up = (pipe_buf){.r = p[0], .w = p[1], .cap = (size_t) cu};
        down = (pipe_buf){.r = q[0], .w = q[1], .cap = (size_t) cd};
        (void) fcntl(a, F_SETFL, O_NONBLOCK);
        (void) fcntl(b, F_SETFL, O_NONBLOCK);
        for (;;) {
                if (up.eof && up.len == 0 && !up.shut) {
                        (void) shutdown(b, SHUT_WR);
                        up.shut = true;
                }
                if (down.eof && down.len == 0 && !down.shut) {
                        (void) shutdown(a, SHUT_WR);
                        down.shut = true;
                }
                if (up.shut && down.shut)
                        break;
                struct pollfd f[2] = {
                        {.fd = a, .events = (short) ((room(&up) ? POLLIN : 0) | (down.len ? POLLOUT : 0))},
                        {.fd = b, .events = (short) ((room(&down) ? POLLIN : 0) | (up.len ? POLLOUT : 0))},
                };
                if (poll(f, 2, -1) <= 0 || ((f[0].revents | f[1].revents) & (POLLERR | POLLNVAL)))
                        break;
                if ((f[0].revents & (POLLIN | POLLHUP)) && room(&up) && pump_in(a, &up) < 0)
                        break;
                if ((f[1].revents & (POLLIN | POLLHUP)) && room(&down) && pump_in(b, &down) < 0)
                        break;
                if ((up.len && pump_out(b, &up) < 0) || (down.len && pump_out(a, &down) < 0))
                        break;
        }
        close(q[0]);
        close(q[1]);
out_up:
        close(p[0]);
        close(p[1]);
}

typedef struct conn {
        const options *o;
        int fd;
} conn;

static void set_int(int fd, int level, int name, int value) {
        (void) setsockopt(fd, level, name, &value, sizeof(value));
}

static void *conn_main(void *arg) {
        conn *c = arg;
        const options *o = c->o;
        int a = c->fd, b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        free(c);
        struct sockaddr_in in = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t) o->server_port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (o->sockbuf > 0)
                for (int i = 0; i < 2; i++) {
                        set_int(i ? b : a, SOL_SOCKET, SO_RCVBUF, o->sockbuf);
                        set_int(i ? b : a, SOL_SOCKET, SO_SNDBUF, o->sockbuf);
                }
        if (b >= 0 && connect(b, (struct sockaddr *) &in, sizeof(in)) == 0) {
                set_int(b, IPPROTO_TCP, TCP_NODELAY, 1);
                if (o->nodelay_client)
                        set_int(a, IPPROTO_TCP, TCP_NODELAY, 1);
                if (o->threads) {
                        direction up = {a, b, o->pipe_size}, down = {b, a, o->pipe_size};
                        pthread_t t;
                        if (pthread_create(&t, NULL, pump_blocking, &up) == 0) {
                                pump_blocking(&down);
                                pthread_join(t, NULL);
                        }
                } else
                        relay_poll(a, b, o->pipe_size);
        }
        close(a);
        if (b >= 0)
                close(b);
        return NULL;
}

int main(int argc, char **argv) {
        if (argc < 4 || (strcmp(argv[3], "poll") != 0 && strcmp(argv[3], "threads") != 0)) {
                fprintf(stderr, "usage: net-relay LISTEN_PORT SERVER_PORT poll|threads [SOCKBUF [PIPE [NODELAY]]]\n");
                return 2;
        }
        static options o;
        o = (options){.server_port = (int) strtol(argv[2], NULL, 10),
                      .threads = strcmp(argv[3], "threads") == 0,
                      .sockbuf = argc > 4 ? (int) strtol(argv[4], NULL, 10) : 0,
                      .pipe_size = argc > 5 ? (int) strtol(argv[5], NULL, 10) : 256 << 10,
                      .nodelay_client = argc > 6 && strcmp(argv[6], "1") == 0};
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in in = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t) strtol(argv[1], NULL, 10)),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        set_int(l, SOL_SOCKET, SO_REUSEADDR, 1);
        if (l < 0 || bind(l, (struct sockaddr *) &in, sizeof(in)) < 0 || listen(l, 16) < 0) {
                perror("net-relay: listen");
                return 1;
        }
        for (;;) {
                conn *c = malloc(sizeof(*c));
                int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
                pthread_t t;
                if (!c || fd < 0) {
                        free(c);
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                *c = (conn){.o = &o, .fd = fd};
                if (pthread_create(&t, NULL, conn_main, c) != 0) {
                        close(fd);
                        free(c);
                        continue;
                }
                pthread_detach(t);
        }
}
