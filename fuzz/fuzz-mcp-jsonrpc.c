/* fuzz-mcp-jsonrpc.c: MCP's JSON-RPC framing and messages. The lines framed must be the same
 * whether the bytes come in one piece, split at any one position, or a byte at a time; no line is
 * over the bound or empty; every line that parses as a message writes back as one line that
 * parses again as the same kind with the same id and method. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "mcp-jsonrpc.h"

#define LINE_MAX_FUZZ 4096U

static void check_message(const char *line, size_t len) {
        mcp_msg m = {0}, again = {0};
        if (mcp_msg_parse(line, len, &m, NULL) < 0)
                return;
        dynbuf out;
        dynbuf_init(&out, SIZE_MAX / 4);
        if (mcp_msg_write(m.root, &out) < 0 || out.len == 0 || out.buf[out.len - 1] != '\n' ||
            memchr(out.buf, '\n', out.len - 1))
                abort();
        if (mcp_msg_parse(out.buf, out.len - 1, &again, NULL) < 0 || again.kind != m.kind ||
            (m.id && !mcp_id_equal(m.id, again.id)) || (!m.id && again.id) ||
            (m.method && strcmp(m.method, again.method) != 0))
                abort();
        mcp_msg_done(&again);
        /* The builders make messages that parse as what they are. */
        json_t *b = NULL;
        switch (m.kind) {
        case MCP_MSG_REQUEST:
                b = mcp_request_new(m.id, m.method, json_incref(m.params));
                break;
        case MCP_MSG_NOTIFICATION:
                b = mcp_notification_new(m.method, json_incref(m.params));
                break;
        case MCP_MSG_RESULT:
                b = mcp_result_new(m.id, json_incref(m.result));
                break;
        case MCP_MSG_ERROR:
                b = mcp_error_new(m.id, m.error_code, m.error_msg, json_incref(m.error_data));
                break;
        }
        dynbuf_reset(&out);
        if (!b || mcp_msg_write(b, &out) < 0 || mcp_msg_parse(out.buf, out.len - 1, &again, NULL) < 0 ||
            again.kind != m.kind || (m.id && !mcp_id_equal(m.id, again.id)))
                abort();
        json_decref(b);
        mcp_msg_done(&again);
        dynbuf_free(&out);
        mcp_msg_done(&m);
}

static int on_line(void *ud, const char *line, size_t len) {
        dynbuf *log = ud;
        if (len == 0 || len > LINE_MAX_FUZZ || line[len] != '\0' || memchr(line, '\n', len))
                abort();
        check_message(line, len);
        if (dynbuf_addf(log, "%zu:", len) < 0 || dynbuf_add(log, line, len) < 0)
                abort();
        return 0;
}

/* The lines of data fed in the pieces that cuts (sorted offsets) make, and the end. */
static char *run(const uint8_t *data, size_t size, const size_t *cuts, size_t n_cuts, int *ret_end) {
        mcp_framer f;
        dynbuf log;
        size_t at = 0;
        int r = 0;
        dynbuf_init(&log, SIZE_MAX / 4);
        mcp_framer_init(&f, LINE_MAX_FUZZ);
        for (size_t i = 0; i <= n_cuts && r == 0; i++) {
                size_t to = i < n_cuts ? cuts[i] : size;
                r = mcp_framer_feed(&f, data + at, to - at, on_line, &log);
                at = to;
        }
        *ret_end = r == 0 ? mcp_framer_finish(&f) : r;
        mcp_framer_done(&f);
        char *s = dynbuf_take(&log, NULL);
        if (!s)
                abort();
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int end, e;
        /* Each piece of the input is also one message on its own (an HTTP body). */
        check_message((const char *) data, size);
        char *whole = run(data, size, NULL, 0, &end);
        size_t step = size <= 1024 ? 1 : size / 64;
        for (size_t cut = 1; cut < size; cut += step) {
                char *split = run(data, size, &cut, 1, &e);
                if (e != end || strcmp(split, whole) != 0)
                        abort();
                free(split);
        }
        if (size <= 16384) {
                size_t *cuts = malloc((size ? size : 1) * sizeof(*cuts));
                if (!cuts)
                        abort();
                for (size_t i = 0; i + 1 < size; i++)
                        cuts[i] = i + 1;
                char *bytes = run(data, size, cuts, size ? size - 1 : 0, &e);
                if (e != end || strcmp(bytes, whole) != 0)
                        abort();
                free(bytes);
                free(cuts);
        }
        free(whole);
        return 0;
}
