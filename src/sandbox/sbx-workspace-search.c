/* sbx-workspace-search.c: finding things in the workspace: glob patterns compiled to a small
 * automaton, a bounded walk of the tree (sorted, never through a link or into another mount, with
 * entry, depth and time budgets; persist walks with it too), glob, and grep with PCRE2 under a
 * match limit and a byte and time budget (see sbx-workspace.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "sbx-workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "sbx-workspace-internal.h"

/* ---- glob matching ---- */

/* Bytes of the UTF-8 character at s (1 for an invalid byte), at most n. */
static size_t utf8_char_len(const char *s, size_t n) {
        unsigned char c = (unsigned char) s[0];
        size_t l = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (l > n)
                return 1;
        for (size_t i = 1; i < l; i++)
                if (((unsigned char) s[i] & 0xc0) != 0x80)
                        return 1;
        return l;
}

/* Match one pattern element other than '*' at p against the character at s: *pn gets the
 * element's length in the pattern, *sn the bytes it consumes. */
static bool match_one(const char *p, size_t plen, const char *s, size_t slen, size_t *pn, size_t *sn) {
        unsigned char c = (unsigned char) s[0];
        if (slen == 0)
                return false;
        if (p[0] == '?') {
                *pn = 1;
                *sn = utf8_char_len(s, slen);
                return true;
        }
        if (p[0] == '[') {
                size_t i = 1;
                bool neg = false, hit = false, first = true;
                if (i < plen && (p[i] == '!' || p[i] == '^')) {
                        neg = true;
                        i++;
                }
                while (i < plen && (p[i] != ']' || first)) {
                        unsigned char lo, hi;
                        if (p[i] == '\\' && i + 1 < plen)
                                i++;
                        lo = hi = (unsigned char) p[i++];
                        if (i + 1 < plen && p[i] == '-' && p[i + 1] != ']') {
                                i++;
                                if (p[i] == '\\' && i + 1 < plen)
                                        i++;
                                hi = (unsigned char) p[i++];
                        }
                        if (c >= lo && c <= hi)
                                hit = true;
                        first = false;
                }
                if (i < plen) { /* a closed class: one character */
                        *pn = i + 1;
                        *sn = utf8_char_len(s, slen);
                        return hit != neg;
                }
                /* an unclosed '[' is a literal */
        }
        if (p[0] == '\\' && plen >= 2) {
                *pn = 2;
                *sn = 1;
                return s[0] == p[1];
        }
        *pn = 1;
        *sn = 1;
        return s[0] == p[0];
}

/* Shell-style match of one name against one pattern component. A '*' backtracks only to the
 * latest star, so time is O(plen * slen) whatever the pattern. */
static bool wild_match(const char *p, size_t plen, const char *s, size_t slen, bool hidden) {
        if (!hidden && slen > 0 && s[0] == '.' &&
            !(plen > 0 && (p[0] == '.' || (plen > 1 && p[0] == '\\' && p[1] == '.'))))
                return false;
        size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
        while (si < slen) {
                size_t pn, sn;
                if (pi < plen && p[pi] == '*') {
                        star_p = ++pi;
                        star_s = si;
                        continue;
                }
                if (pi < plen && match_one(p + pi, plen - pi, s + si, slen - si, &pn, &sn)) {
                        pi += pn;
                        si += sn;
                        continue;
                }
                if (star_p == SIZE_MAX)
                        return false;
                star_s += utf8_char_len(s + star_s, slen - star_s);
                si = star_s;
                pi = star_p;
        }
        while (pi < plen && p[pi] == '*')
                pi++;
        return pi == plen;
}

/* A pattern split into components; matching runs a small NFA whose states are component
 * indexes (bit n: the whole pattern matched). */
typedef struct glob_pat {
        char buf[WS_PATH_MAX + 1];
        size_t n;
        const char *comp[WS_GLOB_COMPONENTS_MAX];
        size_t len[WS_GLOB_COMPONENTS_MAX];
        bool starstar[WS_GLOB_COMPONENTS_MAX];
        bool hidden;
} glob_pat;

