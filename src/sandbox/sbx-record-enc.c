/* sbx-record-enc.c: the digest encoding of run records (rec_encoder, rec_field_*; see
 * sbx-record.h): length-prefixed names and values hashed with SHA-256. Below every other
 * sbx-record file. */
#include "sbx-record.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

static void enc_raw(rec_encoder *enc, const void *p, size_t n) {
        if (enc->err == 0) {
                int r = sha256_update(&enc->sha, p, n);
                if (r < 0)
                        enc->err = r;
        }
}

static void enc_length(rec_encoder *enc, uint64_t len) {
        uint8_t b[8];
        for (size_t i = 0; i < 8; i++)
                b[i] = (uint8_t) (len >> (56 - 8 * i));
        enc_raw(enc, b, sizeof(b));
}

static void enc_value(rec_encoder *enc, const void *p, size_t n) {
        enc_length(enc, n);
        enc_raw(enc, p, n);
}

int rec_encoder_init(rec_encoder *enc, const char *domain) {
        *enc = (rec_encoder){};
        int r = sha256_init(&enc->sha);
        if (r < 0) {
                enc->err = r;
                return r;
        }
        enc_value(enc, domain, strlen(domain));
        return enc->err;
}

void rec_encoder_done(rec_encoder *enc) {
        sha256_done(&enc->sha);
}

static void enc_name(rec_encoder *enc, const char *name) {
        if (enc->pending != 0 && enc->err == 0)
                enc->err = -EINVAL; /* the streamed field before this one is short */
        enc_value(enc, name, strlen(name));
}

void rec_field(rec_encoder *enc, const char *name, const void *content, size_t len) {
        enc_name(enc, name);
        enc_value(enc, content, len);
}

void rec_field_str(rec_encoder *enc, const char *name, const char *s) {
        rec_field(enc, name, s, strlen(s));
}

void rec_field_int(rec_encoder *enc, const char *name, int64_t v) {
        char buf[sizeof("-9223372036854775808")];
        int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
        rec_field(enc, name, buf, (size_t) n);
}

void rec_field_uint(rec_encoder *enc, const char *name, uint64_t v) {
        char buf[sizeof("18446744073709551615")];
        int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);
        rec_field(enc, name, buf, (size_t) n);
}

void rec_field_bool(rec_encoder *enc, const char *name, bool v) {
        rec_field_str(enc, name, v ? "true" : "false");
}

void rec_field_begin(rec_encoder *enc, const char *name, uint64_t len) {
        enc_name(enc, name);
        enc_length(enc, len);
        enc->pending = len;
}

void rec_field_write(rec_encoder *enc, const void *p, size_t n) {
        if (n > enc->pending) {
                if (enc->err == 0)
                        enc->err = -EINVAL;
                return;
        }
        enc->pending -= n;
        enc_raw(enc, p, n);
}

void rec_field_write_double(rec_encoder *enc, double v) {
        uint64_t bits;
        uint8_t b[8];
        /* Every NaN is hashed as the canonical quiet NaN: JSON cannot carry a NaN's payload. */
        if (isnan(v))
                bits = UINT64_C(0x7ff8000000000000);
        else
                memcpy(&bits, &v, sizeof(bits));
        for (size_t i = 0; i < 8; i++)
                b[i] = (uint8_t) (bits >> (56 - 8 * i));
        rec_field_write(enc, b, sizeof(b));
}

int rec_encoder_finish(rec_encoder *enc, char ret[REC_DIGEST_HEX_SIZE]) {
        if (enc->pending != 0 && enc->err == 0)
                enc->err = -EINVAL;
        if (enc->err < 0)
                return enc->err;
        return sha256_final_hex(&enc->sha, ret);
}
