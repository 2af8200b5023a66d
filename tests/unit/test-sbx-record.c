/* test-sbx-record.c: run records: every golden vector of the plimsoll spec (tests/unit/data/
 * plimsoll-golden.json), the ProtoJSON spellings that must hash alike, malformed messages, the
 * software rule ID, the session chain and its breaks, and the audit log. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "sbx-record.h"
#include "sha256.h"
#include "test.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must name tests/unit/data"
#endif

static json_t *parse(const char *text) {
        json_error_t err;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!j)
                printf("# bad test JSON: %s: %s\n", err.text, text);
        return j;
}

/* The digest of a message given as JSON text, or the error's message prefixed "error: ". */
typedef int (*digest_fn)(const json_t *, char *, hull_error *);
static const char *digest_of(digest_fn fn, const char *text) {
        static char outs[2][HULL_ERROR_MSG_MAX + 8]; /* two, so that two results can be compared */
        static unsigned which;
        char *out = outs[which++ % 2];
        size_t size = sizeof(outs[0]);
        json_auto_t *j = parse(text);
        hull_error e = {};
        char hex[REC_DIGEST_HEX_SIZE];
        if (!j)
                return "bad test JSON";
        int r = fn(j, hex, &e);
        if (r < 0)
                snprintf(out, size, "error: %s", e.msg);
        else
                snprintf(out, size, "%s", hex);
        return out;
}
#define REQUEST(text) digest_of(rec_request_digest, text)
#define RESULT(text) digest_of(rec_result_digest, text)
#define RECORD(text) digest_of(rec_record_digest, text)
#define REFUSED(s) (strncmp((s), "error: ", 7) == 0)

static void test_golden(void) {
        json_error_t err;
        json_auto_t *g = json_load_file(TEST_DATA_DIR "/plimsoll-golden.json", JSON_REJECT_DUPLICATES, &err);
        CHECK(g != NULL);
        if (!g) {
                printf("# %s\n", err.text);
                return;
        }
        static const struct {
                const char *list, *input;
                digest_fn fn;
        } groups[] = {
                {"requests", "request", rec_request_digest},
                {"results", "response", rec_result_digest},
                {"records", "record", rec_record_digest},
        };
        size_t count = 0;
        for (size_t k = 0; k < ELEMENTSOF(groups); k++) {
                json_t *list = json_object_get(g, groups[k].list), *v;
                size_t i;
                json_array_foreach(list, i, v) {
                        char hex[REC_DIGEST_HEX_SIZE] = "";
                        hull_error e = {};
                        int r = groups[k].fn(json_object_get(v, groups[k].input), hex, &e);
                        TEST_RESULT(r == 0 && strcmp(hex, json_string_value(json_object_get(v, "sha256"))) == 0,
                                    "golden %s: %s (got %s%s)", groups[k].list,
                                    json_string_value(json_object_get(v, "name")), hex, e.msg);
                        count++;
                }
        }
        json_t *list = json_object_get(g, "sessionFingerprints"), *v;
        size_t i;
        json_array_foreach(list, i, v) {
                char hex[REC_DIGEST_HEX_SIZE] = "";
                const char *id = json_string_value(json_object_get(v, "sessionId"));
                CHECK_EQ_INT(rec_fingerprint(id, strlen(id), hex), 0);
                CHECK_EQ_STR(hex, json_string_value(json_object_get(v, "sha256")));
                count++;
        }
        CHECK_EQ_INT(count, 19); /* 7 + 3 requests, 4 + 1 results, 2 + 1 records, 1 fingerprint */
}

/* The reference doc's vectors, written out here as well so that they stay checked even if the
 * data file changes. */
static void test_reference_vectors(void) {
        CHECK_EQ_STR(
                REQUEST("{\"protocol\":1,\"minimumIsolation\":\"container\",\"traceId\":\"t-1\",\"timeoutMs\":5000,"
                        "\"javascript\":{\"code\":\"console.log(1+1)\"}}"),
                "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc");
        CHECK_EQ_STR(REQUEST("{\"protocol\":3,\"javascript\":{\"code\":\"console.log(6*7)\"}}"),
                     "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f");
        CHECK_EQ_STR(
                REQUEST("{\"protocol\":3,\"minimumIsolation\":\"container\",\"timeoutMs\":30000,\"project\":{\"files\":"
                        "[{\"path\":\"main.py\",\"content\":\"print(1)\\n\"}],\"steps\":[\"python3 main.py\"]}}"),
                "0b3ad2014fdd3cf8eacb31ae94ebe7adc5d3c8087501af19b3f43991308512ff");
        CHECK_EQ_STR(REQUEST("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"x = 1\"}}"),
                     "616ff7401f3c4d1933fe717c7f4dbcd46e4138c8428b56a91509264111f1678a");
        CHECK_EQ_STR(RESULT("{\"sandbox\":\"csandbox\",\"isolation\":\"process\",\"durationMs\":\"5\",\"javascript\":{"
                            "\"stdout\":\"NDIK\"}}"),
                     "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5");
        CHECK_EQ_STR(RECORD("{\"version\":2,\"requestSha256\":"
                            "\"17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f\","
                            "\"resultSha256\":\"9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5\","
                            "\"provider\":\"csandbox\",\"isolation\":\"process\",\"startedUnixMs\":\"1700000000000\","
                            "\"endedUnixMs\":\"1700000000005\"}"),
                     "4c5c42dc09a31872e17e0b3f418f72d08b2d53a576ada8a7b1c6548ab977801f");
        CHECK_EQ_STR(RECORD("{\"version\":2,\"requestSha256\":"
                            "\"894bec2baf1b52612c2f060ba2aa9080273294e737bae5f3a65ff661b50481d0\","
                            "\"resultSha256\":\"bfb9756e0d38ac39c7ffd523278e5c32b63c5db76ec5162b7d1ffbe363d0ad6f\","
                            "\"provider\":\"openshell\",\"isolation\":\"container\",\"environment\":\"openshell-image:"
                            "sha256:ab\","
                            "\"policy\":\"openshell-policy:sha256:cd\",\"startedUnixMs\":\"1790000000000\","
                            "\"endedUnixMs\":\"1790000004210\","
                            "\"session\":\"5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720\","
                            "\"sequence\":\"2\","
                            "\"previousSha256\":\"0000000000000000000000000000000000000000000000000000000000000001\"}"),
                     "a5107eb6b1f726e1b2d7183419502309bfa34d932a65f1494150228ae8349156");
        char hex[REC_DIGEST_HEX_SIZE];
        CHECK_EQ_INT(rec_fingerprint("00112233445566778899aabbccddeeff", 32, hex), 0);
        CHECK_EQ_STR(hex, "5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720");
}

