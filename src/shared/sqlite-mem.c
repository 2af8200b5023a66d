/* sqlite-mem.c: the accounting allocator under SQLite. See sqlite-mem.h. */
#include "sqlite-mem.h"
#include "dlib-sqlite3.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A budget's state is one word, so the last of "its scope ends" and "its last block is freed"
 * frees it, exactly once: the bytes charged, plus ALIVE while the scope lasts. */
#define ALIVE (UINT64_C(1) << 63)

struct sqlmem_budget {
        _Atomic uint64_t state;
        uint64_t max;
        atomic_bool refused;
};

/* Before every block SQLite gets: the budget it was charged to (NULL: none) and its size. Its
 * size keeps the block after it aligned as malloc's own. */
typedef struct block {
        sqlmem_budget *budget;
        size_t size;
} block;
_Static_assert(sizeof(block) % _Alignof(max_align_t) == 0, "the header keeps malloc's alignment");

/* The budget of the scope open on this thread: per-thread by design (an operation runs on one
 * thread), written only by sqlmem_begin and sqlmem_end of that thread. */
static _Thread_local sqlmem_budget *current __attribute__((tls_model("initial-exec")));

static bool charge(sqlmem_budget *b, uint64_t n) {
        uint64_t old = atomic_fetch_add(&b->state, n);
        if ((old & ~ALIVE) + n > b->max) {
                /* over: take it back (the bytes of the block being grown, or ALIVE, keep the
                 * state above zero, so this never frees the budget) */
                atomic_fetch_sub(&b->state, n);
                atomic_store(&b->refused, true);
                return false;
        }
        return true;
}

static void credit(sqlmem_budget *b, uint64_t n) {
        if (atomic_fetch_sub(&b->state, n) == n) /* nothing left, and the scope has ended */
                free(b);
}

static void *mem_malloc(int n) {
        if (n <= 0)
                return NULL;
        sqlmem_budget *b = current;
        if (b && !charge(b, (uint64_t) n))
                return NULL;
        block *h = malloc(sizeof(block) + (size_t) n);
        if (!h) {
                if (b)
                        credit(b, (uint64_t) n);
                return NULL;
        }
        *h = (block){.budget = b, .size = (size_t) n};
        return h + 1;
}

static void mem_free(void *p) {
        if (!p)
                return;
        block *h = (block *) p - 1;
        sqlmem_budget *b = h->budget;
        size_t n = h->size;
        free(h);
        if (b)
                credit(b, n);
}

static void *mem_realloc(void *p, int n) {
        if (!p)
                return mem_malloc(n);
        if (n <= 0)
                return NULL;
        block *h = (block *) p - 1;
        sqlmem_budget *b = h->budget;
        size_t old = h->size, want = (size_t) n;
        if (b && want > old && !charge(b, want - old))
                return NULL; /* SQLite keeps the old block */
        block *g = realloc(h, sizeof(block) + want);
        if (!g) {
                if (b && want > old)
                        credit(b, want - old);
                return NULL;
        }
        g->size = want;
        if (b && want < old)
                credit(b, old - want); /* the block still holds want > 0 bytes: never frees b */
        return g + 1;
}

static int mem_size(void *p) {
        return p ? (int) ((block *) p - 1)->size : 0;
}

static int mem_roundup(int n) {
        return (n + 7) & ~7;
}

static int mem_init(void *arg) {
        return SQLITE_OK;
}

static void mem_shutdown(void *arg) {
}

static const sqlite3_mem_methods methods = {
        .xMalloc = mem_malloc,
        .xFree = mem_free,
        .xRealloc = mem_realloc,
        .xSize = mem_size,
        .xRoundup = mem_roundup,
        .xInit = mem_init,
        .xShutdown = mem_shutdown,
};

int sqlmem_install(hull_error *e) {
        int rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
        if (rc == SQLITE_OK)
                rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        if (rc != SQLITE_OK)
                return hull_err(e, -ENOSYS,
                                "sqlite: cannot install hull's memory accounting (SQLite error %d: was libsqlite3 "
                                "initialised by another part of the process first?)",
                                rc);
        /* Initialise now, outside any scope: what SQLite allocates for itself once per process
         * is charged to nobody. */
        rc = sqlite3_initialize();
        if (rc != SQLITE_OK)
                return hull_err(e, -ENOSYS, "sqlite: cannot initialise SQLite (error %d)", rc);
        return 0;
}

int sqlmem_begin(sqlmem_scope *s, uint64_t max) {
        if (current) {
                *s = (sqlmem_scope){.budget = current, .outer = current, .nested = true};
                return 0;
        }
        sqlmem_budget *b = malloc(sizeof(*b));
        if (!b)
                return -ENOMEM;
        atomic_init(&b->state, ALIVE);
        b->max = max < ALIVE ? max : ALIVE - 1;
        atomic_init(&b->refused, false);
        *s = (sqlmem_scope){.budget = b, .outer = current};
        current = b;
        return 0;
}

void sqlmem_begin_unbounded(sqlmem_scope *s) {
        *s = (sqlmem_scope){.outer = current, .unbounded = true};
        current = NULL;
}

void sqlmem_end(sqlmem_scope *s) {
        if (s->unbounded) {
                current = s->outer;
                s->unbounded = false;
                return;
        }
        sqlmem_budget *b = s->budget;
        if (!b)
                return;
        current = s->outer;
        s->budget = NULL;
        if (s->nested)
                return;
        if (atomic_fetch_sub(&b->state, ALIVE) == ALIVE) /* no block left */
                free(b);
}

bool sqlmem_refused(const sqlmem_scope *s) {
        return s->budget && atomic_load(&s->budget->refused);
}

uint64_t sqlmem_used(const sqlmem_scope *s) {
        return s->budget ? atomic_load(&s->budget->state) & ~ALIVE : 0;
}
