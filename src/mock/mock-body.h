/* mock-body.h: a model request's body parsed as jansson parses it, without parsing again what an
 * earlier body had in the same bytes. An agent's conversation only grows: each request repeats
 * the previous one's bytes up to its last message and appends a few. The top level object is
 * walked member by member and the "messages" array element by element; each value is jansson's
 * parse of its bytes (json_loadb with JSON_DISABLE_EOF_CHECK, which says where it ended), or, when
 * a body kept from before had a value at the same offset and every byte up to the one after it is
 * the same, that body's value (the same bytes parse to the same value). Anything the walk does
 * not follow (not an object, a key twice, bytes that are not JSON) is parsed whole by
 * json_loadb, so what is accepted, refused and built is json_loadb's. The values are shared
 * between the bodies: read them, never change them. */
#pragma once

#include <jansson.h>
#include <stddef.h>

typedef struct mock_body_cache mock_body_cache;

/* An empty cache (bodies kept: MOCK_BODY_CACHE_SLOTS, MOCK_BODY_CACHE_BYTES in all). Returns 0
 * with *ret, or -ENOMEM. */
int mock_body_cache_new(mock_body_cache **ret);
void mock_body_cache_free(mock_body_cache *c);

/* *ret: what json_loadb(body, len, JSON_DECODE_ANY, NULL) returns (a new reference, NULL when the
 * bytes are not JSON); the body is kept in c for the next ones. ret_parsed (may be NULL): the
 * bytes handed to jansson for it. Any thread (c has its lock). */
void mock_body_parse(mock_body_cache *c, const char *body, size_t len, json_t **ret, size_t *ret_parsed);
