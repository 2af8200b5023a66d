/* test-skill-pack.c: a skill's upload checked: SKILL.md's front matter, multipart parts (read by
 * multipart.h's parser), the files' paths and layout, zip and tar archives (a zip bomb, "../" and absolute entries,
 * links, a missing SKILL.md all refused with a message), the zip hull keeps read back, the files installed read-only.
 * Archives are made here with libarchive. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "fs-util.h"
#include "macro.h"
#include "skill-pack.h"
#include "test.h"

#define MD "---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\n# PDF tools\nRun scripts/fill.py.\n"

static int fm(const char *s, skp_meta *m, hull_error *e) {
        size_t body;
        return skp_frontmatter_parse(s, strlen(s), m, &body, e);
}

static void test_frontmatter(void) {
        skp_meta m;
        hull_error e = {0};
        size_t body = 0;
        CHECK_EQ_INT(skp_frontmatter_parse(MD, strlen(MD), &m, &body, &e), 0);
        CHECK_EQ_STR(m.name, "pdf-tools");
        CHECK_EQ_STR(m.description, "Fill PDF forms.");
        CHECK(strncmp(MD + body, "# PDF tools", 11) == 0);
        CHECK_EQ_INT(fm("---\r\nname: \"a-1\"\r\ndescription: 'Quoted: yes'\r\nlicense: MIT\r\n---\r\n", &m, &e), 0);
        CHECK_EQ_STR(m.name, "a-1");
        CHECK_EQ_STR(m.description, "Quoted: yes");
        CHECK_EQ_INT(fm("---\nname: x\ndescription: >\n  folded over\n  two lines\n---\n", &m, &e), 0);
        CHECK_EQ_STR(m.description, "folded over two lines");

        CHECK_EQ_INT(fm("# no front matter\n", &m, &e), -EINVAL);
        CHECK(strstr(e.msg, "must begin with front matter") != NULL);
        CHECK_EQ_INT(fm("---\ndescription: d\n---\n", &m, &e), -EINVAL);
        CHECK(strstr(e.msg, "no name") != NULL);
        CHECK_EQ_INT(fm("---\nname: x\n---\n", &m, &e), -EINVAL);
        CHECK(strstr(e.msg, "no description") != NULL);
        CHECK_EQ_INT(fm("---\nname: Bad Name\ndescription: d\n---\n", &m, &e), -EINVAL);
        CHECK(strstr(e.msg, "lowercase") != NULL);
        CHECK_EQ_INT(fm("---\nname: x\ndescription: d\n", &m, &e), -EINVAL);
        CHECK(strstr(e.msg, "closing") != NULL);
        CHECK_EQ_INT(fm("---\nname: x\nname: y\ndescription: d\n---\n", &m, &e), -EINVAL);
        CHECK_EQ_INT(fm("---\nname: x\ndescription: a\x01z\n---\n", &m, &e), -EINVAL);
        char big[2200];
        snprintf(big, sizeof(big), "---\nname: x\ndescription: %01500d\n---\n", 0);
        CHECK_EQ_INT(fm(big, &m, &e), -E2BIG);
        CHECK_EQ_INT(
                fm("---\nname: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ndescription: "
                   "d\n---\n",
                   &m, &e),
                -E2BIG);
}

/* One form read by the adapter over mp_* (skp_form_read); -1 when it was refused, with e.msg set. */
static int form(const char *ct, const char *body, size_t len, size_t max, skp_form *f, hull_error *e) {
        e->msg[0] = '\0';
        int r = skp_form_read(ct, (const uint8_t *) body, len, max, f, e);
        if (r < 0)
                CHECK(e->msg[0] != '\0'); /* a refusal always says why */
        return r;
}

