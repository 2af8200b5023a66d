/* bench-agent.c: the agent's benchmarks (issue 9), driven by bench/agent.sh; run by hand, never a
 * test. Three parts, each a subcommand; every time is CLOCK_MONOTONIC unless said otherwise:
 *
 *   bench-agent turn --base-url URL [-r ROUNDS] [-w WARMUP]
 *       A real session (ss_box_local, python warmed) and a real model client (model_client_new,
 *       streamed, OpenAI wire format) against `hull mock-model` on loopback, whose script answers
 *       every turn with a run_python call of `x = 1` and then a text. Per round, in alternating
 *       order: (a) one agent turn (a fresh agent offered every sandbox tool, run_python wrapped to
 *       time its real run), with the time inside model requests taken from the bus
 *       (span.model_request_start -> span.model_request_end); (b) the same code as a direct
 *       ss_cell. overhead = turn - model time - tool run.
 *   bench-agent start --hull PATH --record FILE [-r ROUNDS] [-w WARMUP]
 *       `hull run x` (its environment points it at the mock): CLOCK_REALTIME just before
 *       posix_spawn to the first request's received_at_us in the mock's --record FILE; beside it
 *       `hull run`'s whole wall time and `hull exec /bin/true`'s, in alternating order.
 *   bench-agent spill --mb N --mode value|bytes|text|direct
 *       A result of about N MB of compact JSON (an array of objects) through the loop's spill
 *       middleware (a tool returning it, called once by a scripted in-process model;
 *       agent.tool_use -> agent.tool_result): as a json_t (value; "loop" is its old name), as bytes
 *       to keep (bytes: spill_data, the way run_python's emitted value and web_fetch's body come),
 *       as a long text output (text); or the bytes given to ss_handles_spill directly (direct).
 *       Beside it, in the same process, `cp` of the same bytes to a file on the same file system
 *       (once before, twice after; the median) and the ratio.
 *       Peak RSS from /proc/self/status (VmHWM, reset through clear_refs before the timed part)
 *       and getrusage's ru_maxrss.
 * Needs root (a real session sandbox). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bus.h"
#include "fs-util.h"
#include "macro.h"
#include "model.h"
#include "parse-util.h"
#include "ss.h"
#include "tools-sandbox.h"
#include "tool-catalog.h"

extern char **environ;

static uint64_t mono_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000ULL + (uint64_t) t.tv_nsec;
}

static uint64_t real_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return (uint64_t) t.tv_sec * 1000000ULL + (uint64_t) t.tv_nsec / 1000ULL;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* Nearest rank. Sorts v. */
static double pct(double *v, size_t n, double p) {
        qsort(v, n, sizeof(*v), cmp_double);
        size_t k = (size_t) (p / 100.0 * (double) n + 0.999999);
        if (k < 1)
                k = 1;
        if (k > n)
                k = n;
        return v[k - 1];
}

static void row(const char *name, double *v, size_t n) {
        double med = pct(v, n, 50), p90 = pct(v, n, 90);
        printf("| %s | %zu | %.3f | %.3f | %.3f | %.3f |\n", name, n, v[0], med, p90, v[n - 1]);
}

static void header(void) {
        printf("| row (ms) | n | min | median | p90 | max |\n|---|---:|---:|---:|---:|---:|\n");
}

/* ---- one session, as hull run opens it ---- */

typedef struct world {
        char tmp[64];
        ss_manager *ss;
        ss_session *s;
} world;