static int glob_compile(glob_pat *g, const char *pattern, bool hidden, hull_error *e) {
        char q[SHOWN_SIZE];
        if (!pattern)
                return ws_path_check(NULL, 0, e);
        int r = ws_path_normalize(pattern, strnlen(pattern, WS_PATH_MAX + 1), g->buf, sizeof(g->buf), e);
        if (r < 0)
                return r;
        g->n = 0;
        g->hidden = hidden;
        if (strcmp(g->buf, ".") == 0)
                return ws_fail(e, -EINVAL, "use '**' for everything, or e.g. '**/*.py'",
                               "workspace: glob pattern '%s' names only the root", ws_shows(pattern, q));
        for (char *p = g->buf; p;) {
                char *slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                bool ss = strcmp(p, "**") == 0;
                if (!(ss && g->n > 0 && g->starstar[g->n - 1])) { /* "**" twice in a row is one */
                        if (g->n >= WS_GLOB_COMPONENTS_MAX)
                                return ws_fail(e, -EINVAL, "use fewer components",
                                               "workspace: glob pattern '%s' has more than %u components",
                                               ws_shows(pattern, q), WS_GLOB_COMPONENTS_MAX);
                        g->comp[g->n] = p;
                        g->len[g->n] = strlen(p);
                        g->starstar[g->n] = ss;
                        g->n++;
                }
                p = slash ? slash + 1 : NULL;
        }
        return 0;
}

static uint64_t glob_close(const glob_pat *g, uint64_t s) {
        for (size_t i = 0; i < g->n; i++)
                if ((s >> i) & 1 && g->starstar[i])
                        s |= 1ULL << (i + 1);
        return s;
}

static uint64_t glob_start(const glob_pat *g) {
        return glob_close(g, 1);
}

static uint64_t glob_accept(const glob_pat *g) {
        return 1ULL << g->n;
}

static uint64_t glob_step(const glob_pat *g, uint64_t s, const char *name, size_t len) {
        uint64_t t = 0;
        bool dot = len > 0 && name[0] == '.';
        for (size_t i = 0; i < g->n; i++) {
                if (!((s >> i) & 1))
                        continue;
                if (g->starstar[i]) {
                        if (!dot || g->hidden)
                                t |= 1ULL << i;
                } else if (wild_match(g->comp[i], g->len[i], name, len, g->hidden))
                        t |= 1ULL << (i + 1);
        }
        return glob_close(g, t);
}

static bool glob_match_path(const glob_pat *g, const char *path) {
        uint64_t s = glob_start(g);
        for (const char *p = path; s && *p;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t) (slash - p) : strlen(p);
                if (n > 0 && !(n == 1 && p[0] == '.'))
                        s = glob_step(g, s, p, n);
                if (!slash)
                        break;
                p = slash + 1;
        }
        return s & glob_accept(g);
}

bool ws_glob_match(const char *pattern, const char *path, bool hidden) {
        _cleanup_free_ glob_pat *g = malloc(sizeof(*g));
        if (!g || !path || glob_compile(g, pattern, hidden, NULL) < 0)
                return false;
        if (ws_path_check(path, strnlen(path, WS_PATH_MAX + 1), NULL) < 0)
                return false;
        return glob_match_path(g, path);
}

/* ---- walking a tree ---- */

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

typedef struct name_list {
        char **v;
        size_t n, cap;
} name_list;

static void name_list_done(name_list *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int walk_dir(ws_walk *w, int fd, unsigned depth, uint64_t state);

/* Read every name of the directory (bounded by the entries budget), sorted, so that results
 * and truncation do not depend on the order readdir() happens to return. */
static int read_names(ws_walk *w, DIR *d, name_list *l) {
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno && w->strict)
                                return hull_err(w->e, negative_errno(), "workspace: cannot read directory '%s'",
                                                w->path_len ? w->path : ".");
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (w->entries >= w->entries_max) {
                        if (w->strict)
                                return ws_fail(w->e, -E2BIG, "remove files or raise the limit",
                                               "workspace: more than %llu entries",
                                               (unsigned long long) w->entries_max);
                        w->stopped |= WS_STOP_ENTRIES;
                        break;
                }
                w->entries++;
                if (l->n == l->cap) {
                        size_t cap = l->cap ? l->cap * 2 : 64;
                        char **v = realloc(l->v, cap * sizeof(*v));
                        if (!v)
                                return hull_err(w->e, -ENOMEM, "workspace: cannot list a directory");
                        l->v = v;
                        l->cap = cap;
                }
                l->v[l->n] = strdup(de->d_name);
                if (!l->v[l->n])
                        return hull_err(w->e, -ENOMEM, "workspace: cannot list a directory");
                l->n++;
        }
        if (l->n > 1)
                qsort(l->v, l->n, sizeof(*l->v), name_cmp);
        return 0;
}

