/* The context: allocator, last-error message, the GPU (or a target without
   one) and the kernel cache. Internal to the library. */
#ifndef TN_CONTEXT_H
#define TN_CONTEXT_H

#include <pthread.h>

#include "rt/cache.h"
#include "rt/cuda.h"
#include "tmanorm.h"

struct tn_context {
    tn_allocator alloc;
    pthread_mutex_t lock;       /* guards last_error */
    pthread_mutex_t cache_lock; /* guards the cache (held while compiling) */
    char *last_error;
    tn_device_props props;
    char arch[16]; /* NVRTC target, e.g. "sm_90a" */
    int has_gpu;
    const tn_cuda_api *cu; /* NULL without a GPU */
    CUdevice device;
    CUcontext cu_ctx; /* the device's primary context, retained */
    char no_gpu_reason[256];
    tn_cache cache;
};

/* Records a formatted message as the context's last error; returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tn_status tn_set_error(tn_context *ctx, tn_status status, const char *fmt, ...);
/* Makes the context's CUDA context current on this thread if it is not. */
tn_status tn_context_bind(tn_context *ctx);

#endif
