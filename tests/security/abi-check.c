/* abi-check.c: does the host kernel serve system calls through the i386 ABI (int 0x80)?
 *
 *   abi-check i386
 *
 * Some kernels do not (built without IA32 emulation, booted with ia32_emulation=0, or guests
 * that turn it off): there, int 0x80 is a general protection fault everywhere, the sandbox
 * included, and the containment test of that ABI has nothing to test. This runs on the host,
 * unsandboxed, and is harmless: a forked child makes exactly one call, getpid, through int 0x80.
 * Exits 0 when the call returned the child's pid, 1 when the child was killed (no such ABI),
 * 2 on any other outcome. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define I386_NR_GETPID 20L

int main(int argc, char **argv) {
        if (argc != 2 || strcmp(argv[1], "i386") != 0) {
                fprintf(stderr, "usage: abi-check i386\n");
                return 2;
        }
        pid_t pid = fork();
        if (pid < 0)
                return 2;
        if (pid == 0) {
                long r;
                __asm__ volatile("int $0x80" : "=a"(r) : "a"(I386_NR_GETPID) : "r8", "r9", "r10", "r11", "memory");
                _exit(r == (long) getpid() ? 0 : 3);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid)
                return 2;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                printf("the i386 ABI is served\n");
                return 0;
        }
        if (WIFSIGNALED(st)) {
                printf("the i386 ABI is not served: int 0x80 killed the caller with signal %d\n", WTERMSIG(st));
                return 1;
        }
        return 2;
}
