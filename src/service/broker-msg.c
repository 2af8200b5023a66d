/* broker-msg.c: encoding and decoding of the broker's run request and result. Every integer is
 * little-endian; a string or blob is a u32 length and its bytes. A message starts with a magic
 * and a version so a stray write is refused, never misread. */
#include "broker-msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "macro.h"
#include "sbx.h"
#include "sbx-net.h"

#define REQUEST_MAGIC 0x51524248U /* "HBRQ" */
#define RESULT_MAGIC 0x53524248U  /* "HBRS" */
#define MSG_VERSION 2U

/* ---- writer: a first pass with p == NULL only counts, the second fills ---- */

typedef struct writer {
        char *p;
        size_t len;
} writer;

static void put(writer *w, const void *data, size_t n) {
        if (w->p && n)
                memcpy(w->p + w->len, data, n);
        w->len += n;
}

static void put_u32(writer *w, uint32_t v) {
        unsigned char b[4] = {(unsigned char) v, (unsigned char) (v >> 8), (unsigned char) (v >> 16),
                              (unsigned char) (v >> 24)};
        put(w, b, sizeof(b));
}

static void put_u64(writer *w, uint64_t v) {
        put_u32(w, (uint32_t) v);
        put_u32(w, (uint32_t) (v >> 32));
}

static void put_blob(writer *w, const char *data, size_t n) {
        put_u32(w, (uint32_t) n);
        put(w, data, n);
}

static void put_str(writer *w, const char *s) {
        put_blob(w, s, s ? strlen(s) : 0);
}

/* Run fill() twice: to size, then to write into one allocation of at most max bytes. */
static int encode(void (*fill)(writer *, const void *), const void *msg, size_t max, char **ret, size_t *ret_len) {
        writer w = {0};
        fill(&w, msg);
        if (w.len > max)
                return -ENOMEM;
        char *buf = malloc(w.len ? w.len : 1);
        if (!buf)
                return -ENOMEM;
        size_t want = w.len;
        w = (writer){.p = buf};
        fill(&w, msg);
        if (w.len != want) {
                free(buf);
                return -EINVAL;
        }
        *ret = buf;
        *ret_len = w.len;
        return 0;
}

static bool blob_fits(size_t n) {
        return n <= UINT32_MAX;
}

static int request_check(const sbx_plan *r) {
        if (r->n_steps == 0 || r->n_steps > BRK_STEPS_MAX || r->n_files > BRK_FILES_MAX ||
            r->n_artifacts > BRK_ARTIFACTS_MAX || r->timeout_ms == 0)
                return -EINVAL;
        for (uint32_t i = 0; i < r->n_files; i++)
                if (!sbx_plan_path_is_clean(r->files[i].path, strlen(r->files[i].path)) || !blob_fits(r->files[i].len))
                        return -EINVAL;
        for (uint32_t i = 0; i < r->n_steps; i++)
                if (r->steps[i].argc == 0 || r->steps[i].argc > BRK_ARGS_MAX)
                        return -EINVAL;
        for (uint32_t i = 0; i < r->n_artifacts; i++)
                if (!sbx_plan_path_is_clean(r->artifacts[i], strlen(r->artifacts[i])))
                        return -EINVAL;
        if (r->net >= _SBX_NET_MODE_MAX || r->n_net_hosts > SBX_NET_ALLOW_MAX ||
            (r->flags & ~(uint32_t) SBX_PLAN_FLAGS_ALL) ||
            (r->tier != SBX_TIER_CONTAINER && r->tier != SBX_TIER_KERNEL) ||
            (r->layer_dir && strlen(r->layer_dir) >= SBX_PATH_MAX) ||
            strnlen(r->kernel_platform, sizeof(r->kernel_platform)) >= sizeof(r->kernel_platform))
                return -EINVAL;
        for (uint32_t i = 0; i < r->n_net_hosts; i++)
                if (strlen(r->net_hosts[i]) > EGRESS_HOST_MAX)
                        return -EINVAL;
        return 0;
}

