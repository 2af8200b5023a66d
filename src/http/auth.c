/* auth.c: the tokens file, bearer-token checks and new tokens. */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlib-crypto.h"
#include "macro.h"
#include "sha256.h"

static int digest_of(const char *s, size_t n, uint8_t ret[SHA256_DIGEST_SIZE]) {
        _cleanup_sha256_ sha256_ctx c = {0};
        int r = sha256_init(&c);
        if (r >= 0)
                r = sha256_update(&c, s, n);
        if (r >= 0)
                r = sha256_final(&c, ret);
        return r;
}

static bool in_set(const char *s, size_t n, bool (*ok)(char)) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!ok(s[i]))
                        return false;
        return true;
}

static bool name_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
}

static bool scope_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' || c == '*' ||
               c == '-' || c == ',';
}

bool auth_name_is_valid(const char *name) {
        size_t n = strlen(name);
        return n <= AUTH_NAME_MAX && in_set(name, n, name_char);
}

bool auth_scopes_are_valid(const char *scopes) {
        size_t n = strlen(scopes);
        if (n > AUTH_SCOPES_MAX || !in_set(scopes, n, scope_char) || scopes[0] == ',' || scopes[n - 1] == ',')
                return false;
        return !strstr(scopes, ",,");
}

static int hex_value(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Split the next whitespace-separated field of line[*pos..end). */
static bool next_field(const char *line, size_t end, size_t *pos, const char **ret, size_t *ret_len) {
        size_t i = *pos;
        while (i < end && (line[i] == ' ' || line[i] == '\t'))
                i++;
        if (i >= end || line[i] == '#')
                return false;
        size_t start = i;
        while (i < end && line[i] != ' ' && line[i] != '\t')
                i++;
        *ret = line + start;
        *ret_len = i - start;
        *pos = i;
        return true;
}

void auth_tokens_done(auth_tokens *t) {
        free(t->v);
        *t = (auth_tokens){0};
}

int auth_tokens_parse(const char *buf, size_t len, auth_tokens *ret, hull_error *e) {
        auth_tokens t = {0};
        size_t lineno = 0;

        if (len > AUTH_TOKENS_FILE_MAX)
                return hull_err(e, -EINVAL, "tokens: the file is over %u bytes", AUTH_TOKENS_FILE_MAX);
        if (memchr(buf, '\0', len))
                return hull_err(e, -EINVAL, "tokens: the file contains a NUL byte");
        for (size_t start = 0; start < len;) {
                const char *nl = memchr(buf + start, '\n', len - start);
                size_t end = nl ? (size_t) (nl - buf) : len, pos = start;
                const char *f[4];
                size_t fl[4], n = 0;
                lineno++;
                if (end > start && buf[end - 1] == '\r')
                        end--;
                while (n < ELEMENTSOF(f) && next_field(buf, end, &pos, &f[n], &fl[n]))
                        n++;
                start = nl ? (size_t) (nl - buf) + 1 : len;
                if (n == 0)
                        continue;
                if (n < 2 || n > 3) {
                        auth_tokens_done(&t);
                        return hull_err(e, -EINVAL, "tokens: line %zu: want '<sha256 hex> <scope>[,<scope>...] [name]'",
                                        lineno);
                }
                if (t.n >= AUTH_TOKENS_MAX) {
                        auth_tokens_done(&t);
                        return hull_err(e, -EINVAL, "tokens: more than %u tokens", AUTH_TOKENS_MAX);
                }
                auth_token tok = {0};
                if (!sha256_hex_is_valid(f[0], fl[0])) {
                        auth_tokens_done(&t);
                        return hull_err_hint(e, -EINVAL, "'hull token new' prints such a line",
                                             "tokens: line %zu: the first field must be the token's SHA-256 as 64 "
                                             "lowercase hex digits",
                                             lineno);
                }
                for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++)
                        tok.digest[i] = (uint8_t) (hex_value(f[0][2 * i]) << 4 | hex_value(f[0][2 * i + 1]));
                if (fl[1] > AUTH_SCOPES_MAX || (memcpy(tok.scopes, f[1], fl[1]), !auth_scopes_are_valid(tok.scopes))) {
                        auth_tokens_done(&t);
                        return hull_err(e, -EINVAL,
                                        "tokens: line %zu: scopes must be a comma-separated list such as %s", lineno,
                                        AUTH_SCOPE_CODE_RUN);
                }
                if (n == 3 &&
                    (fl[2] > AUTH_NAME_MAX || (memcpy(tok.name, f[2], fl[2]), !auth_name_is_valid(tok.name)))) {
                        auth_tokens_done(&t);
                        return hull_err(e, -EINVAL, "tokens: line %zu: a name is 1 to %u characters of [A-Za-z0-9._:-]",
                                        lineno, AUTH_NAME_MAX);
                }
                for (size_t i = 0; i < t.n; i++)
                        if (memcmp(t.v[i].digest, tok.digest, sizeof(tok.digest)) == 0) {
                                auth_tokens_done(&t);
                                return hull_err(e, -EINVAL, "tokens: line %zu repeats a token", lineno);
                        }
                auth_token *v = realloc(t.v, (t.n + 1) * sizeof(auth_token));
                if (!v) {
                        auth_tokens_done(&t);
                        return hull_err(e, -ENOMEM, "tokens: out of memory");
                }
                t.v = v;
                t.v[t.n++] = tok;
        }
        *ret = t;
        return 0;
}

