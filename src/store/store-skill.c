/* store-skill.c: see store-skill.h. The front of skills in the store: arguments checked, JSON
 * serialised, zips as base64 text, list cursors ("s<created_ms>_<id>" for skills, "v<version>"
 * for a skill's versions), then the backend's rows (store-skill-backend.h). */
#include "store-skill.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"
#include "parse-util.h"
#include "store-skill-backend.h"

static const store_skill_ops *ops_of(store *s, hull_error *e) {
        if (!s->ops->skills)
                hull_fail(e, -ENOSYS, "store: the %s backend does not keep skills", s->ops->name);
        return s->ops->skills;
}

static int version_num(const char *skill_id, const char *v, int64_t *ret, hull_error *e) {
        uint64_t n;
        if (!v || parse_uint64(v, 1, INT64_MAX, &n) < 0)
                return hull_fail(e, -ENOENT, "skill %.64s has no version '%.40s' (a version is a number such as %s)",
                                 skill_id, v ? v : "", "1759178010641129");
        *ret = (int64_t) n;
        return 0;
}

static int put(store *s, bool create, const json_t *skill, const json_t *version, const uint8_t *zip, size_t len,
               hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        if (!o)
                return -ENOSYS;
        const char *id = json_string_value(json_object_get(skill, "id"));
        const char *created = json_string_value(json_object_get(skill, "created_at"));
        const char *vcreated = json_string_value(json_object_get(version, "created_at"));
        int64_t created_ms, vms, v = 0;
        int r;
        if ((r = store_id_check("skill", id, e)) < 0)
                return r;
        if (!created || store_time_ms(created, &created_ms) < 0 || !vcreated || store_time_ms(vcreated, &vms) < 0)
                return hull_fail(e, -EINVAL, "store: a skill's created_at is not an RFC 3339 time");
        if ((r = version_num(id, json_string_value(json_object_get(version, "version")), &v, e)) < 0)
                return -EINVAL;
        _cleanup_free_ char *sb = json_dumps(skill, JSON_COMPACT), *vb = json_dumps(version, JSON_COMPACT);
        _cleanup_free_ char *b64 = NULL;
        size_t blen;
        if (!sb || !vb || base64_encode(zip, len, true, &b64, &blen) < 0)
                return hull_err(e, -ENOMEM, "store: out of memory");
        return o->put(s, create, id, created_ms, sb, v, vms, vb, b64, e);
}

int store_skill_create(store *s, const json_t *skill, const json_t *version, const uint8_t *zip, size_t len,
                       hull_error *e) {
        return put(s, true, skill, version, zip, len, e);
}

int store_skill_version_add(store *s, const json_t *skill, const json_t *version, const uint8_t *zip, size_t len,
                            hull_error *e) {
        return put(s, false, skill, version, zip, len, e);
}

int store_skill_get(store *s, const char *id, json_t **ret, hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        int r = o ? store_id_check("skill", id, e) : -ENOSYS;
        return r < 0 ? r : o->get(s, id, 0, ret, e);
}

int store_skill_version_get(store *s, const char *id, const char *version, json_t **ret, hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        int64_t v = 0;
        int r = o ? store_id_check("skill", id, e) : -ENOSYS;
        if (r < 0 || (r = version_num(id, version, &v, e)) < 0)
                return r;
        return o->get(s, id, v, ret, e);
}

int store_skill_delete(store *s, const char *id, bool with_versions, hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        int r = o ? store_id_check("skill", id, e) : -ENOSYS;
        return r < 0 ? r : o->remove(s, id, with_versions ? -1 : 0, NULL, e);
}

/* The cursor of a list (skills when !versions) parsed: -EINVAL unless it is one. */
static int cursor_parse(const char *page, bool versions, int64_t *ret_key, char ret_id[static STORE_ID_MAX],
                        hull_error *e) {
        uint64_t k;
        char num[24];
        const char *p = page + 1;
        size_t dn = strspn(p, "0123456789");
        ret_id[0] = '\0';
        if (page[0] != (versions ? 'v' : 's') || dn == 0 || dn >= sizeof(num))
                goto bad;
        memcpy(num, p, dn);
        num[dn] = '\0';
        if (parse_uint64(num, 0, INT64_MAX, &k) < 0)
                goto bad;
        p += dn;
        if (versions ? *p != '\0' : (*p != '_' || strlen(p + 1) == 0 || strlen(p + 1) >= STORE_ID_MAX))
                goto bad;
        if (!versions)
                snprintf(ret_id, STORE_ID_MAX, "%s", p + 1);
        *ret_key = (int64_t) k;
        return 0;
bad:
        return hull_fail(e, -EINVAL, "page '%.60s' is not a cursor of this list (give next_page as it came)", page);
}