static void test_encoder(void) {
        char hex[REC_DIGEST_HEX_SIZE], want[REC_DIGEST_HEX_SIZE];
        rec_encoder enc;

        /* The framing byte for byte: value(domain), value(name), value(content). */
        static const char framed[] = "\0\0\0\0\0\0\0\1d"
                                     "\0\0\0\0\0\0\0\1a"
                                     "\0\0\0\0\0\0\0\2-3"
                                     "\0\0\0\0\0\0\0\1b"
                                     "\0\0\0\0\0\0\0\4true"
                                     "\0\0\0\0\0\0\0\1c"
                                     "\0\0\0\0\0\0\0\x10"
                                     "\x3f\xf8\0\0\0\0\0\0"
                                     "\x7f\xf8\0\0\0\0\0\0";
        CHECK_EQ_INT(rec_encoder_init(&enc, "d"), 0);
        rec_field_int(&enc, "a", -3);
        rec_field_bool(&enc, "b", true);
        rec_field_begin(&enc, "c", 16);
        rec_field_write_double(&enc, 1.5);
        rec_field_write_double(&enc, -NAN); /* any NaN hashes as the canonical quiet NaN */
        CHECK_EQ_INT(rec_encoder_finish(&enc, hex), 0);
        rec_encoder_done(&enc);
        CHECK_EQ_INT(sha256_hex(framed, sizeof(framed) - 1, want), 0);
        CHECK_EQ_STR(hex, want);

        /* The spec's reference implementation, field by field. */
        CHECK_EQ_INT(rec_encoder_init(&enc, "plimsoll.run-request.v1"), 0);
        rec_field_uint(&enc, "protocol", 1);
        rec_field_str(&enc, "minimum_isolation", "container");
        rec_field_int(&enc, "timeout_ms", 5000);
        rec_field_str(&enc, "kind", "javascript");
        rec_field_str(&enc, "code", "console.log(1+1)");
        rec_field(&enc, "grant_profile", "", 0);
        CHECK_EQ_INT(rec_encoder_finish(&enc, hex), 0);
        rec_encoder_done(&enc);
        CHECK_EQ_STR(hex, "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc");

        /* A streamed field that gets fewer or more bytes than it declared is an error. */
        CHECK_EQ_INT(rec_encoder_init(&enc, "d"), 0);
        rec_field_begin(&enc, "c", 8);
        rec_field_write(&enc, "1234", 4);
        CHECK_EQ_INT(rec_encoder_finish(&enc, hex), -EINVAL);
        rec_encoder_done(&enc);
        CHECK_EQ_INT(rec_encoder_init(&enc, "d"), 0);
        rec_field_begin(&enc, "c", 2);
        rec_field_write(&enc, "1234", 4);
        CHECK_EQ_INT(rec_encoder_finish(&enc, hex), -EINVAL);
        rec_encoder_done(&enc);
        CHECK_EQ_INT(rec_encoder_init(&enc, "d"), 0);
        rec_field_begin(&enc, "c", 2);
        rec_field_str(&enc, "x", "y");
        CHECK_EQ_INT(rec_encoder_finish(&enc, hex), -EINVAL);
        rec_encoder_done(&enc);
}

/* What ProtoJSON allows to be written several ways must hash the same. */
static void test_spellings(void) {
        const char *v2js = "0b662d4687a062429ab0be85c2445e6c0c9d402922ca223b74e3a1095da7d320";
        const char *rule = "{\"mode\":\"approved\",\"identities\":[\"oci-manifest:linux/"
                           "amd64@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                           "\"oci-manifest:linux/"
                           "amd64@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"]}";
        char text[1024];
        /* snake_case names, the timeout as a string and as an integral double, a traceId/sessionId
         * that are never hashed, null fields */
        snprintf(text, sizeof(text),
                 "{\"protocol\":2,\"minimum_isolation\":\"container\",\"timeout_ms\":\"5000\",\"software_rule\":%s,"
                 "\"javascript\":{\"code\":\"console.log(1+1)\",\"grant_profile\":null}}",
                 rule);
        CHECK_EQ_STR(REQUEST(text), v2js);
        snprintf(text, sizeof(text),
                 "{\"protocol\":\"2\",\"minimumIsolation\":\"container\",\"timeoutMs\":5000.0,\"softwareRule\":%s,"
                 "\"traceId\":\"other\",\"sessionId\":\"00112233445566778899aabbccddeeff\",\"javascript\":{\"code\":"
                 "\"console.log(1+1)\"}}",
                 rule);
        CHECK_EQ_STR(REQUEST(text), v2js);

        /* bytes: standard base64 padded or not, URL-safe */
        const char *js = "3a57590f560a5de29d491595bfb264ff072e06d4d0fcccc5ab2d4b3de410d37d";
        CHECK_EQ_STR(RESULT("{\"javascript\":{\"stdout\":\"Mgo\",\"stderr\":\"_3g\"}}"), js);
        CHECK_EQ_STR(RESULT("{\"javascript\":{\"stdout\":\"Mgo=\",\"stderr\":\"_3g=\",\"exitCode\":\"0\",\"timedOut\":"
                            "false,\"advice\":[]}}"),
                     js);
        CHECK(strcmp(RESULT("{\"javascript\":{\"stdout\":\"Mwo=\",\"stderr\":\"/3g=\"}}"), js) != 0);
        /* unused low bits of the last character are ignored, as Go's decoder does: same bytes */
        CHECK_EQ_STR(RESULT("{\"javascript\":{\"stdout\":\"Mgp=\",\"stderr\":\"/3g=\"}}"), js);
        /* enums by name or number, int64 as number or string, doubles in strings */
        const char *project = "bfb9756e0d38ac39c7ffd523278e5c32b63c5db76ec5162b7d1ffbe363d0ad6f";
        CHECK_EQ_STR(RESULT("{\"project\":{\"steps\":[{\"command\":\"node main.js > "
                            "out.txt\",\"duration_ms\":90},{\"command\":\"cat out.txt\","
                            "\"stdout\":\"NDIK\"}],\"outcome\":1,\"artifacts\":[{\"path\":\"out.txt\",\"content\":"
                            "\"NDIK\"}]}}"),
                     project);
        const char *module = "7bf330fc9945ab802a68a0da5a53ec0a40344c5212106e159ce77479e687c2ec";
        CHECK_EQ_STR(RESULT("{\"module\":{\"runs\":[{\"status\":2,\"outputs\":[\"1\",\"1.5\"]},{\"status\":\"-3\","
                            "\"outputs\":[]}],"
                            "\"width\":1,\"outcome\":\"PROJECT_OUTCOME_COMPLETED\",\"stdout\":\"cm93cz0yCg==\"}}"),
                     module);
        CHECK_EQ_STR(RECORD("{\"version\":2,\"request_sha256\":"
                            "\"894bec2baf1b52612c2f060ba2aa9080273294e737bae5f3a65ff661b50481d0\","
                            "\"result_sha256\":\"bfb9756e0d38ac39c7ffd523278e5c32b63c5db76ec5162b7d1ffbe363d0ad6f\","
                            "\"provider\":\"openshell\",\"isolation\":\"container\",\"environment\":\"openshell-image:"
                            "sha256:ab\","
                            "\"policy\":\"openshell-policy:sha256:cd\",\"started_unix_ms\":1790000000000,\"ended_unix_"
                            "ms\":1790000004210,"
                            "\"session\":\"5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720\","
                            "\"sequence\":2,"
                            "\"previous_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
                            "\"recordSha256\":\"ignored\",\"softwareIdentity\":null}"),
                     "a5107eb6b1f726e1b2d7183419502309bfa34d932a65f1494150228ae8349156");
        /* the record's version is in its domain: the same fields under v1 hash differently */
        CHECK(strcmp(RECORD("{\"version\":1,\"provider\":\"p\"}"), RECORD("{\"version\":2,\"provider\":\"p\"}")) != 0);
        /* v3 covers unanswered, v2 does not */
        CHECK(strcmp(RECORD("{\"version\":3,\"unanswered\":\"unknown\"}"), RECORD("{\"version\":3}")) != 0);
        CHECK_EQ_STR(RECORD("{\"version\":2,\"unanswered\":\"unknown\"}"), RECORD("{\"version\":2}"));
        /* A request's strings may hold NUL bytes; they are hashed. */
        CHECK(strcmp(REQUEST("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"a\\u0000b\"}}"),
                     REQUEST("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"a\"}}")) != 0);
        /* NaN and the infinities as ProtoJSON writes them */
        CHECK(!REFUSED(RESULT("{\"module\":{\"runs\":[{\"outputs\":[\"NaN\",\"Infinity\",\"-Infinity\",-0.0]}]}}")));
        /* a request without a payload hashes kind "" */
        CHECK(!REFUSED(REQUEST("{\"protocol\":3}")));
        CHECK(strcmp(REQUEST("{\"protocol\":3}"), REQUEST("{\"protocol\":3,\"javascript\":{}}")) != 0);
}

