/* sqlite-mem.h: SQLite's memory, accounted per operation instead of bounded per process.
 *
 * hull has one SQLite in a process (the loader's, dlib-sqlite3.h), shared by work on untrusted
 * input (the handle store: files and queries from sandboxed code) and work that must never fail
 * because of it (the /v1 store's event log, later). A process-wide bound such as
 * sqlite3_hard_heap_limit64 would let a hostile query exhaust the memory of both. Instead, right
 * after libsqlite3 is loaded and before any other SQLite call, the loader installs an
 * accounting allocator (SQLITE_CONFIG_MALLOC over malloc, SQLITE_CONFIG_MEMSTATUS off so no
 * global lock is taken per allocation):
 *
 * - A thread may open a scope (sqlmem_begin) with a budget of max bytes; until the scope ends,
 *   every SQLite allocation made on that thread is charged to it, and one that would take it
 *   over max is refused (SQLite sees SQLITE_NOMEM and fails that statement, nothing else).
 * - Each block carries a header naming the budget it was charged to, so its free (or realloc,
 *   on any thread, at any later time) credits that budget, never another.
 * - Allocations made on a thread without a scope (every other connection) are not charged and
 *   never refused by this module.
 * - A budget lives until its scope has ended and every block charged to it is freed, so a block
 *   SQLite keeps past the scope is still credited correctly.
 *
 * Scopes nest: a scope opened while one is active on the thread shares the outer budget, except
 * an unbounded one (sqlmem_begin_unbounded), which charges nobody until it ends: work that must
 * never be refused (hull.db, src/store/) opens one, so a budget some caller up the stack left
 * open cannot fail it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "macro.h"

typedef struct sqlmem_budget sqlmem_budget;

typedef struct sqlmem_scope {
        sqlmem_budget *budget; /* NULL before sqlmem_begin and after sqlmem_end */
        sqlmem_budget *outer;  /* the thread's budget before this scope (restored at the end) */
        bool nested;           /* the budget is the outer scope's */
        bool unbounded;        /* an unbounded scope, not yet ended (budget is NULL) */
} sqlmem_scope;

/* The loader's hook for libsqlite3 (dlib.c): install the accounting allocator and initialise
 * SQLite. Returns 0, or -ENOSYS with *e when SQLite refuses (it was initialised by someone
 * else first: then hull cannot bound untrusted work, and refuses to use it). */
int sqlmem_install(hull_error *e);

/* Charge this thread's SQLite allocations to a new budget of max bytes (0 < max) until
 * sqlmem_end(s); inside another scope, share its budget instead (max is ignored). Returns 0 or
 * -ENOMEM (nothing changed). */
int sqlmem_begin(sqlmem_scope *s, uint64_t max);

/* Charge this thread's SQLite allocations to nobody (never refused) until sqlmem_end(s), even
 * inside another scope, whose budget is current again after. Cannot fail. */
void sqlmem_begin_unbounded(sqlmem_scope *s);

/* End the scope: the thread's previous budget is current again. Safe on a scope never begun or
 * already ended. Must run on the thread that began it. */
void sqlmem_end(sqlmem_scope *s);
static inline void sqlmem_endp(sqlmem_scope *s) {
        sqlmem_end(s);
}
#define _cleanup_sqlmem_ _cleanup_(sqlmem_endp)

/* Has the scope's budget refused an allocation? (False outside a scope.) */
bool sqlmem_refused(const sqlmem_scope *s);

/* Bytes charged to the scope's budget and not yet freed (0 outside a scope). */
uint64_t sqlmem_used(const sqlmem_scope *s);