int store_skill_list(store *s, const char *versions_of, const char *page, unsigned limit, store_page *ret,
                     hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        if (!o)
                return -ENOSYS;
        int r;
        if (versions_of &&
            ((r = store_id_check("skill", versions_of, e)) < 0 || (r = o->get(s, versions_of, 0, NULL, e)) < 0))
                return r;
        if (limit == 0)
                limit = SKILL_PAGE_DEFAULT;
        if (limit > SKILL_PAGE_MAX)
                limit = SKILL_PAGE_MAX;
        int64_t after = 0;
        char after_id[STORE_ID_MAX] = "";
        if (page && page[0] && (r = cursor_parse(page, versions_of != NULL, &after, after_id, e)) < 0)
                return r;
        int64_t keys[SKILL_PAGE_MAX + 1];
        _Static_assert(sizeof(keys) < 8192, "a page's keys on the stack");
        _cleanup_free_ char(*ids)[STORE_ID_MAX] = calloc(SKILL_PAGE_MAX + 1, STORE_ID_MAX);
        json_auto_t *data = json_array();
        size_t n = 0;
        if (!ids || !data)
                return hull_err(e, -ENOMEM, "store: out of memory");
        if ((r = o->list(s, versions_of, page && page[0], after, after_id, limit + 1, data, keys, ids, &n, e)) < 0)
                return r;
        store_page p = {0};
        if (n > limit) {
                json_array_remove(data, limit);
                if (versions_of)
                        snprintf(p.next_page, sizeof(p.next_page), "v%" PRId64, keys[limit - 1]);
                else
                        snprintf(p.next_page, sizeof(p.next_page), "s%" PRId64 "_%s", keys[limit - 1], ids[limit - 1]);
        }
        p.data = TAKE_PTR(data);
        *ret = p;
        return 0;
}

int store_skill_version_delete(store *s, const char *id, const char *version, const char *now, json_t **ret_skill,
                               hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        int64_t v = 0;
        int r = o ? store_id_check("skill", id, e) : -ENOSYS;
        if (r < 0 || (r = version_num(id, version, &v, e)) < 0)
                return r;
        json_auto_t *skill = NULL, *top = json_array();
        int64_t keys[2];
        char ids[2][STORE_ID_MAX];
        size_t n = 0;
        if (!top)
                return hull_err(e, -ENOMEM, "store: out of memory");
        if ((r = o->get(s, id, 0, &skill, e)) < 0 || (r = o->get(s, id, v, NULL, e)) < 0 ||
            (r = o->list(s, id, false, 0, NULL, 2, top, keys, ids, &n, e)) < 0)
                return r;
        /* the newest version left once v is gone */
        json_t *latest = json_null();
        for (size_t i = 0; i < n; i++)
                if (keys[i] != v) {
                        latest = json_object_get(json_array_get(top, i), "version");
                        break;
                }
        if (json_object_set(skill, "latest_version", latest) < 0 ||
            json_object_set_new(skill, "updated_at", json_string(now)) < 0)
                return hull_err(e, -ENOMEM, "store: out of memory");
        _cleanup_free_ char *sb = json_dumps(skill, JSON_COMPACT);
        if (!sb)
                return hull_err(e, -ENOMEM, "store: out of memory");
        if ((r = o->remove(s, id, v, sb, e)) < 0)
                return r;
        if (ret_skill)
                *ret_skill = TAKE_PTR(skill);
        return 0;
}

int store_skill_zip(store *s, const char *id, const char *version, uint8_t **ret, size_t *ret_len, hull_error *e) {
        const store_skill_ops *o = ops_of(s, e);
        int64_t v = 0;
        int r = o ? store_id_check("skill", id, e) : -ENOSYS;
        if (r < 0 || (r = version_num(id, version, &v, e)) < 0)
                return r;
        _cleanup_free_ char *b64 = NULL;
        if ((r = o->zip(s, id, v, &b64, e)) < 0)
                return r;
        void *buf;
        size_t len;
        if ((r = base64_decode(b64, strlen(b64), &buf, &len)) < 0)
                return hull_fail(e, r == -ENOMEM ? -ENOMEM : -EBADMSG, "store: skill %.64s's stored files are damaged",
                                 id);
        *ret = buf;
        *ret_len = len;
        return 0;
}
