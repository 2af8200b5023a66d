/* mcp-client-proc.c: an MCP client's stdio server as a process: spawning it (in a sandbox when
 * asked), its stderr's last bytes, reaping it, killing its group, and quoting what it wrote in
 * error messages. Below mcp-client.c, which calls it through mcp-client-internal.h. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dynbuf.h"
#include "http-client.h"
#include "macro.h"
#include "mcp-client-internal.h"
#include "mcp-jsonrpc.h"
#include "sse.h"
#include "time-util.h"

extern char **environ;

/* ---- quoting what a server wrote ---- */

/* At most MCP_QUOTE_MAX bytes of p, control bytes and non-ASCII as '?', into buf. */
const char *mcpc_quote(const char *p, size_t n, char buf[MCP_QUOTE_MAX + 4]) {
        size_t o = 0;
        for (size_t i = 0; i < n && o < MCP_QUOTE_MAX; i++)
                buf[o++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
        if (n > MCP_QUOTE_MAX) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o] = '\0';
        return buf;
}

/* The last line of stderr with text in it (for an error message), or "". */
const char *mcpc_stderr_last_line(const mcp_client *c, char buf[MCP_QUOTE_MAX + 4]) {
        char lin[MCP_STDERR_TAIL];
        size_t n = c->tail_len;
        /* unroll the ring: the oldest byte is at tail_at when it is full */
        size_t start = c->tail_len < sizeof(c->tail) ? 0 : c->tail_at;
        for (size_t i = 0; i < n; i++)
                lin[i] = c->tail[(start + i) % sizeof(c->tail)];
        while (n > 0 && (lin[n - 1] == '\n' || lin[n - 1] == '\r' || lin[n - 1] == ' '))
                n--;
        size_t b = n;
        while (b > 0 && lin[b - 1] != '\n')
                b--;
        return mcpc_quote(lin + b, n - b, buf);
}

/* Mark the connection failed (the first failure stays) and return its error. */
int mcpc_broke(mcp_client *c, hull_error *e, int err, const char *fmt, ...) {
        if (c->broken.err == 0) {
                char msg[HULL_ERROR_MSG_MAX];
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(msg, sizeof(msg), fmt, ap);
                va_end(ap);
                hull_fail(&c->broken, err, "mcp: %s: %s", c->name, msg);
        }
        if (e)
                *e = c->broken;
        return c->broken.err;
}

/* ---- the process ---- */

static void keep_stderr(mcp_client *c, const char *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                c->tail[c->tail_at] = p[i];
                c->tail_at = (c->tail_at + 1) % sizeof(c->tail);
                if (c->tail_len < sizeof(c->tail))
                        c->tail_len++;
        }
}

/* Read what stderr has now (non-blocking). */
void mcpc_drain_stderr(mcp_client *c) {
        char buf[4096];
        while (c->err_fd >= 0) {
                ssize_t k = read(c->err_fd, buf, sizeof(buf));
                if (k > 0) {
                        keep_stderr(c, buf, (size_t) k);
                        continue;
                }
                if (k == 0 || (errno != EINTR && errno != EAGAIN))
                        c->err_fd = safe_close(c->err_fd);
                if (k < 0 && errno == EINTR)
                        continue;
                break;
        }
}

/* Reap the server if it has exited, waiting at most wait_ms for it (reading its stderr
 * meanwhile). Returns true once reaped. */
bool mcpc_reap(mcp_client *c, uint64_t wait_ms) {
        uint64_t until = now_mono_ms() + wait_ms;
        while (c->pid > 0) {
                int st;
                pid_t p = waitpid(c->pid, &st, WNOHANG);
                if (p == c->pid || (p < 0 && errno == ECHILD)) {
                        c->status = p == c->pid ? st : 0;
                        c->pid = 0;
                        break;
                }
                uint64_t now = now_mono_ms();
                if (now >= until)
                        return false;
                struct pollfd pf = {.fd = c->err_fd, .events = POLLIN};
                (void) poll(&pf, c->err_fd >= 0 ? 1 : 0, (int) MIN(until - now, 20ULL));
                mcpc_drain_stderr(c);
                /* stdout is not read here any more: what is left there is dropped */
                if (c->out_fd >= 0) {
                        char buf[4096];
                        while (read(c->out_fd, buf, sizeof(buf)) > 0)
                                ;
                }
        }
        mcpc_drain_stderr(c);
        return true;
}

