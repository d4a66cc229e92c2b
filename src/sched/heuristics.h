/* The scheduler: a pure function of (analysis, shape, alignment, device) to a
   plan. It runs, and is tested, without a GPU. */
#ifndef TN_HEURISTICS_H
#define TN_HEURISTICS_H

#include "sched/plan.h"

typedef struct tn_schedule_request {
    const tn_analysis *analysis;
    int64_t rows, cols;
    int align;   /* bytes every pointer and row stride is aligned to (power of two) */
    int kind;    /* a tn_plan_kind to force, or -1 to choose */
    const tn_device_props *props;
} tn_schedule_request;

/* Fills out; on failure returns 0 with the reason in err. */
int tn_schedule(const tn_schedule_request *req, tn_plan_desc *out, char *err, size_t err_cap);

/* Register plan limits, exposed for the tests' invariants. */
#define TN_REG_BATCH_TARGET 4   /* vectors a thread keeps per row before rows widen */
/* Registers a thread needs to hold `words` of row buffer. Measured with the
   compile tier: the unrolled phases keep about one temporary per buffered
   word live, so a 32-word buffer spills under the 64-register cap of a
   1024-thread CTA and a 64-word one under the 128 cap of a 512-thread CTA. */
#define TN_REG_NEED(words) (2 * (words) + 24)
#define TN_BLOCK_TARGET 256     /* threads per CTA the register plan aims for */

#endif
