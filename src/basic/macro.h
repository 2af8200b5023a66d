/* macro.h: cleanup attributes, ownership moves and small helpers shared by every layer. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
/* code that runs on a stack of its own between a CLONE_VM clone and execve: the sanitizer's
 * bookkeeping at a noreturn call there would take that stack for a corrupt one */
#define _no_sanitize_address_ __attribute__((no_sanitize_address))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Move ownership out of a variable that has a cleanup attribute. */
#define TAKE_PTR(p)                                                                                                    \
        ({                                                                                                             \
                __typeof__(p) _tp = (p);                                                                               \
                (p) = NULL;                                                                                            \
                _tp;                                                                                                   \
        })
#define TAKE_FD(fd)                                                                                                    \
        ({                                                                                                             \
                int _tf = (fd);                                                                                        \
                (fd) = -1;                                                                                             \
                _tf;                                                                                                   \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that keeps errno, for cleanup paths. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}
static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void close_pairp(int (*p)[2]) {
        safe_close((*p)[0]);
        safe_close((*p)[1]);
}
#define _cleanup_close_pair_ _cleanup_(close_pairp)

/* errno as a negative return value, never 0 even if errno was not set. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
