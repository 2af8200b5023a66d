/* tier-gate.h: the kernel tier offered once runsc's self-check has passed, the check run in the
 * background so hull serve answers at once. hull serve forks a prober at start (while it is still
 * single-threaded); the prober waits TG_PROBE_DELAY_MS (a fresh server's first requests go first),
 * or less when a caller waits for its answer, then finds runsc, runs sbx_oci_runtime_probe() (about
 * a second) and
 * writes what it found to a pipe; hull serve's main loop reads it (tg_settle) and the gate then
 * offers the kernel tier (isolation "kernel", its evidence, kernel sessions) or keeps "container"
 * the highest. Until it settles the gate states "container" to callers that do not wait; what
 * names or needs the highest tier waits for it (tg_evidence with wait: Describe, a Run or an
 * OpenSession whose floor is "kernel"), so neither gets an answer the check could change. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "dlog.h"
#include "error.h"
#include "plimsoll.h"

typedef struct tg_gate tg_gate;

/* A gate over base (copied; its strings must outlive the gate). want_kernel: fork the prober
 * (call while the process is single-threaded); false: settled at once, no kernel tier. Returns 0
 * with *ret (free with tg_free) or a negative errno with *e. */
int tg_start(const plim_evidence *base, bool want_kernel, tg_gate **ret, hull_error *e);

/* The prober's pipe, readable when its result is there (for poll); -1 once settled. */
int tg_fd(const tg_gate *g);

/* Read the prober's result (after tg_fd polled readable), reap it, publish the tier, log one
 * line (event=kernel-tier or kernel-tier-unavailable), wake the waiters. Main loop only. */
void tg_settle(tg_gate *g, const dlog *log);

/* True once the check has settled (passed or not). */
bool tg_settled(tg_gate *g);

/* A snapshot of the evidence. wait: until the check has settled (at most TG_WAIT_MS; past that
 * the snapshot states "container", the check still running); the check starts now if it was
 * still waiting for its delay. */
plim_evidence tg_evidence(tg_gate *g, bool wait);

/* Where the kernel evidence is published (for ss_config.kernel_evidence): NULL until the check
 * passed, then runsc's version and platform; stable for the gate's life. */
const char *_Atomic const *tg_kernel_evidence(const tg_gate *g);

/* Wait for the prober (one still waiting for its delay ends at once, without running runsc; a
 * running one ends within SBX_OCI_PROBE_MS: nothing of runsc's is left behind), then free g.
 * NULL is fine. */
void tg_free(tg_gate *g);