static int world_open(world *w, bool warm) {
        hull_error e = {0};
        char handles[128];
        snprintf(w->tmp, sizeof(w->tmp), "/tmp/hull-bench-agent.XXXXXX");
        if (!mkdtemp(w->tmp) || chmod(w->tmp, 0711) < 0)
                return -errno;
        snprintf(handles, sizeof(handles), "%s/handles", w->tmp);
        if (mkdir(handles, 0711) < 0)
                return -errno;
        ss_config cfg = {.box = ss_box_local(geteuid() == 0),
                         .zygote_fd = -1,
                         .max_sessions = 1,
                         .max_per_owner = 1,
                         .lifetime_ms = 3600000,
                         .idle_ms = 3600000,
                         .memory_bytes = 1ULL << 30,
                         .pids = 512,
                         .tmp_bytes = 64ULL << 20,
                         .handles_dir = handles,
                         .provider = "hull",
                         .isolation = "container",
                         .no_reaper = true};
        ss_open_opts o = {.principal = "bench", .owner = ""};
        if (ss_new(&cfg, &w->ss, &e) < 0 || ss_open(w->ss, &o, &w->s, &e) < 0) {
                fprintf(stderr, "bench-agent: no session: %s\n", e.msg);
                return -EIO;
        }
        if (warm) {
                if (ss_call_begin(w->ss, w->s, -1, &e) < 0 || ss_warm(w->ss, w->s, SBX_LANG_PYTHON, &e) < 0) {
                        fprintf(stderr, "bench-agent: warm: %s\n", e.msg);
                        return -EIO;
                }
                ss_call_end(w->ss, w->s);
        }
        return 0;
}

static void world_close(world *w) {
        if (w->s)
                ss_unref(w->ss, w->s);
        if (w->ss) {
                ss_shutdown(w->ss, 1000);
                ss_free(w->ss);
        }
        if (w->tmp[0])
                (void) rm_rf_at(AT_FDCWD, w->tmp);
}

/* ---- the bus, timed ---- */

typedef struct clock_sub {
        uint64_t model_start, model_ns;
        uint64_t tool_use, tool_result;
        unsigned model_requests;
        /* CLOCK_REALTIME at each span.model_request_start, to set beside the mock's received_at_us */
        uint64_t *real_starts;
        size_t n_real, cap_real;
} clock_sub;

static void on_event(void *ud, const json_t *ev, bool persisted) {
        uint64_t now = mono_ns();
        clock_sub *c = ud;
        const char *t = json_string_value(json_object_get(ev, "type"));
        if (!persisted || !t)
                return;
        if (strcmp(t, "span.model_request_start") == 0) {
                c->model_start = now;
                if (c->real_starts && c->n_real < c->cap_real)
                        c->real_starts[c->n_real++] = real_us();
        } else if (strcmp(t, "span.model_request_end") == 0) {
                c->model_ns += now - c->model_start;
                c->model_requests++;
        } else if (strcmp(t, "agent.tool_use") == 0)
                c->tool_use = now;
        else if (strcmp(t, "agent.tool_result") == 0)
                c->tool_result = now;
}

/* ---- run_python, timed ---- */

typedef struct wrapped {
        const tool_def *real;
        uint64_t run_ns;
        unsigned runs;
} wrapped;

static int timed_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        wrapped *w = (wrapped *) c->env;
        tool_ctx real = *c;
        real.env = w->real->env;
        uint64_t t0 = mono_ns();
        int r = w->real->run(&real, input, ret, e);
        w->run_ns += mono_ns() - t0;
        w->runs++;
        return r;
}

#define CELL_CODE "x = 1"

static int next_record(const char *path, long *off, uint64_t *ret_us);

