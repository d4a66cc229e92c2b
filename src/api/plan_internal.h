/* What the tools and tests see of a plan beyond the public API: the launch
   split into its host part (validate, pack, pick the variant) and the driver
   call, so the host overhead can be measured apart from cuLaunchKernel. */
#ifndef TN_PLAN_INTERNAL_H
#define TN_PLAN_INTERNAL_H

#include "ir/ir.h"
#include "rt/cuda.h"
#include "sched/abi.h"
#include "sched/plan.h"

typedef union tn_kernel_arg {
    void *ptr;
    long long i64;
    float f32;
} tn_kernel_arg;

typedef struct tn_prepared {
    tn_kernel_arg vals[TN_MAX_KERNEL_ARGS];
    void *ptrs[TN_MAX_KERNEL_ARGS]; /* point into vals: do not copy a prepared launch */
    int num_launches;
    tn_launch_desc launches[TN_MAX_LAUNCHES];
    CUfunction fns[TN_MAX_LAUNCHES];
    CUstream stream;
} tn_prepared;

tn_status tn_plan_prepare(tn_plan *plan, const tn_launch_args *args, tn_prepared *out);
/* Enqueues a prepared launch's kernels (what tn_plan_launch does after preparing). */
tn_status tn_prepared_launch(tn_plan *plan, tn_prepared *p);
const tn_fusion *tn_plan_fusion(const tn_plan *plan);
tn_context *tn_plan_context(const tn_plan *plan);
int64_t tn_plan_rows(const tn_plan *plan);
int64_t tn_plan_cols(const tn_plan *plan);
/* For tests without a GPU (tn_plan_prepare stops at the missing device first): what a launch of `rows` (1 to M)
   rows at the plan's alignment runs: the rows of the tier it picks into *tier_rows, that tier's plan into *desc;
   returns the grid of its first launch. */
int64_t tn_plan_tier_launch(tn_plan *plan, int64_t rows, int64_t *tier_rows, const tn_plan_desc **desc);
/* Whether every ROW tensor of the launch is at the narrowest one's offset from a 16-byte boundary, in its own
   elements, on every row (a peeled plan runs only then; else the plan made without peel). */
int tn_plan_rows_agree(const tn_plan *plan, const tn_launch_args *args);
/* Bytes at the floor for a launch of `rows` rows (tn_plan_bytes is for M). */
int64_t tn_plan_bytes_for_rows(const tn_plan *plan, int64_t rows);
/* The plan built at creation, for the options' alignment (after any recompile or spill fallback). */
const tn_plan_desc *tn_plan_primary_desc(const tn_plan *plan);

#endif
