/* cli-exec.c: `hull exec`: parse and validate the options, run the sandbox, report the result
 * as the command's own output and exit status, or as one JSON object with --json. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "cli-options.h"
#include "cli.h"
#include "dlib.h"
#include "limits.h"
#include "cli-env.h"
#include "cli-key.h"
#include "env-layer.h"
#include "macro.h"
#include "parse-util.h"
#include "sbx.h"
#include "utf8.h"

#define usage_error(...) cli_usage_error("exec", SBX_EXIT_SETUP, __VA_ARGS__)

/* Our own environment's "NAME=VALUE" entry for name (the last one, when a caller appended its
 * own after what it inherited), or NULL. */
static char *environ_entry(const char *name) {
        extern char **environ;
        size_t n = strlen(name);
        char *found = NULL;
        for (char **p = environ; p && *p; p++)
                if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
                        found = *p;
        return found;
}

/* A variable's name: a letter or '_', then letters, digits and '_'. */
static bool env_name_ok(const char *s) {
        if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (const char *p = s; *p; p++)
                if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                        return false;
        return true;
}

static int json_set_output(json_t *o, const char *name, const char *buf, size_t len) {
        char key[SBX_SHORT_STR_MAX];
        json_t *s;
        if (utf8_is_valid(buf, len))
                s = json_stringn(buf, len);
        else {
                json_auto_t *repaired = NULL; /* jansson's cleanup type */
                _cleanup_free_ char *fixed = NULL, *b64 = NULL;
                size_t flen;
                if (utf8_make_valid(buf, len, &fixed, &flen) < 0)
                        return -ENOMEM;
                repaired = json_stringn(fixed, flen);
                /* Not text: the exact bytes travel as base64 beside the repaired string. */
                size_t n;
                int r = base64_encode(buf, len, true, &b64, &n);
                if (r < 0)
                        return r;
                snprintf(key, sizeof(key), "%s_base64", name);
                if (json_object_set_new(o, key, json_stringn(b64, n)) < 0)
                        return -ENOMEM;
                s = TAKE_PTR(repaired);
        }
        if (!s || json_object_set_new(o, name, s) < 0)
                return -ENOMEM;
        return 0;
}

