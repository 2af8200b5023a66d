/* capture.h: a bounded output capture that keeps the first and the last bytes of a stream and
 * counts what it dropped in between. Memory is taken once, at the first byte appended (a
 * stream that stays empty costs none), and never grows. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct capture {
        char *head; /* first head_max bytes, in order */
        size_t head_len, head_max;
        char *tail; /* ring of the last tail_max bytes after the head filled */
        size_t tail_start, tail_len, tail_max;
        uint64_t total; /* every byte ever appended */
        int tee_fd;     /* head bytes are also written here as they arrive; -1: none */
} capture;

/* Split limit bytes evenly between head and tail; allocates nothing yet. Returns 0 (the
 * -ENOMEM of callers is kept for when it allocated here). */
int capture_init(capture *c, size_t limit);
void capture_done(capture *c);

/* Also write the head, as it fills, to fd (a terminal or pipe of the caller's); write errors
 * are ignored. */
void capture_set_tee(capture *c, int fd);

/* Append bytes; never fails: should the buffer not be had at the first byte, every byte is
 * counted as dropped. */
void capture_append(capture *c, const void *data, size_t len);

/* Bytes that were dropped between head and tail. */
uint64_t capture_dropped(const capture *c);

/* Copy the kept bytes (head, then tail in order) into a freshly allocated buffer of
 * *ret_len bytes plus a NUL terminator. Returns 0 or -ENOMEM; the caller frees *ret. */
int capture_contents(const capture *c, char **ret, size_t *ret_len);
