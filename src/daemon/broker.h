/* broker.h: the sandbox broker. hull serve forks it at start-up, before any thread exists; it is
 * single-threaded and owns every clone. For each run the daemon hands it one end of a fresh
 * socketpair (SCM_RIGHTS over the control socket); the broker forks a worker for it (at most
 * max_runs at once, a bounded queue behind), and the worker reads the request from that socket,
 * runs its steps with sbx_run() in a fresh work directory, and writes the result back. The
 * broker dies with the daemon (PR_SET_PDEATHSIG) and stops its workers' sandboxes when it goes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker-msg.h"
#include "error.h"

typedef struct brk_config {
        unsigned max_runs;      /* workers at once, 1..SERVE_RUNS_MAX */
        unsigned queue_max;     /* runs waiting for a worker; more are refused */
        const char *work_root;  /* existing directory, searchable by everyone (0711); each run
                                 * gets a fresh directory below it */
        bool use_cgroups;       /* false: --no-cgroup */
} brk_config;

typedef struct brk_broker brk_broker;

/* Fork the broker. Must be called while the process is single-threaded. Returns 0 with *ret
 * (free with brk_stop()), or a negative errno with *e set. */
int brk_start(const brk_config *cfg, brk_broker **ret, hull_error *e);

/* Run one request: wait up to BRK_QUEUE_WAIT_MS for a worker to take it, then up to wait_ms for
 * its result (the run's own time counts from the moment a worker took it). Blocks: call it from a thread of
 * its own; any number of threads may call it at once. Returns 0 with *ret filled (free with
 * brk_result_done); outcome BRK_OUTCOME_NOT_STARTED (with a detail) when the request was never
 * sent: the broker refused or dropped the run, is gone, or no worker asked for it in time.
 * Returns a negative errno with *e set only when the run may have started: -EPROTO (the worker
 * ended without a result), -ETIMEDOUT, -EBADMSG (a malformed result), -ENOMEM, -EINVAL (req
 * out of the message's bounds), -ECANCELED (see watch_fd).
 * watch_fd (or -1): the caller's connection; when its peer hangs up, the run is dropped from the
 * queue (NOT_STARTED) or, once started, stopped (-ECANCELED), and brk_call returns at once. */
int brk_call(brk_broker *b, const brk_request *req, uint64_t wait_ms, int watch_fd, brk_result *ret, hull_error *e);

/* Stop every run now: the broker sends its workers SIGTERM, they stop their sandboxes and
 * answer with BRK_OUTCOME_CANCELLED; queued runs are dropped (their callers get -EPIPE). The
 * broker exits once its workers have. Thread-safe. */
void brk_cancel_all(brk_broker *b);

/* A pidfd of the broker (owned by b): it polls readable when the broker has exited. */
int brk_pidfd(const brk_broker *b);

/* True while the broker process runs. Thread-safe. */
bool brk_alive(brk_broker *b);

/* Close the control socket (the broker finishes its runs and exits), wait for the broker up to
 * BRK_STOP_GRACE_MS plus the slack of its workers, kill it if it is still there, and free b. */
void brk_stop(brk_broker *b);
