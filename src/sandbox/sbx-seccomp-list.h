/* sbx-seccomp-list.h: the names of the system calls hull denies (EPERM) in every sandbox: the
 * container tier compiles them into its seccomp program at build time (sbx-seccomp.c), the kernel
 * tier writes them into each bundle's config.json (sbx-oci.c), where runsc --oci-seccomp applies
 * them inside gVisor. Included by those two files only. */
#pragma once

/* Calls with no legitimate use inside a sandbox; each fails with EPERM. Every name must resolve
 * on the build's architecture: a name libseccomp does not know is a build to fix, not a rule
 * to skip. */
static const char *const denied_syscalls[] = {
        /* mounts and roots */
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "move_mount",
        "open_tree",
        "mount_setattr",
        /* namespaces */
        "unshare",
        "setns",
        /* other processes' memory */
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kcmp",
        "pidfd_getfd",
        /* kernel and modules */
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "lookup_dcookie",
        "syslog",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        /* keys */
        "keyctl",
        "add_key",
        "request_key",
        /* host administration */
        "acct",
        "swapon",
        "swapoff",
        "reboot",
        "quotactl",
        "quotactl_fd",
        "iopl",
        "ioperm",
        "vhangup",
        "sethostname",
        "setdomainname",
        "settimeofday",
        "clock_settime",
        "adjtimex",
        "clock_adjtime",
        "fanotify_init",
        /* file handles bypass path checks */
        "open_by_handle_at",
        "name_to_handle_at",
        /* its mode is in a struct seccomp cannot read (see the set-id rules) */
        "openat2",
};

/* Calls that no longer exist (or never did) on some architectures: denied where they resolve. */
static const char *const denied_legacy_syscalls[] = {
        "umount",  "stime", "create_module", "query_module", "get_kernel_syms",
        "_sysctl", "sysfs", "uselib",        "ustat",        "nfsservctl",
};
