/* sbx-workspace-tar.c: workspace snapshots: persist (the tree walked into a pax tar, to an fd or
 * memory, within a byte cap) and hydrate (a tar unpacked with every entry checked against the
 * jail and the limits), through libarchive loaded on first use (sbx-archive). See
 * sbx-workspace.h. */
#include "sbx-workspace.h"
#include "dlib-archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "macro.h"
#include "sbx-workspace-internal.h"

/* ---- persist ---- */

static void archive_write_freep(struct archive **a) {
        if (*a)
                archive_write_free(*a);
}

static void archive_read_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}

static void archive_entry_freep(struct archive_entry **en) {
        if (*en)
                archive_entry_free(*en);
}

typedef struct tar_sink {
        int fd;       /* -1: into mem */
        dynbuf mem;   /* the archive when fd is -1; its maximum is max */
        uint64_t len; /* bytes written */
        uint64_t max;
        bool over; /* the cap was hit */
        int err;   /* the write error, negative */
} tar_sink;

static void tar_sink_done(tar_sink *s) {
        dynbuf_free(&s->mem);
}

static la_ssize_t tar_sink_write(struct archive *a, void *data, const void *buf, size_t n) {
        tar_sink *s = data;
        if (n > s->max || s->len > s->max - n) {
                s->over = true;
                archive_set_error(a, EFBIG, "archive over its size cap");
                return -1;
        }
        if (s->fd >= 0) {
                int r = ws_write_all(s->fd, buf, n);
                if (r < 0) {
                        s->err = r;
                        archive_set_error(a, -r, "write failed");
                        return -1;
                }
        } else if (dynbuf_add(&s->mem, buf, n) < 0) {
                s->err = -ENOMEM;
                archive_set_error(a, ENOMEM, "out of memory");
                return -1;
        }
        s->len += n;
        return (la_ssize_t) n;
}

typedef struct persist_ctx {
        struct archive *a;
        struct archive_entry *entry;
        tar_sink *sink;
        ws_tar_stats stats;
        hull_error *e;
        char chunk[WS_IO_CHUNK];
        char target[WS_PATH_MAX + 2];
} persist_ctx;

static int persist_error(persist_ctx *p, const char *path) {
        char q[SHOWN_SIZE];
        if (p->sink->over)
                return ws_fail(p->e, -EFBIG, "remove large files from the workspace or raise the cap",
                               "workspace: persist: the archive grew over %llu bytes at '%s'",
                               (unsigned long long) p->sink->max, ws_shows(path, q));
        if (p->sink->err < 0)
                return hull_err(p->e, p->sink->err, "workspace: persist: cannot write the archive");
        return hull_err(p->e, -EIO, "workspace: persist: cannot archive '%s' (%s)", ws_shows(path, q),
                        archive_error_string(p->a) ? archive_error_string(p->a) : "libarchive error");
}

static int persist_header(persist_ctx *p, const char *path) {
        int r = archive_write_header(p->a, p->entry);
        return r >= ARCHIVE_WARN ? 0 : persist_error(p, path);
}

static int persist_file(persist_ctx *p, int dir_fd, const char *name, const char *path) {
        char q[SHOWN_SIZE];
        struct stat st;
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                p->stats.skipped++; /* replaced meanwhile */
                return 0;
        }
        uint64_t size = (uint64_t) st.st_size;
        /* fail early on a file that cannot fit; the sink enforces the exact cap */
        if (size > p->sink->max - p->sink->len)
                return ws_fail(p->e, -EFBIG, "remove large files from the workspace or raise the cap",
                               "workspace: persist: '%s' (%llu bytes) does not fit in the archive cap of %llu bytes",
                               ws_shows(path, q), (unsigned long long) size, (unsigned long long) p->sink->max);
        archive_entry_set_filetype(p->entry, AE_IFREG);
        archive_entry_set_perm(p->entry, st.st_mode & 0777);
        archive_entry_set_size(p->entry, (la_int64_t) size);
        archive_entry_set_mtime(p->entry, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        int r = persist_header(p, path);
        if (r < 0)
                return r;
        /* Copy exactly the size in the header: a file that grows is cut, one that shrinks is
         * padded with zeros by libarchive when the entry is finished. */
        for (uint64_t done = 0; done < size;) {
                ssize_t n = ws_pread_full(fd, p->chunk, (size_t) MIN((uint64_t) sizeof(p->chunk), size - done), done);
                if (n < 0)
                        return hull_err(p->e, (int) n, "workspace: persist: cannot read '%s'", ws_shows(path, q));
                if (n == 0)
                        break;
                if (archive_write_data(p->a, p->chunk, (size_t) n) < 0)
                        return persist_error(p, path);
                done += (uint64_t) n;
        }
        if (archive_write_finish_entry(p->a) < ARCHIVE_WARN)
                return persist_error(p, path);
        p->stats.files++;
        p->stats.bytes += size;
        return 0;
}

