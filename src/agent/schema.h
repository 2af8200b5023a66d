/* schema.h: a tool call's input checked against the tool's JSON Schema, the subset tool.h names:
 * "type" (string, integer, number, boolean, array, object, null; or an array of them),
 * "properties", "required", "additionalProperties" (false, or a schema), "enum", "minimum",
 * "maximum", "minLength", "maxLength", "minItems", "maxItems", "items". Other keywords
 * ("description", "default", "title", "format", ...) are ignored: they do not constrain here.
 *
 * The errors are for a model to act on, one line each, naming the field by its path:
 *   input.path: expected a string, got an integer
 *   input: unknown field "paht" (did you mean "path"?)
 *   input: missing required field "file_path"
 *   input.limit: must be >= 1, got 0
 *   input.output_mode: must be one of "content", "files_with_matches", "count"
 * An integer is a JSON number without a fractional part (5 and 5.0 both are).
 *
 * Pure (no I/O, no state), bounded (SCHEMA_DEPTH_MAX levels, SCHEMA_ERRORS_MAX lines) and
 * fuzzed (fuzz/fuzz-schema.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "limits.h"

/* Is schema a schema this validator understands (an object; "type" names known kinds;
 * "properties" an object of schemas; "required" an array of strings; bounds numbers; nesting at
 * most SCHEMA_DEPTH_MAX)? A tool's schema is checked once, when an agent is made. Returns 0, or
 * -EINVAL with *e naming the problem ("schema.properties.path.type: unknown type \"str\""). */
int schema_check(const json_t *schema, hull_error *e);

/* Validate value against schema (which passed schema_check). Returns 0 when it conforms; -EINVAL
 * with *ret_errors (malloc'd, NUL-terminated, lines separated by "\n", at most SCHEMA_ERRORS_MAX
 * lines and a count of the rest) when it does not; -ENOMEM. root names the value in the
 * messages ("input"). */
int schema_validate(const json_t *schema, const json_t *value, const char *root, char **ret_errors);
