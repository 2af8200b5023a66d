/* hd-sink.c: hashed writes into the store, file digests, reads and mappings (see hd-sink.h). */
#include "hd-sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "limits.h"
#include "macro.h"

int hd_sink_init(hd_sink *k, int fd, uint64_t max) {
        *k = (hd_sink){.fd = fd, .max = max};
        return sha256_init(&k->sha);
}

int hd_write_all(int fd, const void *data, size_t n) {
        const char *p = data;
        while (n > 0) { /* loop_write a chunk at a time (limits.h: HD_WRITE_CHUNK says why) */
                size_t m = MIN(n, (size_t) HD_WRITE_CHUNK);
                int r = loop_write(fd, p, m);
                if (r < 0)
                        return r;
                p += m;
                n -= m;
        }
        return 0;
}

int hd_sink_write(hd_sink *k, const void *p, size_t n) {
        const char *c = p;
        if (k->err < 0)
                return k->err;
        if (n > k->max - k->bytes)
                return (k->err = -EFBIG);
        while (n > 0) {
                size_t m = MIN(n, (size_t) HD_IO_CHUNK);
                int r = sha256_update(&k->sha, c, m);
                if (r == 0)
                        r = hd_write_all(k->fd, c, m);
                if (r < 0)
                        return (k->err = r);
                k->bytes += m;
                c += m;
                n -= m;
        }
        return 0;
}

static int flush(hd_sink *k) {
        int r = k->buf_len ? hd_sink_write(k, k->buf, k->buf_len) : k->err;
        k->buf_len = 0;
        return r;
}

int hd_sink_dump(const char *p, size_t n, void *ud) {
        hd_sink *k = ud;
        if (k->err < 0)
                return -1;
        if (!k->buf && !(k->buf = malloc(HD_IO_CHUNK))) {
                k->err = -ENOMEM;
                return -1;
        }
        while (n > 0) {
                if (k->buf_len == HD_IO_CHUNK && flush(k) < 0)
                        return -1;
                size_t m = MIN(n, HD_IO_CHUNK - k->buf_len);
                memcpy(k->buf + k->buf_len, p, m);
                k->buf_len += m;
                p += m;
                n -= m;
        }
        return 0;
}

int hd_sink_finish(hd_sink *k, char ret_digest[SHA256_HEX_SIZE]) {
        int r = flush(k);
        if (r < 0)
                return r;
        r = sha256_final_hex(&k->sha, ret_digest);
        return r < 0 ? (k->err = r) : 0;
}

void hd_sink_done(hd_sink *k) {
        sha256_done(&k->sha);
        free(k->buf);
        k->buf = NULL;
}

int hd_read_all_fd(int fd, uint64_t max, char **ret, size_t *ret_len) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        char *buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        ssize_t n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0) {
                free(buf);
                return (int) n;
        }
        buf[n] = 0;
        *ret = buf;
        *ret_len = (size_t) n;
        return 0;
}

