/* The one launch function: every kernel of every plan (and the tools' timing
   of a bare launch) goes through tn_launch_kernel, so launch attributes
   (dynamic shared memory, clusters, programmatic dependent launch) are set in
   one place. */
#ifndef TN_LAUNCH_H
#define TN_LAUNCH_H

#include "rt/cache.h"
#include "sched/plan.h"

/* The function l names in k's module, with its dynamic shared memory limit
   raised to what l asks for. Call once per plan variant, not per launch. */
tn_status tn_kernel_function(tn_context *ctx, const tn_kernel *k, const tn_launch_desc *l, CUfunction *out);
/* Clusters of l's shape that the device runs at once (0 where it cannot say). */
int tn_max_active_clusters(tn_context *ctx, CUfunction fn, const tn_launch_desc *l);
/* Enqueues fn with l's configuration on stream. */
tn_status tn_launch_kernel(tn_context *ctx, CUfunction fn, const tn_launch_desc *l, void **params, CUstream stream);

#endif
