/* fuzz-record.c: run records from arbitrary bytes: the log-line parser, the entry check, the
 * three digests and the chain must answer every input with a result or an error, never a crash,
 * a leak or an unterminated message. The input is read as one log line and, separately, as any
 * JSON value handed straight to each digest. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "sbx-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const hull_error *e) {
        if (memchr(e->msg, '\0', sizeof(e->msg)) == NULL)
                abort();
        for (const char *p = e->msg; *p; p++)
                if (*p == '\n')
                        abort(); /* every problem must stay one line */
}

static void digests(const json_t *j) {
        char hex[REC_DIGEST_HEX_SIZE], rule[REC_RULE_ID_SIZE];
        hull_error e = {};
        if (rec_request_digest(j, hex, &e) == 0 && strlen(hex) != 64)
                abort();
        check_message(&e);
        if (rec_result_digest(j, hex, &e) == 0 && strlen(hex) != 64)
                abort();
        check_message(&e);
        if (rec_record_digest(j, hex, &e) == 0 && strlen(hex) != 64)
                abort();
        check_message(&e);
        (void) rec_software_rule_id(j, rule, &e);
        check_message(&e);
        static const char *const read_only[] = {"read", "glob", "grep", "inspect_handle", "query_handle"};
        for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++) {
                if (rec_hull_request_digest(read_only[i], j, hex, &e) == 0 && strlen(hex) != 64)
                        abort();
                check_message(&e);
                if (rec_hull_result_digest(read_only[i], j, hex, &e) == 0 && strlen(hex) != 64)
                        abort();
                check_message(&e);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;
        json_t *entry = NULL;
        hull_error e = {};
        (void) json_depth_ok(s, size, REC_JSON_DEPTH_MAX);

        rec_chain chain;
        rec_chain_init(&chain);
        if (rec_log_parse_line(s, size, &entry, &e) == 0) {
                (void) rec_entry_check(entry, &e);
                check_message(&e);
                const json_t *record = json_object_get(entry, "record");
                (void) rec_chain_push(&chain, record, &e);
                (void) rec_chain_push(&chain, record, &e); /* the same call twice: a repeat */
                check_message(&e);
                digests(json_object_get(entry, "request"));
                digests(json_object_get(entry, "result"));
                digests(record);
                json_decref(entry);
        } else {
                check_message(&e);
                rec_chain_push_unreadable(&chain);
        }
        char msg[HULL_ERROR_MSG_MAX];
        rec_chain_finish(&chain);
        rec_chain_describe(&chain, msg, sizeof(msg));

        if (json_depth_ok(s, size, 64)) {
                json_t *j = json_loadb(s, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
                if (j) {
                        digests(j);
                        json_decref(j);
                }
        }
        return 0;
}
