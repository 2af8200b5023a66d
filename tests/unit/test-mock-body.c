/* test-mock-body.c: hull mock-model's parse of request bodies (mock-body.h) against json_loadb,
 * the bytes it hands to jansson counted: a growing conversation parses only what each request
 * adds (every byte again before); bodies that differ from a kept one anywhere (a number that goes
 * on past the old one's end, a key twice, bytes that are not JSON, nesting at jansson's limit, the
 * members after "messages" changed) come out as json_loadb makes them, or refused as it refuses
 * them; random edits of the bodies too; several conversations at once, more than the cache keeps,
 * and from several threads. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "limits.h"
#include "mock-body.h"
#include "test.h"

/* The body of request k (from 1) of conversation conv, as an agent sends it: k turns, each a user
 * message, a tool call, its result and an answer, then the tools and "stream". */
static char *body_of(unsigned conv, unsigned k, size_t *ret_len) {
        dynbuf b;
        dynbuf_init(&b, 1U << 24);
        char one[512];
        snprintf(one, sizeof(one),
                 "{\"model\":\"mock-model\",\"max_tokens\":8192,\"system\":[{\"type\":\"text\",\"text\":"
                 "\"You are agent %u. Work in \\\"/workspace\\\" \\u00e9\\n\"}],\"messages\":[",
                 conv);
        if (dynbuf_add_str(&b, one) < 0)
                abort();
        for (unsigned i = 0; i < k; i++) {
                snprintf(one, sizeof(one),
                         "%s{\"role\":\"user\",\"content\":\"turn %u of %u\"},{\"role\":\"assistant\",\"content\":"
                         "[{\"type\":\"tool_use\",\"id\":\"toolu_%u\",\"name\":\"glob\",\"input\":{\"pattern\":\"*\"}}]"
                         "},"
                         "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_%u\","
                         "\"content\":\"a.txt\\nb.txt %u\"}]},{\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
                         "\"text\":\"done %u\"}]}",
                         i ? "," : "", i, conv, i, i, i * 7, i);
                if (dynbuf_add_str(&b, one) < 0)
                        abort();
        }
        if (dynbuf_add_str(&b, "],\"tools\":[{\"name\":\"glob\",\"description\":\"Find files\",\"input_schema\":"
                               "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"}}}}],"
                               "\"stream\":true}") < 0)
                abort(); /* no room: the test is wrong */
        return dynbuf_take(&b, ret_len);
}