static void test_multipart(void) {
        const char *ct = "multipart/form-data; boundary=XyZ";
        const char *body =
                "--XyZ\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"s/SKILL.md\"\r\n"
                "Content-Type: text/markdown\r\n\r\nhello\r\n"
                "--XyZ\r\nContent-Disposition: form-data; name=\"display_title\"\r\n\r\nTitle\r\n--XyZ--\r\n";
        skp_form f = {0};
        hull_error e = {0};
        CHECK_EQ_INT(form(ct, body, strlen(body), 4, &f, &e), 0);
        CHECK_EQ_INT(f.n, 2);
        CHECK_EQ_STR(f.parts[0].name, "files[]");
        CHECK_EQ_STR(f.parts[0].filename, "s/SKILL.md");
        CHECK(f.parts[0].len == 5 && memcmp(f.parts[0].data, "hello", 5) == 0);
        CHECK_EQ_STR(f.parts[1].name, "display_title");
        CHECK_EQ_STR(f.parts[1].filename, "");
        CHECK(f.parts[1].len == 5 && memcmp(f.parts[1].data, "Title", 5) == 0);
        skp_form_done(&f);
        /* a part's bytes that almost hold the delimiter, and a NUL, are kept whole */
        static const char tricky[] =
                "--XyZ\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"s/x\"\r\n\r\n"
                "a\r\n--Xy\r\n-\0b\r\n--XyZ--";
        size_t tn = sizeof(tricky) - 1;
        CHECK_EQ_INT(form(ct, tricky, tn, 4, &f, &e), 0);
        CHECK_EQ_INT(f.n, 1);
        CHECK(f.parts[0].len == 12 && memcmp(f.parts[0].data, "a\r\n--Xy\r\n-\0b", 12) == 0);
        skp_form_done(&f);
        /* a path as long as a skill's may be */
        static char longname[SKILL_PATH_MAX + 200];
        char path[SKILL_PATH_MAX];
        memset(path, 'p', sizeof(path) - 1);
        path[sizeof(path) - 1] = '\0';
        snprintf(longname, sizeof(longname),
                 "--XyZ\r\nContent-Disposition: form-data; name=\"files\"; filename=\"%s\"\r\n\r\nx\r\n--XyZ--", path);
        CHECK_EQ_INT(form(ct, longname, strlen(longname), 4, &f, &e), 0);
        CHECK_EQ_STR(f.parts[0].filename, path);
        skp_form_done(&f);

        /* hostile or wrong input: refused, saying why */
        CHECK_EQ_INT(form("application/json", body, strlen(body), 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "must be multipart/form-data") != NULL);
        CHECK_EQ_INT(form("multipart/form-data", body, strlen(body), 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "boundary") != NULL);
        CHECK_EQ_INT(form(NULL, body, strlen(body), 4, &f, &e), -EINVAL);
        CHECK_EQ_INT(form(ct, body, 60, 4, &f, &e), -EINVAL); /* cut short */
        CHECK(strstr(e.msg, "malformed") != NULL);
        CHECK_EQ_INT(form(ct, body, strlen(body), 1, &f, &e), -E2BIG);
        CHECK(strstr(e.msg, "more than 1 parts") != NULL);
        CHECK_EQ_INT(form(ct, "no boundary here", 16, 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "no part") != NULL);
        CHECK_EQ_INT(form(ct, "", 0, 4, &f, &e), -EINVAL);
        static const char nul[] = "--XyZ\r\nContent-Disposition: form-data; name=\"f\0x\"\r\n\r\nx\r\n--XyZ--";
        CHECK_EQ_INT(form(ct, nul, sizeof(nul) - 1, 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "NUL") != NULL);
        const char *noname = "--XyZ\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nx\r\n--XyZ--";
        CHECK_EQ_INT(form(ct, noname, strlen(noname), 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "no name") != NULL);
        const char *nodisp = "--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--";
        CHECK_EQ_INT(form(ct, nodisp, strlen(nodisp), 4, &f, &e), -EINVAL);
        const char *junk = "--XyZjunk\r\n\r\n";
        CHECK_EQ_INT(form(ct, junk, strlen(junk), 4, &f, &e), -EINVAL);
        /* a filename over a skill path's bound */
        static char over[SKILL_PATH_MAX + 200];
        char opath[SKILL_PATH_MAX + 1];
        memset(opath, 'p', sizeof(opath) - 1);
        opath[sizeof(opath) - 1] = '\0';
        snprintf(over, sizeof(over),
                 "--XyZ\r\nContent-Disposition: form-data; name=\"files\"; filename=\"%s\"\r\n\r\nx\r\n--XyZ--", opath);
        CHECK_EQ_INT(form(ct, over, strlen(over), 4, &f, &e), -EINVAL);
        CHECK(strstr(e.msg, "longer than 511 bytes") != NULL);
        /* SKILL_PARTS_MAX + 1 parts: over the bound the skills route passes */
        _cleanup_(dynbuf_freep) dynbuf many;
        dynbuf_init(&many, SKILL_UPLOAD_MAX);
        for (unsigned i = 0; i <= SKILL_PARTS_MAX; i++)
                CHECK_EQ_INT(dynbuf_addf(&many,
                                         "--XyZ\r\nContent-Disposition: form-data; name=\"files[]\"; "
                                         "filename=\"s/%u\"\r\n\r\n%u\r\n",
                                         i, i),
                             0);
        CHECK_EQ_INT(dynbuf_addf(&many, "--XyZ--"), 0);
        CHECK_EQ_INT(form(ct, many.buf, many.len, SKILL_PARTS_MAX, &f, &e), -E2BIG);
        CHECK(strstr(e.msg, "more than 512 parts") != NULL);
        CHECK_EQ_INT(form(ct, many.buf, many.len, SKILL_PARTS_MAX + 1, &f, &e), 0);
        CHECK_EQ_INT(f.n, SKILL_PARTS_MAX + 1);
        CHECK(f.parts[SKILL_PARTS_MAX].len == 3 && memcmp(f.parts[SKILL_PARTS_MAX].data, "512", 3) == 0);
        skp_form_done(&f);
}

