/* dlib-edit.h: libedit (libedit.so.2) through the loader (dlib.h), for `hull chat`'s line
 * editing and history (its readline-compatible functions).
 *
 * Why loaded: only `hull chat` on a terminal edits lines; every other command, and a chat fed
 * from a pipe, never maps it. When it cannot be loaded, `hull chat` reads plain lines. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <editline/readline.h>

#include "dlib.h"

#define DLIB_EDIT_FUNCS(X)                                                                                             \
        X(add_history)                                                                                                 \
        X(read_history)                                                                                                \
        X(readline)                                                                                                    \
        X(stifle_history)                                                                                              \
        X(using_history)                                                                                               \
        X(write_history)

typedef struct dlib_edit {
#define X(f) __typeof__(f) *f;
        DLIB_EDIT_FUNCS(X)
#undef X
} dlib_edit;

/* The table: written once by dlib_load(DLIB_EDIT), read-only after. */
extern dlib_edit dlib_edit_api;

/* dlib_load(DLIB_EDIT, e): true when libedit can be used. */
static inline bool dlib_edit_load(hull_error *e) {
        return dlib_load(DLIB_EDIT, e) >= 0;
}

#ifndef DLIB_NO_MACROS
#define add_history (dlib_edit_api.add_history)
#define read_history (dlib_edit_api.read_history)
#define readline (dlib_edit_api.readline)
#define stifle_history (dlib_edit_api.stifle_history)
#define using_history (dlib_edit_api.using_history)
#define write_history (dlib_edit_api.write_history)
#endif
