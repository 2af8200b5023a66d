/* cli-exec.c: `hull exec`: parse and validate the options, run the sandbox, report the result
 * as the command's own output and exit status, or as one JSON object with --json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

enum {
        OPT_TIER = 0x100,
        OPT_TIMEOUT,
        OPT_MEMORY,
        OPT_PIDS,
        OPT_CPUS,
        OPT_TMP_SIZE,
        OPT_WORKDIR,
        OPT_ROOTFS,
        OPT_ENV,
        OPT_STDIN,
        OPT_JSON,
        OPT_OUTPUT_LIMIT,
        OPT_NO_CGROUP,
        OPT_REQUIRE_ISOLATION,
        OPT_NO_WARN,
        OPT_ENVIRONMENT,
        OPT_NET,
        OPT_ALLOW_HOST,
        OPT_ALLOW_PKG,
        OPT_NET_LOOPBACK,
        OPT_NET_HOSTS,
        OPT_NET_LOG,
        OPT_NET_CIDR,
        OPT_STDIO,
        OPT_PASS_ENV,
};

static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"tier", required_argument, NULL, OPT_TIER},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"pids", required_argument, NULL, OPT_PIDS},
        {"cpus", required_argument, NULL, OPT_CPUS},
        {"tmp-size", required_argument, NULL, OPT_TMP_SIZE},
        {"workdir", required_argument, NULL, OPT_WORKDIR},
        {"rootfs", required_argument, NULL, OPT_ROOTFS},
        {"env", required_argument, NULL, OPT_ENV},
        {"stdin", required_argument, NULL, OPT_STDIN},
        {"json", no_argument, NULL, OPT_JSON},
        {"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
        {"no-cgroup", no_argument, NULL, OPT_NO_CGROUP},
        {"require-isolation", no_argument, NULL, OPT_REQUIRE_ISOLATION},
        {"no-isolation-warning", no_argument, NULL, OPT_NO_WARN},
        {"environment", required_argument, NULL, OPT_ENVIRONMENT},
        {"net", required_argument, NULL, OPT_NET},
        {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
        {"allow-package-managers", no_argument, NULL, OPT_ALLOW_PKG},
        {"net-allow-loopback", no_argument, NULL, OPT_NET_LOOPBACK},
        {"net-hosts", required_argument, NULL, OPT_NET_HOSTS},
        {"net-log", required_argument, NULL, OPT_NET_LOG},
        {"net-allow-cidr", required_argument, NULL, OPT_NET_CIDR},
        {"stdio", no_argument, NULL, OPT_STDIO},
        {"pass-env", required_argument, NULL, OPT_PASS_ENV},
        {},
};

void cli_exec_help(void) {
        printf("Usage: hull exec [OPTIONS] -- CMD [ARG...]\n\n"
               "Run CMD in a fresh sandbox and exit with its status.\n\n"
               "Options:\n"
               "  --tier container|process  isolation tier (default container; process is NOT isolation)\n"
               "  --timeout SECONDS         wall-clock limit, decimals allowed (default 30)\n"
               "  --memory SIZE             memory limit incl. tmpfs, e.g. 512M (default 512M)\n"
               "  --pids N                  process limit (default 256)\n"
               "  --cpus F                  CPU quota in CPUs, e.g. 0.5 (default none)\n"
               "  --tmp-size SIZE           size of /tmp and /dev/shm (default 64M)\n"
               "  --workdir DIR             host directory mounted at /workspace (kept); default a\n"
               "                            fresh temporary directory, removed afterwards\n"
               "  --rootfs DIR              prepared root filesystem instead of the host's /usr\n"
               "  --env K=V                 set a variable (repeatable); the environment is scrubbed\n"
               "  --env NAME, --environment NAME\n"
               "                            run in environment NAME (hull env): its layer's packages at\n"
               "                            /env and on PATH, built first when missing\n"
               "  --pass-env NAME           set NAME to its value in hull's own environment (repeatable;\n"
               "                            keeps a secret off the command line)\n"
               "  --stdin FILE              feed FILE on stdin (default: empty)\n"
               "  --stdio                   hand our stdin, stdout and stderr (pipes, sockets, a terminal\n"
               "                            or /dev/null) to the command, live: nothing is captured, no\n"
               "                            --timeout unless given (a stdio server, e.g. MCP's)\n"
               "  --output-limit SIZE       bytes kept per stream, first and last half (default 1M)\n"
               "  --json                    print one JSON object with the whole result\n"
               "  --no-cgroup               run without cgroup limits (memory, pids, cpus)\n"
               "  --require-isolation       refuse any tier that is not isolation\n"
               "  --no-isolation-warning    silence the process tier's warning\n"
               "  --net none|limited|unrestricted  network (default none: loopback only); limited: only\n"
               "                            through hull's proxy (HTTP_PROXY is set) to allowed hosts;\n"
               "                            unrestricted: through pasta (passt), but not the host's\n"
               "                            loopback nor 169.254.0.0/16 (metadata)\n"
               "  --allow-host PATTERN      limited: a host the sandbox may reach: NAME, *.SUFFIX or\n"
               "                            an address (repeatable)\n"
               "  --allow-package-managers  limited: also the apt, npm and PyPI registries this host uses\n"
               "  --net-log FILE            limited: append a line per connection to FILE (default stderr)\n"
               "  --net-allow-cidr CIDR     limited: let the egress guard pass these internal addresses\n"
               "                            (your own mirror or gateway; metadata stays refused)\n"
               "  --net-allow-loopback      TESTING ONLY: let the proxy reach 127.0.0.0/8 and ::1\n"
               "  --net-hosts FILE          TESTING ONLY: 'ADDRESS NAME...' lines the proxy reads before DNS\n\n"
               "Exit status: the command's; 124 on timeout; 125 when hull or the sandbox failed\n"
               "(the reason is printed); 128+N when the command was killed by signal N.\n");
}

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

int cli_exec_main(int argc, char **argv) {
        sbx_spec spec = {
                .tier = SBX_TIER_CONTAINER,
                .timeout_ms = SBX_DEFAULT_TIMEOUT_MS,
                .memory_bytes = SBX_DEFAULT_MEMORY_BYTES,
                .pids = SBX_DEFAULT_PIDS,
                .tmp_bytes = SBX_DEFAULT_TMP_BYTES,
                .output_bytes = SBX_DEFAULT_OUTPUT_BYTES,
                .use_cgroups = true,
                .cancel_fd = -1,
        };
        _cleanup_free_ char **env = calloc(SBX_ENV_MAX + 1, sizeof(char *));
        size_t n_env = 0;
        _cleanup_free_ char **allow = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        _cleanup_free_ char **cidrs = calloc(SBX_NET_ALLOW_MAX + 1, sizeof(char *));
        size_t n_allow = 0, n_cidrs = 0;
        sbx_net_policy net = {.allowed_hosts = allow, .allow_cidrs = cidrs, .log_fd = STDERR_FILENO};
        const char *net_log = NULL, *net_option = NULL;
        _cleanup_close_ int log_fd = -1;
        bool json = false, require_isolation = false, no_warn = false;
        const char *environment = NULL;
        _cleanup_(env_spec_done) env_spec es = {0}; /* its spec: allow[] borrows its hosts */
        char layer[SBX_PATH_MAX] = "";
        const char *explicit_limits = NULL, *explicit_container = NULL; /* options the process tier lacks */
        bool stdio = false, timeout_given = false;
        const char *capture_option = NULL; /* an option --stdio has no use for */
        int c, r;

        if (!env || !allow || !cidrs) {
                cli_error("exec", "out of memory");
                return SBX_EXIT_SETUP;
        }
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        cli_exec_help();
                        return 0;
                case OPT_TIER:
                        if (sbx_tier_from_string(optarg, &spec.tier) < 0)
                                return usage_error("--tier must be 'container' or 'process', not '%s'", optarg);
                        break;
                case OPT_TIMEOUT:
                        if (parse_duration_ms(optarg, 1, SBX_TIMEOUT_MS_MAX, &spec.timeout_ms) < 0)
                                return usage_error("--timeout wants seconds between 0.001 and 86400, got '%s'", optarg);
                        timeout_given = true;
                        break;
                case OPT_MEMORY:
                        if (parse_size(optarg, SBX_MEMORY_BYTES_MIN, SBX_MEMORY_BYTES_MAX, &spec.memory_bytes) < 0)
                                return usage_error("--memory wants a size of at least 4M such as 512M or 2G, got '%s'",
                                                   optarg);
                        break;
                case OPT_PIDS:
                        if (parse_uint64(optarg, 1, SBX_PIDS_MAX, &spec.pids) < 0)
                                return usage_error("--pids wants a whole number between 1 and 65536, got '%s'", optarg);
                        explicit_limits = "--pids";
                        break;
                case OPT_CPUS:
                        if (parse_cpus(optarg, SBX_CPUS_MAX, &spec.millicpus) < 0 || spec.millicpus < SBX_MILLICPUS_MIN)
                                return usage_error(
                                        "--cpus wants a number of CPUs from 0.01 up, such as 0.5 or 2, got '%s'",
                                        optarg);
                        explicit_limits = "--cpus";
                        break;
                case OPT_TMP_SIZE:
                        if (parse_size(optarg, 4096, SBX_TMP_BYTES_MAX, &spec.tmp_bytes) < 0)
                                return usage_error("--tmp-size wants a size such as 64M, got '%s'", optarg);
                        explicit_container = "--tmp-size";
                        break;
                case OPT_OUTPUT_LIMIT:
                        if (parse_size(optarg, SBX_OUTPUT_BYTES_MIN, SBX_OUTPUT_BYTES_MAX, &spec.output_bytes) < 0)
                                return usage_error("--output-limit wants a size between 64 and 256M, got '%s'", optarg);
                        capture_option = "--output-limit";
                        break;
                case OPT_WORKDIR: {
                        struct stat st;
                        if (stat(optarg, &st) < 0 || !S_ISDIR(st.st_mode))
                                return usage_error("--workdir '%s' is not an existing directory", optarg);
                        spec.workdir = optarg;
                        break;
                }
                case OPT_ROOTFS: {
                        struct stat st;
                        if (optarg[0] != '/' || stat(optarg, &st) < 0 || !S_ISDIR(st.st_mode))
                                return usage_error("--rootfs '%s' is not an existing directory given by absolute path",
                                                   optarg);
                        spec.rootfs = optarg;
                        explicit_container = "--rootfs";
                        break;
                }
                case OPT_ENV:
                        if (!strchr(optarg, '=') && env_name_is_valid(optarg)) {
                                environment = optarg; /* --env NAME: an environment (hull env) */
                                break;
                        }
                        if (parse_env_assignment(optarg, SBX_ENV_ENTRY_MAX) < 0)
                                return usage_error(
                                        "--env wants NAME=VALUE with NAME made of letters, digits and '_', got '%s'",
                                        optarg);
                        if (n_env >= SBX_ENV_MAX)
                                return usage_error("too many --env options (at most 128)%s", "");
                        env[n_env++] = optarg;
                        break;
                case OPT_ENVIRONMENT:
                        if (!env_name_is_valid(optarg))
                                return usage_error("--environment wants an environment's name, got '%s'", optarg);
                        environment = optarg;
                        break;
                case OPT_STDIN: {
                        struct stat st;
                        if (stat(optarg, &st) < 0 || !S_ISREG(st.st_mode))
                                return usage_error("--stdin '%s' is not a regular file", optarg);
                        spec.stdin_path = optarg;
                        capture_option = "--stdin";
                        break;
                }
                case OPT_JSON:
                        json = true;
                        capture_option = "--json";
                        break;
                case OPT_STDIO:
                        stdio = true;
                        break;
                case OPT_PASS_ENV: {
                        if (!env_name_ok(optarg))
                                return usage_error("--pass-env wants a variable's name (letters, digits and '_'), got "
                                                   "'%s'",
                                                   optarg);
                        char *entry = environ_entry(optarg);
                        if (!entry)
                                break; /* not set here: not set in the sandbox either */
                        if (parse_env_assignment(entry, SBX_ENV_ENTRY_MAX) < 0)
                                return usage_error("--pass-env %s: the value is longer than 8192 bytes", optarg);
                        if (n_env >= SBX_ENV_MAX)
                                return usage_error("too many --env options (at most 128)%s", "");
                        env[n_env++] = entry;
                        break;
                }
                case OPT_NO_CGROUP:
                        spec.use_cgroups = false;
                        break;
                case OPT_REQUIRE_ISOLATION:
                        require_isolation = true;
                        break;
                case OPT_NO_WARN:
                        no_warn = true;
                        break;
                case OPT_NET:
                        if (sbx_net_mode_from_string(optarg, &spec.net) < 0)
                                return usage_error("--net must be 'none', 'limited' or 'unrestricted', not '%s'",
                                                   optarg);
                        break;
                case OPT_ALLOW_HOST:
                        if (!sbx_net_pattern_valid(optarg))
                                return usage_error("--allow-host wants a host name, *.suffix or an address, not '%s'",
                                                   optarg);
                        if (n_allow >= SBX_NET_ALLOW_MAX)
                                return usage_error("too many --allow-host options (at most %u)", SBX_NET_ALLOW_MAX);
                        allow[n_allow++] = optarg;
                        net_option = "--allow-host";
                        break;
                case OPT_ALLOW_PKG:
                        net.allow_package_managers = true;
                        net_option = "--allow-package-managers";
                        break;
                case OPT_NET_LOOPBACK:
                        net.allow_loopback = true;
                        net_option = "--net-allow-loopback";
                        break;
                case OPT_NET_HOSTS:
                        net.hosts_file = optarg;
                        net_option = "--net-hosts";
                        break;
                case OPT_NET_CIDR:
                        if (n_cidrs >= SBX_NET_ALLOW_MAX - 2)
                                return usage_error("too many --net-allow-cidr options (at most %u)",
                                                   SBX_NET_ALLOW_MAX - 2);
                        cidrs[n_cidrs++] = optarg;
                        net_option = "--net-allow-cidr";
                        break;
                case OPT_NET_LOG:
                        net_log = optarg;
                        net_option = "--net-log";
                        break;
                case '?':
                default:
                        /* getopt has moved past the offending argument. */
                        return usage_error("option '%s' is unknown or lacks its value", argv[optind - 1]);
                }
        }
        if (optind >= argc)
                return usage_error("no command given%s", "");
        if (stdio && capture_option)
                return usage_error("--stdio hands over stdin and stdout: %s has no use with it", capture_option);
        if (stdio && spec.tier != SBX_TIER_CONTAINER)
                return usage_error("--stdio needs the container tier (--tier container)%s", "");
        if (stdio && !timeout_given)
                spec.timeout_ms = 0; /* a server lives as long as its client */
        if ((size_t) (argc - optind) > SBX_ARGV_MAX)
                return usage_error("too many arguments for the command (at most 4096)%s", "");
        if (spec.tier == SBX_TIER_PROCESS) {
                if (require_isolation)
                        return usage_error("--require-isolation refuses --tier %s: it is not isolation", "process");
                if (explicit_container)
                        return usage_error("%s needs the container tier (--tier container)", explicit_container);
                if (explicit_limits)
                        return usage_error("%s needs cgroups, which the process tier does not use (--tier container)",
                                           explicit_limits);
                if (!no_warn)
                        cli_error("warning",
                                  "--tier process is not isolation: the command runs with your user's rights, "
                                  "only limited and scrubbed (silence with --no-isolation-warning)");
        }
        if (environment) {
                /* Its layer at /env, built first when missing; its variables before --env's. */
                hull_error ee = {0};
                char home[SBX_PATH_MAX];
                if (spec.tier == SBX_TIER_PROCESS)
                        return usage_error("--env %s needs the container tier (--tier container)", environment);
                if (cli_home(NULL, home, &ee) < 0 ||
                    cli_env_layer(home, environment, true, layer, &es, NULL, NULL, &ee) < 0) {
                        cli_report("exec", &ee);
                        return SBX_EXIT_SETUP;
                }
                if (es.net == ENV_NET_UNRESTRICTED)
                        spec.net = SBX_NET_UNRESTRICTED;
                if (es.net == ENV_NET_LIMITED) {
                        /* The environment's policy, with what --allow-host added. */
                        for (size_t i = 0; i < es.n_allowed_hosts; i++) {
                                if (n_allow >= SBX_NET_ALLOW_MAX)
                                        return usage_error("too many allowed hosts with environment %s", environment);
                                allow[n_allow++] = es.allowed_hosts[i];
                        }
                        net.allow_package_managers = net.allow_package_managers || es.allow_package_managers;
                        spec.net = SBX_NET_LIMITED;
                }
                if (layer[0]) {
                        char *const *lv = env_layer_sandbox_env();
                        size_t nl = 0;
                        while (lv[nl])
                                nl++;
                        if (n_env + nl > SBX_ENV_MAX)
                                return usage_error("too many --env options with environment %s", environment);
                        memmove(env + nl, env, n_env * sizeof(*env));
                        for (size_t i = 0; i < nl; i++)
                                env[i] = lv[i];
                        n_env += nl;
                        spec.layer_dir = layer;
                }
        }
        if (net_option && spec.net != SBX_NET_LIMITED)
                return usage_error("%s needs --net limited", net_option);
        if (spec.net != SBX_NET_NONE && spec.tier != SBX_TIER_CONTAINER)
                return usage_error("--net %s needs the container tier (--tier container)",
                                   sbx_net_mode_to_string(spec.net));
        if (net_log) {
                log_fd = open(net_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
                if (log_fd < 0)
                        return usage_error("--net-log '%s' cannot be opened: %s", net_log, strerror(errno));
                net.log_fd = log_fd;
        }
        if (spec.net == SBX_NET_LIMITED)
                spec.net_policy = &net;
        spec.argv = argv + optind;
        spec.env = env;
        spec.stream_output = !json;
        spec.stdio = stdio;
        signal(SIGPIPE, SIG_IGN);

        /* Ctrl-C, SIGTERM and SIGHUP stop the sandbox like a timeout, so hull still reaps it,
         * removes its cgroups and reports. */
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
        spec.cancel_fd = sfd;

        sbx_result res;
        hull_error e = {0};
        r = sbx_run(&spec, &res, &e);
        if (r < 0) {
                cli_report("exec", &e);
                return SBX_EXIT_SETUP;
        }
        if (json) {
                if (print_json(&res) < 0) {
                        sbx_result_done(&res);
                        return SBX_EXIT_SETUP;
                }
        } else
                print_plain(&res, spec.timeout_ms, spec.output_bytes);
        if (res.warning[0])
                cli_error("warning", "%s", res.warning);
        int status = sbx_result_exit_status(&res);
        sbx_result_done(&res);
        return status;
}
