/* What a context holds at run time: its base (allocator, errors, references),
   the GPU (or the target planned for without one), the driver API, the NVRTC
   target and the kernel cache. The runtime owns this state, so rt/ works on a
   context without reaching up into api/, which creates and destroys it.
   Internal to the library. */
#ifndef TN_RUNTIME_H
#define TN_RUNTIME_H

#include <pthread.h>

#include "rt/cache.h"
#include "rt/cuda.h"
#include "tmanorm.h"
#include "util/base.h"

struct tn_context {
    tn_base base; /* first: stages below api/ see a context as its tn_base */
    pthread_mutex_t cache_lock; /* guards the cache's list (never held while compiling) */
    pthread_cond_t cache_cond;  /* signalled when a kernel being compiled is ready or dropped */
    tn_device_props props;
    char arch[16]; /* NVRTC target, e.g. "sm_90a" */
    int has_gpu;
    const tn_cuda_api *cu; /* NULL without a GPU */
    CUdevice device;
    CUcontext cu_ctx; /* the device's primary context, retained */
    char no_gpu_reason[256];
    tn_cache cache;
};

/* Makes the context's CUDA context current on this thread if it is not. */
tn_status tn_context_bind(tn_context *ctx);

#endif