static void test_malformed(void) {
        static const char *const requests[] = {
                "[]",
                "{\"protocol\":3,\"bogus\":1}",
                "{\"protocol\":3,\"timeoutMs\":1,\"timeout_ms\":1}",
                "{\"protocol\":3,\"javascript\":{},\"cell\":{}}",
                "{\"protocol\":\"abc\"}",
                "{\"protocol\":-1}",
                "{\"protocol\":3.5}",
                "{\"protocol\":4294967296}",
                "{\"protocol\":3,\"timeoutMs\":2147483648}",
                "{\"protocol\":3,\"timeoutMs\":\"+5\"}",
                "{\"protocol\":3,\"timeoutMs\":\" 5\"}",
                "{\"protocol\":3,\"timeoutMs\":true}",
                "{\"protocol\":3,\"minimumIsolation\":5}",
                "{\"protocol\":3,\"javascript\":{\"code\":5}}",
                "{\"protocol\":3,\"javascript\":[]}",
                "{\"protocol\":3,\"project\":{\"files\":{}}}",
                "{\"protocol\":3,\"project\":{\"files\":[{\"path\":\"a\",\"content\":\"b\",\"mode\":1}]}}",
                "{\"protocol\":3,\"project\":{\"files\":[\"a\"]}}",
                "{\"protocol\":3,\"project\":{\"steps\":[1]}}",
                "{\"protocol\":3,\"module\":{\"rows\":[{\"values\":[\"x\"]}]}}",
                "{\"protocol\":3,\"module\":{\"endTime\":\"1e999\"}}",
                "{\"protocol\":3,\"module\":{\"endTime\":\"0x10\"}}",
                "{\"protocol\":3,\"module\":{\"step\":\"nan\"}}",
                "{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\",\"identities\":\"x\"}}",
                "{\"protocol\":3,\"softwareRule\":[]}",
                "{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"x\",\"grantProfile\":\"g\"}}",
                "{\"protocol\":3,\"traceId\":7}",
        };
        for (size_t i = 0; i < ELEMENTSOF(requests); i++) {
                const char *r = REQUEST(requests[i]);
                TEST_RESULT(REFUSED(r), "malformed request refused: %s (%s)", requests[i], r);
        }
        static const char *const results[] = {
                "{}",
                "{\"sandbox\":\"x\"}",
                "{\"javascript\":{},\"cell\":{}}",
                "{\"javascript\":{\"stdout\":\"Mgo=x\"}}",
                "{\"javascript\":{\"stdout\":\"M\"}}",
                "{\"javascript\":{\"stdout\":\"a+b-\"}}",
                "{\"javascript\":{\"stdout\":\"Mg=o\"}}",
                "{\"javascript\":{\"stdout\":\"Mg==\\n\"}}",
                "{\"javascript\":{\"stdout\":5}}",
                "{\"javascript\":{\"exitCode\":1.5}}",
                "{\"javascript\":{\"timedOut\":\"true\"}}",
                "{\"javascript\":{\"advice\":[1]}}",
                "{\"javascript\":{\"interpreterStarted\":true}}",
                "{\"cell\":{\"advice\":[]}}",
                "{\"project\":{\"outcome\":\"PROJECT_OUTCOME_DONE\"}}",
                "{\"project\":{\"outcome\":1.0}}",
                "{\"project\":{\"steps\":[{\"command\":\"x\",\"durationMs\":\"soon\"}]}}",
                "{\"project\":{\"artifacts\":[{\"path\":\"x\",\"content\":\"@@@@\"}]}}",
                "{\"module\":{\"runs\":[{\"outputs\":[true]}]}}",
                "{\"module\":{\"width\":\"wide\"}}",
                "{\"javascript\":{},\"durationMs\":\"x\"}",
                "{\"javascript\":{},\"record\":5}",
        };
        for (size_t i = 0; i < ELEMENTSOF(results); i++) {
                const char *r = RESULT(results[i]);
                TEST_RESULT(REFUSED(r), "malformed result refused: %s (%s)", results[i], r);
        }
        static const char *const records[] = {
                "{}",
                "{\"version\":0}",
                "{\"version\":4}",
                "{\"version\":2,\"sequence\":-1}",
                "{\"version\":2,\"sequence\":\"18446744073709551616\"}",
                "{\"version\":2,\"startedUnixMs\":\"9223372036854775808\"}",
                "{\"version\":2,\"provider\":[]}",
                "{\"version\":2,\"signature\":\"x\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(records); i++) {
                const char *r = RECORD(records[i]);
                TEST_RESULT(REFUSED(r), "malformed record refused: %s (%s)", records[i], r);
        }
        CHECK(!REFUSED(RECORD("{\"version\":2,\"sequence\":\"18446744073709551615\"}")));
        /* An error message quotes hostile text on one line. */
        const char *r = REQUEST("{\"protocol\":3,\"evil\\nkey\\u001b[31m\":1}");
        CHECK(REFUSED(r) && strchr(r, '\n') == NULL && strchr(r, '\x1b') == NULL);
        hull_error e = {};
        char hex[REC_DIGEST_HEX_SIZE];
        CHECK_EQ_INT(rec_request_digest(NULL, hex, &e), -EINVAL);
        CHECK_EQ_INT(rec_result_digest(NULL, hex, NULL), -EINVAL);
}

static const char *rule_id(const char *text) {
        static char out[REC_RULE_ID_SIZE + 16];
        json_auto_t *j = text ? parse(text) : NULL;
        hull_error e = {};
        if (rec_software_rule_id(j, out, &e) < 0)
                snprintf(out, sizeof(out), "error");
        return out;
}

static void test_rule_id(void) {
        char want[REC_RULE_ID_SIZE], hex[REC_DIGEST_HEX_SIZE];
        CHECK_EQ_STR(rule_id(NULL), "");
        json_t *null = json_null();
        CHECK_EQ_INT(rec_software_rule_id(null, want, NULL), 0);
        CHECK_EQ_STR(want, "");
        CHECK_EQ_STR(rule_id("{}"), "");
        CHECK_EQ_STR(rule_id("{\"mode\":\"exact\",\"identities\":[\"oci:x\"]}"), "exact:oci:x");
        CHECK_EQ_STR(rule_id("{\"mode\":\"approved\",\"identities\":[\"oci:x\",\"oci:x\"]}"), "exact:oci:x");
        /* unique identities, sorted bytewise, joined by a zero byte */
        CHECK_EQ_INT(sha256_hex("B\0a\0b", 5, hex), 0);
        snprintf(want, sizeof(want), "approved:sha256:%s", hex);
        CHECK_EQ_STR(rule_id("{\"mode\":\"approved\",\"identities\":[\"b\",\"a\",\"B\",\"b\"]}"), want);
        CHECK_EQ_STR(rule_id("{\"identities\":[\"\"]}"), "error");
        CHECK_EQ_STR(rule_id("{\"identities\":[\"a\\u0000b\"]}"), "error");
        CHECK_EQ_STR(rule_id("{\"identities\":[1]}"), "error");
        CHECK_EQ_STR(rule_id("{\"mode\":\"exact\",\"identities\":[\"a\"],\"x\":1}"), "error");
        char big[64 * 40];
        size_t o = (size_t) snprintf(big, sizeof(big), "{\"identities\":[");
        for (int i = 0; i < 33; i++)
                o += (size_t) snprintf(big + o, sizeof(big) - o, "%s\"id%d\"", i ? "," : "", i);
        snprintf(big + o, sizeof(big) - o, "]}");
        CHECK_EQ_STR(rule_id(big), "error");
        char longid[400];
        memset(longid, 'x', sizeof(longid));
        memcpy(longid, "{\"identities\":[\"", 16);
        memcpy(longid + 16 + 257, "\"]}", 4);
        CHECK_EQ_STR(rule_id(longid), "error");
        longid[16 + 256] = '"';
        memcpy(longid + 16 + 257, "]}", 3);
        CHECK(strncmp(rule_id(longid), "exact:xxx", 9) == 0);
}

