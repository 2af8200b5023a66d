/* hd-sink.h: the store's file I/O (hd-sink.c): bytes written to a new handle's file
 * are hashed on the way, from the memory they are written from, so no file is read back for
 * its SHA-256. Not part of the public API. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

typedef struct hd_sink {
        int fd;         /* the new file, not owned */
        sha256_ctx sha; /* of every byte written */
        uint64_t bytes; /* written (and hashed) so far */
        uint64_t max;   /* more than this: -EFBIG */
        int err;        /* the first error, sticky */
        char *buf;      /* pieces of a json_dump_callback, gathered to HD_IO_CHUNK; NULL until one */
        size_t buf_len;
} hd_sink;

/* Start writing to fd, at most max bytes. Returns 0 or -ENOSYS/-EIO (libcrypto). Release with
 * hd_sink_done whatever happened. */
int hd_sink_init(hd_sink *k, int fd, uint64_t max);

/* Hash and write p[0..n), HD_IO_CHUNK at a time (each chunk hashed while it is in the cache,
 * then written). Returns 0, -EFBIG (past max: nothing more is written) or the write's errno. */
int hd_sink_write(hd_sink *k, const void *p, size_t n);

/* A json_dump_callback for a sink (ud): small pieces gathered into HD_IO_CHUNK before they are
 * hashed and written. Returns 0, or -1 once the sink failed (its err says why), which stops the
 * dump. */
int hd_sink_dump(const char *p, size_t n, void *ud);

/* Write what is gathered and finish the digest. Returns 0, or the sink's first error. */
int hd_sink_finish(hd_sink *k, char ret_digest[SHA256_HEX_SIZE]);

void hd_sink_done(hd_sink *k);

/* The SHA-256 of bytes in memory, taken on a thread of its own (from HD_HASH_THREAD_MIN bytes on;
 * below, or when no thread can be made, at once in hd_hasher_start) while the caller checks and
 * writes the same bytes: SHA-256 is as slow as the write itself, so side by side it costs no
 * wall time. The bytes must not change before hd_hasher_join, which must be called once after
 * every start. */
typedef struct hd_hasher {
        const char *p;
        size_t n;      /* the bytes to hash; hd_hasher_start_str's: those found so far (atomic) */
        size_t hashed; /* by the thread, read after the join */
        bool threaded; /* a thread to join */
        bool final;    /* hd_hasher_start_str: n is the whole length (atomic) */
        bool stop;     /* hd_hasher_start_str: give up, the text was over its bound (atomic) */
        bool cancel;   /* hd_hasher_cancel: stop between chunks (atomic) */
        int fd;        /* hd_hasher_start_write's file; -1: none */
        uint64_t written;
        int werr; /* the write's error */
        pthread_t thread;
        int r;
        char digest[SHA256_HEX_SIZE];
} hd_hasher;
void hd_hasher_start(hd_hasher *h, const void *p, size_t n);
/* Like hd_hasher_start for the NUL-terminated text p, whose length is found here, HD_IO_CHUNK at
 * a time, while the thread hashes what is found so far (and finds more itself when it catches
 * up): the strlen of 50 MB (4 ms) no longer delays the hash, the put's longest step. Its length
 * in *ret_len; -EFBIG when it is longer than max (the hash stops; join it all the same). */
int hd_hasher_start_str(hd_hasher *h, const char *p, size_t max, size_t *ret_len);
/* Like hd_hasher_start, the thread also writing each HD_IO_CHUNK to fd once hashed: for a put
 * whose check outlasts the hash and the write together (a big JSON's scan), both run beside it.
 * After the join: h->written bytes written, h->werr the write's error (0: none). */
void hd_hasher_start_write(hd_hasher *h, const void *p, size_t n, int fd);
/* Stop the hash (and write) between chunks: the check refused the bytes. */
void hd_hasher_cancel(hd_hasher *h);
/* Returns 0 and the digest, or -ENOSYS/-EIO (libcrypto), -ECANCELED (stopped). */
int hd_hasher_join(hd_hasher *h, char ret_digest[SHA256_HEX_SIZE]);

/* write() all of p[0..n), HD_WRITE_CHUNK at a time. Returns 0 or a negative errno. */
int hd_write_all(int fd, const void *p, size_t n);

/* All of the regular file fd (at most max bytes, else -EFBIG; -EINVAL: not a regular file), read
 * into a new NUL-terminated buffer (*ret, freed by the caller). Returns 0 or a negative errno. */
int hd_read_all_fd(int fd, uint64_t max, char **ret, size_t *ret_len);

/* The SHA-256 of the file fd, read from its start with pread. Returns 0, -ENOMEM, or an errno. */
int hd_hash_fd(int fd, char ret[SHA256_HEX_SIZE]);

/* A read-only private mapping of a file's first len bytes (len 0: an empty one, nothing mapped). */
typedef struct hd_mapping {
        void *p;
        size_t len;
} hd_mapping;
int hd_map_fd(int fd, size_t len, hd_mapping *ret);
void hd_mapping_done(hd_mapping *m);