int auth_tokens_load(const char *path, auth_tokens *ret, hull_error *e) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct stat st;

        if (fd < 0)
                return hull_err(e, negative_errno(), "tokens: cannot open %s", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return hull_err(e, -EINVAL, "tokens: %s is not a regular file", path);
        buf = malloc(AUTH_TOKENS_FILE_MAX + 1);
        if (!buf)
                return hull_err(e, -ENOMEM, "tokens: out of memory");
        for (;;) {
                ssize_t n = read(fd, buf + len, AUTH_TOKENS_FILE_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return hull_err(e, negative_errno(), "tokens: cannot read %s", path);
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > AUTH_TOKENS_FILE_MAX)
                        return hull_err(e, -EINVAL, "tokens: %s is over %u bytes", path, AUTH_TOKENS_FILE_MAX);
        }
        return auth_tokens_parse(buf, len, ret, e);
}

static bool has_scope(const char *scopes, const char *want) {
        size_t wl = strlen(want);
        for (const char *p = scopes; *p;) {
                const char *c = strchr(p, ',');
                size_t n = c ? (size_t) (c - p) : strlen(p);
                if ((n == 1 && p[0] == '*') || (n == wl && memcmp(p, want, n) == 0))
                        return true;
                p += n + (c ? 1 : 0);
        }
        return false;
}

/* The token of a credential header value: "Bearer <token>" (bearer) or the bare token
 * (x-api-key). */
static auth_verdict token_of(const char *h, bool bearer_form, const char **ret, size_t *ret_n) {
        static const char bearer[] = "Bearer";
        if (!h)
                return AUTH_MISSING;
        const char *tok = h;
        if (bearer_form) {
                if (strncasecmp(h, bearer, sizeof(bearer) - 1) != 0 ||
                    (h[sizeof(bearer) - 1] != ' ' && h[sizeof(bearer) - 1] != '\t'))
                        return AUTH_MALFORMED;
                tok = h + sizeof(bearer) - 1;
        }
        while (*tok == ' ' || *tok == '\t')
                tok++;
        size_t n = 0;
        while (tok[n] > 0x20 && tok[n] < 0x7f)
                n++;
        for (const char *rest = tok + n; *rest; rest++)
                if (*rest != ' ' && *rest != '\t')
                        return AUTH_MALFORMED; /* a second field or a byte outside visible ASCII */
        if (n == 0)
                return AUTH_MALFORMED;
        *ret = tok;
        *ret_n = n;
        return AUTH_OK;
}