/* A record of a session chain with its recordSha256 filled in. */
static json_t *chain_record(int version, const char *session, uint64_t sequence, const char *previous,
                            const char *provider) {
        char hex[REC_DIGEST_HEX_SIZE];
        json_t *r = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "version", version, "requestSha256",
                              "17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f", "resultSha256",
                              version == 3 ? "" : "9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5",
                              "provider", provider, "isolation", "container", "session", session, "sequence",
                              (json_int_t) sequence, "previousSha256", previous);
        if (version == 3)
                json_object_set_new(r, "unanswered", json_string("unavailable"));
        if (rec_record_digest(r, hex, NULL) == 0)
                json_object_set_new(r, "recordSha256", json_string(hex));
        return r;
}

typedef struct chain_fixture {
        json_t *rec[8];
        size_t n;
} chain_fixture;

static void fixture_done(chain_fixture *f) {
        for (size_t i = 0; i < f->n; i++)
                json_decref(f->rec[i]);
        f->n = 0;
}

#define SESSION_A "5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720"
#define SESSION_B "a1bb2b3ff4f5e9f1c4a5d2a1ad90f1e5a8c4e0d03cc4c2b8a77d0b31f3f6e1d0"

/* Five chained calls of SESSION_A; the fourth is an unanswered call (version 3). */
static void fixture_chain(chain_fixture *f) {
        const char *previous = "";
        f->n = 0;
        for (uint64_t i = 1; i <= 5; i++) {
                f->rec[f->n] = chain_record(i == 4 ? 3 : 2, SESSION_A, i, previous, "hull");
                previous = json_string_value(json_object_get(f->rec[f->n], "recordSha256"));
                f->n++;
        }
}

static int verify(json_t *const *recs, size_t n, rec_chain *c, size_t *index, hull_error *e) {
        *e = (hull_error){};
        *index = SIZE_MAX;
        return rec_chain_verify((const json_t *const *) recs, n, c, index, e);
}