static int walk_entry(ws_walk *w, int dfd, const char *name, unsigned depth, uint64_t state) {
        char q[SHOWN_SIZE];
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (w->strict && errno != ENOENT)
                        return hull_err(w->e, negative_errno(), "workspace: cannot stat '%s'", ws_shows(w->path, q));
                return WALK_NEXT; /* gone meanwhile */
        }
        if (S_ISDIR(st.st_mode) && st.st_dev != w->dev) {
                w->mounts++;
                return WALK_NEXT;
        }
        uint64_t child = 0;
        int v = w->visit(w, dfd, name, &st, state, &child);
        if (v != WALK_DESCEND || !S_ISDIR(st.st_mode))
                return v;
        if (depth + 2 > WS_PATH_DEPTH_MAX) {
                if (w->strict)
                        return ws_fail(w->e, -ENAMETOOLONG, "flatten the tree",
                                       "workspace: '%s' is nested deeper than %u levels", ws_shows(w->path, q),
                                       WS_PATH_DEPTH_MAX);
                w->stopped |= WS_STOP_DEPTH;
                return WALK_NEXT;
        }
        int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (cfd < 0) {
                if (w->strict && errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                        return hull_err(w->e, negative_errno(), "workspace: cannot open directory '%s'",
                                        ws_shows(w->path, q));
                return WALK_NEXT; /* replaced meanwhile */
        }
        return walk_dir(w, cfd, depth + 1, child);
}

/* Walk the directory open at fd (consumed) whose relative path is w->path, depth components
 * below the start. Returns 0, WALK_STOP or a negative errno. */
static int walk_dir(ws_walk *w, int fd, unsigned depth, uint64_t state) {
        _cleanup_(name_list_done) name_list l = {0};
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        char q[SHOWN_SIZE];
        int r = 0;
        if (!d) {
                r = negative_errno();
                safe_close(fd);
                return hull_err(w->e, r, "workspace: cannot read directory '%s'",
                                w->path_len ? ws_shows(w->path, q) : ".");
        }
        r = read_names(w, d, &l);
        if (r < 0)
                return r;
        size_t base = w->path_len;
        for (size_t i = 0; i < l.n; i++) {
                if (w->deadline_ns && ws_now_ns() >= w->deadline_ns) {
                        w->stopped |= WS_STOP_TIME;
                        r = WALK_STOP;
                        break;
                }
                size_t nl = strlen(l.v[i]), need = base + (base > 0) + nl;
                if (need > WS_PATH_MAX) {
                        if (w->strict) {
                                r = ws_fail(w->e, -ENAMETOOLONG, "use shorter names",
                                            "workspace: a path below '%s' is longer than %u bytes",
                                            ws_shows(w->path, q), WS_PATH_MAX);
                                break;
                        }
                        w->stopped |= WS_STOP_DEPTH;
                        continue;
                }
                if (base > 0)
                        w->path[base] = '/';
                memcpy(w->path + base + (base > 0), l.v[i], nl + 1);
                w->path_len = need;
                r = walk_entry(w, dirfd(d), l.v[i], depth, state);
                w->path_len = base;
                w->path[base] = '\0';
                if (r < 0 || r == WALK_STOP)
                        break;
                r = 0;
        }
        return r;
}

/* Start a walk at the directory open at fd (consumed), whose relative path is prefix. */
int ws_walk_start(ws_walk *w, int fd, const char *prefix, uint64_t state) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                safe_close(fd);
                return hull_err(w->e, r, "workspace: cannot stat the start of a walk");
        }
        w->dev = st.st_dev;
        w->path_len = strcmp(prefix, ".") == 0 ? 0 : strlen(prefix);
        memcpy(w->path, prefix, w->path_len);
        w->path[w->path_len] = '\0';
        int r = walk_dir(w, fd, 0, state);
        return r < 0 ? r : 0;
}

static uint64_t deadline_after(uint64_t ms) {
        return ws_now_ns() + ms * 1000000ULL;
}

