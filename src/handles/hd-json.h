/* hd-json.h: a streaming JSON validator and shape scanner for handle summaries. Pure: bytes
 * in, a verdict and a bounded description out, no I/O.
 *
 * Why not jansson here: jansson builds the whole tree (about ten times the input in memory)
 * and recurses once per nesting level; a 100 MB tool result took longer to load than Python's
 * json.load, and the issue asks for half of that. A summary needs only validity and a shape,
 * which one pass with a bit stack computes at memory speed in O(1) memory for any depth up to
 * HD_JSON_DEPTH_MAX. jansson is still used to decode single records (one element of an array
 * of objects, one JSON line) when they are ingested into a table. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Called for each element of a top-level array with its bytes (leading and trailing
 * whitespace excluded). A negative return stops the scan and is returned by hd_json_scan. */
typedef int (*hd_json_element_fn)(const char *p, size_t n, void *userdata);

/* Validate buf[0..len) as exactly one JSON text (RFC 8259: UTF-8, whitespace around the value
 * allowed, no byte order mark, nesting at most HD_JSON_DEPTH_MAX). When ret_shape is not NULL,
 * describe the value (see below). When on_element is not NULL, call it for every element of a
 * top-level array. Returns 0 (and *ret_shape, caller decrefs), or a negative errno: -EBADMSG
 * (not JSON: the message names the byte offset and line), -ELOOP (too deep), -ENOMEM, or
 * on_element's error.
 *
 * The shape: {"type": T} where T is object, array, string, number, boolean or null ("mixed"
 * with "types": [...] when an array's items differ). Objects add "n_keys" and, for the top
 * value and one level below it, "keys": {name: shape} for the first HD_SHAPE_KEYS_MAX keys in
 * first-seen order ("keys_truncated": true when there were more). Arrays add "length" and, at
 * the same levels, "items": the shape of all elements merged (objects' keys united). Where
 * several values merge, counts become "n_keys_min"/"n_keys_max" and "length_min"/"length_max".
 * Values deeper than HD_SHAPE_LEVELS below the top are validated but not described. */
int hd_json_scan(const char *buf, size_t len, json_t **ret_shape, hd_json_element_fn on_element, void *userdata,
                 hull_error *e);