static void test_chain(void) {
        _cleanup_(fixture_done) chain_fixture f = {};
        rec_chain c;
        size_t index;
        hull_error e;
        char msg[HULL_ERROR_MSG_MAX];

        fixture_chain(&f);
        CHECK_EQ_INT(verify(f.rec, f.n, &c, &index, &e), 0);
        CHECK_EQ_INT(c.calls, 5);
        CHECK(!c.single);
        CHECK_EQ_STR(c.session, SESSION_A);
        CHECK_EQ_STR(c.last, json_string_value(json_object_get(f.rec[4], "recordSha256")));
        rec_chain_describe(&c, msg, sizeof(msg));
        CHECK_EQ_STR(msg, "the chain holds");

        /* a gap: call 3 removed */
        json_t *gap[] = {f.rec[0], f.rec[1], f.rec[3], f.rec[4]};
        CHECK_EQ_INT(verify(gap, 4, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 2);
        CHECK_EQ_INT(c.brk, REC_BREAK_GAP);
        CHECK(strstr(e.msg, "call 3 is missing") != NULL);
        /* a reorder: calls 3 and 4 swapped */
        json_t *swap[] = {f.rec[0], f.rec[1], f.rec[3], f.rec[2], f.rec[4]};
        CHECK_EQ_INT(verify(swap, 5, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 2);
        CHECK_EQ_INT(c.brk, REC_BREAK_ORDER);
        CHECK_EQ_INT(c.found_index, 3);
        CHECK(strstr(e.msg, "comes later, at line 4") != NULL);
        /* a repeat */
        json_t *rep[] = {f.rec[0], f.rec[1], f.rec[2], f.rec[2], f.rec[3]};
        CHECK_EQ_INT(verify(rep, 5, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 3);
        CHECK_EQ_INT(c.brk, REC_BREAK_REPEAT);
        /* the chain must start at call 1 */
        CHECK_EQ_INT(verify(f.rec + 1, 4, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 0);
        CHECK_EQ_INT(c.brk, REC_BREAK_GAP);
        /* a truncated tail is not visible in the chain alone */
        CHECK_EQ_INT(verify(f.rec, 3, &c, &index, &e), 0);

        /* a wrong previousSha256 with the record's digest recomputed */
        json_t *wrong = chain_record(2, SESSION_A, 3, SESSION_B, "hull");
        json_t *prev[] = {f.rec[0], f.rec[1], wrong, f.rec[3]};
        CHECK_EQ_INT(verify(prev, 4, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 2);
        CHECK_EQ_INT(c.brk, REC_BREAK_PREVIOUS);
        json_decref(wrong);
        /* call 1 naming a previous record */
        wrong = chain_record(2, SESSION_A, 1, SESSION_B, "hull");
        CHECK_EQ_INT(verify(&wrong, 1, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_PREVIOUS);
        json_decref(wrong);
        /* a call of another session in the middle */
        wrong = chain_record(2, SESSION_B, 3, json_string_value(json_object_get(f.rec[1], "recordSha256")), "hull");
        json_t *other[] = {f.rec[0], f.rec[1], wrong, f.rec[3]};
        CHECK_EQ_INT(verify(other, 4, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 2);
        CHECK_EQ_INT(c.brk, REC_BREAK_SESSION);
        CHECK(strstr(e.msg, "a1bb2b3ff4f5e9f1") != NULL);
        json_decref(wrong);
        /* a version 1 record among version 2/3 ones */
        wrong = chain_record(1, SESSION_A, 3, json_string_value(json_object_get(f.rec[1], "recordSha256")), "hull");
        json_t *mixed[] = {f.rec[0], f.rec[1], wrong};
        CHECK_EQ_INT(verify(mixed, 3, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_VERSION);
        json_decref(wrong);

        /* a tampered field: the record's digest no longer holds, the links still do */
        json_t *tampered = json_deep_copy(f.rec[1]);
        json_object_set_new(tampered, "isolation", json_string("vm"));
        json_t *tam[] = {f.rec[0], tampered, f.rec[2]};
        CHECK_EQ_INT(verify(tam, 3, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_NONE);
        CHECK(strstr(e.msg, "record digest mismatch") != NULL);
        json_decref(tampered);

        /* a malformed record breaks the chain where it stands */
        json_t *junk = json_string("junk");
        json_t *bad[] = {f.rec[0], junk, f.rec[1]};
        CHECK_EQ_INT(verify(bad, 3, &c, &index, &e), 1);
        CHECK_EQ_INT(index, 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_MALFORMED);
        json_decref(junk);
        wrong = chain_record(2, "not-a-fingerprint", 1, "", "hull");
        CHECK_EQ_INT(verify(&wrong, 1, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_MALFORMED);
        json_decref(wrong);
        wrong = chain_record(2, SESSION_A, 0, "", "hull");
        CHECK_EQ_INT(verify(&wrong, 1, &c, &index, &e), 1);
        json_decref(wrong);

        /* single runs: no session, sequence 0, no previous */
        json_t *singles[3];
        for (size_t i = 0; i < 3; i++)
                singles[i] = chain_record(2, "", 0, "", "hull");
        CHECK_EQ_INT(verify(singles, 3, &c, &index, &e), 0);
        CHECK(c.single);
        CHECK_EQ_INT(c.calls, 3);
        json_t *mix[] = {singles[0], f.rec[0]};
        CHECK_EQ_INT(verify(mix, 2, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_SESSION);
        json_t *mix2[] = {f.rec[0], singles[0]};
        CHECK_EQ_INT(verify(mix2, 2, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_SESSION);
        CHECK(strstr(e.msg, "a single run in the log of session") != NULL);
        wrong = chain_record(2, "", 1, "", "hull");
        CHECK_EQ_INT(verify(&wrong, 1, &c, &index, &e), 1);
        CHECK_EQ_INT(c.brk, REC_BREAK_MALFORMED);
        json_decref(wrong);
        for (size_t i = 0; i < 3; i++)
                json_decref(singles[i]);

        /* the streaming interface: an unreadable line breaks the chain */
        rec_chain_init(&c);
        CHECK_EQ_INT(rec_chain_push(&c, f.rec[0], NULL), 0);
        rec_chain_push_unreadable(&c);
        CHECK_EQ_INT(rec_chain_push(&c, f.rec[1], NULL), 0);
        CHECK_EQ_INT(rec_chain_finish(&c), REC_BREAK_MALFORMED);
        CHECK_EQ_INT(c.brk_index, 1);
        CHECK_EQ_STR(rec_break_to_string(REC_BREAK_ORDER), "records out of order");
}

/* ---- the audit log ---- */

#define EX_REQUEST "{\"protocol\":3,\"javascript\":{\"code\":\"console.log(6*7)\"}}"
#define EX_RESULT "{\"javascript\":{\"stdout\":\"NDIK\"}}"
#define EX_RECORD                                                                                                      \
        "{\"version\":2,\"requestSha256\":\"17d474652a5625b252078626a20a8d2d60e0507e98ea44a69c08febde9d7473f\","       \
        "\"resultSha256\":\"9a471e25396d4e0a2ef3124f138007aadce1a73d746dd4b99c38c50c0df2a7a5\","                       \
        "\"provider\":\"csandbox\",\"isolation\":\"process\",\"startedUnixMs\":\"1700000000000\","                     \
        "\"endedUnixMs\":\"1700000000005\",\"recordSha256\":"                                                          \
        "\"4c5c42dc09a31872e17e0b3f418f72d08b2d53a576ada8a7b1c6548ab977801f\"}"

/* Recompute every digest of an entry, as a careful forger would, so that a check can only fail
 * for the reason under test. */
static void reseal(json_t *entry) {
        char hex[REC_DIGEST_HEX_SIZE];
        json_t *rec = json_object_get(entry, "record");
        if (rec_request_digest(json_object_get(entry, "request"), hex, NULL) == 0)
                json_object_set_new(rec, "requestSha256", json_string(hex));
        if (json_object_get(entry, "result") && rec_result_digest(json_object_get(entry, "result"), hex, NULL) == 0)
                json_object_set_new(rec, "resultSha256", json_string(hex));
        if (rec_record_digest(rec, hex, NULL) == 0)
                json_object_set_new(rec, "recordSha256", json_string(hex));
}

static json_t *example_entry(void) {
        json_auto_t *rec = parse(EX_RECORD), *req = parse(EX_REQUEST), *res = parse(EX_RESULT);
        json_t *entry = NULL;
        CHECK_EQ_INT(rec_log_entry_new(NULL, rec, req, res, &entry, NULL), 0);
        return entry;
}

static const char *entry_check(const json_t *entry) {
        static char out[HULL_ERROR_MSG_MAX];
        hull_error e = {};
        int r = rec_entry_check(entry, &e);
        snprintf(out, sizeof(out), "%s", r == 0 ? "ok" : e.msg);
        return out;
}

static void test_entry_check(void) {
        json_auto_t *entry = example_entry();
        CHECK_EQ_STR(entry_check(entry), "ok");

        /* one changed output byte */
        json_t *t = json_deep_copy(entry);
        json_object_set_new(json_object_get(json_object_get(t, "result"), "javascript"), "stdout", json_string("NDMK"));
        CHECK(strncmp(entry_check(t), "result digest mismatch (tampered?)", 34) == 0);
        json_decref(t);
        /* changed code */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(json_object_get(t, "request"), "javascript"), "code",
                            json_string("console.log(7*7)"));
        CHECK(strncmp(entry_check(t), "request digest mismatch (tampered?)", 35) == 0);
        json_decref(t);
        /* every digest recomputed, but the result is of another kind */
        t = json_deep_copy(entry);
        json_object_set_new(t, "result", parse("{\"cell\":{\"stdout\":\"NDIK\"}}"));
        reseal(t);
        CHECK_EQ_STR(entry_check(t), "a cell result for a javascript request");
        json_decref(t);
        /* a version 1 record for a protocol 3 request */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "record"), "version", json_integer(1));
        reseal(t);
        CHECK(strstr(entry_check(t), "version 1 record for a protocol 3 request") != NULL);
        json_decref(t);
        /* a version 2 record naming an unanswered code its digest does not cover */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "record"), "unanswered", json_string("unknown"));
        CHECK(strstr(entry_check(t), "which its digest does not cover") != NULL);
        json_decref(t);
        /* the record's tier below the request's floor */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "request"), "minimumIsolation", json_string("container"));
        reseal(t);
        CHECK_EQ_STR(entry_check(t), "the record's isolation 'process' is below the request's floor 'container'");
        json_object_set_new(json_object_get(t, "record"), "isolation", json_string("kernel"));
        reseal(t);
        CHECK_EQ_STR(entry_check(t), "ok");
        json_object_set_new(json_object_get(t, "request"), "minimumIsolation", json_string("none"));
        reseal(t);
        CHECK(strstr(entry_check(t), "is not a floor a daemon accepts") != NULL);
        json_decref(t);
        /* the software rule: the rule ID and the selected identity must match the request */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "request"), "softwareRule",
                            parse("{\"mode\":\"exact\",\"identities\":[\"oci:a\"]}"));
        reseal(t);
        CHECK(strstr(entry_check(t), "is not the request's rule") != NULL);
        json_object_set_new(json_object_get(t, "record"), "softwareRuleId", json_string("exact:oci:a"));
        reseal(t);
        CHECK(strstr(entry_check(t), "is not in the request's software rule") != NULL);
        json_object_set_new(json_object_get(t, "record"), "softwareIdentity", json_string("oci:a"));
        reseal(t);
        CHECK_EQ_STR(entry_check(t), "ok");
        json_decref(t);
        /* a RunResponse envelope must agree with the record */
        t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "result"), "sandbox", json_string("other"));
        CHECK_EQ_STR(entry_check(t), "the response's sandbox differs from the record's provider");
        json_object_set_new(json_object_get(t, "result"), "sandbox", json_string("csandbox"));
        json_object_set_new(json_object_get(t, "result"), "isolation", json_string("process"));
        json_object_set(json_object_get(t, "result"), "record", json_object_get(t, "record"));
        CHECK_EQ_STR(entry_check(t), "ok");
        json_decref(t);

        /* version 3: an unanswered session call, no result */
        t = json_deep_copy(entry);
        json_t *rec = json_object_get(t, "record");
        json_object_del(t, "result");
        json_object_set_new(rec, "version", json_integer(3));
        json_object_set_new(rec, "resultSha256", json_string(""));
        json_object_set_new(rec, "unanswered", json_string("deadline_exceeded"));
        json_object_set_new(rec, "session", json_string(SESSION_A));
        json_object_set_new(rec, "sequence", json_string("1"));
        reseal(t);
        CHECK_EQ_STR(entry_check(t), "ok");
        json_object_set_new(rec, "unanswered", json_string("it broke"));
        reseal(t);
        CHECK(strstr(entry_check(t), "is not a Connect error code") != NULL);
        json_object_set_new(rec, "unanswered", json_string("unknown"));
        json_object_set_new(rec, "session", json_string(""));
        json_object_set_new(rec, "sequence", json_integer(0));
        reseal(t);
        CHECK(strstr(entry_check(t), "outside a session") != NULL);
        json_object_set_new(rec, "session", json_string(SESSION_A));
        json_object_set_new(t, "result", parse(EX_RESULT));
        reseal(t);
        CHECK(strstr(entry_check(t), "with a result") != NULL);
        json_decref(t);
        /* a version 2 record without a result */
        t = json_deep_copy(entry);
        json_object_del(t, "result");
        CHECK(strstr(entry_check(t), "without a result") != NULL);
        json_decref(t);
        /* malformed entries */
        t = parse("{\"record\":{},\"request\":{},\"extra\":1}");
        CHECK(strstr(entry_check(t), "unknown field 'extra'") != NULL);
        json_decref(t);
        t = parse("{\"record\":{\"version\":2}}");
        CHECK(strstr(entry_check(t), "no request") != NULL);
        json_decref(t);
}

/* hull's read-only kinds: digests of a given operation's request or result. */
static const char *hull_digest(bool request, const char *op, const char *text) {
        static char outs[2][HULL_ERROR_MSG_MAX + 8];
        static unsigned which;
        char *out = outs[which++ % 2];
        json_auto_t *j = parse(text);
        hull_error e = {};
        char hex[REC_DIGEST_HEX_SIZE];
        if (!j)
                return "bad test JSON";
        int r = request ? rec_hull_request_digest(op, j, hex, &e) : rec_hull_result_digest(op, j, hex, &e);
        snprintf(out, sizeof(outs[0]), "%s%s", r < 0 ? "error: " : "", r < 0 ? e.msg : hex);
        return out;
}
#define HREQ(op, text) hull_digest(true, op, text)
#define HRES(op, text) hull_digest(false, op, text)

/* The vectors were computed by tests/integration/plimsoll_record.py (independent of this code);
 * the first two are docs/API.md's example. */
static void test_read_only_kinds(void) {
        CHECK(rec_hull_operation_is_read_only("read") && rec_hull_operation_is_read_only("query_handle"));
        CHECK(!rec_hull_operation_is_read_only("exec") && !rec_hull_operation_is_read_only("write") &&
              !rec_hull_operation_is_read_only("bash") && !rec_hull_operation_is_read_only(""));
        CHECK(rec_hull_operation_is_valid("grep") && rec_hull_operation_is_valid("inspect_handle"));

        CHECK_EQ_STR(HREQ("read", "{\"file_path\":\"a.txt\"}"),
                     "c6ba0efb62b611f59fab08ba68189b2dc60bbcbab21248c266de32d5baf9052e");
        CHECK_EQ_STR(HRES("read", "{\"text\":\"     1\\thello\\n\",\"isError\":false,\"handles\":[]}"),
                     "318b3386bcf1a730a3f591f4e75e782f29ccb12525ac3f757c9cc5b40393ccc1");
        /* a result's zero values may be left out, and is_error spelled so */
        CHECK_EQ_STR(HRES("read", "{\"text\":\"     1\\thello\\n\",\"is_error\":false}"),
                     "318b3386bcf1a730a3f591f4e75e782f29ccb12525ac3f757c9cc5b40393ccc1");
        /* an argument left out, or null, is not hashed; given as 0 it is */
        CHECK_EQ_STR(HREQ("read", "{\"file_path\":\"a.txt\",\"offset\":null}"),
                     "c6ba0efb62b611f59fab08ba68189b2dc60bbcbab21248c266de32d5baf9052e");
        CHECK_EQ_STR(HREQ("read", "{\"file_path\":\"a.txt\",\"offset\":0}"),
                     "7ae56a136faa30f90d300493eaf3d4939f6f9157360441395b80f0bc36dd4334");
        /* the table's order, whatever the object's; an integer as 5, 5.0 or "5" */
        static const char *const greps[] = {
                "{\"pattern\":\"x+\",\"path\":\"src\",\"glob\":\"*.py\",\"-i\":true,\"output_mode\":\"content\","
                "\"head_limit\":5}",
                "{\"head_limit\":5.0,\"output_mode\":\"content\",\"-i\":true,\"glob\":\"*.py\",\"path\":\"src\","
                "\"pattern\":\"x+\"}",
                "{\"pattern\":\"x+\",\"path\":\"src\",\"glob\":\"*.py\",\"-i\":true,\"output_mode\":\"content\","
                "\"head_limit\":\"5\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(greps); i++)
                CHECK_EQ_STR(HREQ("grep", greps[i]),
                             "fdccb3045d5b1c6b07f7b528a7d23a4c7ee9cd0c898daa8dbbd8ace93a811813");
        CHECK_EQ_STR(HREQ("inspect_handle", "{\"handle_id\":\"sales\",\"rows\":0,\"stats\":true}"),
                     "17994bcfc714ac64c993f3ef71a3d05e91861fb04bdd146c7225dd650c09a5a1");
        CHECK_EQ_STR(HREQ("query_handle", "{\"sql\":\"SELECT 1 -- \\u0000 \\u00e9\",\"max_rows\":10}"),
                     "01612f5715f98027c2f392e736282bec605c86405ca14311a3b3f5dd0c573160");
        CHECK_EQ_STR(HREQ("glob", "{\"pattern\":\"**/*.csv\"}"),
                     "c2c5893bd4c9cd6b4d1f404e134506a6a93267670989b072ac88b7bbe577232f");
        CHECK_EQ_STR(HRES("query_handle", "{\"text\":\"kept as h2\",\"isError\":false,\"handles\":[\"h2\"]}"),
                     "32ba8aa108cc32a22e12857abad10118b4423a8dd68aad32e3a67de663e930a5");
        CHECK_EQ_STR(HRES("glob", "{\"text\":\"glob: bad\",\"isError\":true,\"handles\":[]}"),
                     "22c86f80ab32adf2e388ee5daf74f1a293329380eefde6bef2c02a8d6d9c9528");
        /* the same messages under another kind hash apart */
        CHECK(strcmp(HRES("grep", "{\"text\":\"glob: bad\",\"isError\":true,\"handles\":[]}"),
                     "22c86f80ab32adf2e388ee5daf74f1a293329380eefde6bef2c02a8d6d9c9528") != 0);

        /* refused, each with a reason */
        CHECK(strstr(HREQ("read", "{\"file_path\":\"a\",\"mode\":1}"), "the read request has an unknown field 'mode'"));
        CHECK(strstr(HREQ("read", "{\"filePath\":\"a\"}"), "unknown field 'filePath'"));
        CHECK(strstr(HREQ("read", "{\"file_path\":5}"), "request.file_path is not a string"));
        CHECK(strstr(HREQ("read", "{\"file_path\":\"a\",\"offset\":1.5}"), "request.offset is not an integer"));
        CHECK(strstr(HREQ("read", "{\"file_path\":\"a\",\"limit\":true}"), "request.limit is not an integer"));
        CHECK(strstr(HREQ("inspect_handle", "{\"handle_id\":\"a\",\"stats\":\"yes\"}"),
                     "request.stats is not true or false"));
        CHECK(strstr(HREQ("grep", "[]"), "the grep request is not a JSON object"));
        CHECK(strstr(HRES("read", "{\"text\":\"a\",\"handles\":[1]}"), "not a string"));
        CHECK(strstr(HRES("read", "{\"text\":7}"), "result.text is not a string"));
        CHECK(strstr(HRES("glob", "{\"text\":\"a\",\"structuredContent\":{}}"), "unknown field"));
}

/* A read-only kind's log entry: checked by hull's rules, a changed byte named. */
static void test_read_only_entry(void) {
        char req_sha[REC_DIGEST_HEX_SIZE], res_sha[REC_DIGEST_HEX_SIZE], sha[REC_DIGEST_HEX_SIZE];
        json_auto_t *req = parse("{\"pattern\":\"*.csv\",\"path\":\"data\"}");
        json_auto_t *res = parse("{\"text\":\"/workspace/data/a.csv\\n\",\"isError\":false,\"handles\":[]}");
        hull_error e = {};
        CHECK(rec_hull_request_digest("glob", req, req_sha, &e) == 0);
        CHECK(rec_hull_result_digest("glob", res, res_sha, &e) == 0);
        rec_record v = {.version = 2,
                        .request_sha256 = req_sha,
                        .result_sha256 = res_sha,
                        .provider = "hull",
                        .isolation = "container",
                        .environment = "",
                        .policy = "",
                        .started_unix_ms = 1790000000000,
                        .ended_unix_ms = 1790000000004,
                        .session = SESSION_A,
                        .sequence = 1,
                        .previous_sha256 = "",
                        .record_sha256 = "",
                        .software_identity = "",
                        .software_rule_id = "",
                        .unanswered = ""};
        json_auto_t *rec = NULL;
        CHECK(rec_record_new(&v, &rec, sha, &e) == 0);
        json_auto_t *entry = NULL;
        CHECK(rec_log_entry_new("glob", rec, req, res, &entry, &e) == 0);
        CHECK_EQ_STR(entry_check(entry), "ok");

        json_t *t = json_deep_copy(entry);
        json_object_set_new(json_object_get(t, "result"), "text", json_string("/workspace/data/b.csv\n"));
        CHECK(strstr(entry_check(t), "result digest mismatch (tampered?)") &&
              strstr(entry_check(t), "the glob result gives"));
        json_decref(t);
        t = json_deep_copy(entry);
        json_object_del(json_object_get(t, "request"), "path");
        CHECK(strstr(entry_check(t), "request digest mismatch (tampered?)") &&
              strstr(entry_check(t), "the glob request gives"));
        json_decref(t);
        /* read as another read-only kind, its request does not even parse */
        t = json_deep_copy(entry);
        json_object_set_new(t, "operation", json_string("read"));
        CHECK(strstr(entry_check(t), "the read request has an unknown field 'pattern'"));
        json_decref(t);
        /* a cancelled call: version 3, "canceled", no result */
        v.version = 3;
        v.result_sha256 = "";
        v.unanswered = "canceled";
        json_decref(rec);
        rec = NULL;
        CHECK(rec_record_new(&v, &rec, sha, &e) == 0);
        t = NULL;
        CHECK(rec_log_entry_new("glob", rec, req, NULL, &t, &e) == 0);
        CHECK_EQ_STR(entry_check(t), "ok");
        json_object_set(t, "result", res);
        CHECK(strstr(entry_check(t), "with a result"));
        json_decref(t);
}

static const char *parse_line(const char *line) {
        static char out[HULL_ERROR_MSG_MAX];
        json_t *j = NULL;
        hull_error e = {};
        int r = rec_log_parse_line(line, strlen(line), &j, &e);
        snprintf(out, sizeof(out), "%s", r == 0 ? "ok" : e.msg);
        json_decref(j);
        return out;
}

static void test_log(void) {
        char dir[] = "/tmp/test-sbx-record.XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(dfd >= 0);

        json_auto_t *req = parse("{\"protocol\":3,\"sessionId\":\"00112233445566778899aabbccddeeff\",\"traceId\":\"t\","
                                 "\"cell\":{\"language\":\"python\",\"code\":\"x = '\\u0000\\u00e9'\"}}");
        json_auto_t *res = parse("{\"cell\":{\"stdout\":\"AP8=\",\"interpreterStarted\":true}}");
        json_auto_t *rec = NULL, *entry = NULL;
        char hex[REC_DIGEST_HEX_SIZE], fp[REC_DIGEST_HEX_SIZE], req_hex[REC_DIGEST_HEX_SIZE],
                res_hex[REC_DIGEST_HEX_SIZE];
        hull_error e = {};
        CHECK_EQ_INT(rec_fingerprint("00112233445566778899aabbccddeeff", 32, fp), 0);
        CHECK_EQ_INT(rec_request_digest(req, req_hex, NULL), 0);
        CHECK_EQ_INT(rec_result_digest(res, res_hex, NULL), 0);
        rec = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "version", 2, "requestSha256", req_hex,
                        "resultSha256", res_hex, "provider", "hull", "isolation", "container", "session", fp,
                        "sequence", "1", "previousSha256", "");
        CHECK_EQ_INT(rec_record_digest(rec, hex, NULL), 0);
        json_object_set_new(rec, "recordSha256", json_string(hex));

        CHECK_EQ_INT(rec_log_entry_new(NULL, rec, req, res, &entry, &e), 0);
        CHECK(json_object_get(json_object_get(entry, "request"), "sessionId") == NULL); /* never recorded */
        CHECK(json_object_get(req, "sessionId") != NULL);                               /* the caller's copy kept */
        CHECK_EQ_STR(entry_check(entry), "ok");
        CHECK_EQ_INT(rec_log_append(dfd, "records.jsonl", entry, 0, &e), 0);
        CHECK_EQ_INT(rec_log_append(dfd, "records.jsonl", entry, REC_LOG_SYNC, &e), 0);

        /* Two lines, each one compact JSON object that parses back to an entry that checks. */
        char buf[8192];
        _cleanup_close_ int fd = openat(dfd, "records.jsonl", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        CHECK(n > 0);
        struct stat st;
        CHECK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
        buf[n > 0 ? n : 0] = '\0';
        char *nl = strchr(buf, '\n');
        CHECK(nl != NULL && nl[1] != '\0' && strchr(nl + 1, '\n') == buf + n - 1);
        if (nl) {
                json_auto_t *back = NULL;
                CHECK_EQ_INT(rec_log_parse_line(buf, (size_t) (nl - buf), &back, &e), 0);
                CHECK(back && json_equal(back, entry));
                CHECK_EQ_STR(entry_check(back), "ok");
                CHECK(strstr(buf, "\\u0000") != NULL); /* NUL bytes escaped, everything ASCII */
                for (char *p = buf; p < nl; p++)
                        if ((unsigned char) *p >= 0x80)
                                CHECK(false);
        }

        /* Refused: an entry holding the session ID, no request, a link for a log. */
        json_auto_t *leaky = json_deep_copy(entry);
        json_object_set_new(json_object_get(leaky, "request"), "session_id",
                            json_string("00112233445566778899aabbccddeeff"));
        CHECK_EQ_INT(rec_log_append(dfd, "records.jsonl", leaky, 0, &e), -EINVAL);
        json_auto_t *norequest = parse("{\"record\":{}}");
        CHECK_EQ_INT(rec_log_append(dfd, "records.jsonl", norequest, 0, &e), -EINVAL);
        CHECK(symlinkat("records.jsonl", dfd, "link.jsonl") == 0);
        CHECK_EQ_INT(rec_log_append(dfd, "link.jsonl", entry, 0, &e), -ELOOP);
        CHECK(strstr(e.msg, "link.jsonl") != NULL);
        CHECK_EQ_INT(rec_log_entry_new(NULL, rec, NULL, res, &leaky, &e), -EINVAL);

        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, dir), 0);

        /* Parsing a line: strict JSON, bounded depth, the entry's shape. */
        CHECK_EQ_STR(parse_line("{\"record\":{},\"request\":{}}"), "ok");
        CHECK_EQ_STR(parse_line("{\"record\":{},\"request\":{},\"result\":null}"), "ok");
        CHECK_EQ_STR(parse_line("{\"record\":{},\"request\":{\"code\":\"a\\u0000b\"}}"), "ok");
        CHECK(strstr(parse_line("{\"record\":{},\"record\":{},\"request\":{}}"), "not valid JSON") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{}} x"), "not valid JSON") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{\"a\":\"\\ud800\"}}"), "not valid JSON") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{\"a\":\"\xff\"}}"), "not valid JSON") != NULL);
        CHECK(strstr(parse_line(""), "not valid JSON") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{\"co\\u0000de\":1}}"), "not valid JSON") != NULL);
        CHECK(strstr(parse_line("[]"), "not a JSON object") != NULL);
        CHECK(strstr(parse_line("{\"record\":[],\"request\":{}}"), "no record") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{},\"result\":5}"), "result is not an object") != NULL);
        CHECK(strstr(parse_line("{\"record\":{},\"request\":{},\"x\":1}"), "unknown field") != NULL);
        char deep[18];
        memset(deep, '[', 17);
        deep[17] = '\0';
        CHECK(strstr(parse_line(deep), "nests deeper than 16") != NULL);
}