static void request_fill(writer *w, const void *msg) {
        const sbx_plan *r = msg;
        put_u32(w, REQUEST_MAGIC);
        put_u32(w, MSG_VERSION);
        put_u64(w, r->timeout_ms);
        put_u64(w, r->memory_bytes);
        put_u64(w, r->pids);
        put_u64(w, r->tmp_bytes);
        put_u64(w, r->output_bytes);
        put_u64(w, r->artifact_bytes);
        put_u32(w, r->flags);
        put_u32(w, r->n_files);
        for (uint32_t i = 0; i < r->n_files; i++) {
                put_str(w, r->files[i].path);
                put_blob(w, r->files[i].data, r->files[i].len);
        }
        put_u32(w, r->n_steps);
        for (uint32_t i = 0; i < r->n_steps; i++) {
                put_u32(w, r->steps[i].argc);
                for (uint32_t j = 0; j < r->steps[i].argc; j++)
                        put_str(w, r->steps[i].argv[j]);
        }
        put_u32(w, r->n_artifacts);
        for (uint32_t i = 0; i < r->n_artifacts; i++)
                put_str(w, r->artifacts[i]);
        put_str(w, r->layer_dir ? r->layer_dir : "");
        put_u32(w, r->net);
        put_u32(w, r->net_allow_package_managers ? 1 : 0);
        put_u32(w, r->n_net_hosts);
        for (uint32_t i = 0; i < r->n_net_hosts; i++)
                put_str(w, r->net_hosts[i]);
        put_u32(w, r->tier);
        put_str(w, r->kernel_platform);
}

int brk_plan_encode(const sbx_plan *r, char **ret, size_t *ret_len) {
        int q = request_check(r);
        if (q < 0)
                return q;
        return encode(request_fill, r, BRK_REQUEST_MAX, ret, ret_len);
}

static int result_check(const sbx_plan_result *r) {
        if (r->n_steps > BRK_STEPS_MAX || r->n_artifacts > BRK_ARTIFACTS_MAX ||
            (r->detail && strlen(r->detail) > BRK_DETAIL_MAX) || r->net_log_len > SERVE_NET_LOG_ANSWER_MAX ||
            (r->net_log && memchr(r->net_log, '\0', r->net_log_len)))
                return -EINVAL;
        for (uint32_t i = 0; i < r->n_steps; i++)
                if (!blob_fits(r->steps[i].out_len) || !blob_fits(r->steps[i].err_len))
                        return -EINVAL;
        for (uint32_t i = 0; i < r->n_artifacts; i++)
                if (!sbx_plan_path_is_clean(r->artifacts[i].path, strlen(r->artifacts[i].path)) ||
                    !blob_fits(r->artifacts[i].len))
                        return -EINVAL;
        return 0;
}

static void result_fill(writer *w, const void *msg) {
        const sbx_plan_result *r = msg;
        put_u32(w, RESULT_MAGIC);
        put_u32(w, MSG_VERSION);
        put_u32(w, r->outcome);
        put_str(w, r->detail);
        put_u64(w, r->started_unix_ms);
        put_u64(w, r->ended_unix_ms);
        put_u32(w, r->artifacts_truncated ? 1 : 0);
        put_u32(w, r->n_steps);
        for (uint32_t i = 0; i < r->n_steps; i++) {
                const sbx_step_result *s = &r->steps[i];
                put_u32(w, (uint32_t) s->status);
                put_u32(w, (uint32_t) s->term_signal);
                put_u32(w, s->flags);
                put_u64(w, s->wall_us);
                put_blob(w, s->out, s->out_len);
                put_blob(w, s->err, s->err_len);
        }
        put_u32(w, r->n_artifacts);
        for (uint32_t i = 0; i < r->n_artifacts; i++) {
                put_str(w, r->artifacts[i].path);
                put_blob(w, r->artifacts[i].data, r->artifacts[i].len);
        }
        put_u32(w, r->net_log ? 1 : 0);
        if (r->net_log)
                put_blob(w, r->net_log, r->net_log_len);
}

int brk_plan_result_encode(const sbx_plan_result *r, char **ret, size_t *ret_len) {
        int q = result_check(r);
        if (q < 0)
                return q;
        return encode(result_fill, r, BRK_RESULT_MAX, ret, ret_len);
}

/* ---- reader: a cursor that fails closed; every get checks the bytes left ---- */

