/* limits.h: every bound hull enforces, in one place. Change a bound here, nowhere else. */
#pragma once

#include <stdint.h>

/* Errors */
#define HULL_ERROR_MSG_MAX 512 /* bytes of a user-facing error message */

/* Growable buffers (src/basic/dynbuf): each takes its own maximum at init */
#define DYNBUF_INITIAL 256U /* first allocation; doubles from there */

/* base64 (src/shared/base64): pieces handed to OpenSSL, whose calls count in int */
#define BASE64_ENCODE_CHUNK (48U << 10) /* bytes per EVP_EncodeBlock call (3 | it) */
#define BASE64_DECODE_CHUNK 4096U       /* characters per EVP_DecodeBlock call (4 | it; on the stack) */

/* hull exec: defaults */
#define SBX_DEFAULT_TIMEOUT_MS 30000ULL
#define SBX_DEFAULT_MEMORY_BYTES (512ULL << 20)
#define SBX_DEFAULT_PIDS 256U
#define SBX_DEFAULT_TMP_BYTES (64ULL << 20)
#define SBX_DEFAULT_OUTPUT_BYTES (1ULL << 20) /* per stream: half head, half tail */
#define SBX_DEFAULT_NOFILE 1024U
#define SBX_DEFAULT_FSIZE_BYTES (1ULL << 30)

/* hull exec: what a caller may ask for */
#define SBX_TIMEOUT_MS_MAX (24ULL * 3600 * 1000)
#define SBX_MEMORY_BYTES_MIN (4ULL << 20)
#define SBX_MEMORY_BYTES_MAX (1ULL << 46)
#define SBX_PIDS_MAX 65536U
#define SBX_CPUS_MAX 1024.0
#define SBX_MILLICPUS_MIN 10U /* 0.01 CPU: the kernel's smallest CFS quota is 1 ms per 100 ms */
#define SBX_TMP_BYTES_MAX (1ULL << 40)
#define SBX_OUTPUT_BYTES_MIN 64ULL
#define SBX_OUTPUT_BYTES_MAX (256ULL << 20)
#define SBX_ENV_MAX 128U                   /* --env entries */
#define SBX_STDIN_BYTES_MAX (256ULL << 20) /* --stdin file, copied into a sealed memfd */
#define SBX_ENV_ENTRY_MAX 8192U            /* bytes of one K=V */
#define SBX_ARGV_MAX 4096U                 /* arguments of the sandboxed command */
#define SBX_NOFILE_MAX 65536U

/* Sandbox construction */
#define SBX_KILL_GRACE_MS 1000U    /* SIGTERM to SIGKILL on timeout */
#define SBX_START_TIMEOUT_MS 10000 /* a sandbox that takes longer to start has failed */
#define SBX_DRAIN_GRACE_MS 200U    /* output still read after the sandbox ended */
#define SBX_ROOTFS_ENTRIES_MAX 64U /* top-level entries of --rootfs */
#define SBX_PATH_MAX 4096U         /* any path hull builds or accepts */
#define SBX_NAME_MAX 256U          /* one path component (NAME_MAX + 1) */
#define SBX_SHORT_STR_MAX 128U     /* a mount-option string, an id-map line, a cgroup value */
#define FS_RM_DEPTH_MAX 4096U      /* directory depth rm_rf_at descends */
#define SBX_ETC_FILE_MAX 2048U     /* one generated /etc file */
#define SBX_CHILD_MSG_MAX 200U     /* what a failing child tells its parent */
#define SBX_CGROUP_FILE_MAX 65536U /* bytes read from one cgroup or /proc file */
/* a sandbox's cgroup directory, /sys/fs/cgroup/... (deeper is refused: pass --no-cgroup). Not
 * SBX_PATH_MAX: the struct holding four is zeroed and copied on hull exec's path, and every
 * stack page that touches is a page fault */
#define SBX_CGROUP_PATH_MAX 1024U
#define SBX_CGROUP_TASKS_PATH_MAX (SBX_CGROUP_PATH_MAX + 64U) /* a cgroup dir + "/tasks" (+ a prefix) */
#define SBX_CGROUP_TASKS_MAX 3U                               /* v1 hierarchies a sandbox joins: memory, pids, cpu */
#define SBX_CGROUP_RMDIR_TRIES 22U                            /* cgroup removal retries, backing off 1..128 ms (~2 s) */
#define SBX_SANDBOX_UID 1000U                                 /* uid and gid inside the sandbox */
#define SBX_ROOT_HOST_UID 65534U    /* host uid the sandbox user maps to when hull runs as root */
#define SBX_READ_CHUNK 65536U       /* bytes per read() of captured output */
#define SBX_EXEC_STACK_BYTES 65536U /* stack of the sandboxed command between clone and execve */
/* the kernel tier (src/sandbox/sbx-oci.c): gVisor's runsc */
#define SBX_OCI_PLATFORM_MAX 32U                         /* a runsc --platform name */
#define SBX_OCI_VERSION_MAX 64U                          /* runsc's version string */
#define SBX_OCI_ID_MAX 64U                               /* a container id: hull-PID-USEC */
#define SBX_OCI_ARGS_MAX 32U                             /* runsc's own arguments (flags and subcommand) */
#define SBX_OCI_BINDS_MAX (SBX_ROOTFS_ENTRIES_MAX + 16U) /* read-only binds of a bundle's root */
#define SBX_OCI_ROOT_ITEMS_MAX (SBX_OCI_BINDS_MAX + 32U) /* a bundle's root: binds, links, /etc files */
#define SBX_OCI_CONTROL_MS 10000U                        /* runsc kill, delete, --version: each ends within this */
#define SBX_OCI_PROBE_MS 30000U                          /* the self-check's `true` in a minimal bundle */
#define SBX_OCI_OUTPUT_MAX 65536U                        /* what is read of runsc's own answer (--version, flags) */
#define SBX_OCI_PIDS_PER_TASK 24U  /* host tasks a sandboxed process costs on ptrace: ~20 measured */
#define SBX_OCI_PIDS_OVERHEAD 512U /* host tasks of runsc, its gofer and its sentry, added to the pids limit */
/* the fd runsc is given open on /dev/null (read only), so that its gofer and sandbox, which inherit
 * it, start with a 512-slot fd table: a threaded process whose table grows waits for an RCU grace
 * period (7-13 ms here), which the gofer paid at its 64th fd and the sandbox at its stdio's move to
 * 256-258 (docs/BENCHMARKS.md, "why a stray fd made runsc run faster") */
#define SBX_OCI_WIDE_FD 300U
/* first syscall after Linux 6.1 (cachestat): from here on, ENOSYS until the policy has vetted a call */
#define SBX_SECCOMP_FIRST_UNVETTED 451U
/* hull serve's background self-check of runsc (src/service/tier-gate.c): its nice value, and how
 * long a caller that needs its answer waits at most (the check's own bounds, and some) */
#define TG_PROBE_NICE 10
/* ...and how long after the start it waits before it runs, unless a caller needs its answer
 * first (runsc's sandbox makes sessions of its own, which the nice value does not reach: the
 * check would compete with a fresh server's first requests) */
#define TG_PROBE_DELAY_MS 1000
#define TG_WAIT_MS (SBX_OCI_PROBE_MS + 2U * SBX_OCI_CONTROL_MS + 5000U)
#define SERVE_READY_FD_MAX (1U << 20) /* hull serve --ready-fd: the largest fd the kernel gives (fs.nr_open) */

/* ---- sandbox sessions (src/sandbox/sbx-session.c) ---- */
#define SBX_SESSION_INTERP_MAX 2U       /* interpreters per session: python, javascript */
#define SBX_CTL_MSG_MAX (96U << 10)     /* one host → init message (head, argv, env) */
#define SBX_SESSION_ARGS_MAX 128U       /* argv entries of one session call (a shell call: 5 + its variables) */
#define SBX_SESSION_ENV_MAX 256U        /* env entries of one session call (defaults included) */
#define SBX_SESSION_CMD_MAX (64U << 10) /* a shell command of sbx_session_shell */
#define SBX_SWEEP_ROUNDS_MAX 2000U      /* /proc scans of one sweep (~2 s with the back-off) */
#define SBX_SWEEP_DIRENT_BUF 4096U      /* getdents64 buffer of the init's /proc scan */
#define SBX_QUIET_PROCS_BUF 8192U       /* a session's cgroup.procs, read to find an interpreter */
#define SBX_QUIET_FDINFO_BUF 1024U      /* /proc/self/fdinfo of a pidfd (its NSpid line) */
#define SBX_CELL_FRAME_MAX (64U << 10)  /* a frame an interpreter sends (hello, done, error) */
#define SBX_CELL_CODE_MAX (1U << 20)    /* a cell's code, as sent to the interpreter */
#define SBX_CELL_FRAME_ONE_SEND 4096U   /* a cell frame this long (with its head) goes in one send */
#define SBX_INTERP_START_MS 15000U      /* an interpreter that says nothing for this long failed */
#define SBX_ZYGOTE_READY_MS 20000U      /* the zygote imports numpy and pandas within this */
#define SBX_ZYGOTE_MSG_MAX 65536U       /* one spawn request to the zygote */
#define SBX_ZYGOTE_WARMUP_NICE "19"     /* its session group's nice while it warms up (hull serve's) */
#define SBX_ZYGOTE_WARMUP_DELAY_MS 1000 /* hull serve's starts warming up after this, or at a first request */

/* ---- kernel-tier sessions (src/sandbox/sbx-kernel-session.c: one gVisor sandbox per session) ---- */
#define SBX_KERNEL_DIR "/run/hull-kernel"      /* each session's bundle, state and workspace below it */
#define SBX_KERNEL_HANDOVER_MAX (128U << 10)   /* a warm start's handover message (the START's environment) */
#define SBX_KERNEL_START_TIMEOUT_MS 30000U     /* runsc create + start (a loaded host takes seconds) */
#define SBX_KERNEL_STOP_MS 10000U              /* runsc kill, delete, and the shim's own end */
#define SBX_KERNEL_SENTRY_BYTES (128ULL << 20) /* memory cgroup headroom for the sentry and gofer */
#define SBX_KERNEL_WARM_MS                                                                                             \
        120000U /* a warm template's build (pandas imported under gVisor), its checkpoint, a restore */

