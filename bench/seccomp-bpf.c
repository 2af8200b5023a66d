/* seccomp-bpf.c: write hull's own seccomp program (sbx_seccomp_build(), the filter the container
 * tier installs) as raw BPF to a file, so `bwrap --seccomp FD` can run with the same filter in
 * the benchmark. Linked against build/libsandbox.a; see bench/run.sh.
 *
 *   seccomp-bpf OUTPUT */
#include <stdio.h>

#include "sbx-seccomp.h"

int main(int argc, char **argv) {
        sbx_seccomp s = {0};
        hull_error e = {0};
        if (argc != 2) {
                fprintf(stderr, "usage: seccomp-bpf OUTPUT\n");
                return 2;
        }
        if (sbx_seccomp_build(&s, &e) < 0) {
                fprintf(stderr, "seccomp-bpf: %s\n", e.msg);
                return 1;
        }
        FILE *f = fopen(argv[1], "we");
        if (!f || fwrite(s.prog.filter, sizeof(s.prog.filter[0]), s.prog.len, f) != s.prog.len || fclose(f) != 0) {
                perror("seccomp-bpf: write");
                return 1;
        }
        fprintf(stderr, "seccomp-bpf: %u instructions -> %s\n", s.prog.len, argv[1]);
        sbx_seccomp_done(&s);
        return 0;
}
