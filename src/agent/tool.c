/* tool.c: the small shared parts of the tool interface. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const char *const policy_names[_TOOL_POLICY_MAX] = {
        [TOOL_ALWAYS_ALLOW] = "always_allow",
        [TOOL_ALWAYS_ASK] = "always_ask",
        [TOOL_DENY] = "deny",
};

const char *tool_policy_to_string(tool_policy p) {
        return p < _TOOL_POLICY_MAX ? policy_names[p] : "unknown";
}

int tool_policy_from_string(const char *s) {
        for (int p = 0; s && p < _TOOL_POLICY_MAX; p++)
                if (strcmp(s, policy_names[p]) == 0)
                        return p;
        return -EINVAL;
}

void tool_output_done(tool_output *o) {
        if (!o)
                return;
        free(o->text);
        json_decref(o->value);
        free(o->value_json);
        json_decref(o->handles);
        free(o->spill_data);
        free(o->spill_source);
        *o = (tool_output){0};
}