static int persist_visit(ws_walk *w, int dir_fd, const char *name, const struct stat *st, uint64_t state,
                         uint64_t *child) {
        persist_ctx *p = w->data;
        char q[SHOWN_SIZE];
        archive_entry_clear(p->entry);
        archive_entry_copy_pathname(p->entry, w->path);
        archive_entry_set_uid(p->entry, 0);
        archive_entry_set_gid(p->entry, 0);
        if (S_ISREG(st->st_mode))
                return persist_file(p, dir_fd, name, w->path);
        if (S_ISDIR(st->st_mode)) {
                archive_entry_set_filetype(p->entry, AE_IFDIR);
                archive_entry_set_perm(p->entry, st->st_mode & 0777);
                archive_entry_set_mtime(p->entry, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
                int r = persist_header(p, w->path);
                if (r < 0)
                        return r;
                p->stats.dirs++;
                return WALK_DESCEND;
        }
        if (S_ISLNK(st->st_mode)) {
                ssize_t n = readlinkat(dir_fd, name, p->target, sizeof(p->target));
                if (n < 0) {
                        if (errno == ENOENT || errno == EINVAL) {
                                p->stats.skipped++; /* replaced meanwhile */
                                return WALK_NEXT;
                        }
                        return hull_err(p->e, negative_errno(), "workspace: persist: cannot read link '%s'",
                                        ws_shows(w->path, q));
                }
                if ((size_t) n > WS_PATH_MAX || n == 0)
                        return ws_fail(p->e, -ENAMETOOLONG, "shorten the link",
                                       "workspace: persist: link '%s' has a target of %zd bytes", ws_shows(w->path, q),
                                       n);
                p->target[n] = '\0';
                archive_entry_set_filetype(p->entry, AE_IFLNK);
                archive_entry_set_perm(p->entry, 0777);
                archive_entry_copy_symlink(p->entry, p->target);
                archive_entry_set_mtime(p->entry, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
                int r = persist_header(p, w->path);
                if (r < 0)
                        return r;
                p->stats.symlinks++;
                return WALK_NEXT;
        }
        p->stats.skipped++; /* sockets, FIFOs, devices */
        return WALK_NEXT;
}

static int persist(int root_fd, tar_sink *sink, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        static const ws_tar_limits defaults = {0};
        if (!lim)
                lim = &defaults;
        if (lim->bytes_max > WS_TAR_BYTES_MAX || lim->entries_max > WS_TAR_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a persist limit is over its maximum");
        sink->max = lim->bytes_max ? lim->bytes_max : WS_TAR_BYTES_DEFAULT;
        dynbuf_init(&sink->mem, (size_t) sink->max);
        if (!dlib_archive_load(e))
                return -ENOSYS;
        _cleanup_free_ persist_ctx *p = calloc(1, sizeof(*p));
        _cleanup_free_ ws_walk *w = calloc(1, sizeof(*w));
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        _cleanup_(archive_entry_freep) struct archive_entry *entry = archive_entry_new();
        if (!p || !w || !a || !entry)
                return hull_err(e, -ENOMEM, "workspace: persist");
        /* A name the locale cannot convert to UTF-8 is stored as its bytes (libarchive marks
         * that entry hdrcharset=BINARY and warns; a warning is not a failure here). */
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
            archive_write_open(a, sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
                return hull_err(e, -EIO, "workspace: persist: cannot start the archive (%s)",
                                archive_error_string(a) ? archive_error_string(a) : "libarchive error");
        p->a = a;
        p->entry = entry;
        p->sink = sink;
        p->e = e;
        int fd = ws_open_beneath(root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return ws_open_error(e, fd, ".");
        w->visit = persist_visit;
        w->data = p;
        w->e = e;
        w->strict = true;
        w->entries_max = lim->entries_max ? lim->entries_max : WS_TAR_ENTRIES_DEFAULT;
        int r = ws_walk_start(w, fd, ".", 0);
        if (r < 0)
                return r;
        if (archive_write_close(a) != ARCHIVE_OK)
                return persist_error(p, ".");
        p->stats.skipped += w->mounts;
        if (ret_stats)
                *ret_stats = p->stats;
        return 0;
}

int ws_persist_fd(int root_fd, int out_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        tar_sink sink = {.fd = out_fd};
        if (out_fd < 0)
                return ws_fail(e, -EBADF, NULL, "workspace: persist: no output");
        return persist(root_fd, &sink, lim, ret_stats, e);
}

int ws_persist_mem(int root_fd, const ws_tar_limits *lim, void **ret_buf, size_t *ret_len, ws_tar_stats *ret_stats,
                   hull_error *e) {
        _cleanup_(tar_sink_done) tar_sink sink = {.fd = -1};
        int r = persist(root_fd, &sink, lim, ret_stats, e);
        if (r < 0)
                return r;
        void *p = dynbuf_take(&sink.mem, ret_len);
        if (!p)
                return hull_err(e, -ENOMEM, "workspace: persist");
        *ret_buf = p;
        return 0;
}

/* ---- hydrate ---- */

typedef struct hydrate_ctx {
        struct archive *a;
        int root_fd;
        ws_owner owner;
        uint64_t bytes_max, file_bytes_max, entries_max;
        uint64_t declared; /* sum of declared file sizes */
        ws_tar_stats stats;
        hull_error *e;
        char norm[WS_PATH_MAX + 1];
        char target[WS_PATH_MAX + 1];
} hydrate_ctx;

/* Re-word a refusal of the jail for an archive entry. */
static int entry_refused(hydrate_ctx *h, int r, hull_error *inner) {
        const char *msg = inner->msg;
        if (strncmp(msg, "workspace: ", 11) == 0)
                msg += 11;
        return ws_fail(h->e, r, NULL, "workspace: hydrate refused an entry: %s", msg);
}

static int hydrate_dir(hydrate_ctx *h, struct archive_entry *en) {
        hull_error inner = {0};
        int fd = ws_make_dirs(h->root_fd, h->norm, &h->owner, &inner);
        if (fd < 0)
                return entry_refused(h, fd, &inner);
        if (fchmod(fd, (archive_entry_perm(en) & 0777) | 0700) < 0) {
                /* best effort: the directory exists, which is what matters */
        }
        safe_close(fd);
        h->stats.dirs++;
        return 0;
}

static int hydrate_exists(hydrate_ctx *h) {
        char q[SHOWN_SIZE];
        return ws_fail(h->e, -EEXIST, "hydrate into an empty workspace; existing files are never replaced",
                       "workspace: hydrate: '%s' already exists", ws_shows(h->norm, q));
}

static int hydrate_file(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name;
        la_int64_t declared = archive_entry_size(en);
        if (declared < 0)
                return ws_fail(h->e, -EINVAL, NULL, "workspace: hydrate: entry '%s' has a negative size",
                               ws_shows(h->norm, q));
        uint64_t size = (uint64_t) declared;
        if (size > h->file_bytes_max)
                return ws_fail(h->e, -EFBIG, "leave large files out of the archive",
                               "workspace: hydrate: entry '%s' declares %llu bytes, over the per-file cap of %llu",
                               ws_shows(h->norm, q), (unsigned long long) size, (unsigned long long) h->file_bytes_max);
        if (size > h->bytes_max - h->declared)
                return ws_fail(h->e, -EFBIG, "leave large files out of the archive",
                               "workspace: hydrate: the files reach more than %llu bytes at entry '%s'",
                               (unsigned long long) h->bytes_max, ws_shows(h->norm, q));
        h->declared += size;
        _cleanup_close_ int dfd = ws_open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot create '%s'", ws_shows(h->norm, q));
        }
        int r = 0;
        for (;;) {
                const void *buf;
                size_t n;
                la_int64_t off;
                int ar = archive_read_data_block(h->a, &buf, &n, &off);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar < ARCHIVE_WARN) {
                        r = ws_fail(h->e, -EINVAL, "pass a tar made by persist",
                                    "workspace: hydrate: the data of '%s' is damaged (%s)", ws_shows(h->norm, q),
                                    archive_error_string(h->a) ? archive_error_string(h->a) : "libarchive error");
                        break;
                }
                if (off < 0 || (uint64_t) off > size || n > size - (uint64_t) off) {
                        r = ws_fail(h->e, -EFBIG, NULL,
                                    "workspace: hydrate: entry '%s' holds more data than it declares",
                                    ws_shows(h->norm, q));
                        break;
                }
                r = ws_pwrite_all(fd, buf, n, (off_t) off);
                if (r < 0) {
                        r = hull_err(h->e, r, "workspace: hydrate: cannot write '%s'", ws_shows(h->norm, q));
                        break;
                }
                h->stats.bytes += n;
        }
        if (r == 0 && ftruncate(fd, (off_t) size) < 0) /* a sparse tail */
                r = hull_err(h->e, negative_errno(), "workspace: hydrate: cannot write '%s'", ws_shows(h->norm, q));
        if (r < 0) {
                (void) unlinkat(dfd, name, 0);
                return r;
        }
        if (fchmod(fd, (archive_entry_perm(en) & 0777) | 0600) < 0) {
                /* best effort */
        }
        ws_give_fd(&h->owner, fd);
        if (archive_entry_mtime_is_set(en)) {
                struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                                         {.tv_sec = archive_entry_mtime(en), .tv_nsec = archive_entry_mtime_nsec(en)}};
                if (futimens(fd, ts) < 0) {
                        /* best effort */
                }
        }
        h->stats.files++;
        return 0;
}

static int hydrate_symlink(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name, *target = archive_entry_symlink(en);
        if (!target || !*target)
                return ws_fail(h->e, -EINVAL, NULL, "workspace: hydrate: link '%s' has no target",
                               ws_shows(h->norm, q));
        if (strlen(target) > WS_PATH_MAX)
                return ws_fail(h->e, -ENAMETOOLONG, NULL, "workspace: hydrate: link '%s' has a target over %u bytes",
                               ws_shows(h->norm, q), WS_PATH_MAX);
        _cleanup_close_ int dfd = ws_open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        if (symlinkat(target, dfd, name) < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot create link '%s'",
                                ws_shows(h->norm, q));
        }
        if (h->owner.give && fchownat(dfd, name, h->owner.uid, h->owner.gid, AT_SYMLINK_NOFOLLOW) < 0) {
                /* best effort */
        }
        h->stats.symlinks++;
        return 0;
}

/* A hard link names a regular file already extracted; its data, if any, is ignored (it would
 * only overwrite that file). */
static int hydrate_hardlink(hydrate_ctx *h, const char *link_target) {
        char q[SHOWN_SIZE], q2[SHOWN_SIZE];
        hull_error inner = {0};
        const char *name, *tname;
        struct stat tst, st;
        int r = ws_path_normalize(link_target, strlen(link_target), h->target, sizeof(h->target), &inner);
        if (r < 0)
                return ws_fail(h->e, r, NULL, "workspace: hydrate refused hard link '%s': %s", ws_shows(h->norm, q),
                               strncmp(inner.msg, "workspace: ", 11) == 0 ? inner.msg + 11 : inner.msg);
        if (strcmp(h->target, ".") == 0)
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate refused hard link '%s' to the root",
                               ws_shows(h->norm, q));
        _cleanup_close_ int tdfd = ws_open_parent(h->root_fd, h->target, false, NULL, &tname, &inner);
        if (tdfd < 0)
                return entry_refused(h, tdfd, &inner);
        if (fstatat(tdfd, tname, &tst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(tst.st_mode))
                return ws_fail(h->e, -EPERM, "a hard link must follow the regular file it names",
                               "workspace: hydrate refused hard link '%s': '%s' is not a regular file in the workspace",
                               ws_shows(h->norm, q), ws_shows(h->target, q2));
        _cleanup_close_ int dfd = ws_open_parent(h->root_fd, h->norm, true, &h->owner, &name, &inner);
        if (dfd < 0)
                return entry_refused(h, dfd, &inner);
        if (linkat(tdfd, tname, dfd, name, 0) < 0) {
                if (errno == EEXIST)
                        return hydrate_exists(h);
                return hull_err(h->e, negative_errno(), "workspace: hydrate: cannot link '%s'", ws_shows(h->norm, q));
        }
        /* The name could have been swapped between the check and the link: verify what we linked. */
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_ino != tst.st_ino ||
            st.st_dev != tst.st_dev) {
                (void) unlinkat(dfd, name, 0);
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate: '%s' changed while it was linked",
                               ws_shows(h->target, q));
        }
        h->stats.hardlinks++;
        return 0;
}