/* a limited sandbox's network (src/sandbox/sbx-net.c) */
#define SBX_NET_PROXY_PORT 3128U                  /* the proxy's port on the sandbox's own 127.0.0.1 */
#define SBX_NET_PROXY_URL "http://127.0.0.1:3128" /* what HTTP_PROXY and the rest say */
#define SBX_NET_CONNS_MAX 64U          /* connections through one sandbox's proxy at once; more wait in the backlog */
#define SBX_NET_BACKLOG 64U            /* listen() backlog of the proxy's socket */
#define SBX_NET_HEAD_MAX 16384U        /* a request head (request line and headers) */
#define SBX_NET_HEAD_MS 30000U         /* a client that has not sent its whole head by then is dropped */
#define SBX_NET_CONNECT_MS 15000U      /* connecting upstream (all addresses together) */
#define SBX_NET_IDLE_MS 300000U        /* a connection with no byte either way this long is closed */
#define SBX_NET_BUF_BYTES (256U << 10) /* relay pipe per direction per connection */
#define SBX_NET_ALLOW_MAX 256U         /* allowed_hosts entries, package registries included */
#define SBX_NET_HOSTS_FILE_MAX (64U << 10)  /* the testing hosts file (bytes) */
#define SBX_NET_SOURCES_MAX (1U << 20)      /* one apt source list, npmrc or pip.conf read */
#define SBX_NET_SOURCE_FILES_MAX 64U        /* files of /etc/apt/sources.list.d read */
#define SBX_NET_PIP_SETTING_MAX 4096U       /* one pip setting (index-url, ...) read and passed to a build */
#define SBX_NET_PINS_MAX 256U               /* pinned (name, address) pairs of the package registries */
#define SBX_NET_LOG_LINE_MAX 512U           /* one line of the connection log */
#define SBX_NET_LOG_MAX (4U << 20)          /* a connection log that is a file: then one "log-full" line */
#define SBX_NET_PASTA_START_MS 10000U       /* pasta sets an unrestricted sandbox's network up */
#define SBX_NET_PASTA_PATH "/usr/bin/pasta" /* Debian's passt package */

/* Workspace operations (src/sandbox/sbx-workspace) */
#define WS_PATH_MAX 4095U      /* bytes of a path relative to the workspace root */
#define WS_PATH_DEPTH_MAX 64U  /* components of such a path; depth of any walk */
#define WS_NAME_MAX 255U       /* bytes of one path component */
#define WS_PATH_SHOWN_MAX 160U /* bytes of a path quoted in an error message */
#define WS_OPEN_RETRIES 16U    /* openat2 EAGAIN retries (a concurrent rename) */
#define WS_IO_CHUNK 65536U     /* bytes per read()/write() */
#define WS_READ_DEFAULT_BYTES (256ULL << 10)
#define WS_READ_MAX_BYTES (16ULL << 20)
#define WS_WRITE_MAX_BYTES (64ULL << 20)
#define WS_EDIT_MAX_BYTES (16ULL << 20) /* file an edit reads */
#define WS_GLOB_COMPONENTS_MAX 32U      /* components of a glob pattern */
#define WS_GLOB_RESULTS_DEFAULT 1000U
#define WS_GLOB_RESULTS_MAX 100000U
#define WS_GLOB_TIME_MS_DEFAULT 2000ULL
#define WS_WALK_ENTRIES_DEFAULT 100000ULL /* directory entries a glob or grep examines */
#define WS_WALK_ENTRIES_MAX 10000000ULL
#define WS_WALK_TIME_MS_MAX 60000ULL
#define WS_GREP_PATTERN_MAX 1024U    /* bytes of a regex */
#define WS_GREP_PARENS_MAX 50U       /* nesting of parentheses in a regex */
#define WS_GREP_MATCH_LIMIT 100000U  /* PCRE2 match limit, per start position */
#define WS_GREP_DEPTH_LIMIT 1000U    /* PCRE2 backtracking depth */
#define WS_GREP_HEAP_LIMIT_KIB 1024U /* PCRE2 interpreter heap */
#define WS_GREP_JIT_STACK_MIN (32U << 10)
#define WS_GREP_JIT_STACK_MAX (512U << 10)
#define WS_GREP_LINE_MAX 4096U     /* bytes of a line searched; the rest is not */
#define WS_GREP_START_CHUNK 64U    /* start positions tried between clock checks */
#define WS_GREP_TEXT_MAX 240U      /* bytes of line text in a match */
#define WS_GREP_BINARY_PROBE 8192U /* bytes checked for a NUL (binary file) */
#define WS_GREP_MATCHES_DEFAULT 100U
#define WS_GREP_MATCHES_MAX 10000U
#define WS_GREP_BYTES_DEFAULT (256ULL << 20)
#define WS_GREP_BYTES_MAX (4ULL << 30)
#define WS_GREP_TIME_MS_DEFAULT 5000ULL
#define WS_TAR_BYTES_DEFAULT (1ULL << 30) /* persist: archive size; hydrate: total file bytes */
#define WS_TAR_BYTES_MAX (64ULL << 30)
#define WS_TAR_FILE_BYTES_DEFAULT (512ULL << 20) /* hydrate: one file */
#define WS_TAR_ENTRIES_DEFAULT 100000ULL
#define WS_TAR_ENTRIES_MAX 1000000ULL

/* hull serve: HTTP (src/daemon/http-server.c) */
#define SERVE_DEFAULT_PORT 8750U
#define SERVE_NET_LOG_ANSWER_MAX (64U << 10)      /* connection log lines in a plimsoll Run/SessionRun answer */
#define SERVE_HTTP_THREADS 2U                     /* libmicrohttpd polling threads */
#define SERVE_CONNECTIONS_MAX 256U                /* open connections per listener */
#define SERVE_CONNECTION_MEMORY_BYTES (64U << 10) /* per connection: request line and headers */
#define SERVE_CONNECTION_IDLE_S 10U               /* an idle connection (no byte in or out) is closed after this */
#define SERVE_CONNECTIONS_LIMIT 16384U            /* --max-connections at most */
#define SERVE_CONNECTIONS_PER_IP_MAX 64U          /* open TCP connections from one address */
/* a request's head (request line and headers) must be in this long after the connection's start
 * or its previous request's end, bytes trickling or not */
#define SERVE_HEAD_RECEIVE_MS 10000U
#define SERVE_REQUEST_RECEIVE_MS 30000U             /* ... and its whole body by then */
#define SERVE_UPLOAD_RECEIVE_MS (30U * 60U * 1000U) /* a streamed upload (Handles/Upload) must be in by then */
/* connections of one address (a unix socket's: of one uid) that are still sending a request's
 * head or body, or idle between requests; one more closes the oldest of them (a head first) */
#define SERVE_INCOMPLETE_PER_ADDR_MAX 16U
#define SERVE_INCOMPLETE_MAX 128U             /* the same across every address: the rest of the slots are a reserve */
#define SERVE_HTTP_TICK_MS 250U               /* the watchdog: deadlines, event-stream keep-alives and hang-ups */
#define SERVE_BODIES_BUDGET_BYTES (64U << 20) /* request-body buffers held at once, all connections */
#define SERVE_LISTEN_BACKLOG 1024U
#define SERVE_BODY_MAX (8U << 20) /* request body bytes of an API procedure */
/* an over-long body declared up to this (or the route's bound, if larger) is read and refused;
 * beyond, refused unread; a chunked one is read to its end (within SERVE_REQUEST_RECEIVE_MS) */
#define SERVE_BODY_DISCARD_MAX (16U << 20)
#define SERVE_PATH_MAX 2048U                 /* a path the routes are matched against; longer has no route */
#define SERVE_ROUTES_MAX 192U                /* routes of one server (the /v1 families of issue 22 need more than 64) */
#define SERVE_ROUTE_PARAMS_MAX 8U            /* {name}s of one route pattern */
#define SERVE_ANSWER_HEADERS_MAX 8U          /* headers a request's answer gets besides the content type */
#define SERVE_HEADER_VALUE_MAX 1024U         /* a header value kept for an answer */
#define SERVE_SSE_QUEUE_DEFAULT (256U << 10) /* an event stream's frames waiting to be sent */
#define SERVE_SSE_QUEUE_MAX (8U << 20)
#define SERVE_SSE_FRAME_MAX (64U << 20)   /* one frame, taken alone by an empty queue however large */
#define SERVE_SSE_KEEPALIVE_MS 15000U     /* a comment on an event stream that sent nothing this long */
#define SERVE_SSE_BLOCK_BYTES (16U << 10) /* an event stream's preferred write (libmicrohttpd's block size) */
#define SERVE_SHUTDOWN_GRACE_MS 30000U    /* SIGTERM: how long in-flight runs may finish */
#define SERVE_SHUTDOWN_GRACE_MS_MAX 600000U
#define SERVE_SHUTDOWN_CANCEL_MS 10000U /* then: how long cancelled runs may take to end */
#define SERVE_LOG_LINE_MAX 1024U        /* one log line, truncated beyond */
#define SERVE_METRICS_TEXT_MAX 16384U   /* the /metrics page */
#define METRICS_FAMILIES_MAX 16U        /* metric families registered in one registry */
#define METRICS_SERIES_MAX 128U         /* their series (label values, histogram buckets) together */
#define SERVE_SHORT_STR_MAX 160U        /* a log field (path, note), an address, a field's name */
#define SERVE_DEFAULT_RUNS 4U           /* runs at once (--max-runs) */
#define SERVE_RUNS_MAX 64U
#define SERVE_RUN_QUEUE_MAX 16U             /* admitted runs waiting for a slot; more: capacity */
#define SERVE_RUN_THREAD_STACK (256U << 10) /* stack of the thread that waits for one run */
#define SERVE_SPAWN_PARKED_MAX 4U           /* spawned threads kept waiting for the next request */
#define SERVE_SPAWN_PARKED_MS 5000U         /* how long one waits before it ends */
#define SERVE_SESSIONS_MAX 16384U           /* sessions at once (--max-sessions), keepers in the broker */
#define SERVE_DEFAULT_SESSIONS 64U
#define SERVE_DEFAULT_SESSIONS_PER_OWNER 8U
#define SERVE_DEFAULT_SESSIONS_PER_CALLER 32U
#define SERVE_SESSION_LIFETIME_MS (30ULL * 60 * 1000) /* default; --session-lifetime */
#define SERVE_SESSION_LIFETIME_MS_MAX (12ULL * 3600 * 1000)
#define SERVE_SESSION_IDLE_MS (5ULL * 60 * 1000)     /* default; --session-idle */
#define SERVE_SESSION_IDLE_MS_MIN 1000ULL            /* what a request may ask for at least */
#define SERVE_SESSION_SUMMARY_MS (10ULL * 60 * 1000) /* an ended session's close summary is kept */
#define SERVE_SESSION_TICK_MS 200U                   /* the session reaper's period */
#define SERVE_SESSION_MEMORY_BYTES (1ULL << 30)      /* default memory of a session (--session-memory) */
#define SERVE_SESSION_PIDS 512U
#define HS_NOTES_MAX (64U << 10)            /* [hull] notes added to a call's stderr */
#define SS_STORE_BYTES_DEFAULT (8ULL << 30) /* all handles of one session (host disk, outside its cgroup) */
#define SS_COPY_CHUNK (1U << 20)            /* bytes per copy_file_range of a handle exported or seeded */

