/* Compiled kernels, cached in memory per context. The key is the generated
   source, the target architecture, the NVRTC version and the options; a hit
   compares the whole key, not only its hash. */
#ifndef TN_CACHE_H
#define TN_CACHE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "tmanorm.h"

typedef struct tn_kernel {
    uint64_t hash;
    char *key;
    char *image; /* CUBIN (or PTX when the GPU is newer than NVRTC) */
    size_t image_size;
    char *log;   /* NVRTC's log: ptxas' resource report */
    tn_resources res;
    CUmodule module; /* loaded on first use with a GPU */
    CUfunction fn;
    struct tn_kernel *next;
} tn_kernel;

typedef struct tn_cache {
    tn_kernel *head;
    int count;
    int hits, misses;
} tn_cache;

void tn_cache_init(tn_cache *c);
void tn_cache_destroy(tn_cache *c, tn_context *ctx);
/* The kernel for source on ctx's target, compiled now if not cached. With a
   GPU it is also loaded. *compiled is 1 when this call compiled it. */
tn_status tn_cache_get(tn_context *ctx, const char *source, tn_kernel **out, int *compiled);

/* Compiles source with NVRTC for arch (internal; the cache calls it).
   On failure the context's error holds NVRTC's log. */
tn_status tn_nvrtc_compile(tn_context *ctx, const char *source, const char *arch, char **image,
                           size_t *image_size, char **log, double *ms);
/* "major.minor" of the linked NVRTC. */
const char *tn_nvrtc_version(void);
/* Reads registers, spills, stack and shared memory from ptxas' report. */
void tn_parse_ptxas_log(const char *log, tn_resources *res);

#endif
