/* Compiled kernels, cached in memory per context. The key is the generated
   source, the target architecture, the NVRTC version and the options; a hit
   compares the whole key, not only its hash. NVRTC runs outside the cache's
   lock: a compile blocks only the threads waiting for that same key. Kernels
   are counted by their users (plans); unused ones are kept up to a bound, the
   least recently used evicted first. A miss looks in the on-disk cache
   (disk_cache.h) before compiling and stores what it compiles there, also
   outside the lock. */
#ifndef TN_CACHE_H
#define TN_CACHE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/disk_cache.h"
#include "rt/nvrtc.h"
#include "tmanorm.h"

typedef struct tn_kernel {
    uint64_t hash;
    char *key;
    char *image; /* CUBIN (or PTX when the GPU is newer than NVRTC) */
    size_t image_size;
    char *log;   /* NVRTC's log: ptxas' resource report */
    tn_resources res;
    CUmodule module; /* loaded right after the compile when there is a GPU */
    CUfunction fn;
    int ready;          /* 0 while one thread compiles it; others wait for it */
    int users;          /* holders (plans); never evicted while above 0 */
    uint64_t last_use;  /* the cache's clock at the last get or release */
    struct tn_kernel *next;
} tn_kernel;

/* Unused kernels kept for reuse; beyond this the least recently used go. */
#define TN_CACHE_IDLE_MAX 64

typedef struct tn_cache {
    tn_kernel *head;
    int count, idle;
    int hits, misses, evictions;
    int compiles, disk_hits; /* how misses were filled: NVRTC or the disk */
    uint64_t clock;
    /* The on-disk cache's directory, from the environment when the context
       was created (tn_disk_cache_dir); "" when it is off. */
    char disk_dir[TN_DISK_CACHE_DIR_MAX];
} tn_cache;

/* Reads the environment for the on-disk cache's directory. */
void tn_cache_init(tn_cache *c);
void tn_cache_destroy(tn_cache *c, tn_context *ctx);
/* The kernel for source on ctx's target, compiled now if not cached. With a
   GPU it is also loaded. *compiled is 1 when this call ran NVRTC for it, 0 on
   a hit in memory or on disk. The caller holds the kernel until tn_cache_release. */
tn_status tn_cache_get(tn_context *ctx, const char *source, tn_kernel **out, int *compiled);
void tn_cache_release(tn_context *ctx, tn_kernel *k);

#endif