const char *ws_stop_reason(unsigned stopped) {
        if (stopped & WS_STOP_TIME)
                return "the time budget ran out";
        if (stopped & WS_STOP_BYTES)
                return "the byte budget ran out";
        if (stopped & WS_STOP_ENTRIES)
                return "too many directory entries were examined";
        if (stopped & WS_STOP_RESULTS)
                return "the result limit was reached";
        if (stopped & WS_STOP_MATCH_LIMIT)
                return "the regular expression hit its backtracking limit on some lines";
        if (stopped & WS_STOP_DEPTH)
                return "some directories were nested too deep";
        return NULL;
}

/* ---- glob ---- */

typedef struct glob_ctx {
        glob_pat pat;
        size_t max;
        char **paths;
        size_t count, cap;
} glob_ctx;

static int glob_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                      uint64_t *child) {
        glob_ctx *g = w->data;
        uint64_t s = glob_step(&g->pat, state, name, strlen(name));
        bool dir = S_ISDIR(st->st_mode);
        if (s & glob_accept(&g->pat)) {
                if (g->count >= g->max) {
                        w->stopped |= WS_STOP_RESULTS;
                        return WALK_STOP;
                }
                if (g->count == g->cap) {
                        size_t cap = g->cap ? g->cap * 2 : 64;
                        char **v = realloc(g->paths, cap * sizeof(*v));
                        if (!v)
                                return hull_err(w->e, -ENOMEM, "workspace: glob");
                        g->paths = v;
                        g->cap = cap;
                }
                char *p = malloc(w->path_len + 2);
                if (!p)
                        return hull_err(w->e, -ENOMEM, "workspace: glob");
                memcpy(p, w->path, w->path_len);
                p[w->path_len] = dir ? '/' : '\0';
                p[w->path_len + dir] = '\0';
                g->paths[g->count++] = p;
        }
        if (dir && (s & ~glob_accept(&g->pat))) {
                *child = s;
                return WALK_DESCEND;
        }
        return WALK_NEXT;
}