/* Values are counted before any parser sees them (review 1.3 and 2.3: a 60 MiB line of {},{},...
 * cost 4.8 GB in the parser). */
static void test_prescan(void) {
        size_t n = (size_t) REC_LOG_LINE_VALUES_MAX * 3 + 64, len = 0;
        _cleanup_free_ char *line = malloc(n);
        CHECK(line != NULL);
        if (!line)
                return;
        len += (size_t) snprintf(line, n, "{\"record\":{},\"request\":{\"x\":[");
        while (len + 8 < n)
                len += (size_t) snprintf(line + len, n - len, "{},");
        len += (size_t) snprintf(line + len, n - len, "{}]}}");
        json_t *j = NULL;
        hull_error e = {};
        CHECK_EQ_INT(rec_log_parse_line(line, len, &j, &e), -E2BIG);
        CHECK(j == NULL && strstr(e.msg, "JSON values") != NULL);
}

/* Lines in dir/name, -1 when it cannot be read. */
static int log_lines(int dfd, const char *name) {
        char buf[16384];
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
        if (n < 0)
                return -1;
        int lines = 0;
        for (ssize_t i = 0; i < n; i++)
                lines += buf[i] == '\n';
        return lines;
}

/* A session's log kept open: the same fd while the name names its file; removed, replaced or
 * made a link, it is opened anew (with every check), as an open per append would. */
