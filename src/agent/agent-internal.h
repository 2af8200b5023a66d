/* agent-internal.h: what the loop's files share (agent.c, spill.c). Not a public interface. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"

/* The spill middleware (call_result, spill_shape, spill_short_form) is public: spill.h. */
#include "spill.h"