static void free_strv(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

int ws_glob(int root_fd, const char *pattern, const ws_glob_opts *opts, ws_glob_result *ret, hull_error *e) {
        static const ws_glob_opts defaults = {0};
        if (!opts)
                opts = &defaults;
        if (opts->results_max > WS_GLOB_RESULTS_MAX || opts->entries_max > WS_WALK_ENTRIES_MAX ||
            opts->time_ms > WS_WALK_TIME_MS_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a glob limit is over its maximum");
        _cleanup_free_ glob_ctx *g = calloc(1, sizeof(*g));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        if (!g || !w)
                return hull_err(e, -ENOMEM, "workspace: glob");
        int r = glob_compile(&g->pat, pattern, opts->hidden, e);
        if (r < 0)
                return r;
        g->max = opts->results_max ? opts->results_max : WS_GLOB_RESULTS_DEFAULT;
        int fd = ws_open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return ws_open_error(e, fd, ".");
        w->visit = glob_visit;
        w->data = g;
        w->e = e;
        w->entries_max = opts->entries_max ? opts->entries_max : WS_WALK_ENTRIES_DEFAULT;
        w->deadline_ns = deadline_after(opts->time_ms ? opts->time_ms : WS_GLOB_TIME_MS_DEFAULT);
        r = ws_walk_start(w, fd, ".", glob_start(&g->pat));
        if (r < 0) {
                free_strv(g->paths, g->count);
                return r;
        }
        if (g->count > 1)
                qsort(g->paths, g->count, sizeof(*g->paths), name_cmp);
        ret->paths = g->paths;
        ret->count = g->count;
        ret->stopped = w->stopped;
        return 0;
}

void ws_glob_result_done(ws_glob_result *r) {
        if (!r)
                return;
        free_strv(r->paths, r->count);
        r->paths = NULL;
        r->count = 0;
}

/* ---- grep ---- */

typedef struct grep_ctx {
        pcre2_code *code;
        pcre2_match_context *mc;
        pcre2_match_data *md;
        pcre2_jit_stack *jit_stack;
        glob_pat *filter; /* NULL: every file */
        bool hidden;
        size_t matches_max;
        uint64_t bytes_max;
        uint64_t deadline_ns;
        size_t cap;
        ws_grep_result res;
        hull_error *e;
        char chunk[WS_IO_CHUNK];
        char line[WS_GREP_LINE_MAX];
} grep_ctx;

static void grep_ctx_free(grep_ctx *c) {
        if (!c)
                return;
        pcre2_match_data_free(c->md);
        pcre2_match_context_free(c->mc);
        pcre2_jit_stack_free(c->jit_stack);
        pcre2_code_free(c->code);
        free(c->filter);
        ws_grep_result_done(&c->res);
        free(c);
}

static void grep_ctx_freep(grep_ctx **c) {
        grep_ctx_free(*c);
}

static bool grep_time_up(grep_ctx *c) {
        if (ws_now_ns() < c->deadline_ns)
                return false;
        c->res.stopped |= WS_STOP_TIME;
        return true;
}

/* Find the first match in a line, trying WS_GREP_START_CHUNK start positions per pcre2_match()
 * call (the offset limit) so that the clock is read between chunks: PCRE2's match limit applies
 * per start position, so one call over a whole line could cost line length x match limit.
 * Returns 1 (match at *ret_off), 0 (none, or a limit hit) or WALK_STOP (out of time). */
static int grep_line(grep_ctx *c, const char *line, size_t len, size_t *ret_off) {
        size_t start = 0;
        for (;;) {
                pcre2_set_offset_limit(c->mc, start + WS_GREP_START_CHUNK - 1);
                int rc = pcre2_match(c->code, (PCRE2_SPTR) line, len, start, 0, c->md, c->mc);
                if (rc >= 0) {
                        *ret_off = pcre2_get_ovector_pointer(c->md)[0];
                        return 1;
                }
                if (rc == PCRE2_ERROR_NOMATCH) {
                        start += WS_GREP_START_CHUNK;
                        if (start > len)
                                return 0;
                        while (start < len && ((unsigned char) line[start] & 0xc0) == 0x80)
                                start++;
                        if (grep_time_up(c))
                                return WALK_STOP;
                        continue;
                }
                if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
                    rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_NOMEMORY) {
                        c->res.lines_limited++;
                        c->res.stopped |= WS_STOP_MATCH_LIMIT;
                }
                return 0;
        }
}

static int grep_add(grep_ctx *c, const char *path, uint64_t lineno, const char *line, size_t len, size_t off) {
        if (c->res.count == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                ws_grep_match *v = realloc(c->res.matches, cap * sizeof(*v));
                if (!v)
                        return hull_err(c->e, -ENOMEM, "workspace: grep");
                c->res.matches = v;
                c->cap = cap;
        }
        size_t from = 0, n = len;
        bool cut = false;
        if (len > WS_GREP_TEXT_MAX) { /* a window around the match, on character boundaries */
                cut = true;
                from = off > WS_GREP_TEXT_MAX / 4 ? off - WS_GREP_TEXT_MAX / 4 : 0;
                from = MIN(from, len - WS_GREP_TEXT_MAX);
                while (from < len && ((unsigned char) line[from] & 0xc0) == 0x80)
                        from++;
                n = MIN((size_t) WS_GREP_TEXT_MAX, len - from);
                while (n > 0 && from + n < len && ((unsigned char) line[from + n] & 0xc0) == 0x80)
                        n--;
        }
        ws_grep_match *m = &c->res.matches[c->res.count];
        m->path = strdup(path);
        m->text = malloc(n + 1);
        if (!m->path || !m->text) {
                free(m->path);
                free(m->text);
                return hull_err(c->e, -ENOMEM, "workspace: grep");
        }
        memcpy(m->text, line + from, n);
        m->text[n] = '\0';
        m->text_len = n;
        m->text_cut = cut;
        m->line = lineno;
        m->column = off + 1;
        c->res.count++;
        return 0;
}

static int grep_process_line(grep_ctx *c, const char *path, uint64_t lineno, size_t len, bool long_line) {
        size_t off;
        if (long_line)
                c->res.lines_long++;
        else if (len > 0 && c->line[len - 1] == '\r')
                len--;
        int r = grep_line(c, c->line, len, &off);
        if (r <= 0 || r == WALK_STOP)
                return r;
        if (c->res.count >= c->matches_max) {
                c->res.stopped |= WS_STOP_RESULTS;
                return WALK_STOP;
        }
        r = grep_add(c, path, lineno, c->line, len, off);
        if (r < 0)
                return r;
        if (c->res.count >= c->matches_max) {
                c->res.stopped |= WS_STOP_RESULTS;
                return WALK_STOP;
        }
        return 0;
}

/* Search one regular file open at fd. Returns 0, WALK_STOP or a negative errno. */
static int grep_file(grep_ctx *c, int fd, const char *path) {
        uint64_t lineno = 1;
        size_t len = 0;
        bool long_line = false, first = true, any = false;
        for (;;) {
                if (c->res.bytes_read >= c->bytes_max) {
                        c->res.stopped |= WS_STOP_BYTES;
                        return WALK_STOP;
                }
                if (grep_time_up(c))
                        return WALK_STOP;
                size_t want = (size_t) MIN((uint64_t) sizeof(c->chunk), c->bytes_max - c->res.bytes_read);
                ssize_t n = read(fd, c->chunk, want);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return 0; /* unreadable: skip the file */
                }
                if (n == 0)
                        break;
                c->res.bytes_read += (uint64_t) n;
                if (first) {
                        first = false;
                        if (memchr(c->chunk, '\0', MIN((size_t) n, (size_t) WS_GREP_BINARY_PROBE))) {
                                c->res.files_binary++;
                                return 0;
                        }
                        c->res.files_searched++;
                }
                for (const char *p = c->chunk, *end = c->chunk + n; p < end;) {
                        const char *nl = memchr(p, '\n', (size_t) (end - p));
                        size_t seg = (size_t) ((nl ? nl : end) - p), room = sizeof(c->line) - len;
                        if (seg > room)
                                long_line = true;
                        memcpy(c->line + len, p, MIN(seg, room));
                        len += MIN(seg, room);
                        any = true;
                        if (!nl)
                                break;
                        int r = grep_process_line(c, path, lineno, len, long_line);
                        if (r < 0 || r == WALK_STOP)
                                return r;
                        lineno++;
                        len = 0;
                        long_line = false;
                        any = false;
                        p = nl + 1;
                }
        }
        if (first)
                c->res.files_searched++; /* empty */
        if (any)
                return grep_process_line(c, path, lineno, len, long_line);
        return 0;
}