/* hull serve: bearer tokens (src/daemon/auth.c) */
#define AUTH_TOKENS_MAX 1024U           /* lines of a tokens file */
#define AUTH_TOKENS_FILE_MAX (1U << 20) /* bytes of a tokens file */
#define AUTH_TOKEN_RANDOM_BYTES 32U     /* entropy of `hull token new` */
#define AUTH_TOKEN_MIN 32U              /* a caller's token: at least this many characters */
#define AUTH_TOKEN_MAX 512U
#define AUTH_SCOPES_MAX 256U /* bytes of one token's comma-separated scopes */
#define AUTH_NAME_MAX 64U    /* bytes of a token's name */

/* The plimsoll protocol 3 (shared/reference/plimsoll-protocol.md, "Limits") */
#define PLIM_JSON_DEPTH_MAX 16U /* nesting of a request body */
/* JSON values of a request body, counted before parsing (the largest valid Run has under 1000) */
#define PLIM_JSON_VALUES_MAX 4096U
#define PLIM_DESCRIBE_BODY_MAX 1024U /* a DescribeRequest is {}: more is refused unread */
#define PLIM_STRING_MAX 256U         /* short fields: floor, mode, trace id, grant */
#define PLIM_CODE_MAX (256U << 10)   /* a javascript payload */
#define PLIM_FILES_MAX 200U
#define PLIM_FILES_BYTES_MAX (4U << 20) /* all file contents of a project */
#define PLIM_PATH_MAX 1024U
#define PLIM_STEPS_MAX 20U
#define PLIM_STEP_MAX (16U << 10)
#define PLIM_ARTIFACTS_MAX 100U
#define PLIM_IDENTITIES_MAX 32U
#define PLIM_IDENTITY_MAX 256U
#define PLIM_TRACE_ID_MAX 64U
#define PLIM_TIMEOUT_MS_MAX 300000U     /* timeoutMs is clamped to 5 minutes */
#define PLIM_DEFAULT_TIMEOUT_MS 30000U  /* timeoutMs 0 or less */
#define PLIM_JS_OUTPUT_BYTES (1U << 20) /* per stream of a javascript run */
/* javascript up to this runs as `node --input-type=module -e CODE` (one argument holds at most 128 KiB); longer, as
 * main.mjs */
#define PLIM_JS_EVAL_MAX (96U << 10)
#define PLIM_STEP_OUTPUT_BYTES (256U << 10) /* per stream of a project step */
#define PLIM_ARTIFACTS_BYTES_MAX (8U << 20) /* all artifacts of a project */
#define PLIM_ANSWER_MAX (32U << 20)         /* what a client accepts; answers stay below */

/* plimsoll sessions as parsed and answered (src/daemon/plimsoll.c): the session engine's own
 * bounds (lifetime, idle, counts) are the daemon's */
#define PLIM_SESSION_ID_MAX 64U          /* hex digits of a sessionId a request may name (we issue 32) */
#define PLIM_OWNER_MAX 64U               /* an owner: [A-Za-z0-9._:-]{1,64} */
#define PLIM_LANGUAGES_MAX 2U            /* languages[] of an OpenSession: python, javascript */
#define PLIM_END_DETAIL_MAX 256U         /* bytes of a SessionEnded detail (longer is cut) */
#define PLIM_UNANSWERED_DETAIL_MAX 2048U /* base64 of one UnansweredCall detail, NUL included */

/* hull's own API on an open session (src/daemon/hullapi.c, /hull.v1.Workspace/...) */
#define HULL_API_COMMAND_MAX (64U << 10) /* bytes of an Exec command (run as /bin/sh -c) */
#define HULL_API_ENV_MAX 64U             /* env entries of one Exec */
#define HULL_API_ENV_NAME_MAX 128U       /* [A-Za-z_][A-Za-z0-9_]{0,127} */
#define HULL_API_ENV_VALUE_MAX (8U << 10)
#define HULL_API_PERSIST_BYTES_MAX (20U << 20)        /* a Persist archive: its base64 stays within PLIM_ANSWER_MAX */
#define HULL_API_HANDLE_ID_MAX 64U                    /* a handle id */
#define HULL_API_SQL_MAX (64U << 10)                  /* a Handles/Query statement */
#define HULL_API_QUERY_HANDLES_MAX 10U                /* handles one query attaches */
#define HULL_API_INSPECT_ROWS_MAX HD_INSPECT_ROWS_MAX /* head or tail rows of one Inspect: the store's bound */
#define HULL_API_INPUT_NAME_MAX 255U                  /* an AddInput display name */
#define HULL_API_INPUT_BYTES_MAX (5U << 20)  /* an AddInput upload: its base64 (4/3) and the JSON fit the 8 MiB body */
#define HULL_API_BINARY_READ_MAX (16U << 20) /* bytes of a binary handle one Handles/Read returns */

/* hull session: the client of hull serve (src/cli/cli-session.c) and its HTTP client over a
 * dlopen'd libcurl (src/shared/http-client.c) */
#define HTTPC_CONNECT_TIMEOUT_MS 5000U                    /* TCP or unix-socket connect */
#define HTTPC_TIMEOUT_SLACK_MS 30000U                     /* a call may take its own timeout plus this */
#define HTTPC_ANSWER_INITIAL (64U << 10)                  /* first allocation of an answer; doubles up to its max */
#define HTTPC_HEADER_VALUE_MAX 256U                       /* a response header kept (request ID, content type) */
#define HTTPC_HEADER_LINE_MAX (8U << 10)                  /* a header value given to on_header (a Location) */
#define HTTPC_URL_MAX 2048U                               /* --url and the URL built from it */
#define HTTPC_HEADERS_MAX 32U                             /* request headers we send (model providers: extra ones) */
#define SESSION_CLI_TOKEN_FILE_MAX 4096U                  /* bytes of a --token-file */
#define SESSION_CLI_CALL_MS_DEFAULT 30000U                /* a call without --timeout (PLIM_DEFAULT_TIMEOUT_MS) */
#define SESSION_CLI_LIFETIME_MS_MAX (12U * 3600U * 1000U) /* --lifetime: plimsoll's 12 h ceiling */
#define SESSION_CLI_IDLE_MS_MIN 1000U                     /* --idle: the protocol's floor */
/* a write's content: its base64 and the rest fit the daemon's body bound */
#define SESSION_CLI_WRITE_MAX ((SERVE_BODY_MAX / 4U) * 3U - (64U << 10))
#define SESSION_CLI_ERROR_SHOWN 200U       /* bytes of a non-JSON error body quoted */
#define SESSION_CLI_DETAILS_MAX 8U         /* Connect error details looked at */
#define SESSION_CLI_LIST_MAX 4096U         /* sessions printed by hull session list */
#define SESSION_CLI_READ_CHUNK (64U << 10) /* bytes read at a time from a local file or stdin */

/* The sandbox broker (src/daemon/broker.c) */
#define BRK_REQUEST_MAX (16U << 20) /* one encoded run request */
#define BRK_RESULT_MAX (24U << 20)  /* one encoded run result */
#define BRK_FILES_MAX 256U
#define BRK_STEPS_MAX 32U
#define BRK_ARGS_MAX 16U /* arguments of one step */
#define BRK_ARTIFACTS_MAX 128U
#define BRK_DETAIL_MAX 512U        /* bytes of a result's detail line */
#define BRK_NET_CIDRS_MAX 32U      /* a session's allow_cidrs carried to its keeper */
#define BRK_NET_CIDR_TEXT 64U      /* bytes of one of them, as text */
#define BRK_IO_TIMEOUT_MS 10000U   /* a worker waits this long for its request */
#define BRK_SPARE_WAIT_MS 60U      /* a run waits this long for a spare still being set up */
#define BRK_RESULT_SLACK_MS 15000U /* the daemon waits the run's timeout plus this */
#define BRK_QUEUE_WAIT_MS 120000U  /* a queued run not started by then is dropped, not run */
#define BRK_STOP_GRACE_MS 5000U    /* broker exit: SIGTERM, then SIGKILL to workers */
#define BRK_STOP_SLACK_MS 2000U    /* the daemon waits the grace plus this for the broker */
#define BRK_REFUSE_SEND_MS 100U    /* the broker's refusal of a run never waits longer */
#define BRK_SPARE_FAILURES_MAX 3U  /* spare workers that die unused in a row before the broker stops making them */

/* Run records and the audit log (src/sandbox/sbx-record, hull verify) */
#define REC_LOG_LINE_MAX (64ULL << 20)     /* one audit-log line: a request and an answer of up to 32 MiB */
#define REC_LOG_LINES_MAX 1000000U         /* lines hull verify reads from one log */
#define REC_LOG_READ_CHUNK 65536U          /* bytes per read() of a log */
#define REC_JSON_DEPTH_MAX 16U             /* nesting of one log line (a module request needs 6) */
#define REC_LOG_LINE_VALUES_MAX (1U << 18) /* JSON values of one log line: ~60 MB parsed at most */
#define REC_SOFTWARE_IDENTITIES_MAX 32U    /* identities of a software rule */
#define REC_SOFTWARE_IDENTITY_MAX 256U     /* bytes of one identity */
#define REC_VERIFY_PROBLEMS_MAX 100U       /* problems hull verify prints; the rest are only counted */
#define VERIFY_LOGS_MAX 64U                /* session logs of one run or chat directory hull verify checks */
#define REC_FIELD_NAME_MAX 64U             /* a digest field's name, a field's path in a message, a domain */
#define REC_B64_DECODE_CHUNK 3072U         /* bytes decoded from base64 per write into a digest (3 | it) */

