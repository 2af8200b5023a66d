/* sbx-oci-root.h: a kernel-tier bundle's root (internal to sbx-oci.c): the plan of its entries
 * (the mount points, the host's /usr and friends or a --rootfs's top-level entries as read-only
 * binds, links, hull's own /etc files), written either into the bundle (a session adds its own
 * files to it) or as a shared skeleton that single runs reuse: made once below SBX_KERNEL_DIR,
 * named by a hash of the plan, put in place by rename, and verified entry by entry before every
 * use (owned by the effective uid, nothing writable by group or others, every entry of the plan
 * as planned); a skeleton that fails is replaced by a fresh one. runsc mounts it read-only (the
 * root of config.json is readonly, every bind is ro, and gVisor's mounts happen inside its own
 * mount namespaces), so no run writes to it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "limits.h"

/* One entry of the root: 'd' a directory, 'f' an empty file (a file's mount point), 'l' a
 * symbolic link to text, 'c' a file whose content is text. */
typedef struct sbx_oci_root_item {
        char kind;
        char name[SBX_NAME_MAX]; /* relative to the root: "etc/passwd" */
        char *text;              /* 'l': the target; 'c': the content; else "" (owned) */
} sbx_oci_root_item;

/* A few KB (the heap, not a mapping of its own); release with sbx_oci_root_plan_free. */
typedef struct sbx_oci_root_plan {
        sbx_oci_root_item items[SBX_OCI_ROOT_ITEMS_MAX];
        size_t n_items;
        const char *binds[2 * SBX_OCI_BINDS_MAX + 1]; /* {destination, source} pairs, NULL-terminated (owned) */
        size_t n;
} sbx_oci_root_plan;

/* The plan of a root (p zeroed: calloc): the mount points hull's config.json needs, then the host's root as the
 * container tier shows it (uid/gid: the sandbox user's host identity; dns: the host's
 * nameservers in resolv.conf, for an unrestricted network) or, with rootfs, that directory's
 * top-level entries; memory_link: /mnt/memory -> /workspace/.memory. Reads the host (lstat,
 * readlink), writes nothing. Returns 0 or a negative errno with *e. */
int sbx_oci_root_plan_make(sbx_oci_root_plan *p, const char *rootfs, uid_t uid, gid_t gid, bool dns, bool memory_link,
                           hull_error *e);

/* Free the plan's strings and the plan (NULL is fine). */
void sbx_oci_root_plan_free(sbx_oci_root_plan *p);
static inline void sbx_oci_root_plan_freep(sbx_oci_root_plan **p) {
        sbx_oci_root_plan_free(*p);
}

/* Write the plan's entries into the empty directory root_fd. Returns 0 or a negative errno
 * with *e. */
int sbx_oci_root_write(const sbx_oci_root_plan *p, int root_fd, hull_error *e);

/* The shared skeleton for the plan: SBX_KERNEL_DIR/root-HASH, used when it verifies, else made
 * (or replaced) atomically. Its path in ret (size bytes). Returns 0 or a negative errno with
 * *e (SBX_KERNEL_DIR not hull's own: -EPERM). */
int sbx_oci_root_shared(const sbx_oci_root_plan *p, char *ret, size_t size, hull_error *e);
