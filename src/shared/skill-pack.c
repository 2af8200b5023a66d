/* skill-pack.c: see skill-pack.h. A skill's files checked and held in memory: SKILL.md's front
 * matter, a multipart upload's parts, an archive's entries (libarchive, bounded as it reads), the
 * zip hull keeps, the files installed under a directory. */
#include "skill-pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlib-archive.h"
#include "dynbuf.h"
#include "fs-util.h"
#include "macro.h"
#include "multipart.h"
#include "utf8.h"

/* ---- SKILL.md's front matter (pure) ---- */

/* The next line of md from *pos (without its "\n" or "\r\n"): *ret_line, *ret_n; false at the end. */
static bool next_line(const char *md, size_t len, size_t *pos, const char **ret_line, size_t *ret_n) {
        if (*pos >= len)
                return false;
        const char *s = md + *pos;
        const char *nl = memchr(s, '\n', len - *pos);
        size_t n = nl ? (size_t) (nl - s) : len - *pos;
        *pos += n + (nl ? 1 : 0);
        if (n > 0 && s[n - 1] == '\r')
                n--;
        *ret_line = s;
        *ret_n = n;
        return true;
}

static void trim(const char **s, size_t *n) {
        while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
                (*n)--;
}

/* Append the value text v (n bytes) to dst (size), a space between pieces; -E2BIG when it does not fit. */
static int append_value(char *dst, size_t size, const char *v, size_t n) {
        size_t have = strlen(dst);
        size_t sep = have > 0 && n > 0 ? 1 : 0;
        if (have + sep + n >= size)
                return -E2BIG;
        if (sep)
                dst[have++] = ' ';
        memcpy(dst + have, v, n);
        dst[have + n] = '\0';
        return 0;
}

