/* broker-msg.h: the messages between hull serve and its sandbox broker's workers: one run
 * request (files to write into a fresh work directory, steps to run there in order, artifacts to
 * read back, limits) and its result. A small length-prefixed binary format, bounded by
 * limits.h; encoding and decoding are pure (bytes in, structure out) and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx-plan.h"

/* Encode into a new buffer of *ret_len bytes. Returns 0, -EINVAL (a field out of bounds) or
 * -ENOMEM (including a message over BRK_REQUEST_MAX/BRK_RESULT_MAX). The caller frees *ret. */
int brk_plan_encode(const sbx_plan *r, char **ret, size_t *ret_len);
int brk_plan_result_encode(const sbx_plan_result *r, char **ret, size_t *ret_len);

/* Decode what the encoders wrote. Returns 0 with *ret filled (free with *_done), -EBADMSG when
 * the bytes are malformed or out of bounds, or -ENOMEM. On failure *ret is untouched. */
int brk_plan_decode(const void *buf, size_t len, sbx_plan *ret);
int brk_plan_result_decode(const void *buf, size_t len, sbx_plan_result *ret);
