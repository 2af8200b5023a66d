/* skill-pack.h: a skill's files (a directory with a SKILL.md at its root) checked and held in
 * memory: from the parts of a multipart/form-data upload (the SDK's files[]) or from a zip or tar
 * archive (read with libarchive, bounded: entries, bytes unpacked, unpacked bytes per archive
 * byte), SKILL.md's front matter (name, description) parsed, written back as the zip hull keeps
 * and serves, and installed under a directory. A path that climbs out ("..", absolute), a link,
 * a device, a duplicate, a file beyond the bounds of limits.h (SKILL_*) is refused whole with a
 * message saying what was wrong; nothing is written until everything was checked.
 *
 * The front matter's parser (skp_frontmatter_parse) is pure; an upload's parts are read by the
 * one multipart parser, multipart.h (skp_form_read). Every function returns 0
 * or a negative errno with *e (-EINVAL: the input, -E2BIG: a bound, -ENOMEM). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "limits.h"

/* ---- SKILL.md ---- */

typedef struct skp_meta {
        char name[SKILL_NAME_MAX + 1];
        char description[SKILL_DESCRIPTION_MAX + 1];
} skp_meta;

/* SKILL.md's front matter: a first line "---", "key: value" lines (a value may be quoted with
 * "" or '', or folded over indented lines after "key: >" or "key: |"), a line "---". name: 1 to
 * SKILL_NAME_MAX lowercase letters, digits and hyphens; description: 1 to SKILL_DESCRIPTION_MAX
 * bytes of UTF-8 without control characters. Other keys are allowed and ignored. *ret_body: the
 * offset of the text after the front matter. */
int skp_frontmatter_parse(const char *md, size_t len, skp_meta *ret, size_t *ret_body, hull_error *e);

/* ---- multipart/form-data ---- */

typedef struct skp_part {
        char name[MULTIPART_NAME_MAX]; /* the form field ("files[]") */
        char filename[SKILL_PATH_MAX]; /* "" when the part has none */
        const uint8_t *data;           /* into the form's bytes */
        size_t len;
} skp_part;

typedef struct skp_form {
        skp_part *parts;
        size_t n;
        uint8_t *bytes; /* the parts' data, one after another */
} skp_form;

/* The parts of body by the boundary of content_type (its "multipart/form-data; boundary=..."),
 * at most max (-E2BIG beyond), read by the one multipart parser (multipart.h, mp_*) into *ret;
 * -EINVAL saying what was wrong when the type or the body is malformed. */
int skp_form_read(const char *content_type, const uint8_t *body, size_t len, size_t max, skp_form *ret, hull_error *e);

void skp_form_done(skp_form *f);

/* ---- a skill's files ---- */

typedef struct skp_file {
        char *path; /* below the skill's directory: "SKILL.md", "scripts/run.py" */
        uint8_t *data;
        size_t len;
        bool exec;
} skp_file;

typedef struct skp_pack {
        char directory[SKILL_NAME_MAX + 1]; /* the one top-level directory */
        skp_meta meta;
        skp_file *files;
        size_t n_files;
        size_t total; /* bytes of all files */
} skp_pack;

void skp_pack_done(skp_pack *p);

/* A file at path (relative: "dir/SKILL.md", or "SKILL.md" with no directory) added to p after
 * its path is checked. */
int skp_pack_add(skp_pack *p, const char *path, const void *data, size_t len, bool exec, hull_error *e);

/* The files added, checked as one skill: all under one top-level directory with a SKILL.md at its
 * root (or all at the root, the directory then named by SKILL.md's name), its front matter parsed
 * into p->meta; the directory is taken off every path. */
int skp_pack_finish(skp_pack *p, hull_error *e);

/* Is this upload an archive (zip, tar, gzip/bzip2/xz)? By its first bytes. */
bool skp_is_archive(const uint8_t *buf, size_t len);

/* The entries of a zip or tar archive (regular files and directories only) into p, then
 * skp_pack_finish. */
int skp_pack_from_archive(const uint8_t *buf, size_t len, skp_pack *p, hull_error *e);

/* p (finished) as a zip of "<directory>/<path>" entries into *ret (malloc'd). */
int skp_pack_to_zip(const skp_pack *p, uint8_t **ret, size_t *ret_len, hull_error *e);

/* p's files written under the directory dirfd as "<as>/<path>" (as: a name of one component,
 * created; files 0444 or 0555, directories 0555 once filled); -EEXIST if <as> is there. */
int skp_pack_install(const skp_pack *p, int dirfd, const char *as, hull_error *e);