static int print_json(const sbx_result *r) {
        json_t *o =
                json_pack("{s:s, s:o, s:o, s:b, s:b, s:b, s:b, s:b, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I}", "tier",
                          r->tier, "exit_code", r->exited ? json_integer(r->exit_code) : json_null(), "signal",
                          r->term_signal ? json_integer(r->term_signal) : json_null(), "timed_out", r->timed_out,
                          "oom_killed", r->oom_killed, "interrupted", r->interrupted_signal != 0, "stdout_truncated",
                          r->out_dropped > 0, "stderr_truncated", r->err_dropped > 0, "stdout_bytes",
                          (json_int_t) r->out_total, "stderr_bytes", (json_int_t) r->err_total, "stdout_dropped_bytes",
                          (json_int_t) r->out_dropped, "stderr_dropped_bytes", (json_int_t) r->err_dropped, "wall_ms",
                          (double) r->wall_us / 1000.0, "cpu_user_ms", (double) r->cpu_user_us / 1000.0, "cpu_sys_ms",
                          (double) r->cpu_sys_us / 1000.0, "peak_memory_bytes", (json_int_t) r->peak_memory_bytes);
        int k = o ? json_set_output(o, "stdout", r->out, r->out_len) : -ENOMEM;
        if (k >= 0)
                k = json_set_output(o, "stderr", r->err, r->err_len);
        if (k < 0) {
                json_decref(o);
                hull_error e = {0};
                if (k == -ENOSYS && dlib_load(DLIB_CRYPTO, &e) < 0) /* base64 of binary output */
                        cli_report("exec", &e);
                else
                        cli_error("exec", "out of memory while printing the result");
                return k;
        }
        if ((r->net.allowed + r->net.refused > 0 &&
             json_object_set_new(o, "net",
                                 json_pack("{s:I,s:I,s:I,s:I}", "allowed", (json_int_t) r->net.allowed, "refused",
                                           (json_int_t) r->net.refused, "bytes_up", (json_int_t) r->net.bytes_up,
                                           "bytes_down", (json_int_t) r->net.bytes_down)) < 0) ||
            (r->warning[0] && json_object_set_new(o, "warning", json_string(r->warning)) < 0) ||
            json_object_set_new(o, "exit_status", json_integer(sbx_result_exit_status(r))) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        int q = json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(9));
        json_decref(o);
        if (q < 0 || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
                return -EIO;
        return 0;
}

static int write_all(FILE *f, const char *buf, size_t len) {
        return fwrite(buf, 1, len, f) == len && fflush(f) == 0 ? 0 : -EIO;
}

/* The heads were streamed while the command ran; what is left is the notice and the tails. */
static void print_plain(const sbx_result *r, uint64_t timeout_ms, uint64_t output_bytes) {
        if (r->out_dropped)
                cli_error("exec",
                          "%" PRIu64 " bytes of stdout dropped from the middle (kept the first and last %" PRIu64
                          "; raise --output-limit)",
                          r->out_dropped, output_bytes / 2);
        if (r->err_dropped)
                cli_error("exec",
                          "%" PRIu64 " bytes of stderr dropped from the middle (kept the first and last %" PRIu64
                          "; raise --output-limit)",
                          r->err_dropped, output_bytes / 2);
        (void) write_all(stdout, r->out + r->out_head_len, r->out_len - r->out_head_len);
        (void) write_all(stderr, r->err + r->err_head_len, r->err_len - r->err_head_len);
        if (r->timed_out)
                cli_error("exec", "timed out after %.3g s and was stopped (raise --timeout)",
                          (double) timeout_ms / 1000.0);
        else if (r->interrupted_signal)
                cli_error("exec", "stopped by %s", strsignal(r->interrupted_signal));
        else if (r->oom_killed)
                cli_error("exec", "the sandbox ran out of memory and the command was killed (raise --memory)");
        else if (r->term_signal)
                cli_error("exec", "the command was killed by signal %d (%s)", r->term_signal,
                          strsignal(r->term_signal));
}

/* What the command line says; run_exec() turns it into the sandbox's spec. */
typedef struct exec_cmd {
        sbx_spec spec;
        char **env; /* SBX_ENV_MAX + 1 entries */
        size_t n_env;
        char **allow, **cidrs; /* SBX_NET_ALLOW_MAX + 1 entries each */
        size_t n_allow, n_cidrs;
        sbx_net_policy net;
        const char *net_log, *net_option;
        bool json, require_isolation, no_warn, stdio, timeout_given;
        const char *environment;
        const char *explicit_limits, *explicit_container; /* options the process tier lacks */
        const char *capture_option;                       /* an option --stdio has no use for */
} exec_cmd;

/* ---- the options: one setter each ---- */

static int set_tier(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (sbx_tier_from_string(arg, &x->spec.tier) < 0)
                return usage_error("--tier must be 'container', 'kernel' or 'process', not '%s'", arg);
        return 0;
}

static int set_timeout(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_duration_ms(arg, 1, SBX_TIMEOUT_MS_MAX, &x->spec.timeout_ms) < 0)
                return usage_error("--timeout wants seconds between 0.001 and 86400, got '%s'", arg);
        x->timeout_given = true;
        return 0;
}

static int set_memory(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_size(arg, SBX_MEMORY_BYTES_MIN, SBX_MEMORY_BYTES_MAX, &x->spec.memory_bytes) < 0)
                return usage_error("--memory wants a size of at least 4M such as 512M or 2G, got '%s'", arg);
        return 0;
}

static int set_pids(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_uint64(arg, 1, SBX_PIDS_MAX, &x->spec.pids) < 0)
                return usage_error("--pids wants a whole number between 1 and 65536, got '%s'", arg);
        x->explicit_limits = "--pids";
        return 0;
}

static int set_cpus(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_cpus(arg, SBX_CPUS_MAX, &x->spec.millicpus) < 0 || x->spec.millicpus < SBX_MILLICPUS_MIN)
                return usage_error("--cpus wants a number of CPUs from 0.01 up, such as 0.5 or 2, got '%s'", arg);
        x->explicit_limits = "--cpus";
        return 0;
}