static int grep_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                      uint64_t *child) {
        grep_ctx *c = w->data;
        if (name[0] == '.' && !c->hidden)
                return WALK_NEXT;
        if (S_ISDIR(st->st_mode))
                return WALK_DESCEND;
        if (!S_ISREG(st->st_mode))
                return WALK_NEXT;
        if (c->filter && !glob_match_path(c->filter, w->path))
                return WALK_NEXT;
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        struct stat fst;
        if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode))
                return WALK_NEXT; /* replaced meanwhile */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return WALK_NEXT;
        int r = grep_file(c, fd, w->path);
        if (r == WALK_STOP)
                w->stopped |= c->res.stopped;
        return r;
}

static int grep_compile(grep_ctx *c, const char *pattern, bool ignore_case, hull_error *e) {
        size_t plen = strnlen(pattern, WS_GREP_PATTERN_MAX + 1);
        int errcode;
        PCRE2_SIZE erroff;
        if (plen > WS_GREP_PATTERN_MAX)
                return ws_fail(e, -EINVAL, "use a shorter regular expression",
                               "workspace: grep pattern is longer than %u bytes", WS_GREP_PATTERN_MAX);
        pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
        if (!cc)
                return hull_err(e, -ENOMEM, "workspace: grep");
        pcre2_set_max_pattern_length(cc, WS_GREP_PATTERN_MAX);
        pcre2_set_parens_nest_limit(cc, WS_GREP_PARENS_MAX);
        uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_USE_OFFSET_LIMIT | PCRE2_NEVER_BACKSLASH_C |
                         (ignore_case ? PCRE2_CASELESS : 0);
        c->code = pcre2_compile((PCRE2_SPTR) pattern, plen, flags, &errcode, &erroff, cc);
        pcre2_compile_context_free(cc);
        if (!c->code) {
                PCRE2_UCHAR msg[256];
                if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
                        snprintf((char *) msg, sizeof(msg), "error %d", errcode);
                return ws_fail(e, -EINVAL, "fix the regular expression (PCRE2 syntax)",
                               "workspace: grep pattern is invalid at offset %zu: %s", (size_t) erroff, (char *) msg);
        }
        c->mc = pcre2_match_context_create(NULL);
        c->md = pcre2_match_data_create_from_pattern(c->code, NULL);
        if (!c->mc || !c->md)
                return hull_err(e, -ENOMEM, "workspace: grep");
        pcre2_set_match_limit(c->mc, WS_GREP_MATCH_LIMIT);
        pcre2_set_depth_limit(c->mc, WS_GREP_DEPTH_LIMIT);
        pcre2_set_heap_limit(c->mc, WS_GREP_HEAP_LIMIT_KIB);
        /* JIT is a speed-up only: without it the interpreter runs under the same limits. */
        if (pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE) == 0) {
                c->jit_stack = pcre2_jit_stack_create(WS_GREP_JIT_STACK_MIN, WS_GREP_JIT_STACK_MAX, NULL);
                if (c->jit_stack)
                        pcre2_jit_stack_assign(c->mc, NULL, c->jit_stack);
        }
        return 0;
}

