/* test-sbx-seccomp.c: the program compiled into hull is exactly what libseccomp makes from the
 * policy today (sbx_seccomp_compile), and it answers as the policy says: run by a small cBPF
 * interpreter over seccomp_data for a few calls. Its effect inside real sandboxes is tested by
 * the containment suite. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "limits.h"
#include "sbx-seccomp.h"
#include "test.h"

#if defined(__x86_64__)
#define NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE AUDIT_ARCH_AARCH64
#endif

#define BAD 0xdeadbeefU /* an instruction the interpreter does not know, or a jump out */

/* Run prog over d as the kernel would (the instructions libseccomp and the guard use). */
static uint32_t run(const struct sock_fprog *prog, const struct seccomp_data *d) {
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
        for (unsigned pc = 0; pc < prog->len; pc++) {
                const struct sock_filter *f = &prog->filter[pc];
                uint32_t k = f->k;
                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (k % 4 != 0 || k + 4 > sizeof(*d))
                                return BAD;
                        memcpy(&a, (const char *) d + k, 4);
                        break;
                case BPF_LD | BPF_MEM:
                        a = k < BPF_MEMWORDS ? mem[k] : BAD;
                        break;
                case BPF_LDX | BPF_MEM:
                        x = k < BPF_MEMWORDS ? mem[k] : BAD;
                        break;
                case BPF_ST:
                        if (k >= BPF_MEMWORDS)
                                return BAD;
                        mem[k] = a;
                        break;
                case BPF_STX:
                        if (k >= BPF_MEMWORDS)
                                return BAD;
                        mem[k] = x;
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= k;
                        break;
                case BPF_MISC | BPF_TAX:
                        x = a;
                        break;
                case BPF_MISC | BPF_TXA:
                        a = x;
                        break;
                case BPF_RET | BPF_K:
                        return k;
                case BPF_JMP | BPF_JA:
                        pc += k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & k) ? f->jt : f->jf;
                        break;
                default:
                        return BAD;
                }
        }
        return BAD; /* ran off the end */
}

static uint32_t call(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
        struct seccomp_data d = {.nr = nr, .arch = NATIVE, .args = {a0, a1, a2, a3}};
        return run(&sbx_seccomp_filter, &d);
}

#define ERRNO(e) (SECCOMP_RET_ERRNO | (e))

int main(void) {
        const struct sock_fprog *p = &sbx_seccomp_filter;
        CHECK(p->filter != NULL);
        CHECK(p->len > 50);
        CHECK(p->len <= BPF_MAXINSNS);

        /* what libseccomp makes of the policy today, byte for byte */
        sbx_seccomp s = {0};
        hull_error e = {0};
        CHECK_EQ_INT(sbx_seccomp_compile(&s, &e), 0);
        CHECK_EQ_INT(s.prog.len, p->len);
        TEST_RESULT(s.prog.len == p->len && memcmp(s.prog.filter, p->filter, p->len * sizeof(p->filter[0])) == 0,
                    "the embedded program (%u instructions) is what libseccomp compiles from the policy (%u)", p->len,
                    s.prog.len);
        sbx_seccomp_done(&s);
        CHECK(s.prog.filter == NULL);

#if defined(__x86_64__)
        /* what it answers */
        CHECK_EQ_INT(call(SYS_getpid, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_read, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_mount, 0, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_unshare, 0, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_ptrace, 0, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_bpf, 0, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_openat2, 0, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_clone3, 0, 0, 0, 0), ERRNO(ENOSYS));
        CHECK_EQ_INT(call(SYS_clone, SIGCHLD, 0, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_clone, CLONE_NEWNS, 0, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_openat, AT_FDCWD, 0, O_RDONLY, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 0644), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 04755), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_openat, AT_FDCWD, 0, O_RDONLY, 04755), SECCOMP_RET_ALLOW); /* no O_CREAT: no mode */
        CHECK_EQ_INT(call(SYS_chmod, 0, 0755, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_chmod, 0, 02755, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_fchmodat, AT_FDCWD, 0, 04700, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_ioctl, 0, TIOCSTI, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_ioctl, 0, TIOCSTI | 0xffffffff00000000ULL, 0, 0), ERRNO(EPERM));
        CHECK_EQ_INT(call(SYS_ioctl, 0, TCGETS, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */, 0, 0, 0), ERRNO(EPERM));
        /* the guard: newer than the policy */
        CHECK_EQ_INT(call(SBX_SECCOMP_FIRST_UNVETTED - 1, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
        CHECK_EQ_INT(call(SBX_SECCOMP_FIRST_UNVETTED, 0, 0, 0, 0), ERRNO(ENOSYS));
        CHECK_EQ_INT(call(1000, 0, 0, 0, 0), ERRNO(ENOSYS));
        CHECK_EQ_INT(call(0x3fffffff, 0, 0, 0, 0), ERRNO(ENOSYS));
        /* foreign ABIs kill the process: x32, i386 (even for a number the guard would answer) */
        CHECK_EQ_INT(call(0x40000000 | SYS_getpid, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        CHECK_EQ_INT(call(0x40000000 | 1000, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        struct seccomp_data i386 = {.nr = 20 /* getpid */, .arch = AUDIT_ARCH_I386};
        CHECK_EQ_INT(run(p, &i386), SECCOMP_RET_KILL_PROCESS);
        i386.nr = 1000;
        CHECK_EQ_INT(run(p, &i386), SECCOMP_RET_KILL_PROCESS);
#endif
        return test_done();
}
