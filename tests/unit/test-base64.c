/* test-base64.c: the encoder (padded and not, into a buffer and a new one) and the strict decoder
 * (both alphabets, padded or not, every malformed shape refused), across OpenSSL's piece sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "limits.h"
#include "macro.h"
#include "test.h"

static void test_vectors(void) {
        /* RFC 4648, section 10 */
        static const char *const rfc[][2] = {
                {"", ""},
                {"f", "Zg=="},
                {"fo", "Zm8="},
                {"foo", "Zm9v"},
                {"foob", "Zm9vYg=="},
                {"fooba", "Zm9vYmE="},
                {"foobar", "Zm9vYmFy"},
        };
        for (size_t i = 0; i < ELEMENTSOF(rfc); i++) {
                char *s = NULL, buf[16];
                size_t n = 99;
                CHECK(base64_encode(rfc[i][0], strlen(rfc[i][0]), true, &s, &n) == 0 && s && n == strlen(rfc[i][1]));
                CHECK_EQ_STR(s, rfc[i][1]);
                free(s);
                CHECK(base64_encode_to(buf, sizeof(buf), rfc[i][0], strlen(rfc[i][0]), false, &n) == 0);
                TEST_RESULT(n == strcspn(rfc[i][1], "=") && strncmp(buf, rfc[i][1], n) == 0 && buf[n] == '\0',
                            "unpadded \"%s\" is \"%s\"", rfc[i][0], buf);
                void *d = NULL;
                CHECK(base64_decode(rfc[i][1], strlen(rfc[i][1]), &d, &n) == 0 && n == strlen(rfc[i][0]) &&
                      memcmp(d, rfc[i][0], n) == 0 && ((char *) d)[n] == '\0');
                free(d);
        }
        CHECK_EQ_INT(base64_encoded_len(0), 0);
        CHECK_EQ_INT(base64_encoded_len(4), 8);
        CHECK(base64_encoded_len(SIZE_MAX) == SIZE_MAX);
        CHECK_EQ_INT(base64_decoded_max(2), 1);
        CHECK_EQ_INT(base64_decoded_max(8), 6);

        char small[8] = "unset";
        CHECK_EQ_INT(base64_encode_to(small, sizeof(small), "abcdef", 6, true, NULL), -ENOBUFS); /* 8 + NUL */
        CHECK_EQ_STR(small, "unset");
        char nine[9];
        CHECK_EQ_INT(base64_encode_to(nine, sizeof(nine), "abcdef", 6, true, NULL), 0);
        CHECK_EQ_STR(nine, "YWJjZGVm");
}

static void test_decode(void) {
        static const struct {
                const char *in, *out;
                size_t len;
        } good[] = {
                {"", "", 0},
                {"QQ==", "A", 1},
                {"QQ", "A", 1},
                {"QUI=", "AB", 2},
                {"QUI", "AB", 2},
                {"QUJD", "ABC", 3},
                {"-_8", "\xfb\xff", 2},
                {"+/8=", "\xfb\xff", 2},
                {"AA==", "\0", 1},
                {"+_-/", "\xfb\xff\xbf", 3}, /* the two alphabets mixed */
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                void *p = NULL;
                size_t n = 99;
                int q = base64_decode(good[i].in, strlen(good[i].in), &p, &n);
                TEST_RESULT(q == 0 && n == good[i].len && memcmp(p, good[i].out, n) == 0,
                            "base64 \"%s\" decodes (%zu bytes)", good[i].in, n);
                free(p);
        }
        static const char *const bad[] = {
                "Q",     "QQ=", "QQ===", "Q===", "QQ==QQ==", "QQ =", " QQ==",    "QQ\n",      "Q!==",
                "QUJD=", "=",   "==",    "QU=J", "QUJD\r\n", "Q.==", "QUJD====", "\xc3\xa9QQ"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                void *p = (void *) 1;
                size_t n = 7;
                char shown[32];
                size_t k = 0;
                for (; bad[i][k] && k + 1 < sizeof(shown); k++)
                        shown[k] = (unsigned char) bad[i][k] < 0x20 ? '?' : bad[i][k];
                shown[k] = '\0';
                TEST_RESULT(base64_decode(bad[i], strlen(bad[i]), &p, &n) == -EINVAL && p == (void *) 1 && n == 7,
                            "base64 \"%s\" refused, nothing written", shown);
        }
        /* A NUL inside is a character like any other: refused, not an end. */
        void *p = NULL;
        size_t n;
        CHECK_EQ_INT(base64_decode("QQ\0=", 4, &p, &n), -EINVAL);
        CHECK_EQ_INT(base64_decode("QUJDQQ", 4, &p, &n), 0); /* n bounds the input, not a NUL */
        CHECK(n == 3 && memcmp(p, "ABC", 3) == 0);
        free(p);
}

/* Round trips of every length around OpenSSL's piece sizes, padded and not, both alphabets. */
static void test_round_trips(void) {
        size_t lens[] = {0,
                         1,
                         2,
                         3,
                         4,
                         5,
                         100,
                         BASE64_DECODE_CHUNK / 4 * 3 - 1,
                         BASE64_DECODE_CHUNK / 4 * 3,
                         BASE64_DECODE_CHUNK / 4 * 3 + 1,
                         BASE64_ENCODE_CHUNK - 1,
                         BASE64_ENCODE_CHUNK,
                         BASE64_ENCODE_CHUNK + 1,
                         3 * BASE64_ENCODE_CHUNK + 2};
        unsigned fails = 0;
        uint32_t x = 12345;
        for (size_t t = 0; t < ELEMENTSOF(lens); t++) {
                size_t len = lens[t];
                unsigned char *data = malloc(len + 1);
                if (!data) {
                        fails++;
                        continue;
                }
                for (size_t i = 0; i < len; i++) {
                        x = x * 1103515245u + 12345u;
                        data[i] = (unsigned char) (x >> 16);
                }
                for (int pad = 0; pad <= 1; pad++)
                        for (int url = 0; url <= 1; url++) {
                                char *s = NULL;
                                size_t slen;
                                void *back = NULL;
                                size_t blen;
                                if (base64_encode(data, len, pad, &s, &slen) < 0) {
                                        fails++;
                                        continue;
                                }
                                if (slen != (pad ? base64_encoded_len(len) : (len * 4 + 2) / 3) || strlen(s) != slen)
                                        fails++;
                                for (size_t i = 0; url && i < slen; i++)
                                        s[i] = s[i] == '+' ? '-' : s[i] == '/' ? '_' : s[i];
                                if (base64_decode(s, slen, &back, &blen) < 0 || blen != len ||
                                    memcmp(back, data, len) != 0 || blen > base64_decoded_max(slen))
                                        fails++;
                                free(back);
                                free(s);
                        }
                free(data);
        }
        TEST_RESULT(fails == 0, "round trips across the piece sizes (%u failed)", fails);
}

int main(void) {
        test_vectors();
        test_decode();
        test_round_trips();
        return test_done();
}