static int part_turn(const char *base_url, const char *record, unsigned rounds, unsigned warmup) {
        _cleanup_(world_close) world w = {0};
        hull_error e = {0};
        if (world_open(&w, true) < 0)
                return 1;
        model_config mc = {.api = MODEL_API_OPENAI,
                           .base_url = base_url,
                           .api_key = "k",
                           .model = "m",
                           .compat = -1,
                           .stream = true,
                           .max_retries = 0};
        _cleanup_model_client_ model_client *m = NULL;
        _cleanup_bus_ bus *b = NULL;
        if (model_client_new(&mc, &m, &e) < 0 || bus_new(NULL, NULL, &b) < 0) {
                fprintf(stderr, "bench-agent: model client: %s\n", e.msg);
                return 1;
        }
        size_t total = (size_t) rounds + warmup;
        clock_sub clk = {0};
        uint64_t *real_starts = calloc(2 * total, sizeof(uint64_t));
        if (!real_starts || bus_subscribe(b, on_event, &clk) < 0)
                return 1;
        size_t n_real = 0;
        /* every sandbox tool, as hull run offers them, run_python timed */
        wrapped wr = {.real = &tool_run_python};
        tool_def py = tool_run_python;
        py.run = timed_run;
        py.env = &wr;
        const tool_def *tools[TOOL_CATALOG_MAX];
        size_t n = tool_catalog_sandbox_defs(tools);
        for (size_t i = 0; i < n; i++)
                if (strcmp(tools[i]->name, "run_python") == 0)
                        tools[i] = &py;

        double *turn = calloc(rounds, sizeof(double)), *model = calloc(rounds, sizeof(double)),
               *tool = calloc(rounds, sizeof(double)), *cell = calloc(rounds, sizeof(double)),
               *over = calloc(rounds, sizeof(double)), *loop_tool = calloc(rounds, sizeof(double));
        if (!turn || !model || !tool || !cell || !over || !loop_tool)
                return 1;
        for (size_t i = 0; i < total; i++) {
                double t_turn = 0, t_model = 0, t_tool = 0, t_cell = 0, t_span = 0;
                for (int part = 0; part < 2; part++) {
                        if ((part == 0) == (i % 2 == 0)) { /* the agent turn */
                                agent_config cfg = {
                                        .model = m, .bus = b, .tools = tools, .n_tools = n, .ss = w.ss, .session = w.s};
                                _cleanup_agent_ agent *a = NULL;
                                if (agent_new(&cfg, NULL, &a, &e) < 0) {
                                        fprintf(stderr, "bench-agent: agent_new: %s\n", e.msg);
                                        return 1;
                                }
                                clk = (clock_sub){.real_starts = real_starts + n_real, .cap_real = 2 * total - n_real};
                                wr.run_ns = 0;
                                unsigned runs = wr.runs;
                                agent_turn_result res = {0};
                                uint64_t t0 = mono_ns();
                                int r = agent_turn(a, "Set x to 1.", NULL, &res, &e);
                                uint64_t t1 = mono_ns();
                                if (r < 0 || res.stop != AGENT_STOP_END_TURN || res.model_requests != 2 ||
                                    res.tool_calls != 1 || wr.runs != runs + 1 || clk.model_requests != 2 ||
                                    strcmp(res.text, "done") != 0) {
                                        fprintf(stderr,
                                                "bench-agent: round %zu: turn %d, stop %s, %u requests, %u calls, "
                                                "text '%s': %s\n",
                                                i, r, agent_stop_to_string(res.stop), res.model_requests,
                                                res.tool_calls, res.text ? res.text : "", e.msg);
                                        agent_turn_result_done(&res);
                                        return 1;
                                }
                                agent_turn_result_done(&res);
                                n_real += clk.n_real;
                                t_turn = (double) (t1 - t0) / 1e6;
                                t_model = (double) clk.model_ns / 1e6;
                                t_tool = (double) wr.run_ns / 1e6;
                                t_span = (double) (clk.tool_result - clk.tool_use) / 1e6;
                        } else { /* the same code, a direct cell */
                                ss_cell_args ca = {.lang = SBX_LANG_PYTHON,
                                                   .code = CELL_CODE,
                                                   .code_len = strlen(CELL_CODE),
                                                   .timeout_ms = 300000,
                                                   .output_bytes = 16384,
                                                   .cancel_fd = -1};
                                ss_cell_output out = {0};
                                if (ss_call_begin(w.ss, w.s, -1, &e) < 0)
                                        return 1;
                                uint64_t t0 = mono_ns();
                                int r = ss_cell(w.ss, w.s, &ca, &out, &e);
                                uint64_t t1 = mono_ns();
                                ss_call_end(w.ss, w.s);
                                bool ok = r >= 0 && out.o.exit_code == 0;
                                if (r >= 0)
                                        ss_output_done(&out.o);
                                if (!ok) {
                                        fprintf(stderr, "bench-agent: round %zu: cell %d: %s\n", i, r, e.msg);
                                        return 1;
                                }
                                t_cell = (double) (t1 - t0) / 1e6;
                        }
                }
                if (i < warmup)
                        continue;
                size_t k = i - warmup;
                turn[k] = t_turn;
                model[k] = t_model;
                tool[k] = t_tool;
                cell[k] = t_cell;
                loop_tool[k] = t_span - t_tool;
                over[k] = t_turn - t_model - t_tool;
        }
        /* the mock's received_at_us of each request beside the span's start: hull's own part of
         * the model time (encoding the request, libcurl, sending its head) */
        double *client = NULL;
        if (record && n_real == 2 * total && (client = calloc(rounds, sizeof(double)))) {
                long off = 0;
                for (size_t j = 0; j < n_real; j++) {
                        uint64_t got = 0;
                        if (next_record(record, &off, &got) < 0) {
                                free(client);
                                client = NULL;
                                break;
                        }
                        if (j / 2 >= warmup)
                                client[j / 2 - warmup] += ((double) got - (double) real_starts[j]) / 1e3;
                }
        }
        printf("## agent turn overhead: %u rounds after %u warm-up rounds (turn and cell alternating)\n\n", rounds,
               warmup);
        header();
        row("agent turn (2 model requests, 1 run_python)", turn, rounds);
        row("  inside model requests (bus spans)", model, rounds);
        row("  run_python's run (the sandbox call)", tool, rounds);
        row("  **overhead = turn - model - tool run**", over, rounds);
        row("  of which: tool_use -> tool_result less the run", loop_tool, rounds);
        if (client)
                row("  model time's first part: span start -> the mock has the request's head (2 requests)", client,
                    rounds);
        row("direct ss_cell `" CELL_CODE "`", cell, rounds);
        printf("\n");
        free(turn);
        free(model);
        free(tool);
        free(cell);
        free(over);
        free(loop_tool);
        free(client);
        free(real_starts);
        return 0;
}

