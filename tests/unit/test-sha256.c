/* test-sha256.c: SHA-256 against the FIPS 180-2 examples, incrementally and in one shot. */
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "test.h"

static const struct {
        const char *in;
        const char *hex;
} vectors[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqr"
         "stu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
};

int main(void) {
        char hex[SHA256_HEX_SIZE];

        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                CHECK_EQ_INT(sha256_hex(vectors[i].in, strlen(vectors[i].in), hex), 0);
                CHECK_EQ_STR(hex, vectors[i].hex);
                /* the same bytes fed one at a time */
                _cleanup_sha256_ sha256_ctx c = {};
                CHECK_EQ_INT(sha256_init(&c), 0);
                int r = 0;
                for (const char *p = vectors[i].in; *p && r == 0; p++)
                        r = sha256_update(&c, p, 1);
                CHECK_EQ_INT(r, 0);
                CHECK_EQ_INT(sha256_final_hex(&c, hex), 0);
                CHECK_EQ_STR(hex, vectors[i].hex);
        }

        /* One million 'a', in uneven pieces. */
        char *a = malloc(1000000);
        CHECK(a != NULL);
        if (a) {
                memset(a, 'a', 1000000);
                _cleanup_sha256_ sha256_ctx c = {};
                CHECK_EQ_INT(sha256_init(&c), 0);
                size_t done = 0, step = 1;
                int r = 0;
                while (done < 1000000 && r == 0) {
                        size_t n = step < 1000000 - done ? step : 1000000 - done;
                        r = sha256_update(&c, a + done, n);
                        done += n;
                        step = step * 3 + 1;
                }
                CHECK_EQ_INT(r, 0);
                CHECK_EQ_INT(sha256_final_hex(&c, hex), 0);
                CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
                CHECK_EQ_INT(sha256_hex(a, 1000000, hex), 0);
                CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
                free(a);
        }

        /* Raw digest and hex agree; bytes with NULs are hashed by length. */
        uint8_t raw[SHA256_DIGEST_SIZE];
        _cleanup_sha256_ sha256_ctx c = {};
        CHECK_EQ_INT(sha256_init(&c), 0);
        CHECK_EQ_INT(sha256_update(&c, "abc", 3), 0);
        CHECK_EQ_INT(sha256_final(&c, raw), 0);
        sha256_to_hex(raw, hex);
        CHECK_EQ_STR(hex, vectors[1].hex);
        CHECK_EQ_INT(sha256_hex("a\0b", 3, hex), 0);
        CHECK(strcmp(hex, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb") != 0); /* not just "a" */

        /* A context that was never started, or is already done, fails cleanly. */
        sha256_ctx none = {};
        CHECK_EQ_INT(sha256_update(&none, "x", 1), -EIO);
        CHECK_EQ_INT(sha256_final_hex(&none, hex), -EIO);
        sha256_done(&none);
        sha256_done(&none);

        CHECK(sha256_hex_is_valid(vectors[1].hex, 64));
        CHECK(!sha256_hex_is_valid(vectors[1].hex, 63));
        CHECK(!sha256_hex_is_valid("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", 64));
        CHECK(!sha256_hex_is_valid("", 0));
        return test_done();
}
