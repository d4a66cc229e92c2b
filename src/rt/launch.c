/* The one launch function (see launch.h). */
#include "rt/launch.h"

#include "rt/runtime.h"

tn_status tn_kernel_function(tn_context *ctx, const tn_kernel *k, const tn_launch_desc *l, CUfunction *out) {
    const tn_cuda_api *cu = ctx->cu;
    CUfunction fn = NULL;
    CUresult r = cu->ModuleGetFunction(&fn, k->module, l->kernel);
    if (r != CUDA_SUCCESS)
        return tn_set_error(ctx, TN_STATUS_INTERNAL, "kernel '%s' not found in the plan's module: %s", l->kernel,
                            tn_cuda_error_text(r));
    /* Above 48 KiB of static and dynamic shared memory together a kernel must
       opt in to its dynamic part; ptxas rounds the static part up (128 bytes
       for an aligned extern array), so any dynamic use opts in. */
    if (l->smem_bytes > 0 &&
        (r = cu->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l->smem_bytes)) != CUDA_SUCCESS)
        return tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "kernel '%s': %d bytes of dynamic shared memory: %s", l->kernel,
                            l->smem_bytes, tn_cuda_error_text(r));
    /* Clusters over the portable size (16 CTAs on sm_90) launch only once the kernel opts in. */
    if (l->cluster > TN_MAX_CLUSTER &&
        (r = cu->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)) != CUDA_SUCCESS)
        return tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "kernel '%s': clusters of %d CTAs (non-portable): %s",
                            l->kernel, l->cluster, tn_cuda_error_text(r));
    *out = fn;
    return TN_STATUS_OK;
}

/* l's launch configuration, its attributes in attrs[2]. */
static CUlaunchConfig launch_config(const tn_launch_desc *l, CUstream stream, CUlaunchAttribute *attrs) {
    unsigned n = 0;
    if (l->cluster > 1) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = (unsigned)l->cluster;
        attrs[n].value.clusterDim.y = attrs[n].value.clusterDim.z = 1;
        n++;
    }
    if (l->pdl) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    CUlaunchConfig cfg = {(unsigned)l->grid, 1, 1, (unsigned)l->block, 1, 1, (unsigned)l->smem_bytes, stream,
                          n ? attrs : NULL, n};
    return cfg;
}

int tn_max_active_clusters(tn_context *ctx, CUfunction fn, const tn_launch_desc *l) {
    CUlaunchAttribute attrs[2];
    CUlaunchConfig cfg = launch_config(l, NULL, attrs);
    int n = 0;
    return ctx->cu->OccupancyMaxActiveClusters(&n, fn, &cfg) == CUDA_SUCCESS ? n : 0;
}

tn_status tn_launch_kernel(tn_context *ctx, CUfunction fn, const tn_launch_desc *l, void **params, CUstream stream) {
    CUlaunchAttribute attrs[2];
    CUlaunchConfig cfg = launch_config(l, stream, attrs);
    CUresult r = ctx->cu->LaunchKernelEx(&cfg, fn, params, NULL);
    if (r != CUDA_SUCCESS)
        return tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "launch of '%s' (%lld x %d threads, %d bytes shared): %s",
                            l->kernel, (long long)l->grid, l->block, l->smem_bytes, tn_cuda_error_text(r));
    return TN_STATUS_OK;
}