static const char *entry_type_name(unsigned type) {
        switch (type) {
        case AE_IFCHR:
                return "character device";
        case AE_IFBLK:
                return "block device";
        case AE_IFIFO:
                return "FIFO";
        case AE_IFSOCK:
                return "socket";
        default:
                return "entry of unknown type";
        }
}

static int hydrate_entry(hydrate_ctx *h, struct archive_entry *en) {
        char q[SHOWN_SIZE];
        hull_error inner = {0};
        const char *path = archive_entry_pathname(en);
        if (!path)
                return ws_fail(h->e, -EINVAL, "pass a tar made by persist",
                               "workspace: hydrate: entry %llu has no usable name",
                               (unsigned long long) h->stats.files + h->stats.dirs + h->stats.symlinks + 1);
        int r = ws_path_normalize(path, strlen(path), h->norm, sizeof(h->norm), &inner);
        if (r < 0)
                return entry_refused(h, r, &inner);
        unsigned type = archive_entry_filetype(en);
        const char *hl = archive_entry_hardlink(en);
        if (strcmp(h->norm, ".") == 0) {
                if (type == AE_IFDIR && !hl)
                        return 0; /* "./": the root itself */
                return ws_fail(h->e, -EPERM, NULL, "workspace: hydrate refused an entry naming the root as a %s",
                               hl ? "hard link" : ws_type_name(type));
        }
        if (hl)
                return hydrate_hardlink(h, hl);
        switch (type) {
        case AE_IFREG:
                return hydrate_file(h, en);
        case AE_IFDIR:
                return hydrate_dir(h, en);
        case AE_IFLNK:
                return hydrate_symlink(h, en);
        default:
                return ws_fail(h->e, -EPERM, "workspace archives may hold only files, directories and links",
                               "workspace: hydrate refused '%s': a %s", ws_shows(h->norm, q), entry_type_name(type));
        }
}

