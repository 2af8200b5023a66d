/* sbx-seccomp.h: the container tier's seccomp filter, compiled by libseccomp in the parent into
 * a BPF program the child installs with one prctl() (no allocation after clone). */
#pragma once

#include <linux/filter.h>
#include <stddef.h>

#include "error.h"

typedef struct sbx_seccomp {
        struct sock_fprog prog; /* prog.filter owned; prog.len instructions */
} sbx_seccomp;

/* The second, fixed filter: every syscall numbered SBX_SECCOMP_FIRST_UNVETTED or higher on the
 * native ABI fails with ENOSYS. Installed after the main filter. */
extern const struct sock_fprog sbx_seccomp_guard;

/* Build the deny-list filter for the native ABI; every foreign ABI (i386, x32) kills the
 * process. Returns 0 or a negative errno with *e set. Free with sbx_seccomp_done(). */
int sbx_seccomp_build(sbx_seccomp *ret, hull_error *e);
void sbx_seccomp_done(sbx_seccomp *s);