/* Is mock_body_parse of body through c json_loadb's, keys in order? Says why not on stderr. */
static bool alike(mock_body_cache *c, const char *body, size_t len, size_t *ret_parsed) {
        json_t *mine = NULL;
        size_t parsed = 0;
        mock_body_parse(c, body, len, &mine, &parsed);
        json_t *ref = json_loadb(body, len, JSON_DECODE_ANY, NULL);
        bool ok = !mine == !ref && parsed <= 2 * len + 16;
        if (ok && mine) {
                char *x = json_dumps(mine, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
                char *y = json_dumps(ref, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
                ok = x && y && strcmp(x, y) == 0;
                free(x);
                free(y);
        }
        if (!ok)
                fprintf(stderr, "unlike (%s, jansson %s, %zu parsed): %.*s\n", mine ? "value" : "refused",
                        ref ? "value" : "refused", parsed, (int) MIN(len, 300), body);
        json_decref(mine);
        json_decref(ref);
        if (ret_parsed)
                *ret_parsed = parsed;
        return ok;
}

/* The same, as a check. Returns the bytes parsed. */
static size_t same_as_jansson(mock_body_cache *c, const char *body, size_t len) {
        size_t parsed;
        TEST_RESULT(alike(c, body, len, &parsed), "as json_loadb: %.*s", (int) MIN(len, 60), body);
        return parsed;
}

static void test_growing(void) {
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        size_t prev = 0, total = 0, parsed_total = 0;
        for (unsigned k = 1; k <= 100; k++) {
                size_t len;
                char *b = body_of(1, k, &len);
                size_t parsed = same_as_jansson(c, b, len);
                if (k > 1) /* the new messages, the keys (each time), nothing else */
                        TEST_RESULT(parsed <= (len - prev) + 64, "request %u: %zu bytes parsed, %zu new", k, parsed,
                                    len - prev);
                total += len;
                parsed_total += parsed;
                prev = len;
                free(b);
        }
        /* about 40 times fewer than json_loadb of every body (2.4 MB here) */
        TEST_RESULT(parsed_total * 20 < total, "%zu bytes parsed of %zu", parsed_total, total);
        /* the same body again: nothing but the keys */
        size_t len;
        char *b = body_of(1, 100, &len);
        CHECK(same_as_jansson(c, b, len) <= 64);
        free(b);
        mock_body_cache_free(c);
}

/* body with [at, at + cut) replaced by put, parsed after the unchanged body. */
static void edited(const char *body, size_t at, size_t cut, const char *put) {
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        size_t len = strlen(body), n = strlen(put);
        char *e = malloc(len + n + 1);
        memcpy(e, body, at);
        memcpy(e + at, put, n);
        memcpy(e + at + n, body + at + cut, len - at - cut + 1);
        same_as_jansson(c, body, len);
        same_as_jansson(c, e, len - cut + n);
        same_as_jansson(c, body, len); /* and back */
        free(e);
        mock_body_cache_free(c);
}

static void test_edits(void) {
        size_t len;
        char *b = body_of(2, 3, &len);
        const char *mt = strstr(b, "8192"), *msgs = strstr(b, "\"messages\""), *tools = strstr(b, "\"tools\"");
        CHECK(mt && msgs && tools);
        size_t m = (size_t) (mt - b), t = (size_t) (tools - b);
        edited(b, m + 4, 0, "0");                   /* 81920: goes on past the old number */
        edited(b, m + 4, 0, ".5");                  /* a real */
        edited(b, m, 4, "99999999999999999999999"); /* too big for jansson */
        edited(b, m + 4, 0, " ");
        edited(b, t - 2, 0, ",");                       /* a trailing comma in "messages" */
        edited(b, t - 2, 0, ",{\"role\":\"user\"}");    /* one more message */
        edited(b, t - 2, 0, ",{\"role\":\"us\xff\"}");  /* not UTF-8 */
        edited(b, t - 2, 0, ",{\"role\":\"\\u0000\"}"); /* NUL: refused */
        edited(b, t - 2, 0, ",{\"role\" \"user\"}");
        edited(b, t - 2, 0, ",1,\"two\",null,[],{}"); /* not objects: as parsed */
        edited(b, t, 7, "\"tool\"");                  /* the members after "messages" changed */
        edited(b, t, 0, "\"model\":\"other\",");      /* a key twice: the last one */
        edited(b, t, 0, "\"messages\":[],");          /* "messages" twice */
        edited(b, len - 1, 1, "} x");                 /* something after the object */
        edited(b, len - 1, 1, "}\r\n\t ");            /* blanks after it */
        edited(b, len - 1, 1, "");                    /* cut short */
        edited(b, len - 1, 1, "}}");
        edited(b, 0, len, "[1,2]"); /* not an object: "not valid JSON" for the mock, as before */
        edited(b, 0, len, "\"text\"");
        edited(b, 0, len, "");
        edited(b, 0, len, "{}");
        edited(b, 0, len, " { } ");
        edited(b, 0, len, "{\"messages\":[]}");
        edited(b, 0, len, "{\"messages\":[ ] , \"a\" : 1 }");
        edited(b, 0, len, "{\"messages\":7}");
        edited(b, 0, len, "{\"messages\":[1 2]}");
        edited(b, (size_t) (msgs - b), 10, "\"messagez\"");
        free(b);
}

/* A body whose last message is nested depth levels deep (arrays, a number inside or none). */
static void test_depth(void) {
        const char *head = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"},";
        for (size_t depth = JSON_PARSER_MAX_DEPTH - 4; depth <= JSON_PARSER_MAX_DEPTH + 1; depth++)
                for (int inner = 0; inner < 2; inner++) {
                        size_t n = strlen(head);
                        char *s = malloc(n + 2 * depth + 16);
                        memcpy(s, head, n);
                        size_t k = n;
                        for (size_t i = 0; i < depth; i++)
                                s[k++] = '[';
                        if (inner)
                                s[k++] = '1';
                        for (size_t i = 0; i < depth; i++)
                                s[k++] = ']';
                        memcpy(s + k, "]}", 3);
                        mock_body_cache *c;
                        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
                        same_as_jansson(c, s, k + 2);
                        same_as_jansson(c, s, k + 2); /* from the kept one */
                        /* the same nesting as a member's value */
                        char *m = malloc(2 * depth + 32);
                        size_t j = (size_t) sprintf(m, "{\"a\":");
                        memcpy(m + j, s + n, k - n);
                        j += k - n;
                        memcpy(m + j, "}", 2);
                        same_as_jansson(c, m, j + 1);
                        free(m);
                        free(s);
                        mock_body_cache_free(c);
                }
}

static uint64_t rng_next(uint64_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        return *x;
}

/* Random edits near the new end of a growing conversation, each after the body before it. */
static void test_random(void) {
        static const char *bits[] = {",",
                                     "}",
                                     "]",
                                     "{",
                                     "[",
                                     "\"",
                                     "\\",
                                     "1",
                                     "e",
                                     "-",
                                     " ",
                                     "\n",
                                     "null",
                                     "\xc3\xa9",
                                     "\xff",
                                     ":",
                                     "\"messages\":",
                                     "{\"role\":\"user\",\"content\":\"x\"}"};
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        unsigned failed = 0;
        for (unsigned round = 0; round < 3000; round++) {
                unsigned k = 1 + (unsigned) (rng_next(&x) % 6);
                size_t len;
                char *b = body_of(3, k, &len);
                failed += !alike(c, b, len, NULL);
                size_t at = rng_next(&x) % 3 ? len - 1 - (size_t) (rng_next(&x) % MIN(len, 260)) : rng_next(&x) % len;
                size_t cut = rng_next(&x) % 3 ? 0 : rng_next(&x) % 4;
                cut = MIN(cut, len - at);
                const char *put = bits[rng_next(&x) % ELEMENTSOF(bits)];
                size_t n = strlen(put);
                char *e = malloc(len + n + 1);
                memcpy(e, b, at);
                memcpy(e + at, put, n);
                memcpy(e + at + n, b + at + cut, len - at - cut + 1);
                failed += !alike(c, e, len - cut + n, NULL);
                free(e);
                free(b);
        }
        CHECK_EQ_INT(failed, 0);
        mock_body_cache_free(c);
}

/* Conversations in turn: up to the slots, each parses only what it adds; more, still right. */
static void test_many(void) {
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        size_t prev[MOCK_BODY_CACHE_SLOTS] = {0};
        for (unsigned k = 1; k <= 10; k++)
                for (unsigned conv = 0; conv < MOCK_BODY_CACHE_SLOTS; conv++) {
                        size_t len;
                        char *b = body_of(100 + conv, k, &len);
                        size_t parsed = same_as_jansson(c, b, len);
                        if (k > 1)
                                TEST_RESULT(parsed <= len - prev[conv] + 64, "conversation %u, request %u: %zu parsed",
                                            conv, k, parsed);
                        prev[conv] = len;
                        free(b);
                }
        for (unsigned k = 1; k <= 4; k++)
                for (unsigned conv = 0; conv < 2 * MOCK_BODY_CACHE_SLOTS + 1; conv++) {
                        size_t len;
                        char *b = body_of(200 + conv, k, &len);
                        same_as_jansson(c, b, len);
                        free(b);
                }
        mock_body_cache_free(c);
}

typedef struct thread_arg {
        mock_body_cache *c;
        unsigned conv, failed;
} thread_arg;

static void *thread_main(void *p) {
        thread_arg *a = p;
        for (unsigned k = 1; k <= 30; k++) {
                size_t len;
                char *b = body_of(a->conv, k, &len);
                a->failed += !alike(a->c, b, len, NULL);
                free(b);
        }
        return NULL;
}

static void test_threads(void) {
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        pthread_t t[4];
        thread_arg a[4];
        for (unsigned i = 0; i < 4; i++) {
                a[i] = (thread_arg){.c = c, .conv = 300 + i % 2};
                CHECK(pthread_create(&t[i], NULL, thread_main, &a[i]) == 0);
        }
        for (unsigned i = 0; i < 4; i++) {
                pthread_join(t[i], NULL);
                CHECK_EQ_INT(a[i].failed, 0);
        }
        mock_body_cache_free(c);
}

/* A body past MOCK_BODY_CACHE_BYTES: parsed whole, not kept; the kept ones stay. */
static void test_large(void) {
        mock_body_cache *c;
        CHECK_EQ_INT(mock_body_cache_new(&c), 0);
        size_t len;
        char *b = body_of(4, 2, &len);
        same_as_jansson(c, b, len);
        size_t n = MOCK_BODY_CACHE_BYTES + 64;
        char *big = malloc(n + 64);
        size_t k = (size_t) sprintf(big, "{\"model\":\"m\",\"messages\":[{\"content\":\"");
        memset(big + k, 'x', n);
        k += n;
        k += (size_t) sprintf(big + k, "\"}]}");
        CHECK_EQ_INT((long long) same_as_jansson(c, big, k), (long long) k);
        free(big);
        free(b);
        b = body_of(4, 3, &len);
        CHECK(same_as_jansson(c, b, len) < len / 2); /* the first one still kept */
        free(b);
        mock_body_cache_free(c);
}

int main(void) {
        test_growing();
        test_edits();
        test_depth();
        test_random();
        test_many();
        test_threads();
        test_large();
        return test_done();
}