static int hydrate(int root_fd, struct archive *a, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        static const ws_tar_limits defaults = {0};
        if (!lim)
                lim = &defaults;
        if (lim->bytes_max > WS_TAR_BYTES_MAX || lim->file_bytes_max > WS_TAR_BYTES_MAX ||
            lim->entries_max > WS_TAR_ENTRIES_MAX)
                return ws_fail(e, -EINVAL, "use smaller limits", "workspace: a hydrate limit is over its maximum");
        _cleanup_free_ hydrate_ctx *h = calloc(1, sizeof(*h));
        if (!h)
                return hull_err(e, -ENOMEM, "workspace: hydrate");
        h->a = a;
        h->root_fd = root_fd;
        h->e = e;
        h->bytes_max = lim->bytes_max ? lim->bytes_max : WS_TAR_BYTES_DEFAULT;
        h->file_bytes_max = lim->file_bytes_max ? lim->file_bytes_max : WS_TAR_FILE_BYTES_DEFAULT;
        h->entries_max = lim->entries_max ? lim->entries_max : WS_TAR_ENTRIES_DEFAULT;
        ws_owner_of(root_fd, &h->owner);
        for (uint64_t n = 0;;) {
                struct archive_entry *en;
                int ar = archive_read_next_header(a, &en);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar < ARCHIVE_WARN)
                        return ws_fail(e, -EINVAL, "pass a tar made by persist",
                                       "workspace: hydrate: the archive is damaged after %llu entries (%s)",
                                       (unsigned long long) n,
                                       archive_error_string(a) ? archive_error_string(a) : "libarchive error");
                if (++n > h->entries_max)
                        return ws_fail(e, -E2BIG, "archive fewer files",
                                       "workspace: hydrate: the archive has more than %llu entries",
                                       (unsigned long long) h->entries_max);
                int r = hydrate_entry(h, en);
                if (r < 0)
                        return r;
        }
        if (ret_stats)
                *ret_stats = h->stats;
        return 0;
}