static void test_log_kept(void) {
        char dir[] = "/tmp/test-sbx-record-kept.XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        json_auto_t *entry = example_entry();
        hull_error e = {};
        rec_log_file f = REC_LOG_FILE_INIT;
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, 0, &e), 0);
        CHECK(f.fd >= 0);
        /* a mark on this fd: a reopen would come back with FD_CLOEXEC set */
        CHECK(fcntl(f.fd, F_SETFD, 0) == 0);
        int kept = f.fd;
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, 0, &e), 0);
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, REC_LOG_SYNC, &e), 0);
        CHECK(f.fd == kept && fcntl(f.fd, F_GETFD) == 0);
        CHECK_EQ_INT(log_lines(dfd, "s.jsonl"), 3);
        /* removed: made anew, holding the next line */
        CHECK(unlinkat(dfd, "s.jsonl", 0) == 0);
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, 0, &e), 0);
        CHECK_EQ_INT(log_lines(dfd, "s.jsonl"), 1);
        CHECK(fcntl(f.fd, F_GETFD) == FD_CLOEXEC);
        /* moved away and replaced: the next line goes to the file the name names */
        CHECK(renameat(dfd, "s.jsonl", dfd, "old.jsonl") == 0);
        _cleanup_close_ int nfd = openat(dfd, "s.jsonl", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(nfd >= 0);
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, 0, &e), 0);
        CHECK_EQ_INT(log_lines(dfd, "s.jsonl"), 1);
        CHECK_EQ_INT(log_lines(dfd, "old.jsonl"), 1);
        /* a link put in its place: refused, nothing kept */
        CHECK(unlinkat(dfd, "s.jsonl", 0) == 0);
        CHECK(symlinkat("old.jsonl", dfd, "s.jsonl") == 0);
        CHECK_EQ_INT(rec_log_append_kept(dfd, "s.jsonl", &f, entry, 0, &e), -ELOOP);
        CHECK(f.fd == -1);
        CHECK_EQ_INT(log_lines(dfd, "old.jsonl"), 1);
        rec_log_file_done(&f);
        CHECK_EQ_INT(rm_rf_at(AT_FDCWD, dir), 0);
}

