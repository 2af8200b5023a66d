/* mock-script-internal.h: what mock-script.c (the script's parser) and mock-render.c (the
 * answers' bytes) share beyond mock-script.h. */
#pragma once

#include "mock-script.h"

/* Free s's strings and array and zero it (a zeroed s is fine). */
void mock_strs_free(mock_strs *s);
