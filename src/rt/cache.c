/* The in-memory kernel cache (see cache.h). */
#include "rt/cache.h"

#include <string.h>

#include "api/context.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/strbuf.h"

void tn_cache_init(tn_cache *c) { memset(c, 0, sizeof *c); }

static void kernel_free(tn_context *ctx, tn_kernel *k) {
    if (k->module && ctx->has_gpu) ctx->cu->ModuleUnload(k->module);
    tn_free(&ctx->alloc, k->key);
    tn_free(&ctx->alloc, k->image);
    tn_free(&ctx->alloc, k->log);
    tn_free(&ctx->alloc, k);
}

void tn_cache_destroy(tn_cache *c, tn_context *ctx) {
    if (ctx->has_gpu) tn_context_bind(ctx);
    for (tn_kernel *k = c->head, *next; k; k = next) {
        next = k->next;
        kernel_free(ctx, k);
    }
    tn_cache_init(c);
}

/* Loads k's image into the context's GPU and reads back what the driver says
   of it (the ground truth for registers and local memory). */
static tn_status load(tn_context *ctx, tn_kernel *k) {
    const tn_cuda_api *cu = ctx->cu;
    tn_status st = tn_context_bind(ctx);
    if (st != TN_STATUS_OK) return st;
    CUresult r = cu->ModuleLoadData(&k->module, k->image);
    if (r == CUDA_SUCCESS) r = cu->ModuleGetFunction(&k->fn, k->module, "tn_kernel");
    if (r != CUDA_SUCCESS) {
        if (k->module) cu->ModuleUnload(k->module);
        k->module = NULL;
        return tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "loading the compiled kernel: %s", tn_cuda_error_text(r));
    }
    int regs = 0, local = 0, smem = 0;
    if (cu->FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn) == CUDA_SUCCESS) k->res.registers = regs;
    if (cu->FuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn) == CUDA_SUCCESS)
        k->res.stack_bytes = local;
    if (cu->FuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn) == CUDA_SUCCESS)
        k->res.static_smem_bytes = smem;
    return TN_STATUS_OK;
}

tn_status tn_cache_get(tn_context *ctx, const char *source, tn_kernel **out, int *compiled) {
    tn_status st = TN_STATUS_OK;
    tn_strbuf key;
    tn_strbuf_init(&key, &ctx->alloc);
    tn_strbuf_printf(&key, "%s\n// arch %s nvrtc %s opts --std=c++17 -Xptxas=-v\n", source, ctx->arch,
                     tn_nvrtc_version());
    char *key_text = tn_strbuf_take(&key);
    if (!key_text) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "cache: out of memory");
    uint64_t h = tn_hash_bytes(TN_HASH_INIT, key_text, strlen(key_text));
    *compiled = 0;
    pthread_mutex_lock(&ctx->cache_lock);
    tn_kernel *k = ctx->cache.head;
    while (k && !(k->hash == h && strcmp(k->key, key_text) == 0)) k = k->next;
    if (k) {
        ctx->cache.hits++;
        tn_free(&ctx->alloc, key_text);
        key_text = NULL;
    } else {
        /* Compiling under the lock keeps one compile per key. */
        k = tn_calloc(&ctx->alloc, 1, sizeof *k);
        if (!k) {
            st = tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "cache: out of memory");
            goto done;
        }
        k->hash = h;
        k->key = key_text;
        key_text = NULL;
        st = tn_nvrtc_compile(ctx, source, ctx->arch, &k->image, &k->image_size, &k->log, &k->res.compile_ms);
        if (st != TN_STATUS_OK) {
            kernel_free(ctx, k);
            goto done;
        }
        tn_parse_ptxas_log(k->log, &k->res);
        k->next = ctx->cache.head;
        ctx->cache.head = k;
        ctx->cache.count++;
        ctx->cache.misses++;
        *compiled = 1;
    }
    if (ctx->has_gpu && !k->module) st = load(ctx, k);
    if (st == TN_STATUS_OK) *out = k;
done:
    pthread_mutex_unlock(&ctx->cache_lock);
    tn_free(&ctx->alloc, key_text);
    return st;
}