/* ---- data handles (src/handles/, issue 4) ---- */
#define HD_SPILL_THRESHOLD_DEFAULT 8192ULL   /* results larger than this become handles */
#define HD_MAX_SPILL_DEFAULT (1ULL << 30)    /* a handle larger than this is refused (a table: its SQLite file) */
#define HD_MAX_SPILL_MAX (1ULL << 40)        /* what a store may be configured to accept */
#define HD_ID_MAX 64U                        /* bytes of a handle id ([A-Za-z0-9][A-Za-z0-9_.-]{0,63}) */
#define HD_HANDLES_MAX 100000U               /* handles of one store */
#define HD_SEQ_MAX 999999999999ULL           /* largest hN the counter reaches */
#define HD_SOURCE_MAX 512U                   /* bytes of a handle's source description */
#define HD_MANIFEST_MAX_BYTES (256ULL << 20) /* _manifest.json read on open */
#define HD_PREVIEW_CHARS 800U                /* characters of a text/json preview */
#define HD_PREVIEW_ROWS 5U                   /* rows of a table preview */
#define HD_PREVIEW_CELL_CHARS 80U            /* characters of one cell in a preview */
/* a table preview's CSV: header and rows, every cell at its longest (4-byte characters, quoted) */
#define HD_PREVIEW_TABLE_BYTES ((HD_PREVIEW_ROWS + 2U) * HD_TABLE_COLUMNS_MAX * (HD_PREVIEW_CELL_CHARS * 8U + 8U))
#define HD_IO_CHUNK (1U << 20) /* bytes per read()/write() when copying */
/* bytes per write() into a store's file: larger writes let the page cache take large folios,
 * which on a fragmented host stall in compaction (50 MB written in 1 MiB writes took 140-240 ms
 * where 64 KiB writes, or cp's, took 15-20) */
#define HD_WRITE_CHUNK (64U << 10)
#define HD_HASH_THREAD_MIN (4U << 20) /* a put from memory this big hashes on a thread beside its check and write */
#define HD_JSON_DEPTH_MAX 100000U     /* nesting of JSON the scanner accepts (bit stack) */
#define HD_SHAPE_KEYS_MAX 20U         /* keys listed per object in a shape */
#define HD_SHAPE_KEY_BYTES 128U       /* bytes of one key shown in a shape */
#define HD_SHAPE_LEVELS 2U            /* levels of nesting a shape describes below the top */
#define HD_SHAPE_NODES_MAX 512U       /* shape nodes of one scan */
#define HD_TABLE_COLUMNS_MAX 1000U    /* columns of a table (ingested or adopted) */
#define HD_COLUMN_NAME_MAX 256U       /* bytes of a column name */
#define HD_FIELD_MAX (16ULL << 20)    /* bytes of one CSV field or JSON record */
/* SQLite memory of one store operation (a put, summary, inspect or query): its own budget
 * (src/shared/sqlite-mem.h), never a process-wide limit */
#define HD_SQLITE_MEM_DEFAULT (256ULL << 20)
#define HD_SQLITE_MEM_MAX (16ULL << 30)       /* what a store may be configured to allow */
#define HD_SQLITE_CACHE_KIB 65536U            /* page cache of one connection (PRAGMA cache_size) */
#define HD_SQLITE_LENGTH_MAX (64U << 20)      /* SQLITE_LIMIT_LENGTH: a string or blob */
#define HD_SQLITE_SQL_MAX (64U << 10)         /* SQLITE_LIMIT_SQL_LENGTH: a query's text */
#define HD_SQLITE_CHECK_MS 10000U             /* budget to validate an adopted SQLite file */
#define HD_SQLITE_PROGRESS_OPS 1000U          /* VM steps between time checks */
#define HD_SQLITE_PAGE_COUNT_MAX (1ULL << 28) /* pages an adopted file may claim */
#define HD_QUERY_HANDLES_MAX 10U              /* handles one query attaches (SQLite's own maximum) */
#define HD_QUERY_MS_DEFAULT 10000U            /* time budget of a query */
#define HD_QUERY_MS_MAX 300000U
#define HD_QUERY_ROWS_DEFAULT 1000000ULL /* rows a query may return (into a handle) */
#define HD_QUERY_ROWS_MAX 10000000ULL
#define HD_QUERY_INLINE_ROWS 50U     /* rows answered inline; more become a table handle */
#define HD_QUERY_INLINE_BYTES 8192U  /* bytes of inline rows (as JSON) */
#define HD_INSPECT_ROWS_MAX 100U     /* head or tail rows of an inspect */
#define HD_INSPECT_MS 10000U         /* time budget of an inspect (stats scan the table) */
#define HD_STATS_COLUMNS_MAX 200U    /* columns inspect computes stats for */
#define HD_HLL_BITS 10U              /* HyperLogLog registers: 2^10 (about 3% error) */
#define HD_READ_DEFAULT_BYTES 8192U  /* hd_read without a limit */
#define HD_READ_MAX_BYTES (1U << 20) /* bytes one hd_read returns */

/* ---- the exchange directory: what sandboxed code hands back per call (src/handles/hd-exchange,
 * runtime/hull.py). Per call, /workspace/.hull/x-<16 hex>/ holds the payloads and three control
 * files; the host reads them back with no-follow, regular-file-only, size-capped opens. ---- */
#define HD_EXCHANGE_NEW_HANDLES_BYTES_MAX (8ULL << 20) /* new_handles.jsonl */
#define HD_EXCHANGE_ADOPT_MAX 256U                     /* new handles adopted per call */
/* emit.json parsed and answered inline; larger is not parsed: handed over as an fd (a json handle) */
#define HD_EXCHANGE_EMIT_INLINE_MAX (1ULL << 20)
/* a saved file, or an emit kept as a handle (the store's default max_spill_bytes; a session's
 * own bound is its store's) */
#define HD_EXCHANGE_PAYLOAD_MAX HD_MAX_SPILL_DEFAULT
#define HD_EXCHANGE_PUBLISH_BYTES_MAX (1ULL << 20) /* publish.jsonl */
#define HD_EXCHANGE_PUBLISH_MAX 64U                /* publish requests per call */
#define HD_EXCHANGE_LINE_MAX (64U << 10)           /* one JSONL line (longer: refused unparsed) */
#define HD_EXCHANGE_ID_MAX 64U                     /* bytes of a handle id */
#define HD_EXCHANGE_SOURCE_MAX 256U                /* bytes of a save's source */
#define HD_EXCHANGE_DESCRIPTION_MAX 4096U          /* bytes of a publish description (1024 characters) */
#define HD_EXCHANGE_ERRORS_MAX 32U                 /* error lines kept per call; more are only counted */
#define HD_EXCHANGE_SHOWN_MAX 80U                  /* bytes of a sandbox-written value quoted in an error */
#define HD_EXCHANGE_REL_SIZE 25U                   /* ".hull/x-" + 16 hex digits + NUL */

/* ---- the agent (src/agent): model providers, the loop, the status bus ---- */
#define MODEL_MAX_OUTPUT_TOKENS_DEFAULT 8192U /* the output cap sent with each request */
#define MODEL_REQUEST_TIMEOUT_MS 600000ULL    /* one HTTP exchange with a model (the SDKs' 600 s) */
#define MODEL_IDLE_TIMEOUT_MS 300000ULL       /* a stream silent this long is cut (reasoning models think) */
#define MODEL_CONNECT_TIMEOUT_MS 10000ULL
#define MODEL_RETRIES_DEFAULT 2U /* retries after the first try (the SDKs': 3 requests in all) */
#define MODEL_RETRIES_MAX 10U
#define MODEL_BACKOFF_FIRST_MS 500U         /* then doubling ... */
#define MODEL_BACKOFF_MAX_MS 8000U          /* ... up to this, with up to 25% jitter */
#define MODEL_RETRY_AFTER_MAX_MS 60000U     /* a server's retry-after is obeyed up to this */
#define MODEL_REQUEST_ID_MAX 128U           /* bytes of a request id kept */
#define MODEL_SHORT_STR_MAX 64U             /* a stop reason, an error type, a model name */
#define MODEL_ERROR_BODY_MAX (64U << 10)    /* an error answer's body read */
#define MODEL_ANSWER_MAX (32U << 20)        /* a non-streamed answer's body */
#define MODEL_STREAM_EVENT_MAX (16U << 20)  /* one server-sent event (a whole tool call fits) */
#define MODEL_STREAM_BYTES_MAX (256U << 20) /* one streamed answer in all */
#define MODEL_BLOCKS_MAX 1024U              /* content blocks (or tool calls) of one answer */
#define MODEL_ERROR_QUOTE_MAX 240U          /* bytes of an API's error message quoted in a failure's line */
#define MODEL_REQUEST_BODY_MAX (1ULL << 31) /* a request's body put together from its messages' wire JSON */
#define BUS_ID_MAX 48U                      /* bytes of an event id, NUL included */
#define BUS_SUBSCRIBERS_MAX 64U
#define BUS_PROGRESS_MS 1000U                  /* hull.tool_progress at most this often per call */
#define BUS_NOTE_MAX 512U                      /* bytes of a progress note kept for the next event */
#define AGENT_MAX_TURNS_DEFAULT 50U            /* model requests in one turn */
#define AGENT_MAX_TOOL_CALLS_DEFAULT 200U      /* tool calls in one turn */
#define AGENT_CONTEXT_TOKENS_DEFAULT 128000ULL /* the context budget (estimated) */
#define AGENT_WALL_MS_DEFAULT (30ULL * 60 * 1000)
#define AGENT_TOOL_TIMEOUT_MS 120000ULL /* a tool call without a deadline of its own */
#define AGENT_SPILL_BYTES_DEFAULT 8192U /* a tool value over this (as JSON) becomes a handle */
#define DOTENV_BYTES_MAX (64U << 10)    /* a .env file */
#define DOTENV_ENTRIES_MAX 256U         /* assignments in one .env */

