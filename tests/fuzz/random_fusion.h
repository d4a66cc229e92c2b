/* Random fusions for the fuzz tier: a seed picks builder calls, including
   malformed ones (foreign values, non-ROW reductions, dtype mismatches), so
   the verifier, reference, scheduler and codegen see shapes no one wrote. */
#ifndef TN_RANDOM_FUSION_H
#define TN_RANDOM_FUSION_H

#include <stdint.h>

#include "tmanorm.h"

/* Builds a fusion from seed into *out (always a fusion, valid or not).
   valid_only: only well-formed steps, so the result verifies. */
tn_status tn_random_fusion(tn_context *ctx, uint64_t seed, int valid_only, tn_fusion **out);

#endif
