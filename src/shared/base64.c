/* base64.c: see base64.h. */
#include "base64.h"
#include "dlib-crypto.h"

#include <errno.h>

int base64_encode(const void *p, size_t n, char *dst) {
        if (n > (size_t) INT32_MAX / 4 * 3 - 3)
                return -EINVAL;
        if (!dlib_crypto_load(NULL))
                return -ENOSYS;
        int len = EVP_EncodeBlock((unsigned char *) dst, (const unsigned char *) p, (int) n);
        return len < 0 ? -EINVAL : len;
}

int base64_decode_block(const char *src, size_t n, uint8_t *dst) {
        if (n > (size_t) INT32_MAX || n % 4 != 0)
                return -EINVAL;
        if (!dlib_crypto_load(NULL))
                return -ENOSYS;
        int len = EVP_DecodeBlock(dst, (const unsigned char *) src, (int) n);
        return len < 0 ? -EINVAL : len;
}