/* the loop's own bounds (src/agent/agent.c, schema.c) */
#define AGENT_TOOL_GRACE_MS 2000U               /* a tool past its deadline is cancelled this much later */
#define AGENT_WATCH_TICK_MS 50U                 /* how often a running tool's watcher looks at the interrupt */
#define AGENT_WATCH_STACK (256U << 10)          /* stack of a tool call's watch thread (its tick and checks) */
#define AGENT_WATCH_IDLE_MS 10000U              /* a kept watch's thread ends after this long without a call */
#define AGENT_TOOL_TEXT_MAX (64U << 10)         /* bytes of a tool's text shown as it is (more: a text handle) */
#define AGENT_SHORT_FORM_CHARS 300U             /* characters of a tool result kept when it is elided */
#define AGENT_ERROR_TEXT_MAX 2048U              /* bytes of an error result's text */
#define AGENT_MANUAL_MAX (64U << 10)            /* bytes of the system prompt before the user's instructions */
#define AGENT_INSTRUCTIONS_MAX (1U << 20)       /* bytes of the user's instructions */
#define AGENT_USER_TEXT_MAX (8U << 20)          /* bytes of one user message */
#define AGENT_TOOLS_MAX 256U                    /* tools offered to the model (the /v1 API's bound) */
#define AGENT_CONVERSATION_MESSAGES_MAX 100000U /* messages of a conversation continued by agent_new */
#define SCHEMA_DEPTH_MAX 32U                    /* nesting of a tool's input schema */
#define SCHEMA_ERRORS_MAX 16U                   /* problems listed for one tool call; the rest counted */
#define SCHEMA_ERRORS_BYTES_MAX 8192U           /* bytes of those lines */
#define SCHEMA_PATH_MAX 256U                    /* bytes of a field's path in a problem ("input.a.b[3]") */
#define SCHEMA_SHOWN_MAX 64U                    /* bytes of a key or name quoted in a problem */
#define SCHEMA_ENUM_SHOWN_MAX 512U              /* bytes of the allowed values listed */

/* the built-in tools (src/tools/) */
#define TOOL_CATALOG_MAX 16U                   /* built-in tools in the catalog (tool-catalog.c), every toolset's */
#define TOOL_BASH_TIMEOUT_MS_DEFAULT 120000ULL /* a bash call without a timeout of its own */
#define TOOL_BASH_TIMEOUT_MS_MAX 600000ULL     /* what a bash call may ask for */
#define TOOL_PYTHON_TIMEOUT_MS 300000ULL       /* a run_python call */
#define TOOL_OUTPUT_BYTES 16384U               /* per stream of a command or cell: half head, half tail */
#define TOOL_FILES_TIMEOUT_MS 60000ULL         /* read, write, edit, glob, grep, the handle tools */
#define TOOL_READ_LINES_DEFAULT 2000U          /* lines read shows without a limit */
#define TOOL_READ_LINES_MAX 100000U
#define TOOL_READ_CHARS_MAX 50000U        /* characters read shows at most (then a note to narrow) */
#define TOOL_READ_LINE_CHARS 2000U        /* characters of one line shown */
#define TOOL_READ_CHUNK (256U << 10)      /* bytes per ss_read */
#define TOOL_READ_SCAN_MAX (256ULL << 20) /* bytes read skips to reach an offset */
#define TOOL_BINARY_PROBE 8192U           /* bytes checked for a NUL (a binary file) */
#define TOOL_GLOB_SHOWN_MAX 200U          /* paths glob lists */
#define TOOL_GREP_SHOWN_DEFAULT 100U      /* lines or files grep lists without head_limit */
#define TOOL_GREP_SHOWN_MAX 1000U
#define TOOL_HANDLE_ROWS_DEFAULT 20U     /* rows inspect_handle shows without rows */
#define TOOL_HANDLE_TEXT_MAX (48U << 10) /* bytes of a handle tool's answer */
#define TOOL_HANDLES_LISTED_MAX 20U      /* handle ids named in an error */

/* ---- the egress guard and the web tools (src/shared/egress, webfetch, html-text;
 * src/tools/tool-web.c) ---- */
#define EGRESS_ADDRS_MAX 32U                   /* addresses of one host checked (and connected to); more: refused */
#define EGRESS_ALLOW_MAX 256U                  /* allowlist entries (host names and CIDRs) */
#define EGRESS_HOST_MAX 253U                   /* bytes of a host name (DNS's own bound) */
#define EGRESS_URL_MAX 8192U                   /* bytes of a URL fetched (as given, and each redirect's) */
#define EGRESS_ADDR_STR_MAX 64U                /* an address as text, NUL included (INET6_ADDRSTRLEN is 46) */
#define EGRESS_RESOLVE_MS_DEFAULT 10000U       /* a name's resolution when the caller's deadline is later */
#define WEBFETCH_REDIRECTS_MAX 5U              /* redirects followed, each one checked again */
#define WEBFETCH_MAX_BYTES_DEFAULT 10000000ULL /* a body's cap (sheath's fetch.max_bytes) */
#define WEBFETCH_MAX_BYTES_MAX (100ULL << 20)  /* what web_fetch's max_bytes may ask for */
#define WEBFETCH_TIMEOUT_MS_DEFAULT 30000U     /* one fetch, every hop included */
#define WEBFETCH_CONNECT_TIMEOUT_MS 10000U     /* one hop's connection (within the fetch's deadline) */
#define WEBFETCH_SNIFF_BYTES 8192U             /* a body with a non-text type is text when these are UTF-8 */
#define WEBFETCH_INLINE_TEXT_MAX 4096U         /* text (after HTML conversion) answered inline; longer: a text handle */
#define WEBFETCH_ERROR_SHOWN 300U              /* bytes of an error answer's body quoted to the model */
#define HTML_TEXT_MAX_DEFAULT (16U << 20)      /* bytes of text one page gives (html_to_text without a max) */
#define HTML_TEXT_INPUT_MAX (32U << 20)        /* bytes of HTML parsed (libxml2's tree takes ~30x); more: cut */
#define HTML_TEXT_TITLE_MAX 1024U              /* bytes of a title */
#define HTML_TEXT_HREF_MAX 2048U               /* bytes of a link's href shown after its text */
#define HTML_TEXT_LINK_NEST_MAX 16U            /* links inside links followed for their href */
#define HTML_TEXT_PREFIX_MAX 64U               /* a line's prefix (list indentation, "- ", "### ") */
#define HTML_TEXT_LIST_DEPTH_MAX 8U            /* list nesting shown as indentation */
#define WEBSEARCH_RESULTS_DEFAULT 5U
#define WEBSEARCH_RESULTS_MAX 20U
#define WEBSEARCH_SNIPPET_CHARS 500U    /* characters of one result's content (sheath's 500) */
#define WEBSEARCH_FIELD_CHARS 2000U     /* characters of a title, URL or the answer */
#define WEBSEARCH_QUERY_MAX 2000U       /* bytes of a query */
#define WEBSEARCH_ANSWER_MAX (4U << 20) /* bytes of the provider's answer read */
#define WEBSEARCH_TIMEOUT_MS_DEFAULT 20000U

/* ---- hull mock-model (src/daemon/mock-*.c): a scripted model server for tests ---- */
#define MOCK_DEFAULT_PORT 8751U             /* --listen's default, on loopback */
#define MOCK_SCRIPT_BYTES_MAX (16U << 20)   /* a script file */
#define MOCK_STEPS_MAX 4096U                /* steps of one script */
#define MOCK_STEP_TIMES_MAX 1000000U        /* requests one step answers ("times") */
#define MOCK_CALLS_MAX 128U                 /* tool calls of one step */
#define MOCK_PIECES_MAX 65536U              /* pieces of one text or arguments given as a list */
#define MOCK_STEP_HEADERS_MAX 4U            /* extra answer headers of one step */
#define MOCK_MODELS_MAX 64U                 /* "models" a script knows */
#define MOCK_DELAY_MS_MAX 600000ULL         /* any scripted delay */
#define MOCK_DELTA_BYTES_DEFAULT 16U        /* a streamed text or arguments piece, unless scripted */
#define MOCK_WRITE_DELAY_MS_DEFAULT 2U      /* between the writes of a fragmented event */
#define MOCK_REQUEST_BODY_MAX (16U << 20)   /* a model request's body */
#define MOCK_RECORDS_MAX 10000U             /* requests kept for GET /_mock/requests (the oldest go) */
#define MOCK_RECORDS_BYTES_MAX (128U << 20) /* ... and their bytes */
#define MOCK_STREAM_QUEUE_BYTES (8U << 20)  /* an answer stream's queue (an event larger goes alone) */
#define MOCK_STREAM_STALL_MS 60000ULL       /* a client that reads nothing this long loses its stream */
#define MOCK_SHUTDOWN_MS 10000ULL           /* SIGTERM: streams in flight may end for this long */
#define MOCK_TEMPLATE_BYTES_MAX (16U << 20) /* a step with its placeholders replaced */
#define MOCK_TEMPLATE_NUMBER_MAX 999999999U /* N of {{tool_result:N}}, K of |line:K */
#define MOCK_BODY_CACHE_SLOTS 8U            /* request bodies kept for the next ones' parse (mock-body.h) */
#define MOCK_BODY_CACHE_BYTES (8U << 20)    /* ... their bytes in all, at most (their values ~10x) */

/* hull run and hull chat (src/cli/cli-agent.c, cli-run.c, cli-chat.c, cli-tools.c) */
#define CLI_AGENT_ID_MAX 40U                    /* bytes of a run's or chat's id, NUL included */
#define CLI_AGENT_LINE_MAX 160U                 /* bytes of a tool call's input shown on one line */
#define CLI_RUN_INPUTS_MAX 64U                  /* --input files */
#define CLI_RUN_TURNS_MAX 1000U                 /* --max-turns */
#define CLI_TOOLS_MAX 256U                      /* tools one run offers (MCP servers' included) */
#define CLI_CHAT_LINE_MAX (1U << 20)            /* bytes of one message typed or piped to hull chat */
#define CLI_CHAT_HISTORY_MAX 1000U              /* lines kept in $HULL_HOME/chats/history */
#define CLI_CONVERSATION_BYTES_MAX (256U << 20) /* a kept conversation.json */
#define CLI_APPROVAL_SHOWN_MAX (64U << 10)      /* bytes of a tool input shown when asking to allow it */