typedef struct reader {
        const unsigned char *p;
        size_t left;
        int err; /* the first error; later gets do nothing */
} reader;

static bool get(reader *r, void *out, size_t n) {
        if (r->err)
                return false;
        if (n > r->left) {
                r->err = -EBADMSG;
                return false;
        }
        if (n)
                memcpy(out, r->p, n);
        r->p += n;
        r->left -= n;
        return true;
}

static uint32_t get_u32(reader *r) {
        unsigned char b[4] = {0};
        if (!get(r, b, sizeof(b)))
                return 0;
        return (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
}

static uint64_t get_u64(reader *r) {
        uint64_t lo = get_u32(r);
        return lo | (uint64_t) get_u32(r) << 32;
}

/* A count in [min, max]. */
static uint32_t get_count(reader *r, uint32_t min, uint32_t max) {
        uint32_t n = get_u32(r);
        if (!r->err && (n < min || n > max))
                r->err = -EBADMSG;
        return r->err ? 0 : n;
}

/* A blob copied into a new NUL-terminated buffer. text: refuse embedded NULs. */
static char *get_blob(reader *r, size_t *ret_len, bool text) {
        uint32_t n = get_u32(r);
        if (r->err)
                return NULL;
        if (n > r->left) {
                r->err = -EBADMSG;
                return NULL;
        }
        if (text && memchr(r->p, '\0', n)) {
                r->err = -EBADMSG;
                return NULL;
        }
        char *s = malloc((size_t) n + 1);
        if (!s) {
                r->err = -ENOMEM;
                return NULL;
        }
        get(r, s, n);
        s[n] = '\0';
        if (ret_len)
                *ret_len = n;
        return s;
}

static char *get_path(reader *r) {
        size_t n = 0;
        char *s = get_blob(r, &n, true);
        if (s && !sbx_plan_path_is_clean(s, n)) {
                free(s);
                r->err = -EBADMSG;
                return NULL;
        }
        return s;
}

static void *get_array(reader *r, uint32_t n, size_t size) {
        if (r->err || n == 0)
                return NULL;
        void *p = calloc(n, size);
        if (!p)
                r->err = -ENOMEM;
        return p;
}

static void header(reader *r, uint32_t magic) {
        if (get_u32(r) != magic || get_u32(r) != MSG_VERSION)
                if (!r->err)
                        r->err = -EBADMSG;
}

int brk_plan_decode(const void *buf, size_t len, sbx_plan *ret) {
        reader rd = {.p = buf, .left = len};
        sbx_plan m = {0};

        header(&rd, REQUEST_MAGIC);
        m.timeout_ms = get_u64(&rd);
        m.memory_bytes = get_u64(&rd);
        m.pids = get_u64(&rd);
        m.tmp_bytes = get_u64(&rd);
        m.output_bytes = get_u64(&rd);
        m.artifact_bytes = get_u64(&rd);
        m.flags = get_u32(&rd);
        if (!rd.err && (m.timeout_ms == 0 || (m.flags & ~(uint32_t) SBX_PLAN_FLAGS_ALL)))
                rd.err = -EBADMSG;

        uint32_t n = get_count(&rd, 0, BRK_FILES_MAX);
        m.files = get_array(&rd, n, sizeof(sbx_plan_file));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_files++) {
                m.files[i].path = get_path(&rd);
                m.files[i].data = get_blob(&rd, &m.files[i].len, false);
        }

        n = get_count(&rd, 1, BRK_STEPS_MAX);
        m.steps = get_array(&rd, n, sizeof(sbx_plan_step));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_steps++) {
                uint32_t argc = get_count(&rd, 1, BRK_ARGS_MAX);
                m.steps[i].argv = get_array(&rd, argc + 1, sizeof(char *));
                for (uint32_t j = 0; j < argc && !rd.err; j++, m.steps[i].argc++)
                        m.steps[i].argv[j] = get_blob(&rd, NULL, true);
        }

        n = get_count(&rd, 0, BRK_ARTIFACTS_MAX);
        m.artifacts = get_array(&rd, n, sizeof(char *));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_artifacts++)
                m.artifacts[i] = get_path(&rd);

        size_t llen = 0;
        m.layer_dir = get_blob(&rd, &llen, true);
        if (!rd.err && llen >= SBX_PATH_MAX)
                rd.err = -EBADMSG;
        if (!rd.err && llen == 0)
                free(TAKE_PTR(m.layer_dir));
        m.net = get_u32(&rd);
        uint32_t apm = get_u32(&rd);
        if (!rd.err && (m.net >= _SBX_NET_MODE_MAX || apm > 1))
                rd.err = -EBADMSG;
        m.net_allow_package_managers = apm == 1;
        n = get_count(&rd, 0, SBX_NET_ALLOW_MAX);
        m.net_hosts = get_array(&rd, n + 1, sizeof(char *));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_net_hosts++) {
                size_t hlen = 0;
                m.net_hosts[i] = get_blob(&rd, &hlen, true);
                if (!rd.err && hlen > EGRESS_HOST_MAX)
                        rd.err = -EBADMSG;
        }
        m.tier = get_u32(&rd);
        if (!rd.err && m.tier != SBX_TIER_CONTAINER && m.tier != SBX_TIER_KERNEL)
                rd.err = -EBADMSG;
        size_t plen = 0;
        _cleanup_free_ char *platform = get_blob(&rd, &plen, true);
        if (!rd.err && plen >= sizeof(m.kernel_platform))
                rd.err = -EBADMSG;
        if (!rd.err)
                memcpy(m.kernel_platform, platform, plen + 1);

        if (!rd.err && rd.left != 0)
                rd.err = -EBADMSG;
        if (rd.err) {
                sbx_plan_done(&m);
                return rd.err;
        }
        *ret = m;
        return 0;
}

