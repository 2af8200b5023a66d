/* broker-msg.h: the messages between hull serve and its sandbox broker's workers: one run
 * request (files to write into a fresh work directory, steps to run there in order, artifacts to
 * read back, limits) and its result. A small length-prefixed binary format, bounded by
 * limits.h; encoding and decoding are pure (bytes in, structure out) and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct brk_file {
        char *path; /* relative, clean (brk_path_is_clean), NUL-terminated */
        char *data; /* bytes, may contain NULs; NUL-terminated for convenience */
        size_t len;
} brk_file;

typedef struct brk_step {
        char **argv;   /* NULL-terminated; no argument contains a NUL */
        uint32_t argc; /* >= 1 */
} brk_step;

enum {
        BRK_STOP_ON_FAILURE = 1U << 0, /* a step that does not exit 0 ends the run */
};

typedef struct brk_request {
        uint64_t timeout_ms;   /* the whole run, every step included; > 0 */
        uint64_t memory_bytes; /* per sandbox; 0: the engine's default cgroup-less run */
        uint64_t pids;
        uint64_t tmp_bytes;
        uint64_t output_bytes;   /* per stream of each step */
        uint64_t artifact_bytes; /* all artifacts together */
        uint32_t flags;          /* BRK_STOP_ON_FAILURE */
        brk_file *files;
        uint32_t n_files;
        brk_step *steps;
        uint32_t n_steps; /* >= 1 */
        char **artifacts; /* relative, clean paths */
        uint32_t n_artifacts;
} brk_request;

typedef enum brk_outcome {
        BRK_OUTCOME_COMPLETED = 1,    /* the plan ran (a failing step included) */
        BRK_OUTCOME_SETUP_FAILED = 2, /* the files could not be written; no step ran */
        BRK_OUTCOME_TIMED_OUT = 3,    /* the run's deadline ended it */
        BRK_OUTCOME_CANCELLED = 4,    /* the broker stopped it (hull serve is shutting down) */
        BRK_OUTCOME_ERROR = 5,        /* a sandbox could not be set up; detail says why */
        BRK_OUTCOME_NOT_STARTED = 6,  /* the broker refused or dropped the run: nothing ran */
} brk_outcome;

enum {
        BRK_STEP_EXITED = 1U << 0, /* exit_code is valid */
        BRK_STEP_TIMED_OUT = 1U << 1,
        BRK_STEP_OOM = 1U << 2,
        BRK_STEP_OUT_TRUNCATED = 1U << 3,
        BRK_STEP_ERR_TRUNCATED = 1U << 4,
        BRK_STEP_INTERRUPTED = 1U << 5, /* stopped by the broker */
        BRK_STEP_FLAGS_ALL = (1U << 6) - 1,
};

typedef struct brk_step_result {
        int32_t status; /* exit code; 124 timeout; 128+N killed by signal N */
        int32_t term_signal;
        uint32_t flags; /* BRK_STEP_* */
        uint64_t wall_us;
        char *out, *err; /* NUL-terminated, may contain NULs */
        size_t out_len, err_len;
} brk_step_result;

typedef struct brk_result {
        uint32_t outcome; /* brk_outcome */
        char *detail;     /* "" when completed; NUL-terminated, no NULs */
        uint64_t started_unix_ms, ended_unix_ms;
        bool artifacts_truncated; /* the artifact budget dropped one or more that existed */
        brk_step_result *steps;   /* the steps that ran, in order */
        uint32_t n_steps;
        brk_file *artifacts; /* those that existed and fit, in request order */
        uint32_t n_artifacts;
} brk_result;

/* A path a request may name: at most PLIM_PATH_MAX bytes, relative, no empty, "." or ".."
 * segment, no backslash and no control character. */
bool brk_path_is_clean(const char *p, size_t len);

/* Encode into a new buffer of *ret_len bytes. Returns 0, -EINVAL (a field out of bounds) or
 * -ENOMEM (including a message over BRK_REQUEST_MAX/BRK_RESULT_MAX). The caller frees *ret. */
int brk_request_encode(const brk_request *r, char **ret, size_t *ret_len);
int brk_result_encode(const brk_result *r, char **ret, size_t *ret_len);

/* Decode what the encoders wrote. Returns 0 with *ret filled (free with *_done), -EBADMSG when
 * the bytes are malformed or out of bounds, or -ENOMEM. On failure *ret is untouched. */
int brk_request_decode(const void *buf, size_t len, brk_request *ret);
int brk_result_decode(const void *buf, size_t len, brk_result *ret);

void brk_request_done(brk_request *r);
void brk_result_done(brk_result *r);
