/* seccomp-bpf.c: write hull's own seccomp program (sbx_seccomp_filter, the one program the
 * container tier installs, compiled into hull at build time) as raw BPF to a file, so
 * `bwrap --seccomp FD` can run with the same filter in the benchmark. Linked against
 * build/libsandbox.a; see bench/run.sh.
 *
 *   seccomp-bpf OUTPUT */
#include <stdio.h>

#include "sbx-seccomp.h"

int main(int argc, char **argv) {
        const struct sock_fprog *p = &sbx_seccomp_filter;
        if (argc != 2) {
                fprintf(stderr, "usage: seccomp-bpf OUTPUT\n");
                return 2;
        }
        FILE *f = fopen(argv[1], "we");
        if (!f || fwrite(p->filter, sizeof(p->filter[0]), p->len, f) != p->len || fclose(f) != 0) {
                perror("seccomp-bpf: write");
                return 1;
        }
        fprintf(stderr, "seccomp-bpf: %u instructions -> %s\n", p->len, argv[1]);
        return 0;
}
