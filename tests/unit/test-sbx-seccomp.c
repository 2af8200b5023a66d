/* test-sbx-seccomp.c: the filter compiles to a sane BPF program. Its effect is tested by the
 * containment suite, inside real sandboxes. */
#include "sbx-seccomp.h"
#include "test.h"

int main(void) {
        sbx_seccomp s = {0};
        hull_error e = {0};
        CHECK_EQ_INT(sbx_seccomp_build(&s, &e), 0);
        CHECK(s.prog.filter != NULL);
        CHECK(s.prog.len > 50);
        CHECK(s.prog.len <= 4096);
        sbx_seccomp_done(&s);
        CHECK(s.prog.filter == NULL);
        return test_done();
}
