/* test-auth.c: the tokens file, bearer checks (scheme, one field, scope, unknown tokens) and new
 * tokens. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "sha256.h"
#include "test.h"

#define TOKEN "hull_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_parse(void) {
        char hex[SHA256_HEX_SIZE], file[512];
        auth_tokens t;
        hull_error e = {0};
        CHECK(sha256_hex(TOKEN, strlen(TOKEN), hex) == 0);
        snprintf(file, sizeof(file),
                 "# tokens\n\n%s code:run ci   # the CI\r\n"
                 "  0000000000000000000000000000000000000000000000000000000000000000 other:scope,*.x\n"
                 "1111111111111111111111111111111111111111111111111111111111111111 *",
                 hex);
        CHECK(auth_tokens_parse(file, strlen(file), &t, &e) == 0);
        CHECK_EQ_INT(t.n, 3);
        CHECK_EQ_STR(t.v[0].name, "ci");
        CHECK_EQ_STR(t.v[0].scopes, "code:run");
        CHECK_EQ_STR(t.v[1].name, "");

        const auth_token *who = NULL;
        CHECK_EQ_INT(auth_check(&t, "Bearer " TOKEN, "code:run", &who), AUTH_OK);
        CHECK(who == &t.v[0]);
        CHECK_EQ_INT(auth_check(&t, "bEaReR   " TOKEN "  ", "code:run", NULL), AUTH_OK);
        CHECK_EQ_INT(auth_check(&t, NULL, "code:run", NULL), AUTH_MISSING);
        CHECK_EQ_INT(auth_check(&t, "Basic " TOKEN, "code:run", NULL), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_check(&t, "Bearer" TOKEN, "code:run", NULL), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_check(&t, "Bearer " TOKEN " x", "code:run", NULL), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_check(&t, "Bearer " TOKEN "\x01", "code:run", NULL), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_check(&t, "Bearer short", "code:run", NULL), AUTH_UNKNOWN);
        CHECK_EQ_INT(auth_check(&t, "Bearer " TOKEN "0", "code:run", NULL), AUTH_UNKNOWN);
        CHECK_EQ_INT(auth_check(&t, "Bearer " TOKEN, "agents:write", NULL), AUTH_NO_SCOPE);
        auth_tokens_done(&t);

        static const char *const bad[] = {
                "abc code:run\n",
                "0000000000000000000000000000000000000000000000000000000000000000\n",
                "0000000000000000000000000000000000000000000000000000000000000000 code:run a b\n",
                "0000000000000000000000000000000000000000000000000000000000000000 Code:Run\n",
                "0000000000000000000000000000000000000000000000000000000000000000 code:run,\n",
                "0000000000000000000000000000000000000000000000000000000000000000 code:run bad/name\n",
                "000000000000000000000000000000000000000000000000000000000000000A code:run\n",
                "0000000000000000000000000000000000000000000000000000000000000000 "
                "code:run\n0000000000000000000000000000000000000000000000000000000000000000 *\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = auth_tokens_parse(bad[i], strlen(bad[i]), &t, &e);
                TEST_RESULT(r == -EINVAL && strstr(e.msg, "line"), "bad tokens file %zu refused: %s", i, e.msg);
        }
        CHECK(auth_tokens_parse("a\0b", 3, &t, &e) == -EINVAL);
        CHECK(auth_tokens_parse("", 0, &t, &e) == 0 && t.n == 0);
        auth_tokens_done(&t);
}

static void test_new(void) {
        char a[AUTH_NEW_TOKEN_SIZE], b[AUTH_NEW_TOKEN_SIZE], ha[65], hb[65], want[SHA256_HEX_SIZE];
        CHECK(auth_token_new(a, ha) == 0);
        CHECK(auth_token_new(b, hb) == 0);
        CHECK(strlen(a) == 69 && strncmp(a, "hull_", 5) == 0 && strspn(a + 5, "0123456789abcdef") == 64);
        CHECK(strcmp(a, b) != 0);
        CHECK(sha256_hex(a, strlen(a), want) == 0);
        CHECK_EQ_STR(ha, want);
        CHECK(auth_name_is_valid("ci-1.x:y"));
        CHECK(!auth_name_is_valid(""));
        CHECK(!auth_name_is_valid("a b"));
        CHECK(auth_scopes_are_valid("code:run,*"));
        CHECK(!auth_scopes_are_valid(",code:run"));
        CHECK(!auth_scopes_are_valid("code run"));
}

/* One credential from Authorization: Bearer or x-api-key; both must agree. */
static void test_credential(void) {
        const char *t;
        size_t n;
        CHECK_EQ_INT(auth_credential("Bearer abc", NULL, &t, &n), AUTH_OK);
        CHECK(n == 3 && strncmp(t, "abc", 3) == 0);
        CHECK_EQ_INT(auth_credential(NULL, " xyz ", &t, &n), AUTH_OK);
        CHECK(n == 3 && strncmp(t, "xyz", 3) == 0);
        CHECK_EQ_INT(auth_credential("Bearer abc", "abc", &t, &n), AUTH_OK);
        CHECK_EQ_INT(auth_credential("Bearer abc", "abd", &t, &n), AUTH_CONFLICT);
        CHECK_EQ_INT(auth_credential(NULL, NULL, &t, &n), AUTH_MISSING);
        CHECK_EQ_INT(auth_credential("Basic abc", NULL, &t, &n), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_credential(NULL, "a b", &t, &n), AUTH_MALFORMED);
        CHECK_EQ_INT(auth_credential(NULL, "", &t, &n), AUTH_MALFORMED);
        /* a token not in the table: unknown, with its digest for the second source */
        char tok[AUTH_NEW_TOKEN_SIZE], hex[65], dhex[65];
        uint8_t d[32];
        CHECK(auth_token_new(tok, hex) == 0);
        CHECK_EQ_INT(auth_check_token(NULL, tok, strlen(tok), "v1", NULL, d), AUTH_UNKNOWN);
        for (size_t i = 0; i < 32; i++)
                snprintf(dhex + 2 * i, 3, "%02x", d[i]);
        CHECK_EQ_STR(dhex, hex);
}

int main(void) {
        test_parse();
        test_new();
        test_credential();
        return test_done();
}