/* ---- hull run to its first model request ---- */

static int spawn_wait(const char *path, char *const argv[], int *ret_status) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int r = posix_spawn(&pid, path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        *ret_status = st;
        return 0;
}

/* The first request recorded after offset *off (a whole line): its received_at_us. */
static int next_record(const char *path, long *off, uint64_t *ret_us) {
        for (int tries = 0; tries < 200; tries++) {
                FILE *f = fopen(path, "re");
                if (!f)
                        return -errno;
                char *line = NULL;
                size_t cap = 0;
                ssize_t len = -1;
                if (fseek(f, *off, SEEK_SET) == 0)
                        len = getline(&line, &cap, f);
                fclose(f);
                if (len > 0 && line[len - 1] == '\n') {
                        json_t *j = json_loadb(line, (size_t) len, 0, NULL);
                        json_t *v = json_object_get(j, "received_at_us");
                        int r = json_is_integer(v) ? 0 : -EPROTO;
                        if (r == 0) {
                                *ret_us = (uint64_t) json_integer_value(v);
                                *off += len;
                        }
                        json_decref(j);
                        free(line);
                        return r;
                }
                free(line);
                usleep(5000);
        }
        return -ETIMEDOUT;
}

static int part_start(const char *hull, const char *record, unsigned rounds, unsigned warmup) {
        double *first = calloc(rounds, sizeof(double)), *run = calloc(rounds, sizeof(double)),
               *exec_true = calloc(rounds, sizeof(double));
        if (!first || !run || !exec_true)
                return 1;
        long off = 0;
        struct stat st;
        if (stat(record, &st) == 0)
                off = st.st_size;
        char *const run_argv[] = {(char *) "hull", (char *) "run", (char *) "x", NULL};
        char *const exec_argv[] = {(char *) "hull", (char *) "exec", (char *) "/bin/true", NULL};
        for (size_t i = 0; i < (size_t) rounds + warmup; i++) {
                double t_first = 0, t_run = 0, t_exec = 0;
                for (int part = 0; part < 2; part++) {
                        int status = 0;
                        if ((part == 0) == (i % 2 == 0)) {
                                uint64_t m0 = mono_ns(), r0 = real_us();
                                int r = spawn_wait(hull, run_argv, &status);
                                uint64_t m1 = mono_ns(), got = 0;
                                if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                                        fprintf(stderr, "bench-agent: hull run failed (%d, status %#x)\n", r, status);
                                        return 1;
                                }
                                r = next_record(record, &off, &got);
                                if (r < 0) {
                                        fprintf(stderr, "bench-agent: no request recorded in %s: %s\n", record,
                                                strerror(-r));
                                        return 1;
                                }
                                t_first = ((double) got - (double) r0) / 1e3;
                                t_run = (double) (m1 - m0) / 1e6;
                        } else {
                                uint64_t m0 = mono_ns();
                                int r = spawn_wait(hull, exec_argv, &status);
                                uint64_t m1 = mono_ns();
                                if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                                        fprintf(stderr, "bench-agent: hull exec failed (%d, status %#x)\n", r, status);
                                        return 1;
                                }
                                t_exec = (double) (m1 - m0) / 1e6;
                        }
                }
                if (i < warmup)
                        continue;
                first[i - warmup] = t_first;
                run[i - warmup] = t_run;
                exec_true[i - warmup] = t_exec;
        }
        printf("## hull run to its first model request: %u rounds after %u warm-up rounds\n\n", rounds, warmup);
        header();
        row("**`hull run x`: spawn to the first request's received_at_us**", first, rounds);
        row("`hull run x`: whole run (answer, teardown)", run, rounds);
        row("`hull exec /bin/true`: whole run (reference)", exec_true, rounds);
        printf("\n");
        free(first);
        free(run);
        free(exec_true);
        return 0;
}

