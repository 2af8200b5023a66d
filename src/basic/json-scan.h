/* json-scan.h: what a byte scan can tell of JSON text before a parser sees it: how deep it nests
 * and how many values it holds at most. Pure, linear, no allocation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The checks to make before handing untrusted bytes to a JSON parser: nesting at most depth_max
 * (else -ELOOP) and at most values_max values (else -E2BIG; counted as the containers opened
 * plus the commas, plus one, outside strings: an upper bound on what the parser allocates).
 * Returns 0 when both hold. */
int json_prescan(const char *buf, size_t len, unsigned depth_max, size_t values_max);

/* True when buf[0..len) nests objects and arrays at most max deep (strings are skipped). */
bool json_depth_ok(const char *buf, size_t len, unsigned max);
