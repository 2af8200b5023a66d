/* capture.c: head + tail ring capture of one output stream. */
#include "capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

int capture_init(capture *c, size_t limit) {
        *c = (capture){.tee_fd = -1};
        c->head_max = limit - limit / 2;
        c->tail_max = limit / 2;
        return 0;
}

/* The buffer, at the first byte: a command that writes nothing (most of them write little or
 * nothing on one of the streams) costs no allocation. One block for both halves: a large malloc
 * is an mmap whose first page the allocator writes, its munmap a TLB flush, and a page fault is
 * not free (10-20 us in a VM). Out of memory: nothing is kept any more, every byte counts as
 * dropped. */
static bool capture_buffer(capture *c) {
        if (c->head)
                return true;
        size_t limit = c->head_max + c->tail_max;
        c->head = malloc(limit ? limit : 1);
        if (!c->head) {
                c->head_max = c->tail_max = 0;
                return false;
        }
        c->tail = c->head + c->head_max;
        return true;
}

void capture_done(capture *c) {
        free(c->head);
        *c = (capture){.tee_fd = -1};
}

void capture_set_tee(capture *c, int fd) {
        c->tee_fd = fd;
}

static void tee_write(int fd, const char *p, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return;
                p += n;
                len -= (size_t) n;
        }
}

void capture_append(capture *c, const void *data, size_t len) {
        const char *p = data;
        c->total += len;
        if (len == 0 || !capture_buffer(c))
                return;
        size_t h = MIN(len, c->head_max - c->head_len);
        memcpy(c->head + c->head_len, p, h);
        c->head_len += h;
        if (c->tee_fd >= 0 && h > 0)
                tee_write(c->tee_fd, p, h);
        p += h;
        len -= h;
        if (len == 0 || c->tail_max == 0)
                return;
        if (len >= c->tail_max) { /* only the last tail_max bytes can survive */
                memcpy(c->tail, p + len - c->tail_max, c->tail_max);
                c->tail_start = 0;
                c->tail_len = c->tail_max;
                return;
        }
        for (size_t done = 0; done < len;) {
                size_t end = (c->tail_start + c->tail_len) % c->tail_max;
                size_t n = MIN(len - done, c->tail_max - end);
                memcpy(c->tail + end, p + done, n);
                done += n;
                size_t grow = MIN(n, c->tail_max - c->tail_len);
                c->tail_len += grow;
                c->tail_start = (c->tail_start + (n - grow)) % c->tail_max;
        }
}

uint64_t capture_dropped(const capture *c) {
        return c->total - c->head_len - c->tail_len;
}

int capture_contents(const capture *c, char **ret, size_t *ret_len) {
        size_t len = c->head_len + c->tail_len;
        char *buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        if (len > 0) { /* else head may be NULL: nothing was ever appended */
                memcpy(buf, c->head, c->head_len);
                size_t first = MIN(c->tail_len, c->tail_max - c->tail_start);
                memcpy(buf + c->head_len, c->tail + c->tail_start, first);
                memcpy(buf + c->head_len + first, c->tail, c->tail_len - first);
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}