static void test_files(void) {
        hull_error e = {0};
        skp_pack p = {0};
        CHECK_EQ_INT(skp_pack_add(&p, "pdf/SKILL.md", MD, strlen(MD), false, &e), 0);
        CHECK_EQ_INT(skp_pack_add(&p, "pdf/scripts/fill.py", "print(1)\n", 9, true, &e), 0);
        CHECK_EQ_INT(skp_pack_finish(&p, &e), 0);
        CHECK_EQ_STR(p.directory, "pdf");
        CHECK_EQ_STR(p.meta.name, "pdf-tools");
        CHECK_EQ_STR(p.files[1].path, "scripts/fill.py");
        skp_pack_done(&p);

        /* no wrapper: the directory is the skill's name */
        CHECK_EQ_INT(skp_pack_add(&p, "SKILL.md", MD, strlen(MD), false, &e), 0);
        CHECK_EQ_INT(skp_pack_finish(&p, &e), 0);
        CHECK_EQ_STR(p.directory, "pdf-tools");
        skp_pack_done(&p);

        const char *bad[] = {"../evil", "a/../../b", "/etc/passwd", "a//b", "./x", "a\\b", "a/\x01"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                e.msg[0] = '\0';
                TEST_RESULT(skp_pack_add(&p, bad[i], "x", 1, false, &e) == -EINVAL && e.msg[0], "path refused: %s (%s)",
                            bad[i], e.msg);
        }
        CHECK_EQ_INT(p.n_files, 0);
        CHECK_EQ_INT(skp_pack_add(&p, "a/x", "1", 1, false, &e), 0);
        CHECK_EQ_INT(skp_pack_add(&p, "a/x", "1", 1, false, &e), -EINVAL);
        CHECK(strstr(e.msg, "twice") != NULL);
        skp_pack_done(&p);

        /* two top-level directories, no SKILL.md at a root */
        CHECK_EQ_INT(skp_pack_add(&p, "a/SKILL.md", MD, strlen(MD), false, &e), 0);
        CHECK_EQ_INT(skp_pack_add(&p, "b/x", "1", 1, false, &e), 0);
        CHECK_EQ_INT(skp_pack_finish(&p, &e), -EINVAL);
        CHECK(strstr(e.msg, "one top-level directory") != NULL);
        skp_pack_done(&p);
        CHECK_EQ_INT(skp_pack_add(&p, "a/README.md", "x", 1, false, &e), 0);
        CHECK_EQ_INT(skp_pack_finish(&p, &e), -EINVAL);
        CHECK(strstr(e.msg, "no SKILL.md") != NULL);
        skp_pack_done(&p);
        CHECK_EQ_INT(skp_pack_finish(&p, &e), -EINVAL);
}

