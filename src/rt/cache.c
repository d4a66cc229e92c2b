/* The in-memory kernel cache (see cache.h). */
#include "rt/cache.h"

#include <string.h>

#include "rt/runtime.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/strbuf.h"

void tn_cache_init(tn_cache *c) {
    memset(c, 0, sizeof *c);
    tn_disk_cache_dir(c->disk_dir);
}

static void kernel_free(tn_context *ctx, tn_kernel *k) {
    if (k->module && ctx->has_gpu && tn_context_bind(ctx) == TN_STATUS_OK) ctx->cu->ModuleUnload(k->module);
    tn_free(&ctx->base.alloc, k->key);
    tn_free(&ctx->base.alloc, k->image);
    tn_free(&ctx->base.alloc, k->log);
    tn_free(&ctx->base.alloc, k);
}

void tn_cache_destroy(tn_cache *c, tn_context *ctx) {
    for (tn_kernel *k = c->head, *next; k; k = next) {
        next = k->next;
        kernel_free(ctx, k);
    }
    c->head = NULL;
    c->count = c->idle = 0;
}

static void unlink_kernel(tn_cache *c, tn_kernel *k) {
    for (tn_kernel **p = &c->head; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            c->count--;
            return;
        }
}

/* Under the lock: frees the least recently used unused kernels beyond the bound. */
static void evict(tn_context *ctx) {
    tn_cache *c = &ctx->cache;
    while (c->idle > TN_CACHE_IDLE_MAX) {
        tn_kernel *oldest = NULL;
        for (tn_kernel *k = c->head; k; k = k->next)
            if (k->ready && k->users == 0 && (!oldest || k->last_use < oldest->last_use)) oldest = k;
        if (!oldest) return;
        unlink_kernel(c, oldest);
        c->idle--;
        c->evictions++;
        kernel_free(ctx, oldest);
    }
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

/* Reads k from the disk or compiles it (and stores it there), then loads it;
   outside the lock, k in the list but not ready. *from_disk says which. A
   disk hit leaves compile_ms 0. */
static tn_status build(tn_context *ctx, const char *source, tn_kernel *k, int *from_disk) {
    const char *dir = ctx->cache.disk_dir; /* set at creation, read-only since */
    unsigned char key[TN_SHA256_SIZE];
    *from_disk = 0;
    if (dir[0]) {
        tn_disk_cache_key(source, ctx->arch, key);
        *from_disk = tn_disk_cache_load(&ctx->base.alloc, dir, key, &k->image, &k->image_size, &k->log);
    }
    if (!*from_disk) {
        tn_status st = tn_nvrtc_compile(ctx, source, ctx->arch, &k->image, &k->image_size, &k->log, &k->res.compile_ms);
        if (st != TN_STATUS_OK) return st;
        if (dir[0]) tn_disk_cache_store(dir, key, k->image, k->image_size, k->log); /* best effort */
    }
    tn_parse_ptxas_log(k->log, &k->res);
    return ctx->has_gpu ? load(ctx, k) : TN_STATUS_OK;
}

tn_status tn_cache_get(tn_context *ctx, const char *source, tn_kernel **out, int *compiled) {
    tn_cache *c = &ctx->cache;
    tn_strbuf key;
    tn_strbuf_init(&key, &ctx->base.alloc);
    tn_strbuf_printf(&key, "%s\n// arch %s nvrtc %s opts", source, ctx->arch, tn_nvrtc_version());
    for (int i = 0; i < TN_NVRTC_OPTION_COUNT; i++) tn_strbuf_printf(&key, " %s", tn_nvrtc_options[i]);
    char *key_text = tn_strbuf_take(&key);
    if (!key_text) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "cache: out of memory");
    const uint64_t h = tn_hash_bytes(TN_HASH_INIT, key_text, strlen(key_text));
    *compiled = 0;
    pthread_mutex_lock(&ctx->cache_lock);
    tn_kernel *k;
    for (;;) {
        k = c->head;
        while (k && !(k->hash == h && strcmp(k->key, key_text) == 0)) k = k->next;
        if (!k || k->ready) break;
        /* Another thread compiles this key: wait for it (or for it to fail). */
        pthread_cond_wait(&ctx->cache_cond, &ctx->cache_lock);
    }
    if (k) {
        c->hits++;
        if (k->users++ == 0) c->idle--;
        k->last_use = ++c->clock;
        pthread_mutex_unlock(&ctx->cache_lock);
        tn_free(&ctx->base.alloc, key_text);
        *out = k;
        return TN_STATUS_OK;
    }
    k = tn_calloc(&ctx->base.alloc, 1, sizeof *k);
    if (!k) {
        pthread_mutex_unlock(&ctx->cache_lock);
        tn_free(&ctx->base.alloc, key_text);
        return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "cache: out of memory");
    }
    k->hash = h;
    k->key = key_text;
    k->users = 1;
    k->next = c->head;
    c->head = k;
    c->count++;
    c->misses++;
    pthread_mutex_unlock(&ctx->cache_lock);

    int from_disk = 0;
    tn_status st = build(ctx, source, k, &from_disk);

    pthread_mutex_lock(&ctx->cache_lock);
    if (st == TN_STATUS_OK) {
        if (from_disk) c->disk_hits++;
        else c->compiles++;
        k->ready = 1;
        k->last_use = ++c->clock;
    } else {
        unlink_kernel(c, k);
    }
    pthread_cond_broadcast(&ctx->cache_cond);
    pthread_mutex_unlock(&ctx->cache_lock);
    if (st != TN_STATUS_OK) {
        kernel_free(ctx, k);
        return st;
    }
    *compiled = !from_disk;
    *out = k;
    return TN_STATUS_OK;
}

void tn_cache_release(tn_context *ctx, tn_kernel *k) {
    if (!k) return;
    pthread_mutex_lock(&ctx->cache_lock);
    k->last_use = ++ctx->cache.clock;
    if (--k->users == 0) {
        ctx->cache.idle++;
        evict(ctx);
    }
    pthread_mutex_unlock(&ctx->cache_lock);
}