int brk_plan_result_decode(const void *buf, size_t len, sbx_plan_result *ret) {
        reader rd = {.p = buf, .left = len};
        sbx_plan_result m = {0};

        header(&rd, RESULT_MAGIC);
        m.outcome = get_u32(&rd);
        if (!rd.err && (m.outcome < SBX_PLAN_COMPLETED || m.outcome > SBX_PLAN_NOT_STARTED))
                rd.err = -EBADMSG;
        size_t dlen = 0;
        m.detail = get_blob(&rd, &dlen, true);
        if (!rd.err && dlen > BRK_DETAIL_MAX)
                rd.err = -EBADMSG;
        m.started_unix_ms = get_u64(&rd);
        m.ended_unix_ms = get_u64(&rd);
        uint32_t at = get_u32(&rd);
        if (!rd.err && at > 1)
                rd.err = -EBADMSG;
        m.artifacts_truncated = at == 1;

        uint32_t n = get_count(&rd, 0, BRK_STEPS_MAX);
        m.steps = get_array(&rd, n, sizeof(sbx_step_result));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_steps++) {
                sbx_step_result *s = &m.steps[i];
                s->status = (int32_t) get_u32(&rd);
                s->term_signal = (int32_t) get_u32(&rd);
                s->flags = get_u32(&rd);
                if (!rd.err && (s->flags & ~(uint32_t) SBX_STEP_FLAGS_ALL))
                        rd.err = -EBADMSG;
                s->wall_us = get_u64(&rd);
                s->out = get_blob(&rd, &s->out_len, false);
                s->err = get_blob(&rd, &s->err_len, false);
        }

        n = get_count(&rd, 0, BRK_ARTIFACTS_MAX);
        m.artifacts = get_array(&rd, n, sizeof(sbx_plan_file));
        for (uint32_t i = 0; i < n && !rd.err; i++, m.n_artifacts++) {
                m.artifacts[i].path = get_path(&rd);
                m.artifacts[i].data = get_blob(&rd, &m.artifacts[i].len, false);
        }
        uint32_t has_log = get_u32(&rd);
        if (!rd.err && has_log > 1)
                rd.err = -EBADMSG;
        if (has_log == 1) {
                m.net_log = get_blob(&rd, &m.net_log_len, true);
                if (!rd.err && m.net_log_len > SERVE_NET_LOG_ANSWER_MAX)
                        rd.err = -EBADMSG;
        }

        if (!rd.err && rd.left != 0)
                rd.err = -EBADMSG;
        if (rd.err) {
                sbx_plan_result_done(&m);
                return rd.err;
        }
        *ret = m;
        return 0;
}