auth_verdict auth_credential(const char *authorization, const char *x_api_key, const char **ret, size_t *ret_n) {
        const char *a = NULL, *k = NULL;
        size_t an = 0, kn = 0;
        auth_verdict va = token_of(authorization, true, &a, &an);
        auth_verdict vk = token_of(x_api_key, false, &k, &kn);
        if (va == AUTH_MALFORMED || vk == AUTH_MALFORMED)
                return AUTH_MALFORMED;
        if (va == AUTH_OK && vk == AUTH_OK && (an != kn || memcmp(a, k, an) != 0))
                return AUTH_CONFLICT;
        if (va == AUTH_MISSING && vk == AUTH_MISSING)
                return AUTH_MISSING;
        *ret = va == AUTH_OK ? a : k;
        *ret_n = va == AUTH_OK ? an : kn;
        return AUTH_OK;
}

auth_verdict auth_check_token(const auth_tokens *t, const char *tok, size_t n, const char *scope,
                              const auth_token **ret_who, uint8_t ret_digest[static 32]) {
        memset(ret_digest, 0, 32); /* no key has this digest */
        if (n < AUTH_TOKEN_MIN || n > AUTH_TOKEN_MAX)
                return AUTH_UNKNOWN;
        uint8_t d[SHA256_DIGEST_SIZE];
        if (digest_of(tok, n, d) < 0) {
                explicit_bzero(d, sizeof(d));
                return AUTH_UNKNOWN;
        }
        /* Compare with every entry, whatever matched, so the time says nothing (libcrypto is
         * loaded: the digest was made with it). */
        const auth_token *found = NULL;
        for (size_t i = 0; t && i < t->n; i++)
                if (CRYPTO_memcmp(t->v[i].digest, d, sizeof(d)) == 0)
                        found = &t->v[i];
        memcpy(ret_digest, d, sizeof(d));
        explicit_bzero(d, sizeof(d)); /* the digest is as good as the token against this daemon */
        if (!found)
                return AUTH_UNKNOWN;
        if (ret_who)
                *ret_who = found;
        return has_scope(found->scopes, scope) ? AUTH_OK : AUTH_NO_SCOPE;
}

auth_verdict auth_check(const auth_tokens *t, const char *h, const char *scope, const auth_token **ret_who) {
        const char *tok;
        size_t n;
        auth_verdict v = token_of(h, true, &tok, &n);
        if (v != AUTH_OK)
                return v;
        uint8_t d[SHA256_DIGEST_SIZE];
        v = auth_check_token(t, tok, n, scope, ret_who, d);
        explicit_bzero(d, sizeof(d));
        return v;
}

const char *auth_verdict_to_string(auth_verdict v) {
        switch (v) {
        case AUTH_OK:
                return "ok";
        case AUTH_MISSING:
                return "no bearer token";
        case AUTH_MALFORMED:
                return "a malformed Authorization or x-api-key header";
        case AUTH_CONFLICT:
                return "Authorization and x-api-key name different keys";
        case AUTH_UNKNOWN:
                return "an unknown token";
        case AUTH_NO_SCOPE:
                return "a token without the scope";
        }
        return "?";
}

int auth_token_new(char token[static AUTH_NEW_TOKEN_SIZE], char digest_hex[static 65]) {
        static const char hex[] = "0123456789abcdef";
        uint8_t rnd[AUTH_TOKEN_RANDOM_BYTES];
        for (size_t got = 0; got < sizeof(rnd);) {
                ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                got += (size_t) n;
        }
        memcpy(token, "hull_", 5);
        for (size_t i = 0; i < sizeof(rnd); i++) {
                token[5 + 2 * i] = hex[rnd[i] >> 4];
                token[5 + 2 * i + 1] = hex[rnd[i] & 15];
        }
        token[AUTH_NEW_TOKEN_SIZE - 1] = '\0';
        explicit_bzero(rnd, sizeof(rnd));
        return sha256_hex(token, AUTH_NEW_TOKEN_SIZE - 1, digest_hex);
}
