/* Context creation, device discovery and error reporting. */
#include "rt/runtime.h"

#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/strbuf.h"

#define TN_STR2(x) #x
#define TN_STR(x) TN_STR2(x)
const char *tn_version(void) {
    return TN_STR(TN_VERSION_MAJOR) "." TN_STR(TN_VERSION_MINOR) "." TN_STR(TN_VERSION_PATCH);
}

const char *tn_status_string(tn_status status) {
    switch (status) {
    case TN_STATUS_OK: return "ok";
    case TN_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case TN_STATUS_INVALID_FUSION: return "invalid fusion";
    case TN_STATUS_UNSUPPORTED: return "unsupported";
    case TN_STATUS_OUT_OF_MEMORY: return "out of memory";
    case TN_STATUS_NO_DEVICE: return "no device";
    case TN_STATUS_COMPILE_ERROR: return "compile error";
    case TN_STATUS_CUDA_ERROR: return "CUDA error";
    case TN_STATUS_INTERNAL: return "internal error";
    }
    return "unknown status";
}

/* Built-in targets, for planning and compiling on a machine with no GPU. */
static const tn_device_props k_targets[] = {
    {"h200", 9, 0, 132, 1024, 2048, 65536, 65536, 233472, 232448, 62914560},
    {"h100", 9, 0, 132, 1024, 2048, 65536, 65536, 233472, 232448, 52428800},
    {"a100", 8, 0, 108, 1024, 2048, 65536, 65536, 167936, 166912, 41943040},
};

tn_status tn_device_props_for_target(const char *target, tn_device_props *out) {
    if (!target || !out) return TN_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof k_targets / sizeof k_targets[0]; i++)
        if (strcmp(target, k_targets[i].name) == 0) {
            *out = k_targets[i];
            return TN_STATUS_OK;
        }
    return TN_STATUS_INVALID_ARGUMENT;
}

const char *tn_context_last_error(const tn_context *ctx) {
    if (!ctx) return "null context";
    return tn_error_text(ctx);
}

int tn_context_has_gpu(const tn_context *ctx) { return ctx && ctx->has_gpu; }

tn_status tn_context_device_props(const tn_context *ctx, tn_device_props *out) {
    if (!ctx || !out) return TN_STATUS_INVALID_ARGUMENT;
    *out = ctx->props;
    return TN_STATUS_OK;
}

static void set_arch(tn_context *ctx) {
    /* sm_90a unlocks setmaxnreg and the bulk-copy paths; other GPUs get sm_XY. */
    int cc = ctx->props.cc_major * 10 + ctx->props.cc_minor;
    snprintf(ctx->arch, sizeof ctx->arch, "sm_%d%s", cc, cc == 90 ? "a" : "");
}

static tn_status read_props(tn_context *ctx) {
    const tn_cuda_api *cu = ctx->cu;
    tn_device_props *p = &ctx->props;
    struct { int *dst; CUdevice_attribute attr; } attrs[] = {
        {&p->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
        {&p->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
        {&p->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
        {&p->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
        {&p->max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
        {&p->regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
        {&p->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
        {&p->smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
        {&p->smem_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
        {&p->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        CUresult r = cu->DeviceGetAttribute(attrs[i].dst, attrs[i].attr, ctx->device);
        if (r != CUDA_SUCCESS)
            return tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "cuDeviceGetAttribute(%d): %s",
                                (int)attrs[i].attr, tn_cuda_error_text(r));
    }
    CUresult r = cu->DeviceGetName(p->name, (int)sizeof p->name, ctx->device);
    if (r != CUDA_SUCCESS) snprintf(p->name, sizeof p->name, "CUDA device");
    return TN_STATUS_OK;
}

/* Finds the GPU; on failure leaves ctx without one and says why. */
static tn_status open_device(tn_context *ctx, int ordinal) {
    const char *why = NULL;
    const tn_cuda_api *cu = tn_cuda_load(&why);
    if (!cu) {
        snprintf(ctx->no_gpu_reason, sizeof ctx->no_gpu_reason, "%s", why);
        return TN_STATUS_NO_DEVICE;
    }
    int count = 0;
    CUresult r = cu->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS || ordinal >= count) {
        snprintf(ctx->no_gpu_reason, sizeof ctx->no_gpu_reason,
                 "CUDA device %d not found (%d visible)", ordinal, count);
        return TN_STATUS_NO_DEVICE;
    }
    r = cu->DeviceGet(&ctx->device, ordinal);
    if (r == CUDA_SUCCESS) r = cu->DevicePrimaryCtxRetain(&ctx->cu_ctx, ctx->device);
    if (r != CUDA_SUCCESS) {
        snprintf(ctx->no_gpu_reason, sizeof ctx->no_gpu_reason, "opening CUDA device %d: %s",
                 ordinal, tn_cuda_error_text(r));
        return TN_STATUS_NO_DEVICE;
    }
    ctx->cu = cu;
    tn_status st = read_props(ctx);
    if (st != TN_STATUS_OK) {
        cu->DevicePrimaryCtxRelease(ctx->device);
        ctx->cu = NULL;
        return st;
    }
    ctx->has_gpu = 1;
    return tn_context_bind(ctx);
}


static void finalize(tn_context *ctx);

tn_status tn_context_create(const tn_context_options *options, tn_context **out) {
    if (!out) return TN_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    tn_context_options opts = {0, NULL, NULL, 0};
    if (options) opts = *options;
    if (opts.device < 0) return TN_STATUS_INVALID_ARGUMENT;
    const tn_allocator *a = opts.allocator ? opts.allocator : &tn_default_allocator;
    if (!a->alloc || !a->free) return TN_STATUS_INVALID_ARGUMENT;
    const char *target = opts.target ? opts.target : "h200";
    tn_device_props target_props;
    if (tn_device_props_for_target(target, &target_props) != TN_STATUS_OK)
        return TN_STATUS_INVALID_ARGUMENT;

    tn_context *ctx = tn_calloc(a, 1, sizeof *ctx);
    if (!ctx) return TN_STATUS_OUT_OF_MEMORY;
    tn_base_init(&ctx->base, a, finalize);
    pthread_mutex_init(&ctx->cache_lock, NULL);
    pthread_cond_init(&ctx->cache_cond, NULL);
    tn_cache_init(&ctx->cache);
    tn_status st = opts.force_target ? TN_STATUS_NO_DEVICE : open_device(ctx, opts.device);
    if (st == TN_STATUS_NO_DEVICE) {
        if (opts.force_target)
            snprintf(ctx->no_gpu_reason, sizeof ctx->no_gpu_reason,
                     "the context was made for target %s without a GPU", target);
        ctx->props = target_props;
        st = TN_STATUS_OK;
    } else if (st != TN_STATUS_OK) {
        finalize(ctx);
        return st;
    }
    set_arch(ctx);
    *out = ctx;
    return TN_STATUS_OK;
}

/* Runs when the last of the caller's handle, its fusions and its plans lets go. */
static void finalize(tn_context *ctx) {
    tn_cache_destroy(&ctx->cache, ctx);
    if (ctx->has_gpu) ctx->cu->DevicePrimaryCtxRelease(ctx->device);
    pthread_mutex_destroy(&ctx->cache_lock);
    pthread_cond_destroy(&ctx->cache_cond);
    tn_allocator a = ctx->base.alloc;
    tn_free(&a, ctx);
}

void tn_context_destroy(tn_context *ctx) { tn_context_release(ctx); }