static int check_meta(const skp_meta *m, hull_error *e) {
        if (!m->name[0])
                return hull_fail(e, -EINVAL, "SKILL.md: the front matter has no name (add a line 'name: my-skill')");
        for (const char *c = m->name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
                        return hull_fail(e, -EINVAL,
                                         "SKILL.md: name '%.64s' may hold only lowercase letters, digits and hyphens",
                                         m->name);
        if (!m->description[0])
                return hull_fail(e, -EINVAL,
                                 "SKILL.md: the front matter has no description (add a line 'description: what the "
                                 "skill does and when to use it')");
        if (!utf8_is_valid(m->description, strlen(m->description)))
                return hull_fail(e, -EINVAL, "SKILL.md: the description is not UTF-8 text");
        for (const char *c = m->description; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return hull_fail(e, -EINVAL, "SKILL.md: the description holds a control character");
        return 0;
}

int skp_frontmatter_parse(const char *md, size_t len, skp_meta *ret, size_t *ret_body, hull_error *e) {
        skp_meta m = {0};
        size_t pos = 0;
        const char *line;
        size_t n;
        if (len >= 3 && memcmp(md, "\xef\xbb\xbf", 3) == 0) /* a BOM */
                pos = 3;
        if (!next_line(md, len, &pos, &line, &n) || n != 3 || memcmp(line, "---", 3) != 0)
                return hull_fail(e, -EINVAL,
                                 "SKILL.md must begin with front matter: a line '---', 'name: ...' and 'description: "
                                 "...', a line '---'");
        char *folding = NULL; /* the value a "key: >" or "key: |" goes on into */
        size_t folding_size = 0;
        for (;;) {
                if (pos > SKILL_FRONTMATTER_MAX)
                        return hull_fail(e, -E2BIG, "SKILL.md: the front matter is over %u bytes",
                                         SKILL_FRONTMATTER_MAX);
                if (!next_line(md, len, &pos, &line, &n))
                        return hull_fail(e, -EINVAL, "SKILL.md: the front matter has no closing line '---'");
                if (memchr(line, '\0', n))
                        return hull_fail(e, -EINVAL, "SKILL.md: the front matter holds a NUL byte");
                if (n == 3 && memcmp(line, "---", 3) == 0)
                        break;
                if (n > 0 && (line[0] == ' ' || line[0] == '\t')) { /* a folded value's next line */
                        trim(&line, &n);
                        if (folding && append_value(folding, folding_size, line, n) < 0)
                                return hull_fail(e, -E2BIG, "SKILL.md: the %s is over %u bytes",
                                                 folding == m.name ? "name" : "description",
                                                 folding == m.name ? SKILL_NAME_MAX : SKILL_DESCRIPTION_MAX);
                        continue;
                }
                folding = NULL;
                trim(&line, &n);
                if (n == 0 || line[0] == '#')
                        continue;
                const char *colon = memchr(line, ':', n);
                if (!colon)
                        return hull_fail(e, -EINVAL, "SKILL.md: front matter line '%.*s' is not 'key: value'",
                                         (int) (n > 60 ? 60 : n), line);
                const char *key = line, *v = colon + 1;
                size_t kn = (size_t) (colon - line), vn = n - kn - 1;
                trim(&key, &kn);
                trim(&v, &vn);
                char *dst = NULL;
                size_t size = 0;
                if (kn == 4 && memcmp(key, "name", 4) == 0)
                        dst = m.name, size = sizeof(m.name);
                else if (kn == 11 && memcmp(key, "description", 11) == 0)
                        dst = m.description, size = sizeof(m.description);
                if (!dst)
                        continue;
                if (dst[0])
                        return hull_fail(e, -EINVAL, "SKILL.md: the front matter gives %.*s twice", (int) kn, key);
                if (vn >= 1 && (v[0] == '>' || v[0] == '|')) {
                        folding = dst;
                        folding_size = size;
                        continue;
                }
                if (vn >= 2 && (v[0] == '"' || v[0] == '\'') && v[vn - 1] == v[0]) {
                        v++;
                        vn -= 2;
                }
                if (append_value(dst, size, v, vn) < 0)
                        return hull_fail(e, -E2BIG, "SKILL.md: the %.*s is over %zu bytes", (int) kn, key, size - 1);
        }
        int r = check_meta(&m, e);
        if (r < 0)
                return r;
        *ret = m;
        if (ret_body)
                *ret_body = pos;
        return 0;
}

/* ---- multipart/form-data: the parts collected from mp_* (multipart.h) ---- */

typedef struct form_reader {
        skp_form *f;
        size_t max;
        size_t cap; /* bytes f->bytes holds */
        size_t used;
} form_reader;

static int form_part_begin(void *ud, const mp_part *mp) {
        form_reader *fr = ud;
        if (fr->f->n >= fr->max)
                return -E2BIG;
        skp_part *pt = &fr->f->parts[fr->f->n++];
        *pt = (skp_part){.data = fr->f->bytes + fr->used};
        snprintf(pt->name, sizeof(pt->name), "%s", mp->name);
        snprintf(pt->filename, sizeof(pt->filename), "%s", mp->filename);
        return 0;
}

static int form_part_data(void *ud, const void *d, size_t n) {
        form_reader *fr = ud;
        if (fr->f->n == 0 || n > fr->cap - fr->used) /* a part's bytes are the body's own: never */
                return -EFAULT;
        memcpy(fr->f->bytes + fr->used, d, n);
        fr->used += n;
        fr->f->parts[fr->f->n - 1].len += n;
        return 0;
}

static const mp_callbacks form_callbacks = {.part_begin = form_part_begin, .part_data = form_part_data};

void skp_form_done(skp_form *f) {
        free(f->parts);
        free(f->bytes);
        *f = (skp_form){0};
}

int skp_form_read(const char *content_type, const uint8_t *body, size_t len, size_t max, skp_form *ret, hull_error *e) {
        char boundary[MULTIPART_BOUNDARY_MAX];
        if (!content_type || strncasecmp(content_type, "multipart/form-data", 19) != 0)
                return hull_fail(e, -EINVAL,
                                 "the body must be multipart/form-data with the skill's files as files[] parts "
                                 "(Content-Type was '%.60s')",
                                 content_type ? content_type : "");
        if (mp_boundary(content_type, boundary) < 0)
                return hull_fail(e, -EINVAL, "multipart/form-data without a valid boundary= (1 to 70 characters)");
        _cleanup_(skp_form_done)
                skp_form f = {.parts = calloc(max ? max : 1, sizeof(skp_part)), .bytes = malloc(len ? len : 1)};
        _cleanup_free_ mp_parser *mp = malloc(sizeof(*mp)); /* over 8 KiB: not on the stack */
        if (!f.parts || !f.bytes || !mp)
                return hull_fail(e, -ENOMEM, "out of memory reading the upload's parts");
        form_reader fr = {.f = &f, .max = max, .cap = len};
        mp_init(mp, boundary, &form_callbacks, &fr);
        mp->max_parts = max < MULTIPART_PARTS_MAX ? MULTIPART_PARTS_MAX : (unsigned) max;
        int r = mp_feed(mp, body, len);
        if (r >= 0)
                r = mp_finish(mp);
        if (r == -E2BIG || (r == -EBADMSG && mp->parts > max))
                return hull_fail(e, -E2BIG, "the upload has more than %zu parts", max);
        if (r == -EBADMSG)
                return hull_fail(e, -EINVAL, "the multipart form is malformed: %s", mp->error);
        if (r < 0)
                return hull_fail(e, r, "the upload's parts could not be read");
        *ret = f;
        f = (skp_form){0};
        return 0;
}

/* ---- a skill's files ---- */

void skp_pack_done(skp_pack *p) {
        for (size_t i = 0; i < p->n_files; i++) {
                free(p->files[i].path);
                free(p->files[i].data);
        }
        free(p->files);
        *p = (skp_pack){0};
}

/* Is path a relative path of plain components? */
static int check_path(const char *path, hull_error *e) {
        size_t n = strlen(path);
        if (n == 0)
                return hull_fail(e, -EINVAL, "a file has an empty path");
        if (n >= SKILL_PATH_MAX)
                return hull_fail(e, -E2BIG, "a file's path is over %u bytes", SKILL_PATH_MAX - 1);
        if (!utf8_is_valid(path, n))
                return hull_fail(e, -EINVAL, "a file's path is not UTF-8 text");
        if (path[0] == '/')
                return hull_fail(e, -EINVAL, "'%.100s': an absolute path (paths are relative to the skill)", path);
        unsigned depth = 0;
        for (const char *c = path; *c;) {
                size_t k = strcspn(c, "/");
                if (k == 0 && c[k] == '/')
                        return hull_fail(e, -EINVAL, "'%.100s': an empty path component", path);
                if ((k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
                        return hull_fail(e, -EINVAL, "'%.100s': '.' and '..' are not allowed in a skill's paths", path);
                for (size_t i = 0; i < k; i++)
                        if ((unsigned char) c[i] < 0x20 || c[i] == 0x7f || c[i] == '\\')
                                return hull_fail(e, -EINVAL, "'%.100s': a control character or '\\' in the path", path);
                c += k;
                if (*c == '/') {
                        c++;
                        if (++depth > SKILL_DEPTH_MAX)
                                return hull_fail(e, -E2BIG, "'%.100s': deeper than %u directories", path,
                                                 SKILL_DEPTH_MAX);
                }
        }
        return 0;
}

int skp_pack_add(skp_pack *p, const char *path, const void *data, size_t len, bool exec, hull_error *e) {
        int r = check_path(path, e);
        if (r < 0)
                return r;
        size_t n = strlen(path);
        if (path[n - 1] == '/') /* a directory: implied by its files */
                return 0;
        if (p->n_files >= SKILL_FILES_MAX)
                return hull_fail(e, -E2BIG, "a skill has at most %u files", SKILL_FILES_MAX);
        if (len > SKILL_UNPACKED_MAX || p->total + len > SKILL_UNPACKED_MAX)
                return hull_fail(e, -E2BIG, "a skill's files are at most %u bytes in all", SKILL_UNPACKED_MAX);
        for (size_t i = 0; i < p->n_files; i++)
                if (strcmp(p->files[i].path, path) == 0)
                        return hull_fail(e, -EINVAL, "'%.100s' is given twice", path);
        if (p->n_files % 32 == 0) {
                skp_file *f = reallocarray(p->files, p->n_files + 32, sizeof(*f));
                if (!f)
                        return hull_err(e, -ENOMEM, "out of memory");
                p->files = f;
        }
        skp_file f = {.path = strdup(path), .data = malloc(len ? len : 1), .len = len, .exec = exec};
        if (!f.path || !f.data) {
                free(f.path);
                free(f.data);
                return hull_err(e, -ENOMEM, "out of memory");
        }
        if (len)
                memcpy(f.data, data, len);
        p->files[p->n_files++] = f;
        p->total += len;
        return 0;
}

int skp_pack_finish(skp_pack *p, hull_error *e) {
        if (p->n_files == 0)
                return hull_fail(e, -EINVAL, "the upload holds no file: send the skill's directory with its SKILL.md");
        /* one top-level directory shared by every file, or none at all */
        const char *first = p->files[0].path;
        size_t top = strcspn(first, "/");
        bool wrapped = first[top] == '/';
        for (size_t i = 1; i < p->n_files && wrapped; i++)
                wrapped = strncmp(p->files[i].path, first, top) == 0 && p->files[i].path[top] == '/';
        if (wrapped) {
                if (top > SKILL_NAME_MAX)
                        return hull_fail(e, -E2BIG, "the skill's directory name is over %u bytes", SKILL_NAME_MAX);
                memcpy(p->directory, first, top);
                p->directory[top] = '\0';
                for (size_t i = 0; i < p->n_files; i++)
                        memmove(p->files[i].path, p->files[i].path + top + 1, strlen(p->files[i].path + top + 1) + 1);
        }
        const skp_file *md = NULL;
        for (size_t i = 0; i < p->n_files; i++)
                if (strcmp(p->files[i].path, "SKILL.md") == 0)
                        md = &p->files[i];
        if (!md)
                return hull_fail(e, -EINVAL,
                                 "no SKILL.md at the root of the skill's directory%s%s: the files must all be under "
                                 "one top-level directory with a SKILL.md at its root (a SKILL.md names and describes "
                                 "the skill)",
                                 wrapped ? " " : "", wrapped ? p->directory : "");
        if (memchr(md->data, '\0', md->len))
                return hull_fail(e, -EINVAL, "SKILL.md is not text (it holds a NUL byte)");
        int r = skp_frontmatter_parse((const char *) md->data, md->len, &p->meta, NULL, e);
        if (r < 0)
                return r;
        if (!wrapped)
                snprintf(p->directory, sizeof(p->directory), "%s", p->meta.name);
        return 0;
}

/* ---- archives (libarchive) ---- */

bool skp_is_archive(const uint8_t *buf, size_t len) {
        static const struct {
                const char *magic;
                size_t n;
        } magics[] = {
                {"PK\x03\x04", 4},
                {"PK\x05\x06", 4},
                {"\x1f\x8b", 2},
                {"BZh", 3},
                {"\xfd"
                 "7zXZ",
                 5},
        };
        for (size_t i = 0; i < ELEMENTSOF(magics); i++)
                if (len >= magics[i].n && memcmp(buf, magics[i].magic, magics[i].n) == 0)
                        return true;
        return len >= 262 && memcmp(buf + 257, "ustar", 5) == 0;
}

static void archive_read_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}

static void archive_write_freep(struct archive **a) {
        if (*a)
                archive_write_free(*a);
}

static void archive_entry_freep(struct archive_entry **en) {
        if (*en)
                archive_entry_free(*en);
}

/* One entry's data into a buffer, every block counted against the bounds (the sizes an
 * archive's headers claim are not trusted). */
static int read_entry(struct archive *a, const char *path, size_t archive_len, size_t *unpacked, dynbuf *out,
                      hull_error *e) {
        for (;;) {
                const void *buf;
                size_t n;
                la_int64_t off;
                int r = archive_read_data_block(a, &buf, &n, &off);
                if (r == ARCHIVE_EOF)
                        return 0;
                if (r < ARCHIVE_WARN)
                        return hull_fail(e, -EINVAL, "the archive cannot be read at '%.100s': %s", path,
                                         archive_error_string(a) ?: "libarchive error");
                if (off < 0 || (uint64_t) off != out->len)
                        return hull_fail(e, -EINVAL, "'%.100s': a sparse or out-of-order entry", path);
                *unpacked += n;
                if (*unpacked > SKILL_UNPACKED_MAX)
                        return hull_fail(e, -E2BIG, "the archive unpacks to more than %u bytes (a zip bomb?)",
                                         SKILL_UNPACKED_MAX);
                if (*unpacked > SKILL_RATIO_FLOOR && *unpacked / (archive_len ? archive_len : 1) > SKILL_RATIO_MAX)
                        return hull_fail(e, -E2BIG, "the archive unpacks to more than %u times its size (a zip bomb?)",
                                         SKILL_RATIO_MAX);
                if (dynbuf_add(out, buf, n) < 0)
                        return hull_err(e, -ENOMEM, "out of memory");
        }
}

int skp_pack_from_archive(const uint8_t *buf, size_t len, skp_pack *p, hull_error *e) {
        if (!dlib_archive_load(e))
                return -ENOSYS;
        _cleanup_(archive_read_freep) struct archive *a = archive_read_new();
        if (!a)
                return hull_err(e, -ENOMEM, "out of memory");
        if (archive_read_support_format_zip(a) != ARCHIVE_OK || archive_read_support_format_tar(a) != ARCHIVE_OK ||
            archive_read_support_filter_all(a) < ARCHIVE_WARN || archive_read_open_memory(a, buf, len) != ARCHIVE_OK)
                return hull_fail(e, -EINVAL, "the upload is not a zip or tar archive libarchive reads: %s",
                                 archive_error_string(a) ?: "unknown format");
        size_t entries = 0, unpacked = 0;
        for (;;) {
                struct archive_entry *en;
                int r = archive_read_next_header(a, &en);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return hull_fail(e, -EINVAL, "the archive cannot be read: %s",
                                         archive_error_string(a) ?: "libarchive error");
                if (++entries > SKILL_FILES_MAX)
                        return hull_fail(e, -E2BIG, "the archive has more than %u entries", SKILL_FILES_MAX);
                const char *path = archive_entry_pathname(en);
                if (!path)
                        return hull_fail(e, -EINVAL, "entry %zu of the archive has no path", entries);
                /* "./dir/x" as tar writes it */
                while (path[0] == '.' && path[1] == '/')
                        path += 2;
                if (!path[0])
                        continue;
                mode_t type = archive_entry_filetype(en);
                if (archive_entry_hardlink(en) || type == AE_IFLNK)
                        return hull_fail(e, -EINVAL, "'%.100s': links are not allowed in a skill", path);
                if (type == AE_IFDIR) {
                        int c = check_path(path, e);
                        if (c < 0)
                                return c;
                        continue;
                }
                if (type != AE_IFREG)
                        return hull_fail(e, -EINVAL, "'%.100s': only regular files and directories are allowed", path);
                int c = check_path(path, e);
                if (c < 0)
                        return c;
                _cleanup_(dynbuf_freep) dynbuf data;
                dynbuf_init(&data, SKILL_UNPACKED_MAX);
                if ((c = read_entry(a, path, len, &unpacked, &data, e)) < 0)
                        return c;
                if ((c = skp_pack_add(p, path, data.buf, data.len, (archive_entry_perm(en) & 0111) != 0, e)) < 0)
                        return c;
        }
        return skp_pack_finish(p, e);
}

static la_ssize_t zip_sink(struct archive *a, void *data, const void *buf, size_t n) {
        if (dynbuf_add(data, buf, n) < 0) {
                archive_set_error(a, ENOMEM, "out of memory");
                return -1;
        }
        return (la_ssize_t) n;
}

int skp_pack_to_zip(const skp_pack *p, uint8_t **ret, size_t *ret_len, hull_error *e) {
        if (!dlib_archive_load(e))
                return -ENOSYS;
        _cleanup_(dynbuf_freep) dynbuf out;
        dynbuf_init(&out, (size_t) SKILL_UNPACKED_MAX + (size_t) SKILL_FILES_MAX * 2 * SKILL_PATH_MAX + 4096);
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        _cleanup_(archive_entry_freep) struct archive_entry *en = archive_entry_new();
        if (!a || !en)
                return hull_err(e, -ENOMEM, "out of memory");
        if (archive_write_set_format_zip(a) != ARCHIVE_OK ||
            archive_write_open(a, &out, NULL, zip_sink, NULL) != ARCHIVE_OK)
                return hull_fail(e, -EIO, "cannot start the skill's zip: %s", archive_error_string(a) ?: "libarchive");
        char path[SKILL_NAME_MAX + 1 + SKILL_PATH_MAX + 1];
        for (size_t i = 0; i < p->n_files; i++) {
                const skp_file *f = &p->files[i];
                snprintf(path, sizeof(path), "%s/%s", p->directory, f->path);
                archive_entry_clear(en);
                archive_entry_copy_pathname(en, path);
                archive_entry_set_filetype(en, AE_IFREG);
                archive_entry_set_perm(en, f->exec ? 0755 : 0644);
                archive_entry_set_size(en, (la_int64_t) f->len);
                archive_entry_set_mtime(en, 0, 0);
                if (archive_write_header(a, en) != ARCHIVE_OK ||
                    (f->len && archive_write_data(a, f->data, f->len) != (la_ssize_t) f->len) ||
                    archive_write_finish_entry(a) != ARCHIVE_OK)
                        return hull_fail(e, -EIO, "cannot write %s into the skill's zip: %s", path,
                                         archive_error_string(a) ?: "libarchive");
        }
        if (archive_write_close(a) != ARCHIVE_OK)
                return hull_fail(e, -EIO, "cannot end the skill's zip: %s", archive_error_string(a) ?: "libarchive");
        *ret = (uint8_t *) dynbuf_take(&out, ret_len);
        return *ret ? 0 : hull_err(e, -ENOMEM, "out of memory");
}

/* ---- installing ---- */

/* The directory path (a prefix of a file's path, n bytes) made under root, read-write for now. */
static int make_dirs(int root, const char *path, size_t n, hull_error *e) {
        char sub[SKILL_PATH_MAX];
        for (size_t i = 0; i <= n; i++) {
                if (i < n && path[i] != '/')
                        continue;
                memcpy(sub, path, i);
                sub[i] = '\0';
                if (mkdirat(root, sub, 0755) < 0 && errno != EEXIST)
                        return hull_err(e, -errno, "cannot make %s", sub);
        }
        return 0;
}

/* Every directory under root made read-only, deepest first (their files are already). */
static int seal_dirs(int root, const skp_pack *p) {
        char sub[SKILL_PATH_MAX];
        for (size_t i = 0; i < p->n_files; i++) {
                snprintf(sub, sizeof(sub), "%s", p->files[i].path);
                for (char *slash; (slash = strrchr(sub, '/'));) {
                        *slash = '\0';
                        if (fchmodat(root, sub, 0555, AT_SYMLINK_NOFOLLOW) < 0 && errno != EOPNOTSUPP)
                                return -errno;
                }
        }
        return 0;
}

int skp_pack_install(const skp_pack *p, int dirfd, const char *as, hull_error *e) {
        if (!as[0] || strchr(as, '/') || strcmp(as, ".") == 0 || strcmp(as, "..") == 0)
                return hull_fail(e, -EINVAL, "'%.64s' cannot name a skill's directory", as);
        if (mkdirat(dirfd, as, 0755) < 0)
                return hull_err(e, -errno, "cannot make the skill's directory %s", as);
        _cleanup_close_ int root = openat(dirfd, as, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return hull_err(e, -errno, "cannot open the skill's directory %s", as);
        for (size_t i = 0; i < p->n_files; i++) {
                const skp_file *f = &p->files[i];
                int r = check_path(f->path, e);
                if (r < 0)
                        return r;
                const char *slash = strrchr(f->path, '/');
                if (slash && (r = make_dirs(root, f->path, (size_t) (slash - f->path), e)) < 0)
                        return r;
                _cleanup_close_ int fd = openat(root, f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                                f->exec ? 0755 : 0644);
                if (fd < 0)
                        return hull_err(e, -errno, "cannot write %s/%s", as, f->path);
                if ((r = loop_write(fd, f->data, f->len)) < 0)
                        return hull_err(e, r, "cannot write %s/%s", as, f->path);
                if (fchmod(fd, f->exec ? 0555 : 0444) < 0)
                        return hull_err(e, -errno, "cannot seal %s/%s", as, f->path);
        }
        int r = seal_dirs(root, p);
        if (r < 0 || fchmod(root, 0555) < 0)
                return hull_err(e, r < 0 ? r : -errno, "cannot seal the skill's directory %s", as);
        return 0;
}