static int hydrate_reader(struct archive **ret, hull_error *e) {
        if (!dlib_archive_load(e))
                return -ENOSYS;
        struct archive *a = archive_read_new();
        if (!a)
                return hull_err(e, -ENOMEM, "workspace: hydrate");
        if (archive_read_support_format_tar(a) != ARCHIVE_OK) {
                int r = hull_err(e, -EIO, "workspace: hydrate: no tar support in libarchive (%s)",
                                 archive_error_string(a) ? archive_error_string(a) : "unknown");
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

static int hydrate_open_failed(struct archive *a, hull_error *e) {
        return ws_fail(e, -EINVAL, "pass a tar made by persist", "workspace: hydrate: not a tar archive (%s)",
                       archive_error_string(a) ? archive_error_string(a) : "libarchive error");
}

int ws_hydrate_fd(int root_fd, int in_fd, const ws_tar_limits *lim, ws_tar_stats *ret_stats, hull_error *e) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        int r = hydrate_reader(&a, e);
        if (r < 0)
                return r;
        if (archive_read_open_fd(a, in_fd, WS_IO_CHUNK) != ARCHIVE_OK)
                return hydrate_open_failed(a, e);
        return hydrate(root_fd, a, lim, ret_stats, e);
}

int ws_hydrate_mem(int root_fd, const void *buf, size_t len, const ws_tar_limits *lim, ws_tar_stats *ret_stats,
                   hull_error *e) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        int r = hydrate_reader(&a, e);
        if (r < 0)
                return r;
        if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK)
                return hydrate_open_failed(a, e);
        return hydrate(root_fd, a, lim, ret_stats, e);
}
