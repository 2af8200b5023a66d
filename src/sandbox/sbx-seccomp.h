/* sbx-seccomp.h: the container tier's seccomp filter: one BPF program, compiled from the policy
 * in sbx-seccomp.c by libseccomp at BUILD time and embedded in hull (sbx-seccomp-gen writes it
 * as a C array), so no process compiles it at run time; the child installs it with one prctl()
 * (no allocation after clone).
 *
 * The program: its first SBX_SECCOMP_GUARD_INSNS instructions answer ENOSYS to every syscall of
 * the native ABI numbered SBX_SECCOMP_FIRST_UNVETTED or higher (newer than the policy, and than
 * the libseccomp that compiles it, which cannot name them); everything else goes on to
 * libseccomp's program: the deny list over the native ABI (EPERM), clone3 (ENOSYS), and any
 * syscall through another ABI (i386, x32) kills the process. test-sbx-seccomp checks that the
 * embedded program is what sbx_seccomp_compile() makes from the policy today. */
#pragma once

#include <linux/filter.h>
#include <stddef.h>

#include "error.h"

#define SBX_SECCOMP_GUARD_INSNS 6U

/* The embedded program (generated at build time; read-only). */
extern const struct sock_fprog sbx_seccomp_filter;

typedef struct sbx_seccomp {
        struct sock_fprog prog; /* prog.filter owned; prog.len instructions */
} sbx_seccomp;

/* Compile the policy with libseccomp (binary-tree shape) and put the guard in front: the
 * program sbx_seccomp_filter must equal. For the build-time generator and the tests; needs
 * libseccomp (libseccomp-policy in meson.build), which hull does not link. Returns 0 or a
 * negative errno with *e set. Free with sbx_seccomp_done(). */
int sbx_seccomp_compile(sbx_seccomp *ret, hull_error *e);
void sbx_seccomp_done(sbx_seccomp *s);