/* The digest from a record's fields is the one of its JSON read back (record_parse), for every
 * version and the fields a version leaves out. */
static void test_fields_digest(void) {
        for (uint32_t version = 1; version <= 3; version++)
                for (int k = 0; k < 2; k++) {
                        rec_record v = {
                                .version = version,
                                .request_sha256 = "aa",
                                .result_sha256 = k ? "" : "bb",
                                .provider = "hull",
                                .isolation = "container",
                                .environment = k ? "caf\u00e9 \"env\"" : "",
                                .policy = k ? "p" : "",
                                .started_unix_ms = k ? UINT64_MAX - 5 : 1700000000000ULL,
                                .ended_unix_ms = k ? 0 : 1700000000123ULL,
                                .session = k ? "" : "f00d",
                                .sequence = k ? UINT64_MAX : 7,
                                .previous_sha256 = k ? "" : "cc",
                                .record_sha256 = "",
                                .software_identity = k ? "id" : "",
                                .software_rule_id = k ? "" : "rule",
                                .unanswered = version == 3 ? "canceled" : "",
                        };
                        char a[REC_DIGEST_HEX_SIZE], b[REC_DIGEST_HEX_SIZE], c[REC_DIGEST_HEX_SIZE];
                        json_auto_t *rec = NULL;
                        CHECK_EQ_INT(rec_record_new(&v, &rec, a, NULL), 0);
                        CHECK_EQ_INT(rec_record_digest(rec, b, NULL), 0);
                        CHECK_EQ_INT(rec_record_fields_digest(&v, c, NULL), 0);
                        TEST_RESULT(strcmp(a, b) == 0 && strcmp(b, c) == 0,
                                    "version %u case %d: fields digest %s, "
                                    "JSON digest %s",
                                    version, k, c, b);
                }
        rec_record bad = {.version = 4};
        char d[REC_DIGEST_HEX_SIZE];
        CHECK_EQ_INT(rec_record_fields_digest(&bad, d, NULL), -EINVAL);
}

int main(void) {
        test_prescan();
        test_golden();
        test_reference_vectors();
        test_encoder();
        test_spellings();
        test_malformed();
        test_rule_id();
        test_chain();
        test_entry_check();
        test_read_only_kinds();
        test_read_only_entry();
        test_log();
        test_log_kept();
        test_fields_digest();
        return test_done();
}