/* ---- archives made with libarchive ---- */

typedef struct entry {
        const char *path;
        const char *data; /* NULL with n: n zero bytes */
        size_t n;
        unsigned type; /* AE_IFREG, AE_IFDIR, AE_IFLNK */
} entry;

static la_ssize_t sink(struct archive *a, void *ud, const void *buf, size_t n) {
        (void) a;
        return dynbuf_add(ud, buf, n) < 0 ? -1 : (la_ssize_t) n;
}

static void make(bool zip, const entry *es, size_t n, dynbuf *out) {
        dynbuf_init(out, 64U << 20);
        struct archive *a = archive_write_new();
        if (zip)
                archive_write_set_format_zip(a);
        else {
                archive_write_set_format_pax_restricted(a);
                archive_write_add_filter_gzip(a);
        }
        archive_write_open(a, out, NULL, sink, NULL);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *en = archive_entry_new();
                archive_entry_set_pathname(en, es[i].path);
                archive_entry_set_filetype(en, es[i].type ? es[i].type : AE_IFREG);
                archive_entry_set_perm(en, 0644);
                size_t len = es[i].data ? strlen(es[i].data) : es[i].n;
                if (es[i].type == AE_IFLNK)
                        archive_entry_set_symlink(en, "/etc/passwd"), len = 0;
                if (es[i].type == AE_IFDIR)
                        len = 0;
                archive_entry_set_size(en, (la_int64_t) len);
                archive_write_header(a, en);
                if (len && es[i].data)
                        archive_write_data(a, es[i].data, len);
                else if (len) {
                        char *z = calloc(1, len);
                        archive_write_data(a, z, len);
                        free(z);
                }
                archive_entry_free(en);
        }
        archive_write_close(a);
        archive_write_free(a);
}

static int unpack(bool zip, const entry *es, size_t n, skp_pack *p, hull_error *e) {
        _cleanup_(dynbuf_freep) dynbuf b;
        make(zip, es, n, &b);
        TEST_RESULT(skp_is_archive((const uint8_t *) b.buf, b.len), "made a %s archive of %zu bytes",
                    zip ? "zip" : "tar.gz", b.len);
        return skp_pack_from_archive((const uint8_t *) b.buf, b.len, p, e);
}

