/* fuzz-model-anthropic.c: the Anthropic answer decoder and stream assembler (model-internal.h),
 * as fuzz-model-openai.c does for OpenAI: the input read as a whole answer and as a stream; the
 * answer in the neutral form and encodable back; the stream the same whatever the split of its
 * bytes. */
#define FUZZ_API MODEL_API_ANTHROPIC
#include "fuzz-model.h"