static int set_tmp_size(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_size(arg, 4096, SBX_TMP_BYTES_MAX, &x->spec.tmp_bytes) < 0)
                return usage_error("--tmp-size wants a size such as 64M, got '%s'", arg);
        x->explicit_container = "--tmp-size";
        return 0;
}

static int set_output_limit(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (parse_size(arg, SBX_OUTPUT_BYTES_MIN, SBX_OUTPUT_BYTES_MAX, &x->spec.output_bytes) < 0)
                return usage_error("--output-limit wants a size between 64 and 256M, got '%s'", arg);
        x->capture_option = "--output-limit";
        return 0;
}

static int set_workdir(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        struct stat st;
        if (stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
                return usage_error("--workdir '%s' is not an existing directory", arg);
        x->spec.workdir = arg;
        return 0;
}

static int set_rootfs(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        struct stat st;
        if (arg[0] != '/' || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
                return usage_error("--rootfs '%s' is not an existing directory given by absolute path", arg);
        x->spec.rootfs = arg;
        x->explicit_container = "--rootfs";
        return 0;
}

static int set_env(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (!strchr(arg, '=') && env_name_is_valid(arg)) {
                x->environment = arg; /* --env NAME: an environment (hull env) */
                return 0;
        }
        if (parse_env_assignment(arg, SBX_ENV_ENTRY_MAX) < 0)
                return usage_error("--env wants NAME=VALUE with NAME made of letters, digits and '_', got '%s'", arg);
        if (x->n_env >= SBX_ENV_MAX)
                return usage_error("too many --env options (at most 128)%s", "");
        x->env[x->n_env++] = (char *) arg;
        return 0;
}

static int set_environment(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (!env_name_is_valid(arg))
                return usage_error("--environment wants an environment's name, got '%s'", arg);
        x->environment = arg;
        return 0;
}

static int set_stdin(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        struct stat st;
        if (stat(arg, &st) < 0 || !S_ISREG(st.st_mode))
                return usage_error("--stdin '%s' is not a regular file", arg);
        x->spec.stdin_path = arg;
        x->capture_option = "--stdin";
        return 0;
}

static int set_json(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->json = true;
        x->capture_option = "--json";
        return 0;
}

static int set_stdio(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->stdio = true;
        return 0;
}

static int set_pass_env(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (!env_name_ok(arg))
                return usage_error("--pass-env wants a variable's name (letters, digits and '_'), got '%s'", arg);
        char *entry = environ_entry(arg);
        if (!entry)
                return 0; /* not set here: not set in the sandbox either */
        if (parse_env_assignment(entry, SBX_ENV_ENTRY_MAX) < 0)
                return usage_error("--pass-env %s: the value is longer than 8192 bytes", arg);
        if (x->n_env >= SBX_ENV_MAX)
                return usage_error("too many --env options (at most 128)%s", "");
        x->env[x->n_env++] = entry;
        return 0;
}

static int set_no_cgroup(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->spec.use_cgroups = false;
        return 0;
}

static int set_require_isolation(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->require_isolation = true;
        return 0;
}

static int set_no_warn(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->no_warn = true;
        return 0;
}

static int set_net(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (sbx_net_mode_from_string(arg, &x->spec.net) < 0)
                return usage_error("--net must be 'none', 'limited' or 'unrestricted', not '%s'", arg);
        return 0;
}

static int set_allow_host(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (!sbx_net_pattern_valid(arg))
                return usage_error("--allow-host wants a host name, *.suffix or an address, not '%s'", arg);
        if (x->n_allow >= SBX_NET_ALLOW_MAX)
                return usage_error("too many --allow-host options (at most %u)", SBX_NET_ALLOW_MAX);
        x->allow[x->n_allow++] = (char *) arg;
        x->net_option = "--allow-host";
        return 0;
}

static int set_allow_pkg(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->net.allow_package_managers = true;
        x->net_option = "--allow-package-managers";
        return 0;
}

static int set_net_loopback(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        (void) arg;
        x->net.allow_loopback = true;
        x->net_option = "--net-allow-loopback";
        return 0;
}

static int set_net_hosts(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        x->net.hosts_file = arg;
        x->net_option = "--net-hosts";
        return 0;
}

static int set_net_cidr(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        if (x->n_cidrs >= SBX_NET_ALLOW_MAX - 2)
                return usage_error("too many --net-allow-cidr options (at most %u)", SBX_NET_ALLOW_MAX - 2);
        x->cidrs[x->n_cidrs++] = (char *) arg;
        x->net_option = "--net-allow-cidr";
        return 0;
}

static int set_net_log(void *ctx, const char *arg) {
        exec_cmd *x = ctx;
        x->net_log = arg;
        x->net_option = "--net-log";
        return 0;
}

static const cli_option exec_options[] = {
        {"tier",
         "container|kernel|process",
         set_tier,
         "isolation tier (default container; kernel runs it under gVisor's runsc; process is NOT isolation)",
         {0}},
        {"timeout", "SECONDS", set_timeout, "wall-clock limit, decimals allowed (default 30)", {0}},
        {"memory", "SIZE", set_memory, "memory limit incl. tmpfs, e.g. 512M (default 512M)", {0}},
        {"pids", "N", set_pids, "process limit (default 256)", {0}},
        {"cpus", "F", set_cpus, "CPU quota in CPUs, e.g. 0.5 (default none)", {0}},
        {"tmp-size", "SIZE", set_tmp_size, "size of /tmp and /dev/shm (default 64M)", {0}},
        {"workdir",
         "DIR",
         set_workdir,
         "host directory mounted at /workspace (kept); default a\n"
         "fresh tmpfs (a temporary directory in the process tier), gone afterwards",
         {0}},
        {"rootfs", "DIR", set_rootfs, "prepared root filesystem instead of the host's /usr", {0}},
        {"env", "K=V", set_env, "set a variable (repeatable); the environment is scrubbed", {0}},
        {NULL,
         NULL,
         NULL,
         "  --env NAME, --environment NAME\n"
         "                            run in environment NAME (hull env): its layer's packages at\n"
         "                            /env and on PATH, built first when missing\n",
         {0}},
        {"environment", "NAME", set_environment, NULL, {0}}, /* in the row above */
        {"pass-env",
         "NAME",
         set_pass_env,
         "set NAME to its value in hull's own environment (repeatable;\n"
         "keeps a secret off the command line)",
         {0}},
        {"stdin", "FILE", set_stdin, "feed FILE on stdin (default: empty)", {0}},
        {"stdio",
         NULL,
         set_stdio,
         "hand our stdin, stdout and stderr (pipes, sockets, a terminal\n"
         "or /dev/null) to the command, live: nothing is captured, no\n"
         "--timeout unless given (a stdio server, e.g. MCP's)",
         {0}},
        {"output-limit", "SIZE", set_output_limit, "bytes kept per stream, first and last half (default 1M)", {0}},
        {"json", NULL, set_json, "print one JSON object with the whole result", {0}},
        {"no-cgroup", NULL, set_no_cgroup, "run without cgroup limits (memory, pids, cpus)", {0}},
        {"require-isolation", NULL, set_require_isolation, "refuse any tier that is not isolation", {0}},
        {"no-isolation-warning", NULL, set_no_warn, "silence the process tier's warning", {0}},
        {"net",
         "none|limited|unrestricted",
         set_net,
         "network (default none: loopback only); limited: only\n"
         "through hull's proxy (HTTP_PROXY is set) to allowed hosts;\n"
         "unrestricted: through pasta (passt), but not the host's\n"
         "loopback nor 169.254.0.0/16 (metadata)",
         {0}},
        {"allow-host",
         "PATTERN",
         set_allow_host,
         "limited: a host the sandbox may reach: NAME, *.SUFFIX or\n"
         "an address (repeatable)",
         {0}},
        {"allow-package-managers",
         NULL,
         set_allow_pkg,
         "limited: also the apt, npm and PyPI registries this host uses",
         {0}},
        {"net-log", "FILE", set_net_log, "limited: append a line per connection to FILE (default stderr)", {0}},
        {"net-allow-cidr",
         "CIDR",
         set_net_cidr,
         "limited: let the egress guard pass these internal addresses\n"
         "(your own mirror or gateway; metadata stays refused)",
         {0}},
        {"net-allow-loopback", NULL, set_net_loopback, "TESTING ONLY: let the proxy reach 127.0.0.0/8 and ::1", {0}},
        {"net-hosts", "FILE", set_net_hosts, "TESTING ONLY: 'ADDRESS NAME...' lines the proxy reads before DNS", {0}},
};

static const cli_options exec_cli = {
        .cmd = "exec",
        .usage_status = SBX_EXIT_SETUP,
        .help = cli_exec_help,
        .table = exec_options,
        .n = ELEMENTSOF(exec_options),
        .width = 25,
};

void cli_exec_help(void) {
        printf("Usage: hull exec [OPTIONS] -- CMD [ARG...]\n\n"
               "Run CMD in a fresh sandbox and exit with its status.\n\n"
               "Options:\n");
        cli_options_help(&exec_cli);
        printf("\nExit status: the command's; 124 on timeout; 125 when hull or the sandbox failed\n"
               "(the reason is printed); 128+N when the command was killed by signal N.\n");
}

/* ---- the run ---- */

/* The environment (hull env) x names: its layer at /env, built first when missing; its variables
 * before --env's; its network policy, with what --allow-host added. Returns 0 or an exit status. */
static int apply_environment(exec_cmd *x, char layer[static SBX_PATH_MAX], env_spec *es) {
        hull_error ee = {0};
        char home[SBX_PATH_MAX];
        if (x->spec.tier == SBX_TIER_PROCESS)
                return usage_error("--env %s needs the container tier (--tier container)", x->environment);
        if (cli_home(NULL, home, &ee) < 0 ||
            cli_env_layer(home, x->environment, true, layer, es, NULL, NULL, &ee) < 0) {
                cli_report("exec", &ee);
                return SBX_EXIT_SETUP;
        }
        if (es->net == ENV_NET_UNRESTRICTED)
                x->spec.net = SBX_NET_UNRESTRICTED;
        if (es->net == ENV_NET_LIMITED) {
                for (size_t i = 0; i < es->n_allowed_hosts; i++) {
                        if (x->n_allow >= SBX_NET_ALLOW_MAX)
                                return usage_error("too many allowed hosts with environment %s", x->environment);
                        x->allow[x->n_allow++] = es->allowed_hosts[i];
                }
                x->net.allow_package_managers = x->net.allow_package_managers || es->allow_package_managers;
                x->spec.net = SBX_NET_LIMITED;
        }
        if (layer[0]) {
                char *const *lv = env_layer_sandbox_env();
                size_t nl = 0;
                while (lv[nl])
                        nl++;
                if (x->n_env + nl > SBX_ENV_MAX)
                        return usage_error("too many --env options with environment %s", x->environment);
                memmove(x->env + nl, x->env, x->n_env * sizeof(*x->env));
                for (size_t i = 0; i < nl; i++)
                        x->env[i] = lv[i];
                x->n_env += nl;
                x->spec.layer_dir = layer;
        }
        return 0;
}

/* What the options say together, checked once all are read: the command, --stdio, the process
 * tier. Returns 0 or a usage error's status. */
static int check_options(exec_cmd *x, int argc, char **argv) {
        if (optind >= argc)
                return usage_error("no command given%s", "");
        if (x->stdio && x->capture_option)
                return usage_error("--stdio hands over stdin and stdout: %s has no use with it", x->capture_option);
        if (x->stdio && x->spec.tier == SBX_TIER_PROCESS)
                return usage_error("--stdio needs the container or kernel tier (--tier container)%s", "");
        if (x->stdio && !x->timeout_given)
                x->spec.timeout_ms = 0; /* a server lives as long as its client */
        if ((size_t) (argc - optind) > SBX_ARGV_MAX)
                return usage_error("too many arguments for the command (at most 4096)%s", "");
        if (x->spec.tier == SBX_TIER_PROCESS) {
                if (x->require_isolation)
                        return usage_error("--require-isolation refuses --tier %s: it is not isolation", "process");
                if (x->explicit_container)
                        return usage_error("%s needs the container tier (--tier container)", x->explicit_container);
                if (x->explicit_limits)
                        return usage_error("%s needs cgroups, which the process tier does not use (--tier container)",
                                           x->explicit_limits);
                if (!x->no_warn)
                        cli_error("warning",
                                  "--tier process is not isolation: the command runs with your user's rights, "
                                  "only limited and scrubbed (silence with --no-isolation-warning)");
        }
        return 0;
}

/* The network's options, once the environment's policy is in: checked, --net-log opened into
 * *log_fd. Returns 0 or a usage error's status. */
static int check_net(exec_cmd *x, int *log_fd) {
        if (x->net_option && x->spec.net != SBX_NET_LIMITED)
                return usage_error("%s needs --net limited", x->net_option);
        if (x->spec.net != SBX_NET_NONE && x->spec.tier != SBX_TIER_CONTAINER && x->spec.tier != SBX_TIER_KERNEL)
                return usage_error("--net %s needs the container tier (--tier container)",
                                   sbx_net_mode_to_string(x->spec.net));
        if (x->net_log) {
                *log_fd = open(x->net_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
                if (*log_fd < 0)
                        return usage_error("--net-log '%s' cannot be opened: %s", x->net_log, strerror(errno));
                x->net.log_fd = *log_fd;
        }
        if (x->spec.net == SBX_NET_LIMITED)
                x->spec.net_policy = &x->net;
        return 0;
}

/* Run the sandbox and report; Ctrl-C, SIGTERM and SIGHUP stop it like a timeout, so hull still
 * reaps it, removes its cgroups and reports. Returns the exit status. */
static int run_exec(exec_cmd *x) {
        signal(SIGPIPE, SIG_IGN);
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        _cleanup_close_ int sfd = -1;
        if (sigprocmask(SIG_BLOCK, &stop, NULL) == 0) {
                sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
                if (sfd < 0) /* no way to hear them: let them act as usual */
                        sigprocmask(SIG_UNBLOCK, &stop, NULL);
        }
        x->spec.cancel_fd = sfd;

        sbx_result res;
        hull_error e = {0};
        if (sbx_run(&x->spec, &res, &e) < 0) {
                cli_report("exec", &e);
                return SBX_EXIT_SETUP;
        }
        if (x->json) {
                if (print_json(&res) < 0) {
                        sbx_result_done(&res);
                        return SBX_EXIT_SETUP;
                }
        } else
                print_plain(&res, x->spec.timeout_ms, x->spec.output_bytes);
        if (res.warning[0])
                cli_error("warning", "%s", res.warning);
        int status = sbx_result_exit_status(&res);
        sbx_result_done(&res);
        return status;
}

int cli_exec_main(int argc, char **argv) {
        _cleanup_free_ char **env = calloc(SBX_ENV_MAX + 1, sizeof(char *));
        _cleanup_free_ char **allow = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        _cleanup_free_ char **cidrs = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        exec_cmd x = {
                .spec =
                        {
                                .tier = SBX_TIER_CONTAINER,
                                .timeout_ms = SBX_DEFAULT_TIMEOUT_MS,
                                .memory_bytes = SBX_DEFAULT_MEMORY_BYTES,
                                .pids = SBX_DEFAULT_PIDS,
                                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                                .output_bytes = SBX_DEFAULT_OUTPUT_BYTES,
                                .use_cgroups = true,
                                .cancel_fd = -1,
                        },
                .env = env,
                .allow = allow,
                .cidrs = cidrs,
                .net = {.allowed_hosts = allow, .allow_cidrs = cidrs, .log_fd = STDERR_FILENO},
        };
        _cleanup_close_ int log_fd = -1;
        _cleanup_(env_spec_done) env_spec es = {0}; /* the environment's spec: allow[] borrows its hosts */
        char layer[SBX_PATH_MAX] = "";
        bool done;
        int r;

        if (!env || !allow || !cidrs) {
                cli_error("exec", "out of memory");
                return SBX_EXIT_SETUP;
        }
        r = cli_options_parse(&exec_cli, argc, argv, &x, &done);
        if (r || done)
                return r;
        r = check_options(&x, argc, argv);
        if (r)
                return r;
        if (x.environment && (r = apply_environment(&x, layer, &es)))
                return r;
        if ((r = check_net(&x, &log_fd)))
                return r;
        x.spec.argv = argv + optind;
        x.spec.env = env;
        x.spec.stream_output = !x.json;
        x.spec.stdio = x.stdio;
        return run_exec(&x);
}