/* "exited with status 1", "was killed by signal 9" */
static const char *exit_text(const mcp_client *c, char buf[64]) {
        if (c->pid > 0)
                snprintf(buf, 64, "closed its stdout");
        else if (WIFEXITED(c->status))
                snprintf(buf, 64, "exited with status %d", WEXITSTATUS(c->status));
        else if (WIFSIGNALED(c->status))
                snprintf(buf, 64, "was killed by signal %d", WTERMSIG(c->status));
        else
                snprintf(buf, 64, "ended");
        return buf;
}

/* The server is gone (EOF on stdout, EPIPE on stdin): its status and the end of its stderr. */
int mcpc_server_gone(mcp_client *c, hull_error *e) {
        char how[64], last[MCP_QUOTE_MAX + 4];
        (void) mcpc_reap(c, 1000);
        mcpc_stderr_last_line(c, last);
        return mcpc_broke(c, e, -EPIPE, "the server %s%s%s%s%s", exit_text(c, how),
                          c->what ? " while hull waited for " : "", c->what ? c->what : "",
                          last[0] ? "; its stderr ended with: " : " (it wrote nothing on stderr)", last);
}

void mcpc_kill_group(mcp_client *c, int sig) {
        if (c->pid > 0 && kill(-c->pgid, sig) < 0 && errno == ESRCH)
                (void) kill(c->pid, sig);
}