/* ---- a 50 MB JSON result through the spill middleware ---- */

typedef struct mem {
        long rss_kb, hwm_kb;
} mem;

static mem mem_now(void) {
        mem m = {-1, -1};
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "VmRSS:", 6) == 0)
                        m.rss_kb = strtol(line + 6, NULL, 10);
                else if (strncmp(line, "VmHWM:", 6) == 0)
                        m.hwm_kb = strtol(line + 6, NULL, 10);
        }
        if (f)
                fclose(f);
        return m;
}

/* VmHWM back to the current RSS (proc(5): clear_refs 5). */
static void hwm_reset(void) {
        (void) write_string_file("/proc/self/clear_refs", "5");
}

static long maxrss_kb(void) {
        struct rusage ru;
        return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

static void mem_line(const char *when, mem m) {
        printf("- %s: VmRSS %.1f MiB, VmHWM %.1f MiB\n", when, (double) m.rss_kb / 1024.0, (double) m.hwm_kb / 1024.0);
}

/* An array of objects whose compact JSON is at least bytes long. */
static json_t *big_value(uint64_t bytes) {
        json_t *a = json_array();
        uint64_t len = 2;
        for (json_int_t i = 0; a && len < bytes; i++) {
                char name[32];
                snprintf(name, sizeof(name), "item-%07lld", (long long) i);
                json_t *o = json_pack("{s:I, s:s, s:f, s:b, s:[ss]}", "id", i, "name", name, "score",
                                      (double) (i % 1000) / 8.0, "ok", (int) (i % 2), "tags", "alpha", "beta");
                if (!o || json_array_append_new(a, o) < 0) {
                        json_decref(a);
                        return NULL;
                }
                len += json_dumpb(o, NULL, 0, JSON_COMPACT) + 1;
        }
        return a;
}

typedef struct fake {
        unsigned next;
} fake;

static int fake_call(void *impl, const model_request *r, const model_call_opts *o, model_response *ret,
                     model_failure *ret_fail, hull_error *e) {
        fake *f = impl;
        const char *content = f->next++ == 0 ? "[{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"big\",\"input\":{}}]"
                                             : "[{\"type\":\"text\",\"text\":\"done\"}]";
        *ret = (model_response){
                .message = json_pack("{s:s, s:o}", "role", "assistant", "content", json_loads(content, 0, NULL)),
                .stop = f->next == 1 ? MODEL_STOP_TOOL_USE : MODEL_STOP_END};
        return ret->message ? 0 : -ENOMEM;
}

static void fake_free(void *impl) {
        free(impl);
}

static const model_ops fake_ops = {.call = fake_call, .free = fake_free};

/* The compact JSON of big_value(bytes), written as text (the bytes a sandbox tool, an MCP
 * server or a download hands over), byte for byte what json_dumps gives for the value. */
static char *big_bytes(uint64_t bytes, size_t *ret_len) {
        size_t cap = (size_t) bytes + 4096, len = 0;
        char *b = malloc(cap);
        if (!b)
                return NULL;
        b[len++] = '[';
        for (long long i = 0; len + 2 < bytes || i == 0; i++) {
                char score[40];
                snprintf(score, sizeof(score), "%.17g", (double) (i % 1000) / 8.0);
                if (!strpbrk(score, ".e"))
                        strcat(score, ".0");
                char item[160];
                int n = snprintf(item, sizeof(item),
                                 "%s{\"id\":%lld,\"name\":\"item-%07lld\",\"score\":%s,\"ok\":%s,\"tags\":[\"alpha\","
                                 "\"beta\"]}",
                                 i ? "," : "", i, i, score, i % 2 ? "true" : "false");
                if (len + (size_t) n + 2 > cap) {
                        char *nb = realloc(b, cap * 2);
                        if (!nb) {
                                free(b);
                                return NULL;
                        }
                        b = nb;
                        cap *= 2;
                }
                memcpy(b + len, item, (size_t) n);
                len += (size_t) n;
        }
        b[len++] = ']';
        b[len] = '\0';
        *ret_len = len;
        return b;
}

/* `cp SRC DST` (DST removed after), its wall time in ns; 0 on failure. */
static uint64_t cp_ns(const char *src, const char *dst) {
        char *argv[] = {(char *) "cp", (char *) src, (char *) dst, NULL};
        pid_t pid;
        int st = 0;
        uint64_t t0 = mono_ns();
        if (posix_spawnp(&pid, "cp", NULL, NULL, argv, environ) != 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
                return 0;
        uint64_t t = mono_ns() - t0;
        unlink(dst);
        return t;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

#define SPILL_ROUNDS_MAX 50U

typedef enum spill_mode { SPILL_VALUE, SPILL_BYTES, SPILL_TEXT, SPILL_DIRECT } spill_mode;

typedef struct big_env {
        spill_mode mode;
        json_t *value;
        char *bytes; /* handed over once */
        size_t len;
        uint64_t run_ns;
} big_env;

static int big_run(const tool_ctx *c, const json_t *input, tool_output *ret, hull_error *e) {
        big_env *b = (big_env *) c->env;
        uint64_t t0 = mono_ns();
        if (b->mode == SPILL_VALUE)
                ret->value = json_incref(b->value);
        else if (b->mode == SPILL_TEXT)
                ret->text = TAKE_PTR(b->bytes); /* a long output, as a sandbox tool's or MCP text */
        else {
                /* a body kept whatever its size, as run_python's emitted value or web_fetch's */
                ret->spill_data = TAKE_PTR(b->bytes);
                ret->spill_len = b->len;
                ret->spill_format = "json";
                ret->spill_source = strdup("bench: bytes");
        }
        b->run_ns = mono_ns() - t0;
        return 0;
}

static const char *const mode_names[] = {"value", "bytes", "text", "direct"};

/* One spill of the result through the loop (or directly): its time in *ret_ns. */
static int spill_once(world *w, spill_mode mode, json_t *value, const char *bytes, size_t len, bool verbose,
                      uint64_t *ret_ns) {
        hull_error e = {0};
        mem m1 = mem_now();
        if (mode == SPILL_DIRECT) {
                json_t *sum = NULL;
                if (ss_call_begin(w->ss, w->s, -1, &e) < 0)
                        return -1;
                hwm_reset();
                uint64_t s0 = mono_ns();
                int r = ss_handles_spill(w->ss, w->s, HD_FORMAT_JSON, "bench", bytes, len, &sum, &e);
                *ret_ns = mono_ns() - s0;
                mem m3 = mem_now();
                ss_call_end(w->ss, w->s);
                if (r < 0) {
                        fprintf(stderr, "bench-agent: ss_handles_spill: %s\n", e.msg);
                        return -1;
                }
                if (verbose) {
                        printf("- peak during the spill above the bytes: %.1f MiB\n",
                               (double) (m3.hwm_kb - m1.rss_kb) / 1024.0);
                        _cleanup_free_ char *d = json_dumps(sum, JSON_COMPACT);
                        printf("- its summary: %.300s\n", d ? d : "?");
                }
                json_decref(sum);
                return 0;
        }
        big_env env = {.mode = mode, .value = value, .len = len};
        if (mode != SPILL_VALUE && !(env.bytes = strdup(bytes))) /* handed over by the tool */
                return -1;
        tool_def big = {.name = "big",
                        .description = "A big value.",
                        .input_schema = "{\"type\": \"object\"}",
                        .default_policy = TOOL_ALWAYS_ALLOW,
                        .run = big_run,
                        .env = &env};
        const tool_def *tools[] = {&big};
        fake *f = calloc(1, sizeof(*f));
        _cleanup_model_client_ model_client *mcl = NULL;
        _cleanup_bus_ bus *b = NULL;
        clock_sub clk = {0};
        if (!f || model_client_wrap(&fake_ops, f, &mcl) < 0 || bus_new(NULL, NULL, &b) < 0 ||
            bus_subscribe(b, on_event, &clk) < 0)
                return -1;
        agent_config cfg = {.model = mcl, .bus = b, .tools = tools, .n_tools = 1, .ss = w->ss, .session = w->s};
        _cleanup_agent_ agent *a = NULL;
        if (agent_new(&cfg, NULL, &a, &e) < 0)
                return -1;
        hwm_reset();
        agent_turn_result res = {0};
        int r = agent_turn(a, "go", NULL, &res, &e);
        mem m2 = mem_now();
        free(env.bytes);
        const json_t *conv = agent_conversation(a);
        const json_t *msg = json_array_get(conv, 2);
        const json_t *blk = json_array_get(json_object_get(msg, "content"), 0);
        const char *text = json_string_value(json_object_get(blk, "content"));
        bool ok = r >= 0 && res.stop == AGENT_STOP_END_TURN && text && strstr(text, "kept as handle");
        agent_turn_result_done(&res);
        if (!ok) {
                fprintf(stderr, "bench-agent: the spill turn failed (%d): %s; result: %.300s\n", r, e.msg,
                        text ? text : "(none)");
                return -1;
        }
        *ret_ns = clk.tool_result - clk.tool_use;
        if (verbose) {
                printf("- the tool's run: %.3f ms\n", (double) env.run_ns / 1e6);
                printf("- peak during the turn above the result made: %.1f MiB\n",
                       (double) (m2.hwm_kb - m1.rss_kb) / 1024.0);
                printf("- what the model saw: %.300s\n", text);
        }
        return 0;
}

static int part_spill(uint64_t mb, spill_mode mode, unsigned rounds) {
        _cleanup_(world_close) world w = {0};
        if (world_open(&w, false) < 0)
                return 1;
        mem m0 = mem_now();
        uint64_t t0 = mono_ns();
        json_t *value = NULL;
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        if (mode == SPILL_VALUE) {
                value = big_value(mb * 1000000ULL);
                bytes = value ? json_dumps(value, JSON_COMPACT) : NULL; /* for cp only */
        } else
                bytes = big_bytes(mb * 1000000ULL, &len);
        uint64_t t1 = mono_ns();
        if (!bytes)
                return 1;
        len = strlen(bytes);
        /* the yardstick's file, in the directory above the store (same file system), untimed */
        char src[160], dst[160];
        snprintf(src, sizeof(src), "%s/cp-src.json", w.tmp);
        snprintf(dst, sizeof(dst), "%s/cp-dst.json", w.tmp);
        FILE *cf = fopen(src, "we");
        if (!cf || fwrite(bytes, 1, len, cf) != len || fclose(cf) != 0) {
                fprintf(stderr, "bench-agent: cannot write %s\n", src);
                return 1;
        }
        printf("## spill of %zu bytes of JSON, mode %s: %s\n\n", len, mode_names[mode],
               mode == SPILL_VALUE   ? "a tool returns a json_t (590,448 objects at 50 MB) through the agent loop"
               : mode == SPILL_BYTES ? "a tool hands over the JSON bytes as a body to keep (spill_data, \"json\"), "
                                       "through the agent loop"
               : mode == SPILL_TEXT  ? "a tool hands over the bytes as its text output, through the agent loop"
                                     : "the bytes given to ss_handles_spill directly");
        printf("- making the result (not timed): %.0f ms\n", (double) (t1 - t0) / 1e6);
        mem_line("session open, before the result", m0);
        mem_line("the result made", mem_now());
        if (mode == SPILL_VALUE) {
                free(bytes);
                bytes = NULL;
        }
        /* rounds of (cp, spill), alternating; each spill a new handle */
        uint64_t cps[SPILL_ROUNDS_MAX], sps[SPILL_ROUNDS_MAX];
        for (unsigned i = 0; i < rounds; i++) {
                cps[i] = cp_ns(src, dst);
                if (spill_once(&w, mode, value, bytes, len, i + 1 == rounds, &sps[i]) < 0 || cps[i] == 0)
                        return 1;
                printf("- round %u: spill %.1f ms, cp %.1f ms\n", i + 1, (double) sps[i] / 1e6, (double) cps[i] / 1e6);
        }
        unlink(src);
        qsort(cps, rounds, sizeof(cps[0]), cmp_u64);
        qsort(sps, rounds, sizeof(sps[0]), cmp_u64);
        uint64_t sm = sps[rounds / 2], cm = cps[rounds / 2];
        printf("- **%s, median of %u: %.1f ms; `cp` of the same %zu bytes, median of %u beside it: %.1f ms: "
               "%.2fx**\n",
               mode == SPILL_DIRECT ? "ss_handles_spill" : "agent.tool_use -> agent.tool_result", rounds,
               (double) sm / 1e6, len, rounds, (double) cm / 1e6, (double) sm / (double) cm);
        printf("- getrusage ru_maxrss (the whole process): %.1f MiB\n\n", (double) maxrss_kb() / 1024.0);
        json_decref(value);
        return 0;
}

static int usage(void) {
        fprintf(stderr, "usage: bench-agent turn --base-url URL [--record FILE] [-r ROUNDS] [-w WARMUP]\n"
                        "       bench-agent start --hull PATH --record FILE [-r ROUNDS] [-w WARMUP]\n"
                        "       bench-agent spill [--mb N] --mode value|bytes|text|direct\n");
        return 2;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                {"base-url", required_argument, NULL, 'u'}, {"hull", required_argument, NULL, 'H'},
                {"record", required_argument, NULL, 'R'},   {"mb", required_argument, NULL, 'm'},
                {"mode", required_argument, NULL, 'M'},     {"rounds", required_argument, NULL, 'r'},
                {"warmup", required_argument, NULL, 'w'},   {0},
        };
        const char *base_url = NULL, *hull = NULL, *record = NULL, *mode = "loop";
        uint64_t rounds = 0, warmup = 0, mb = 50;
        bool have_rounds = false, have_warmup = false;
        if (argc < 2)
                return usage();
        const char *part = argv[1];
        optind = 2;
        int c;
        while ((c = getopt_long(argc, argv, "r:w:", opts, NULL)) != -1) {
                switch (c) {
                case 'u':
                        base_url = optarg;
                        break;
                case 'H':
                        hull = optarg;
                        break;
                case 'R':
                        record = optarg;
                        break;
                case 'M':
                        mode = optarg;
                        break;
                case 'm':
                        if (parse_uint64(optarg, 1, 1000, &mb) < 0)
                                return usage();
                        break;
                case 'r':
                        if (parse_uint64(optarg, 1, 2000, &rounds) < 0)
                                return usage();
                        have_rounds = true;
                        break;
                case 'w':
                        if (parse_uint64(optarg, 0, 100, &warmup) < 0)
                                return usage();
                        have_warmup = true;
                        break;
                default:
                        return usage();
                }
        }
        signal(SIGPIPE, SIG_IGN);
        if (strcmp(part, "turn") == 0 && base_url)
                return part_turn(base_url, record, have_rounds ? (unsigned) rounds : 200,
                                 have_warmup ? (unsigned) warmup : 20);
        if (strcmp(part, "start") == 0 && hull && record)
                return part_start(hull, record, have_rounds ? (unsigned) rounds : 30,
                                  have_warmup ? (unsigned) warmup : 3);
        for (size_t i = 0; strcmp(part, "spill") == 0 && i < ELEMENTSOF(mode_names); i++)
                if (strcmp(mode, mode_names[i]) == 0 || (i == SPILL_VALUE && strcmp(mode, "loop") == 0))
                        return part_spill(mb, (spill_mode) i,
                                          have_rounds ? (unsigned) MIN(rounds, SPILL_ROUNDS_MAX) : 5);
        return usage();
}