/* hull chat --server (src/cli/cli-chat-remote.c), a client of the /v1 API */
#define CLI_REMOTE_ID_MAX 128U                /* bytes of an agent's, environment's, session's or event's id */
#define CLI_REMOTE_CALL_MS 60000U             /* one call (create, send) */
#define CLI_REMOTE_EVENT_MAX (16U << 20)      /* one event of the stream on the wire */
#define CLI_REMOTE_ERROR_BODY_MAX (64U << 10) /* a refused stream's answer kept to show it */
#define CLI_REMOTE_STREAM_IDLE_MS 90000U      /* no byte (the server pings every 15 s): the stream is dead */
#define CLI_REMOTE_TOOL_USES_MAX 4096U        /* tool calls of a chat remembered to ask about */

/* hull's own state (src/store/) */
#define STORE_ID_MAX 64U                   /* bytes of a resource's, event's or key's id, NUL included */
#define STORE_NAME_MAX 128U                /* bytes of a key's name, NUL included */
#define STORE_TIME_MAX 32U                 /* an RFC 3339 time, NUL included */
#define STORE_KEY_HINT_MAX 16U             /* the first characters of a key kept to tell keys apart */
#define STORE_CURSOR_MAX 128U              /* a page cursor, NUL included */
#define STORE_PAGE_DEFAULT 20U             /* items of a list page unless limit says */
#define STORE_PAGE_MAX 1000U               /* the largest limit of a resource list */
#define STORE_EVENTS_PAGE_MAX 1000U        /* the largest limit of an events list */
#define STORE_BUSY_TIMEOUT_MS 5000U        /* SQLite's busy timeout */
#define STORE_PG_CONNECT_TIMEOUT_S 10      /* PostgreSQL: connecting, unless the URL says */
#define STORE_PG_RETRIES 5U                /* PostgreSQL: a statement that lost a serialization race, again */
#define STORE_PG_PREPARED_MAX 16U          /* PostgreSQL: a turn's statements prepared once a connection */
#define STORE_PG_CONNS 4U                  /* PostgreSQL: connections of one store's pool, opened as needed */
#define STORE_PG_CACHE_SLOTS 1024U         /* PostgreSQL nodes: session bodies kept in memory (store-pg-cache.c) */
#define STORE_PG_CACHE_TRUST_MS 100U       /* ... trusted this long after the LISTEN connection was last read */
#define NODE_APPEND_TRIES 5U               /* nodes: an append whose session row another node changed, again */
#define NODE_PRESYNC_MS 50U                /* nodes: a send's sync with its sandbox look, taken by the send */
#define V1_WEBHOOK_PER_EVENT_MAX 2U        /* webhook events one logged session event makes (idled, budget) */
#define V1_HELD_MAX 8U                     /* nodes: a turn's events held for the next append (one commit) */
#define STORE_COPY_BATCH 500U              /* hull db copy: rows written a transaction */
#define STORE_OBJECT_BYTES_MAX (16U << 20) /* a stored object's JSON (a conversation's too) */
/* nodes: several hull serve sharing one PostgreSQL store (store-node.c, v1-nodes.c, docs/DEPLOY.md) */
#define NODE_URL_MAX 512U            /* bytes of a node's --advertise URL, NUL included */
#define NODE_LEASE_TTL_MS 6000U      /* a node or a turn's lease not renewed this long is dead (<= 10 s) */
#define NODE_HEARTBEAT_MS 2000U      /* how often a node renews its row and its leases (TTL / 3) */
#define NODE_POLL_MS 1000U           /* the fallback poll of the event streams when no NOTIFY came */
#define NODE_CAPACITY_DEFAULT 64U    /* --capacity: sessions a node runs turns of at once */
#define NODE_CAPACITY_MAX 100000U    /* --capacity's largest value */
#define NODE_RELEASE_RETRY_MAX 1024U /* sessions whose turn ended while the database was away */
/* a request about a session's sandbox forwarded to the node that holds it (http-forward.c) */
#define NODE_FORWARD_URL_MAX 8192U          /* bytes of a forwarded request's URL */
#define NODE_FORWARD_CONNECT_MS 2000U       /* connecting to the node that holds the sandbox */
#define NODE_FORWARD_TIMEOUT_MS 120000U     /* a forwarded request's whole exchange */
#define NODE_FORWARD_ANSWER_MAX (48U << 20) /* bytes of a forwarded answer (a handle's content: 16 MiB) */
/* a forwarded /mcp or AG-UI request, whose answer may be an event stream (http_forward_stream) */
#define NODE_FORWARD_IDLE_MS 660000U        /* no byte from the holder this long: cut (a call may wait 600 s) */
#define NODE_FORWARD_SSE_QUEUE (256U << 10) /* bytes of a relayed stream waiting for the client */
#define NODE_FORWARD_SSE_WAIT_MS 30000U     /* a relayed piece waits this long for room, then the stream is cut */
#define NODE_FORWARD_RELAYS_MAX 256U        /* forwarded streams and calls in flight at once per face */

/* hull mcp, the MCP server (src/mcp/mcp-server.c, src/cli/cli-mcp.c) */
#define MCP_SERVER_QUEUE_MAX 64U /* requests read while a call runs, waiting their turn (then reading waits) */
#define MCP_PROGRESS_MS 1000U    /* notifications/progress at most this often per call */
#define MCP_OFFER_MAX 11U /* the tools hull mcp and /mcp offer (tool_catalog_mcp_offer), run_javascript included */
#define MCP_SERVER_TICK_MS 200U /* how often the reader and the server look at the stop flag */
/* hull serve's /mcp (src/daemon/api-mcp.c) */
#define MCP_HTTP_SESSIONS_MAX 64U        /* MCP sessions open at once (each holds a sandbox session) */
#define MCP_HTTP_BODY_MAX (8U << 20)     /* a POST's body: one JSON-RPC message */
#define MCP_HTTP_SSE_QUEUE (256U << 10)  /* an SSE answer's frames waiting to be sent */
#define MCP_HTTP_SSE_WAIT_MS 30000U      /* how long a frame waits for room before the stream is given up */
#define MCP_HTTP_SHUTDOWN_WAIT_MS 10000U /* how long hull serve's stop waits for SSE answers in flight */
/* the /v1 API (src/daemon/v1-*.c, api-v1.c) */
#define V1_ERROR_CODE_MAX 64U      /* error.details.error_code, NUL included */
#define V1_ERROR_MSG_MAX 512U      /* error.message, NUL included */
#define V1_EVENTS_PER_SEND_MAX 50U /* events of one POST .../events (and initial_events) */
#define V1_TOOLS_MAX 256U          /* tools of an agent, all toolsets together */
#define V1_MCP_SERVERS_MAX 20U     /* mcp_servers of an agent */
#define V1_METADATA_KEYS_MAX 16U   /* keys of a metadata object */
#define V1_METADATA_KEY_MAX 64U    /* bytes of a metadata key */
#define V1_METADATA_VALUE_MAX 512U /* bytes of a metadata value */
#define V1_NAME_MAX 256U           /* bytes of a name or title */
#define V1_TEXT_MAX (1U << 20)     /* bytes of a system prompt, description, message text */
#define V1_BODY_MAX (8U << 20)     /* a request body */
#define V1_FIELD_PATH_MAX 128U     /* bytes of a field's path in an error message ("tools[1].configs[0].name") */
#define V1_SKILLS_MAX 20U          /* skills of an agent */
#define V1_RESOURCES_MAX 100U      /* resources of a session */
#define V1_PACKAGES_MAX 256U       /* entries of one package list of an environment, or of allowed_hosts */
#define V1_CONTENT_BLOCKS_MAX 256U /* content blocks of one event */
#define V1_AGENTS_KEPT_MAX 64U     /* sessions whose agent stays in memory between turns (the rest: from the store) */
#define V1_CONVERSATION_PARTS_MAX 128U   /* a conversation's appends before it is written whole again */
#define V1_WORKER_LINGER_MS 1000U        /* a session's worker waits this long for the next message before it ends */
#define V1_STREAM_QUEUE_BYTES (1U << 20) /* an event stream's frames waiting (a larger frame goes alone) */
#define V1_STREAM_STALL_MS 10000ULL      /* a stream behind the log that reads nothing this long is ended */
#define SERVE_MODEL_HEADERS_MAX 16U      /* hull serve --model-header */
/* hull's /v1 extensions for the console (handles, records) and AG-UI (POST /agui) */
#define STORE_THREAD_ID_MAX 129U               /* an AG-UI threadId, NUL included */
#define V1_HANDLE_ROWS_DEFAULT 20U             /* a table handle's preview rows unless ?rows says */
#define V1_HANDLE_ROWS_MAX HD_INSPECT_ROWS_MAX /* ... at most (the store's inspect bound) */
#define V1_HANDLE_JSON_PREVIEW_BYTES 4096U     /* a json handle's text preview */
#define V1_HANDLE_TEXT_PREVIEW_BYTES 1024U     /* a text handle's preview */
#define V1_RECORDS_PAGE_MAX 1000U              /* records of one GET .../records page */
#define V1_RECORDS_PAGE_BYTES (16U << 20)      /* raw lines of one page (at least one line) */
#define V1_AUDIT_LOG_ANSWER_MAX (256U << 20)   /* an audit log GET .../audit_log and .../records read */
#define V1_HANDLE_SUMMARY_MAX 240U             /* bytes of a handle's one-line summary */
#define V1_INPUT_BYTES_MAX (32U << 20)         /* one POST .../inputs body (within SERVE_BODIES_BUDGET_BYTES) */
#define V1_INPUTS_PENDING_MAX 32U              /* inputs of one session waiting for its next turn */
#define V1_INPUTS_PENDING_BYTES (64U << 20)    /* ... their bytes, held in memory till then */
#define V1_QUERY_ROWS_MAX 1000000U             /* rows a POST .../query result may have (more: refused) */
#define AGUI_ID_MAX 129U                       /* an AG-UI runId or message id, NUL included */
#define AGUI_TOOL_NAME_MAX 64U                 /* a frontend tool's name (a /v1 custom tool's) */
#define AGUI_MESSAGES_MAX 10000U               /* messages of one RunAgentInput */
#define AGUI_QUEUE_MAX 10000U                  /* watched events waiting for an AG-UI stream's worker */
#define AGUI_SSE_QUEUE_BYTES (1U << 20)        /* an AG-UI stream's frames waiting */
#define AGUI_SEND_WAIT_MS 30000U               /* an AG-UI frame waits this long for room, then the stream ends */

