/* parse-util.h: pure parsers for CLI and config values. Bytes in, value out; no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse an unsigned decimal integer in [min, max]. No sign, no spaces, no trailing bytes.
 * Returns 0, -EINVAL (not a number) or -ERANGE (outside [min, max]). */
int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Parse a size: a decimal integer with an optional suffix K, M, G, T (powers of 1024; "KiB",
 * "MiB"... and "B" accepted too). "512M" -> 536870912. Returns 0, -EINVAL or -ERANGE. */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Parse a duration in seconds, decimals allowed ("30", "0.5", "1.25"), with an optional "s",
 * "ms", "m" (minutes) or "h" (hours) suffix, into milliseconds in [min_ms, max_ms]. Returns 0,
 * -EINVAL or -ERANGE. */
int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret_ms);

/* Parse a positive decimal number of CPUs ("1", "0.5", "2.25") in (0, max] into millicpus
 * (1000 = one CPU). Returns 0, -EINVAL or -ERANGE. */
int parse_cpus(const char *s, double max, uint64_t *ret_millicpus);

/* Validate an environment assignment "K=V": K is [A-Za-z_][A-Za-z0-9_]*, V has no NUL (C
 * strings cannot) and the whole entry is at most max_len bytes. Returns 0 or -EINVAL. */
int parse_env_assignment(const char *s, size_t max_len);
