/* json-str.h: a JSON string written as jansson writes it (json_dumpf: '"', '\\' and the control
 * characters escaped, \b \f \n \r \t by name, the others as \u00XX; everything else as it is),
 * but a run at a time rather than a character at a time through a callback: for the long texts
 * of documents (hull-docread's answer, `hull read-document --json`). Pure but for the stream. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Write s[0..len), which must be valid UTF-8, to out as a quoted JSON string. The caller checks
 * ferror(out). Unlocked stdio: for a stream one thread writes. */
void json_str_put(FILE *out, const char *s, size_t len);