/* MCP (src/mcp/): the JSON-RPC messages of the Model Context Protocol */
#define MCP_MESSAGE_MAX (10U << 20)         /* one message (a stdio line, an HTTP body): the TypeScript SDK's cap */
#define MCP_METHOD_MAX 256U                 /* bytes of a method name */
#define MCP_SERVERS_MAX 16U                 /* --mcp servers of one run */
#define MCP_SERVER_NAME_MAX 32U             /* bytes of a server's name (it prefixes its tools' names), NUL excluded */
#define MCP_ARGV_MAX 256U                   /* arguments of a stdio server's command */
#define MCP_ENV_MAX 64U                     /* extra environment entries of a stdio server */
#define MCP_INIT_TIMEOUT_MS 60000ULL        /* a server that has not answered initialize by then failed */
#define MCP_REQUEST_TIMEOUT_MS 60000ULL     /* any other request without a deadline of its own */
#define MCP_CLOSE_GRACE_MS 2000U            /* stdin closed, then SIGTERM, then SIGKILL, this far apart */
#define MCP_STDERR_TAIL 1024U               /* bytes of a server's stderr kept to explain its failure */
#define MCP_READ_CHUNK 65536U               /* bytes per read() of a peer's output (a server's, hull mcp's stdin) */
#define MCP_TOOLS_MAX 256U                  /* tools listed from one server */
#define MCP_LIST_PAGES_MAX 100U             /* pages of one tools/list */
#define MCP_TOOL_DESCRIPTION_MAX (8U << 10) /* bytes of a tool's description offered to the model */
#define MCP_SCHEMA_MAX (64U << 10)          /* bytes of a tool's input schema */
#define MCP_QUOTE_MAX 120U                  /* bytes of a server's output quoted in an error */
#define MCP_CANCEL_POLL_MS 100U             /* how often a stdio wait looks at its cancel flag */
#define MCP_EVENT_ID_MAX 256U               /* bytes of an SSE event id kept to resume a stream */
#define MCP_RESUME_TRIES 3U                 /* resumptions in a row that bring no new event, then an error */
#define MCP_RESUME_DELAY_MS 1000U      /* the wait before the n-th resumption: n times this (or the server's retry) */
#define MCP_RESUME_DELAY_MAX_MS 10000U /* the longest wait before a resumption (a server's retry included) */

/* Environments (src/env/, issue 13) */
#define ENV_NAME_MAX 64U                         /* bytes of an environment's name, NUL included */
#define ENV_DESC_MAX 256U                        /* an environment as run records name it, NUL included */
#define ENV_PACKAGES_MAX 256U                    /* packages of one manager in one spec */
#define ENV_PACKAGE_MAX 214U                     /* bytes of one package spec ("name=version"), npm's name bound */
#define ENV_HOSTS_MAX 256U                       /* allowed_hosts of one spec */
#define ENV_HOST_MAX 254U                        /* bytes of one allowed host, NUL included */
#define ENV_SPEC_TEXT_MAX (1U << 20)             /* bytes of a spec's JSON text */
#define ENV_BUILD_TIMEOUT_MS (30ULL * 60 * 1000) /* one layer build */
#define ENV_CHECK_TIMEOUT_MS (5ULL * 60 * 1000)  /* one preflight */
#define ENV_BUILD_OUTPUT_BYTES (1ULL << 20)      /* kept per stream of a build or a check */
#define ENV_BUILD_TMP_BYTES (512ULL << 20)       /* the build sandbox's /tmp */

/* ---- vaults and credentials (issue 22): src/shared/vault-seal.c, src/service/v1-vault*.c ---- */
#define VAULT_KEY_BYTES 32U                /* an AES-256-GCM key */
#define VAULT_KEY_ID_MAX 17U               /* a key's id: 16 hex digits of its SHA-256, NUL included */
#define VAULT_KEYS_MAX 8U                  /* keys of a key ring (the current one first, older ones to open) */
#define VAULT_KEY_FILE_MAX 4096U           /* bytes of $HULL_HOME/vault.key or HULL_VAULT_KEY */
#define VAULT_NONCE_BYTES 12U              /* GCM's nonce, random per seal */
#define VAULT_TAG_BYTES 16U                /* GCM's tag */
#define VAULT_SECRET_MAX (64U << 10)       /* bytes of one credential's secrets (sealed as one JSON text) */
#define VAULT_CREDENTIALS_MAX 20U          /* active credentials of a vault */
#define VAULT_IDS_MAX 20U                  /* vault_ids of a session */
#define VAULT_TOKEN_ANSWER_MAX (64U << 10) /* a token endpoint's answer read */
#define VAULT_TOKEN_TIMEOUT_MS 15000ULL    /* one token endpoint exchange */
#define VAULT_REFRESH_EARLY_S 60           /* an OAuth token expiring within this is refreshed before use */
#define VAULT_PROBE_BODY_MAX 1024U         /* bytes of a token endpoint's or MCP server's answer shown by validate */
/* Documents (src/docread/, hull-docread; read_document in src/tools/tool-document.c, issue 25) */
#define DOCREAD_INPUT_MAX (64ULL << 20)       /* bytes of one document read */
#define DOCREAD_OUTPUT_MAX (48ULL << 20)      /* bytes of the parser's answer (JSON) the host accepts */
#define DOCREAD_TEXT_MAX (16ULL << 20)        /* bytes of a document's text */
#define DOCREAD_TIMEOUT_MS 60000ULL           /* one parse, OCR included */
#define DOCREAD_MEMORY_BYTES (1ULL << 30)     /* the parser's sandbox memory (and its RLIMIT_AS x2) */
#define DOCREAD_PIDS 16U                      /* the parser's sandbox processes and threads */
#define DOCREAD_PAGES_MAX 5000U               /* pages (slides, sheets) of a document read */
#define DOCREAD_THREADS_MAX 4U                /* threads reading a PDF's pages at once (DOCREAD_PIDS or fewer) */
#define DOCREAD_THREAD_PAGES 4U               /* pages each of them reads at least: 8 pages and more take two */
#define DOCREAD_THREAD_STACK (8ULL << 20)     /* bytes of each one's stack (poppler recurses in nested forms) */
#define DOCREAD_THREAD_PARTS 4U               /* runs of pages a thread, taken in turn (pages differ in cost) */
#define DOCREAD_PARTS_MAX 16U                 /* runs of pages (DOCREAD_THREADS_MAX x DOCREAD_THREAD_PARTS) */
#define DOCREAD_TABLES_MAX 256U               /* tables kept from one document */
#define DOCREAD_TABLE_ROWS_MAX 1000000U       /* rows of one table */
#define DOCREAD_TABLE_COLS_MAX 256U           /* columns of one table (HD_TABLE_COLUMNS_MAX or fewer) */
#define DOCREAD_CELL_MAX 32768U               /* bytes of one cell */
#define DOCREAD_ZIP_ENTRIES_MAX 20000U        /* entries of an Office/OpenDocument archive */
#define DOCREAD_ZIP_ENTRY_MAX (128ULL << 20)  /* bytes one entry expands to */
#define DOCREAD_ZIP_TOTAL_MAX (256ULL << 20)  /* bytes all entries read expand to (a zip bomb stops here) */
#define DOCREAD_XML_CHUNK (256U << 10)        /* bytes of a worksheet handed to the XML parser at once */
#define DOCREAD_HEADINGS_MAX 2000U            /* headings listed */
#define DOCREAD_WORDS_MAX 200000U             /* positioned words of one PDF page (table finding) */
#define DOCREAD_HEAP_PAD (16ULL << 20)        /* bytes the parser's heap grows by at once (M_TOP_PAD) */
#define DOCREAD_HEAP_KEEP (64ULL << 20)       /* free bytes at the heap's top it keeps (M_TRIM_THRESHOLD) */
#define DOCREAD_OCR_DPI 300U                  /* a scanned PDF page is rendered at this resolution for OCR */
#define DOCREAD_OCR_PIXELS_MAX (100ULL << 20) /* pixels of one page image handed to OCR */
#define DOCREAD_LANGS_MAX 64U                 /* bytes of an OCR language list ("eng+deu") */
#define DOCREAD_SUMMARY_HEADINGS 20U          /* headings the model's summary lists */
/* GLIBC_TUNABLES of the parser: glibc's malloc keeps up to 65535 free chunks of each small size a
 * thread (its tcache; 7 by default): poppler frees and makes again a few hundred thousand small
 * objects a PDF page, which then skip the arena (and its lock when threads read pages) */
#define DOCREAD_MALLOC_TUNABLES "glibc.malloc.tcache_count=65535"