static int set_nonblock(int fd) {
        int fl = fcntl(fd, F_GETFL);
        return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* `hull exec --stdio` around a sandboxed server's command: argv's strings are static, cfg's, or
 * in strings (the work directory, the names of env's entries). */
typedef struct sandbox_cmd {
        const char **argv;
        char *strings;
} sandbox_cmd;

static int sandbox_argv(mcp_client *c, const mcp_stdio_config *cfg, sandbox_cmd *ret, hull_error *e) {
        const mcp_sandbox *sb = cfg->sandbox;
        size_t n_argv = 0, n_hosts = 0, n_env = 0, n = 0, used = 0;
        while (cfg->argv[n_argv])
                n_argv++;
        while (sb->allow_hosts && sb->allow_hosts[n_hosts])
                n_hosts++;
        while (cfg->env && cfg->env[n_env])
                n_env++;
        if (n_hosts > SBX_NET_ALLOW_MAX)
                return hull_fail(e, -E2BIG, "mcp: %s: sandbox: more than %u allowed hosts", c->name, SBX_NET_ALLOW_MAX);
        size_t names = 0;
        for (size_t i = 0; i < n_env; i++)
                names += strcspn(cfg->env[i], "=") + 1;
        /* the server's directory, absolute: hull exec checks it and binds it at /workspace */
        _cleanup_free_ char *dir = realpath(cfg->cwd ? cfg->cwd : ".", NULL);
        if (!dir)
                return hull_err_hint(e, -errno, "give the entry an existing \"cwd\" (or \"workdir\")",
                                     "mcp: %s: sandbox: the server's directory %s", c->name,
                                     cfg->cwd ? cfg->cwd : "(the current one)");
        /* a whole home (or the root) read-write to the server is never what was meant */
        const char *home = getenv("HOME");
        _cleanup_free_ char *real_home = home && home[0] ? realpath(home, NULL) : NULL;
        if (strcmp(dir, "/") == 0 || (real_home && strcmp(dir, real_home) == 0))
                return hull_fail(e, -EINVAL,
                                 "mcp: %s: sandbox: the server's directory would be %s, all of it writable by the "
                                 "server; give it a directory of its own (the entry's \"workdir\" or \"cwd\", or "
                                 "run hull from that directory)",
                                 c->name, dir);
        used = strlen(dir) + 1;
        ret->argv = calloc(16 + 2 * n_hosts + 2 * n_env + n_argv + 1, sizeof(*ret->argv));
        ret->strings = malloc(used + names);
        if (!ret->argv || !ret->strings)
                return hull_err(e, -ENOMEM, "mcp: %s: out of memory", c->name);
        memcpy(ret->strings, dir, used);
        const char **a = ret->argv;
        a[n++] = sb->exe ? sb->exe : "/proc/self/exe";
        a[n++] = "exec";
        a[n++] = "--stdio";
        a[n++] = "--require-isolation";
        a[n++] = "--workdir";
        a[n++] = ret->strings;
        a[n++] = "--net";
        a[n++] = n_hosts || sb->allow_package_managers ? "limited" : "none";
        for (size_t i = 0; i < n_hosts; i++) {
                a[n++] = "--allow-host";
                a[n++] = sb->allow_hosts[i];
        }
        if (sb->allow_package_managers)
                a[n++] = "--allow-package-managers";
        if (sb->allow_loopback && (n_hosts || sb->allow_package_managers))
                a[n++] = "--net-allow-loopback";
        /* by name only: the values reach hull exec in its environment (spawn adds env's entries) */
        for (size_t i = 0; i < n_env; i++) {
                const char *eq = strchr(cfg->env[i], '=');
                size_t k = eq ? (size_t) (eq - cfg->env[i]) : strlen(cfg->env[i]);
                memcpy(ret->strings + used, cfg->env[i], k);
                ret->strings[used + k] = '\0';
                a[n++] = "--pass-env";
                a[n++] = ret->strings + used;
                used += k + 1;
        }
        a[n++] = "--";
        for (size_t i = 0; i < n_argv; i++)
                a[n++] = cfg->argv[i];
        a[n] = NULL;
        return 0;
}

int mcpc_spawn(mcp_client *c, const mcp_stdio_config *cfg, hull_error *e) {
        sandbox_cmd sb = {0};
        int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        char **envp = NULL;
        size_t n_env = 0, n_extra = 0;
        int r;

        while (environ[n_env])
                n_env++;
        while (cfg->env && cfg->env[n_extra])
                n_extra++;
        if (n_extra > MCP_ENV_MAX)
                return hull_fail(e, -E2BIG, "mcp: %s: more than %u environment entries", c->name, MCP_ENV_MAX);
        envp = calloc(n_env + n_extra + 1, sizeof(*envp));
        if (!envp)
                return hull_err(e, -ENOMEM, "mcp: %s: out of memory", c->name);
        memcpy(envp, environ, n_env * sizeof(*envp));
        for (size_t i = 0; i < n_extra; i++)
                envp[n_env + i] = (char *) cfg->env[i];

        const char *const *argv = cfg->argv;
        if (cfg->sandbox) {
                r = sandbox_argv(c, cfg, &sb, e);
                if (r < 0)
                        goto out;
                argv = sb.argv;
        }
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                r = hull_err(e, -errno, "mcp: %s: cannot make pipes", c->name);
                goto out;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        sigset_t def, none;
        sigemptyset(&def);
        sigaddset(&def, SIGPIPE);
        sigaddset(&def, SIGINT);
        sigaddset(&def, SIGTERM);
        sigaddset(&def, SIGCHLD);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(&at, &def);
        posix_spawnattr_setsigmask(&at, &none);
        /* a process group of its own: the terminal's ^C goes to hull, which ends the server itself */
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
        if (cfg->cwd)
                posix_spawn_file_actions_addchdir_np(&fa, cfg->cwd);
        pid_t pid;
        r = -posix_spawnp(&pid, argv[0], &fa, &at, (char *const *) argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        if (r < 0) {
                if (cfg->cwd && (r == -ENOENT || r == -ENOTDIR) && access(cfg->cwd, X_OK) < 0)
                        r = hull_err(e, r, "mcp: %s: cannot start '%s' in %s", c->name, c->command, cfg->cwd);
                else
                        r = hull_err_hint(e, r, "is it installed and on PATH?", "mcp: %s: cannot start '%s'", c->name,
                                          c->command);
                goto out;
        }
        c->pid = c->pgid = pid;
        c->in_fd = TAKE_FD(in[1]);
        c->out_fd = TAKE_FD(out[0]);
        c->err_fd = TAKE_FD(err[0]);
        if (set_nonblock(c->in_fd) < 0 || set_nonblock(c->out_fd) < 0 || set_nonblock(c->err_fd) < 0)
                r = hull_err(e, -errno, "mcp: %s: cannot set up the pipes", c->name);
out:
        safe_close(in[0]);
        safe_close(in[1]);
        safe_close(out[0]);
        safe_close(out[1]);
        safe_close(err[0]);
        safe_close(err[1]);
        free(envp);
        free(sb.argv);
        free(sb.strings);
        return r;
}
