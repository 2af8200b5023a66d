/* fuzz-agui.c: agui.c on arbitrary JSON: as a RunAgentInput (a refusal says why and gives
 * nothing; an input taken has ids and events), and as a stream of session events (an array: each
 * translated in order; the AG-UI events out are objects with a type, and a run that ended
 * translates nothing more). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agui.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_auto_t *body = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
        if (!body)
                return 0;
        char msg[V1_ERROR_MSG_MAX] = "";
        agui_input in = {0};
        int r = agui_input_parse(body, &in, msg);
        if (r < 0) {
                if (r != -EINVAL || !msg[0] || in.events)
                        abort();
        } else {
                if (!in.thread_id || !in.run_id || json_array_size(in.events) == 0)
                        abort();
                json_t *merged = NULL;
                if (agui_tools_merge(in.tools, NULL, in.tools, &merged) == 0 && merged &&
                    json_array_size(merged) != json_array_size(in.tools))
                        abort();
                json_decref(merged);
                agui_input_done(&in);
        }

        if (!json_is_array(body))
                return 0;
        agui_run run;
        agui_run_init(&run, "t", "r");
        json_auto_t *fe = json_pack("[{s:s, s:s}]", "type", "custom", "name", "fe");
        agui_run_frontend(&run, fe);
        json_auto_t *out = json_array();
        agui_started(&run, out);
        size_t i;
        json_t *ev;
        bool ended = false;
        json_array_foreach(body, i, ev) {
                size_t before = json_array_size(out);
                unsigned f = agui_translate(&run, ev, out);
                if (ended && json_array_size(out) != before)
                        abort();
                ended |= (f & AGUI_ENDED) != 0;
        }
        agui_fail(&run, "x", "y", out);
        agui_run_done(&run);
        json_array_foreach(out, i, ev) if (!json_is_string(json_object_get(ev, "type"))) abort();
        return 0;
}
