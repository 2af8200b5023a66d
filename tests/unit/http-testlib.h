/* http-testlib.h: what test-http-server and test-http-client share: a loopback socket, a raw
 * request and its answer, a python3 client run as a child. Tests only. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t tl_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* A TCP connection to 127.0.0.1:port from the address from (NULL: any), or -1. */
static inline int tl_connect_from(unsigned port, const char *from) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (fd >= 0 && from) {
                struct sockaddr_in b = {.sin_family = AF_INET};
                inet_pton(AF_INET, from, &b.sin_addr);
                if (bind(fd, (struct sockaddr *) &b, sizeof(b)) < 0) {
                        close(fd);
                        return -1;
                }
        }
        if (fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static inline int tl_connect(unsigned port) {
        return tl_connect_from(port, NULL);
}

static inline bool tl_send(int fd, const void *p, size_t n) {
        const char *c = p;
        while (n > 0) {
                ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                c += k;
                n -= (size_t) k;
        }
        return true;
}

/* Read into out (NUL-terminated) until EOF, out is full, or timeout_ms passes. Returns the count. */
static inline size_t tl_read_all(int fd, char *out, size_t size, int timeout_ms) {
        size_t n = 0;
        uint64_t end = tl_now_ms() + (uint64_t) timeout_ms;
        while (n + 1 < size) {
                uint64_t now = tl_now_ms();
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (now >= end || poll(&p, 1, (int) (end - now)) <= 0)
                        break;
                ssize_t k = read(fd, out + n, size - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        out[n] = '\0';
        return n;
}

/* Read into out (NUL-terminated) until needle appears, EOF, or timeout_ms. Returns the count. */
static inline size_t tl_read_until(int fd, char *out, size_t size, const char *needle, int timeout_ms) {
        size_t n = 0;
        uint64_t end = tl_now_ms() + (uint64_t) timeout_ms;
        out[0] = '\0';
        while (n + 1 < size && !strstr(out, needle)) {
                uint64_t now = tl_now_ms();
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (now >= end || poll(&p, 1, (int) (end - now)) <= 0)
                        break;
                ssize_t k = read(fd, out + n, size - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t) k;
                out[n] = '\0';
        }
        return n;
}

/* Send a whole request on a fresh connection and read the answer until the server closes it
 * (send "Connection: close"). Returns the answer's length. */
static inline size_t tl_exchange(unsigned port, const char *req, size_t len, char *out, size_t size) {
        int fd = tl_connect(port);
        if (fd < 0) {
                out[0] = '\0';
                return 0;
        }
        size_t n = tl_send(fd, req, len) ? tl_read_all(fd, out, size, 20000) : 0;
        out[n] = '\0';
        close(fd);
        return n;
}

/* The status of an answer "HTTP/1.1 NNN ...", 0 when none. */
static inline unsigned tl_status(const char *answer) {
        unsigned st = 0;
        if (strncmp(answer, "HTTP/1.", 7) == 0 && strlen(answer) > 12)
                st = (unsigned) strtoul(answer + 9, NULL, 10);
        return st;
}

/* Close with a reset (SO_LINGER 0): a hang-up the server can see. */
static inline void tl_reset(int fd) {
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(fd);
}

/* Start /usr/bin/python3 -c script with one argument; its stdout comes on *ret_out. Returns its
 * pid or -1. */
static inline pid_t tl_python(const char *script, const char *arg, int *ret_out) {
        int p[2];
        if (pipe(p) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                dup2(p[1], 1);
                close(p[0]);
                close(p[1]);
                execl("/usr/bin/python3", "python3", "-c", script, arg, (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        if (pid < 0) {
                close(p[0]);
                return -1;
        }
        *ret_out = p[0];
        return pid;
}

/* Wait for a python client started by tl_python, reading its output (at most timeout_ms; then it
 * is killed). Returns its exit status (-1 killed). */
static inline int tl_python_wait(pid_t pid, int out, char *buf, size_t size, int timeout_ms) {
        tl_read_all(out, buf, size, timeout_ms);
        close(out);
        int st;
        if (waitpid(pid, &st, WNOHANG) == 0) {
                struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000};
                nanosleep(&ts, NULL);
                if (waitpid(pid, &st, WNOHANG) == 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &st, 0);
                        return -1;
                }
        }
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