int hd_hash_fd(int fd, char ret[SHA256_HEX_SIZE]) {
        _cleanup_sha256_ sha256_ctx c;
        _cleanup_free_ char *buf = malloc(HD_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        int r = sha256_init(&c);
        if (r < 0)
                return r;
        for (uint64_t off = 0;;) {
                ssize_t n = loop_pread(fd, buf, HD_IO_CHUNK, off);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        break;
                r = sha256_update(&c, buf, (size_t) n);
                if (r < 0)
                        return r;
                off += (uint64_t) n;
        }
        return sha256_final_hex(&c, ret);
}

void hd_mapping_done(hd_mapping *m) {
        if (m->p && m->len)
                munmap(m->p, m->len);
}

int hd_map_fd(int fd, size_t len, hd_mapping *ret) {
        *ret = (hd_mapping){.p = (void *) "", .len = 0};
        if (len == 0)
                return 0;
        void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        *ret = (hd_mapping){.p = p, .len = len};
        return 0;
}

static void *hash_thread(void *ud) {
        hd_hasher *h = ud;
        h->r = sha256_hex(h->p, h->n, h->digest);
        h->hashed = h->r < 0 ? 0 : h->n;
        return NULL;
}

void hd_hasher_start(hd_hasher *h, const void *p, size_t n) {
        *h = (hd_hasher){.p = p, .n = n, .fd = -1};
        if (n >= HD_HASH_THREAD_MIN && pthread_create(&h->thread, NULL, hash_thread, h) == 0)
                h->threaded = true;
        else
                (void) hash_thread(h);
}

/* hd_hasher_start_write's thread: each chunk hashed while in the cache, then written. */
static void *hash_write_thread(void *ud) {
        hd_hasher *h = ud;
        _cleanup_sha256_ sha256_ctx c;
        int r = sha256_init(&c);
        bool cancel = false;
        while (r == 0 && h->werr == 0 && h->hashed < h->n &&
               !(cancel = __atomic_load_n(&h->cancel, __ATOMIC_ACQUIRE))) {
                size_t m = MIN(h->n - h->hashed, (size_t) HD_IO_CHUNK);
                const char *c0 = h->p + h->hashed;
                if ((r = sha256_update(&c, c0, m)) < 0)
                        break;
                h->hashed += m;
                h->werr = hd_write_all(h->fd, c0, m);
                h->written += h->werr < 0 ? 0 : m;
        }
        h->r = r < 0 ? r : cancel || h->werr < 0 ? -ECANCELED : sha256_final_hex(&c, h->digest);
        return NULL;
}

void hd_hasher_start_write(hd_hasher *h, const void *p, size_t n, int fd) {
        *h = (hd_hasher){.p = p, .n = n, .fd = fd};
        if (pthread_create(&h->thread, NULL, hash_write_thread, h) == 0)
                h->threaded = true;
        else
                (void) hash_write_thread(h);
}

void hd_hasher_cancel(hd_hasher *h) {
        __atomic_store_n(&h->cancel, true, __ATOMIC_RELEASE);
}

/* hd_hasher_start_str's thread: hash what the caller found, a chunk at a time; caught up with it,
 * find the next chunk's end here instead of waiting (a thread that sleeps until woken loses its
 * turn on a busy machine), until the NUL or a stop. */
static void *hash_stream_thread(void *ud) {
        hd_hasher *h = ud;
        _cleanup_sha256_ sha256_ctx c;
        int r = sha256_init(&c);
        for (bool end = false; r == 0 && !end;) {
                if (__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
                        r = -ECANCELED;
                        break;
                }
                bool final = __atomic_load_n(&h->final, __ATOMIC_ACQUIRE); /* then n: the whole length */
                size_t n = __atomic_load_n(&h->n, __ATOMIC_ACQUIRE), m;
                if (n > h->hashed)
                        m = MIN(n - h->hashed, (size_t) HD_IO_CHUNK);
                else if (final)
                        break;
                else
                        end = (m = strnlen(h->p + h->hashed, HD_IO_CHUNK)) < HD_IO_CHUNK;
                if ((r = sha256_update(&c, h->p + h->hashed, m)) == 0)
                        h->hashed += m; /* only this thread writes it until the join */
        }
        h->r = r < 0 ? r : sha256_final_hex(&c, h->digest);
        return NULL;
}

int hd_hasher_start_str(hd_hasher *h, const char *p, size_t max, size_t *ret_len) {
        size_t n = strnlen(p, HD_HASH_THREAD_MIN);
        *h = (hd_hasher){.p = p, .n = n, .fd = -1};
        if (n == HD_HASH_THREAD_MIN && n <= max && pthread_create(&h->thread, NULL, hash_stream_thread, h) == 0) {
                h->threaded = true;
                for (bool end = false; !end && n <= max;) {
                        size_t m = strnlen(p + n, HD_IO_CHUNK);
                        n += m;
                        end = m < HD_IO_CHUNK;
                        __atomic_store_n(&h->n, n, __ATOMIC_RELEASE);
                }
                __atomic_store_n(n > max ? &h->stop : &h->final, true, __ATOMIC_RELEASE);
        } else { /* short, or no thread: the length first, then the hash here */
                n += n == HD_HASH_THREAD_MIN && n <= max ? strnlen(p + n, max - n + 1) : 0;
                hd_hasher_start(h, p, n > max ? 0 : n);
        }
        if (n > max)
                return -EFBIG;
        *ret_len = n;
        return 0;
}

int hd_hasher_join(hd_hasher *h, char ret_digest[SHA256_HEX_SIZE]) {
        if (h->threaded)
                pthread_join(h->thread, NULL);
        h->threaded = false;
        if (h->r < 0)
                return h->r;
        memcpy(ret_digest, h->digest, SHA256_HEX_SIZE);
        return 0;
}