static void test_archives(void) {
        hull_error e = {0};
        skp_pack p = {0};
        entry good[] = {{"pdf/", NULL, 0, AE_IFDIR}, {"pdf/SKILL.md", MD, 0, 0}, {"pdf/ref/a.txt", "A", 0, 0}};
        CHECK_EQ_INT(unpack(true, good, ELEMENTSOF(good), &p, &e), 0);
        CHECK_EQ_STR(p.directory, "pdf");
        CHECK_EQ_INT(p.n_files, 2);
        /* the zip hull keeps reads back the same */
        uint8_t *zip = NULL;
        size_t zn = 0;
        CHECK_EQ_INT(skp_pack_to_zip(&p, &zip, &zn, &e), 0);
        skp_pack q = {0};
        CHECK_EQ_INT(skp_pack_from_archive(zip, zn, &q, &e), 0);
        CHECK_EQ_STR(q.directory, "pdf");
        CHECK_EQ_STR(q.meta.description, "Fill PDF forms.");
        CHECK(q.n_files == 2 && q.files[1].len == 1 && q.files[1].data[0] == 'A');
        free(zip);

        /* installed read-only */
        char dir[] = "/tmp/test-skill-pack.XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK_EQ_INT(skp_pack_install(&q, dfd, "pdf", &e), 0);
        struct stat st;
        CHECK(fstatat(dfd, "pdf/ref/a.txt", &st, 0) == 0 && (st.st_mode & 0777) == 0444);
        CHECK(fstatat(dfd, "pdf/ref", &st, 0) == 0 && (st.st_mode & 0777) == 0555);
        CHECK_EQ_INT(skp_pack_install(&q, dfd, "pdf", &e), -EEXIST);
        CHECK_EQ_INT(skp_pack_install(&q, dfd, "..", &e), -EINVAL);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "chmod -R u+w %s && rm -rf %s", dir, dir);
        CHECK(system(cmd) == 0);
        close(dfd);
        skp_pack_done(&q);
        skp_pack_done(&p);

        entry targz[] = {{"./SKILL.md", MD, 0, 0}, {"./run.sh", "echo\n", 0, 0}};
        CHECK_EQ_INT(unpack(false, targz, ELEMENTSOF(targz), &p, &e), 0);
        CHECK_EQ_STR(p.directory, "pdf-tools");
        skp_pack_done(&p);

        entry traversal[] = {{"pdf/SKILL.md", MD, 0, 0}, {"../escape", "x", 0, 0}};
        CHECK_EQ_INT(unpack(true, traversal, ELEMENTSOF(traversal), &p, &e), -EINVAL);
        CHECK(strstr(e.msg, "'..'") != NULL);
        skp_pack_done(&p);
        entry absolute[] = {{"/etc/cron.d/x", "x", 0, 0}};
        CHECK_EQ_INT(unpack(false, absolute, ELEMENTSOF(absolute), &p, &e), -EINVAL);
        CHECK(strstr(e.msg, "absolute") != NULL);
        skp_pack_done(&p);
        entry link[] = {{"pdf/SKILL.md", MD, 0, 0}, {"pdf/passwd", NULL, 0, AE_IFLNK}};
        CHECK_EQ_INT(unpack(false, link, ELEMENTSOF(link), &p, &e), -EINVAL);
        CHECK(strstr(e.msg, "links are not allowed") != NULL);
        skp_pack_done(&p);
        entry nomd[] = {{"pdf/README.md", "x", 0, 0}};
        CHECK_EQ_INT(unpack(true, nomd, ELEMENTSOF(nomd), &p, &e), -EINVAL);
        CHECK(strstr(e.msg, "no SKILL.md") != NULL);
        skp_pack_done(&p);
        /* a zip bomb: 40 MiB of zeros in a few dozen KiB */
        entry bomb[] = {{"pdf/SKILL.md", MD, 0, 0}, {"pdf/zeros", NULL, 40U << 20, 0}};
        CHECK_EQ_INT(unpack(true, bomb, ELEMENTSOF(bomb), &p, &e), -E2BIG);
        TEST_RESULT(strstr(e.msg, "zip bomb") != NULL, "bomb refused: %s", e.msg);
        skp_pack_done(&p);
        const uint8_t junk[] = "PK\x03\x04 not really a zip";
        CHECK(skp_pack_from_archive(junk, sizeof(junk), &p, &e) < 0 && e.msg[0]);
        skp_pack_done(&p);
}

int main(void) {
        test_frontmatter();
        test_multipart();
        test_files();
        test_archives();
        return test_done();
}
