/* test-base64.c: base64 through the loaded libcrypto, against RFC 4648's examples. */
#include <errno.h>
#include <string.h>

#include "base64.h"
#include "test.h"

static const struct {
        const char *in, *out;
} vectors[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
};

int main(void) {
        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                size_t n = strlen(vectors[i].in);
                char enc[BASE64_ENCODED_SIZE(6)];
                CHECK_EQ_INT(base64_encode(vectors[i].in, n, enc), strlen(vectors[i].out));
                CHECK_EQ_STR(enc, vectors[i].out);
                uint8_t dec[8] = {0};
                size_t m = strlen(vectors[i].out),
                       pad = m && vectors[i].out[m - 1] == '=' ? 1 + (vectors[i].out[m - 2] == '=') : 0;
                int k = base64_decode_block(vectors[i].out, m, dec);
                CHECK_EQ_INT(k - (int) pad, n);
                CHECK(memcmp(dec, vectors[i].in, n) == 0);
        }
        uint8_t bin[3] = {0xff, 0x00, 0xfe}, dec[3];
        char enc[BASE64_ENCODED_SIZE(3)];
        CHECK_EQ_INT(base64_encode(bin, 3, enc), 4);
        CHECK_EQ_STR(enc, "/wD+");
        CHECK_EQ_INT(base64_decode_block("/wD+", 4, dec), 3);
        CHECK(memcmp(dec, bin, 3) == 0);
        CHECK_EQ_INT(base64_decode_block("Zm9", 3, dec), -EINVAL);  /* not a multiple of 4 */
        CHECK_EQ_INT(base64_decode_block("Z!9v", 4, dec), -EINVAL); /* not base64 */
        return test_done();
}