int ws_grep(int root_fd, const char *pattern, const ws_grep_opts *opts, ws_grep_result *ret, hull_error *e) {
        static const ws_grep_opts defaults = {0};
        char norm[WS_PATH_MAX + 1], q[SHOWN_SIZE];
        struct stat st;
        if (!opts)
                opts = &defaults;
        if (!pattern)
                return ws_fail(e, -EINVAL, "give a regular expression", "workspace: no grep pattern");
        if (opts->matches_max > WS_GREP_MATCHES_MAX || opts->bytes_max > WS_GREP_BYTES_MAX ||
            opts->time_ms > WS_WALK_TIME_MS_MAX || opts->entries_max > WS_WALK_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a grep limit is over its maximum");
        _cleanup_(grep_ctx_freep) grep_ctx *c = calloc(1, sizeof(*c));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        if (!c || !w)
                return hull_err(e, -ENOMEM, "workspace: grep");
        c->e = e;
        c->hidden = opts->hidden;
        c->matches_max = opts->matches_max ? opts->matches_max : WS_GREP_MATCHES_DEFAULT;
        c->bytes_max = opts->bytes_max ? opts->bytes_max : WS_GREP_BYTES_DEFAULT;
        c->deadline_ns = deadline_after(opts->time_ms ? opts->time_ms : WS_GREP_TIME_MS_DEFAULT);
        int r = grep_compile(c, pattern, opts->ignore_case, e);
        if (r < 0)
                return r;
        if (opts->glob) {
                c->filter = malloc(sizeof(*c->filter));
                if (!c->filter)
                        return hull_err(e, -ENOMEM, "workspace: grep");
                char g[WS_PATH_MAX + 1];
                bool base = !strchr(opts->glob, '/');
                int n = snprintf(g, sizeof(g), "%s%s", base ? "**/" : "", opts->glob);
                if (n < 0 || (size_t) n >= sizeof(g))
                        return ws_fail(e, -ENAMETOOLONG, NULL, "workspace: grep glob is too long");
                r = glob_compile(c->filter, g, opts->hidden, e);
                if (r < 0)
                        return r;
        }
        r = ws_path_normalize(opts->path ? opts->path : ".", opts->path ? strnlen(opts->path, WS_PATH_MAX + 1) : 1,
                              norm, sizeof(norm), e);
        if (r < 0)
                return r;
        int fd = ws_open(root_fd, norm, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW, 0, e);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                safe_close(fd);
                return hull_err(e, r, "workspace: cannot stat '%s'", ws_shows(norm, q));
        }
        if (S_ISREG(st.st_mode)) {
                int fl = fcntl(fd, F_GETFL);
                r = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? negative_errno() : grep_file(c, fd, norm);
                safe_close(fd);
                if (r < 0)
                        return hull_err(e, r, "workspace: cannot search '%s'", ws_shows(norm, q));
        } else if (S_ISDIR(st.st_mode)) {
                w->visit = grep_visit;
                w->data = c;
                w->e = e;
                w->entries_max = opts->entries_max ? opts->entries_max : WS_WALK_ENTRIES_DEFAULT;
                w->deadline_ns = c->deadline_ns;
                r = ws_walk_start(w, fd, norm, 0);
                if (r < 0)
                        return r;
                c->res.stopped |= w->stopped;
        } else {
                safe_close(fd);
                return ws_fail(e, -EINVAL, "search a regular file or a directory", "workspace: '%s' is a %s",
                               ws_shows(norm, q), ws_type_name(st.st_mode));
        }
        *ret = c->res;
        memset(&c->res, 0, sizeof(c->res));
        return 0;
}

void ws_grep_result_done(ws_grep_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->count; i++) {
                free(r->matches[i].path);
                free(r->matches[i].text);
        }
        free(r->matches);
        r->matches = NULL;
        r->count = 0;
}
