/* fuzz-model-openai.c: the OpenAI answer decoder and stream assembler (model-internal.h). The
 * input is read both as a whole answer and as a stream of server-sent events. A decoded answer
 * must be in the neutral form and encode back into a request; a stream must give the same answer
 * (or the same error) whether its bytes come whole, split anywhere or a byte at a time, and hand
 * on exactly the text of the answer's text block. */
#define FUZZ_API MODEL_API_OPENAI
#include "fuzz-model.h"
