/* ss-base.c: the session core's lowest helpers, used by the table, the operations, handles and
 * records alike (ss-internal.h): the log line, and workspace files as the sandbox user. */
#include <stdarg.h>
#include <stdio.h>

#include "ss-internal.h"

void ss_log(const ss_manager *m, dlog_level lvl, const char *fmt, ...) {
        if (!m->cfg.log)
                return;
        char line[SERVE_LOG_LINE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        dlog_log(m->cfg.log, lvl, "%s", line);
}

void ss_fs_enter(const ss_session *s) {
        sbx_session_fs_enter(s->box.host_uid, s->box.host_gid);
}

void ss_fs_leave(void) {
        sbx_session_fs_leave();
}
