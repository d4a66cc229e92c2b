/* The runtime's share of a context (see runtime.h). */
#include "rt/runtime.h"

tn_status tn_context_bind(tn_context *ctx) {
    if (!ctx->has_gpu) return TN_STATUS_NO_DEVICE;
    CUcontext cur = NULL;
    ctx->cu->CtxGetCurrent(&cur);
    if (cur == ctx->cu_ctx) return TN_STATUS_OK;
    CUresult r = ctx->cu->CtxSetCurrent(ctx->cu_ctx);
    if (r != CUDA_SUCCESS)
        return tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "cuCtxSetCurrent: %s", tn_cuda_error_text(r));
    return TN_STATUS_OK;
}
