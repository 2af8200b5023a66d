/* tools-sandbox.c: the list of the built-in sandbox tools (tools-sandbox.h). */
#include <string.h>

#include "macro.h"
#include "tools-sandbox.h"

const tool_def *const tools_sandbox[] = {
        &tool_bash,       &tool_read,           &tool_write,        &tool_edit,        &tool_glob,         &tool_grep,
        &tool_run_python, &tool_inspect_handle, &tool_query_handle, &tool_read_handle, &tool_publish_file, NULL,
};

const size_t tools_sandbox_n = ELEMENTSOF(tools_sandbox) - 1;

const tool_def *tools_sandbox_find(const char *name) {
        for (size_t i = 0; name && tools_sandbox[i]; i++)
                if (strcmp(tools_sandbox[i]->name, name) == 0)
                        return tools_sandbox[i];
        return NULL;
}