/* Skills (/v1/skills, src/shared/skill-pack.c, issue 22) */
#define SKILL_UPLOAD_MAX (8U << 20)       /* bytes of one upload (a zip or the files), the body's bound */
#define SKILL_FILES_MAX 500U              /* files (and directories) of one skill, or entries of its archive */
#define SKILL_UNPACKED_MAX (32U << 20)    /* bytes of a skill's files unpacked, all together */
#define SKILL_RATIO_MAX 100U              /* unpacked bytes per archive byte (beyond SKILL_RATIO_FLOOR) */
#define SKILL_RATIO_FLOOR (1U << 20)      /* unpacked bytes any archive may reach before the ratio applies */
#define SKILL_PATH_MAX 512U               /* bytes of a file's path in a skill, NUL included */
#define SKILL_DEPTH_MAX 16U               /* directories a path goes down */
#define SKILL_NAME_MAX 64U                /* bytes of SKILL.md's name (lowercase letters, digits, hyphens) */
#define SKILL_DESCRIPTION_MAX 1024U       /* bytes of SKILL.md's description */
#define SKILL_FRONTMATTER_MAX (64U << 10) /* bytes of SKILL.md's front matter */
#define SKILL_PARTS_MAX 512U              /* parts of one multipart upload */
#define SKILL_PAGE_MAX 100U               /* skills or versions of one list page */
#define SKILL_PAGE_DEFAULT 20U            /* ... unless limit says */
#define SKILL_PROMPT_MAX (64U << 10)      /* bytes of the system prompt's list of an agent's skills */
/* Memory stores on /v1 (src/service/v1-memory*.c, src/store/store-memory.c; issue 22) */
#define STORE_MEMORY_PATH_MAX 1024U      /* bytes of a memory's path ("/a/b.md") */
#define MEMORY_CONTENT_MAX 102400U       /* bytes of a memory's content (UTF-8) */
#define MEMORY_PER_STORE_MAX 2000U       /* memories of one store */
#define MEMORY_STORE_NAME_MAX 255U       /* bytes of a store's name */
#define MEMORY_STORE_DESC_MAX 1024U      /* bytes of a store's description */
#define MEMORY_STORES_PER_SESSION_MAX 8U /* memory_store resources of one session */
#define MEMORY_INSTRUCTIONS_MAX 4096U    /* bytes of an attachment's instructions */
#define MEMORY_LIST_FULL_MAX 20U         /* a list's limit with view=full */
#define MEMORY_APPLY_TRIES 8U            /* a write without a precondition that lost a race, again */
#define MEMORY_SYNC_FILES_MAX 4096U      /* entries of a mounted store read back after a tool call */
#define MEMORY_SYNC_DEPTH_MAX 32U        /* directories deep in a mounted store */
/* Files on /v1 (src/service/v1-files.c, src/shared/multipart.c, the store's blobs; issue 22) */
#define V1_FILE_BYTES_MAX (500ULL << 20)    /* one uploaded file (the Files API's; --file-max lowers it) */
#define V1_FILE_UPLOAD_OVERHEAD (64U << 10) /* multipart framing allowed around the file in a request body */
#define V1_FILE_NAME_MAX 256U               /* bytes of a file's name, NUL included */
#define V1_FILE_MIME_MAX 128U               /* bytes of a file's media type, NUL included */
#define V1_FILES_PAGE_DEFAULT 20U           /* files listed when no limit is given */
#define V1_FILES_PAGE_MAX 1000U             /* the largest limit of a files list (clamped) */
#define V1_FILE_WRITE_BLOCK (256U << 10)    /* bytes of an upload gathered before a write */
#define STORE_BLOB_CHUNK_BYTES (1U << 20)   /* bytes of a blob in one row of blob_chunks */
#define MULTIPART_BOUNDARY_MAX 71U          /* a boundary's bytes (RFC 2046: 1 to 70), NUL included */
#define MULTIPART_HEADER_MAX 8192U          /* bytes of one part's header block */
#define MULTIPART_NAME_MAX 64U              /* bytes of a part's form name, NUL included */
#define MULTIPART_PARTS_MAX 16U             /* parts of one form */
#define MULTIPART_FILENAME_MAX 512U         /* bytes of a part's filename, NUL included (SKILL_PATH_MAX) */
#define V1_MOUNT_PATH_MAX 512U              /* bytes of a session resource's mount_path, NUL included */
#define V1_REPO_CLONE_TIMEOUT_S 120U        /* one git clone of a github_repository resource */
#define V1_REPO_URL_MAX 2048U               /* bytes of a github_repository resource's url */
#define V1_REPO_TOKEN_MAX 4096U             /* bytes of its authorization_token */
#define V1_REPO_GIT_OUTPUT_MAX 4096U        /* bytes of git's messages kept for an error */

/* /v1 outcomes and budgets (v1-outcome.c, v1-budget.c) */
#define V1_RUBRIC_MAX 262144U            /* characters of an outcome's rubric (text, or a file's text) */
#define V1_OUTCOME_ITERATIONS_DEFAULT 3U /* an outcome's max_iterations when not given */
#define V1_OUTCOME_ITERATIONS_MAX 20U    /* ... at most */
#define V1_GRADER_ANSWER_MAX (64U << 10) /* bytes of the answer the grader judges (the rest cut) */
#define V1_GRADER_EXPLANATION_MAX 4096U  /* bytes of a grader's explanation kept */
#define V1_GRADER_WALL_MS 300000U        /* one grading call, its retries included */
#define V1_OUTCOME_HEARTBEAT_MS 10000U   /* span.outcome_evaluation_ongoing this often while a grading runs */
#define V1_BUDGET_AMOUNT_DIGITS_MAX 15U  /* digits of a max_list_cost amount (minor units) */
#define V1_PRICE_PER_MTOK_MAX 1000000.0  /* the largest price per million tokens config.json may set */
/* Scheduled deployments (src/shared/cron.c, src/service/v1-deploy*.c; issue 23) */
#define CRON_EXPR_MAX 128U             /* bytes of a cron expression */
#define CRON_SEARCH_DAYS (9U * 366U)   /* how far ahead the next run is looked for (Feb 29 in 8 years) */
#define TZ_NAME_MAX 64U                /* bytes of an IANA time zone name, with its NUL */
#define TZ_FILE_BYTES_MAX (256U << 10) /* a TZif file read from the tz database */
#define TZ_TRANSITIONS_MAX 4096U       /* transitions of one zone */
#define TZ_TYPES_MAX 256U              /* local time types of one zone (TZif's own bound) */
#define DEPLOY_UPCOMING_MAX 5U         /* schedule.upcoming_runs_at */
#define DEPLOY_INITIAL_EVENTS_MAX 50U  /* a deployment's initial_events */
#define DEPLOY_RESOURCES_MAX 500U      /* a deployment's resources */
#define DEPLOY_VAULTS_MAX 50U          /* a deployment's vault_ids */
#define DEPLOY_NAME_MAX 256U           /* bytes of a deployment's name */
#define DEPLOY_DESCRIPTION_MAX 2048U   /* bytes of its description */
#define DEPLOY_SCHED_LOAD_PAGE 500U    /* deployments the scheduler reads a batch at start */
#define DEPLOY_ZONE_CACHE_MAX 128U     /* time zones the scheduler keeps read */
/* Outbound webhooks (src/service/v1-webhook*.c, src/shared/webhook-sign.c; issue 23) */
#define WEBHOOKS_MAX 100U                             /* subscriptions of one server */
#define WEBHOOK_URL_MAX 2048U                         /* bytes of a subscription's URL */
#define WEBHOOK_TYPES_MAX 64U                         /* event types of one subscription */
#define WEBHOOK_DESC_MAX 512U                         /* bytes of a subscription's description */
#define WEBHOOK_SECRET_BYTES 24U                      /* random bytes of a whsec_ secret */
#define WEBHOOK_SECRET_MAX 64U                        /* bytes of "whsec_" + base64 of them, NUL included */
#define WEBHOOK_SIG_MAX 128U                          /* bytes of one "v1,<base64>" signature, NUL included */
#define WEBHOOK_ROTATE_GRACE_MS (24ULL * 3600 * 1000) /* a rotated-out secret still signs this long */
#define WEBHOOK_BODY_MAX (16U << 10)                  /* bytes of one delivery's payload */
#define WEBHOOK_WORKERS 4U                            /* deliveries in flight at once (hull serve's threads) */
#define WEBHOOK_BATCH_MAX 64U                         /* deliveries claimed from the outbox at once */
#define WEBHOOK_POLL_MS 1000U                         /* the outbox looked at this often without a wake-up */
#define WEBHOOK_CLAIM_MS 30000U                       /* a claimed delivery is another node's again after this */
#define WEBHOOK_CONNECT_TIMEOUT_MS 5000U              /* one delivery's connect */
#define WEBHOOK_TIMEOUT_MS 15000U                     /* one delivery's whole exchange */
#define WEBHOOK_ANSWER_MAX 4096U                      /* bytes of a receiver's answer read */
#define WEBHOOK_RETRY_BASE_MS 1000U                   /* the first retry's delay (doubles each attempt, +-25% jitter) */
#define WEBHOOK_RETRY_CAP_MS (3600U * 1000)           /* the longest delay between two attempts */
#define WEBHOOK_ATTEMPTS_MAX 12U                      /* attempts of one delivery before it is dropped */
#define WEBHOOK_FAILURES_DISABLE 30U /* failed attempts in a row (any delivery) that disable an endpoint */
#define WEBHOOK_FAILING_DISABLE_MS (3600ULL * 1000) /* ... once it has failed for at least this long */
#define WEBHOOK_STOP_WAIT_MS 20000U                 /* hull serve waits this long for deliveries in flight at stop */
#define WEBHOOK_REQUEST_MAX (64U << 10)             /* bytes of a /v1/webhooks request body */
/* delivery threads in a store call at once: the rest of a PostgreSQL node's pool (STORE_PG_CONNS)
 * stays its requests' while webhook_deliveries is locked or slow (each waiting call holds one) */
#define WEBHOOK_STORE_CALLS 1U
_Static_assert(WEBHOOK_STORE_CALLS >= 1 && WEBHOOK_STORE_CALLS < STORE_PG_CONNS,
               "the delivery threads must leave a PostgreSQL node's requests a connection");

/* ---- the Work API: self-hosted workers (v1-work.c, hull worker) ---- */
#define STORE_WORK_STATE_MAX 16U      /* bytes of a work item's state, NUL included */
#define STORE_WORK_SCOPE_MAX 80U      /* bytes of a worker credential's scope ("env:<id>"), NUL included */
#define WORK_WORKER_ID_MAX 128U       /* bytes of an Anthropic-Worker-ID, NUL included */
#define WORK_LEASE_TTL_S 120U         /* a lease's default TTL (no heartbeat that long: the item is requeued) */
#define WORK_LEASE_TTL_MAX_S 600U     /* desired_ttl_seconds at most */
#define WORK_RECLAIM_DEFAULT_MS 5000U /* a handed-out item not acknowledged that long is handed out again */
#define WORK_POLL_BLOCK_MAX_MS 999U   /* block_ms at most */
#define WORK_POLL_STEP_MS 50U         /* a blocking poll looks again this often */
#define WORK_POLLERS_WINDOW_MS 30000U /* workers_polling counts the worker ids seen this recently */
#define WORK_POLLERS_MAX 256U         /* worker ids remembered for workers_polling */
#define WORK_LIST_MAX 100U            /* items of one /work list page */
#define WORK_METADATA_MAX 16U         /* metadata pairs of a work item */
#define WORK_SECRET_MAX 512U          /* bytes of a work item's secret (base64url JSON) */
