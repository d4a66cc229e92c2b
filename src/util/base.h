/* What every stage may use of a context without knowing the rest of it: its
   allocator, the identity its errors are filed under, and its reference count.
   A tn_context begins with a tn_base (api/context.h), so ir/, ref/, sched/ and
   rt/ reach these through tn_base_of() and never include api/. */
#ifndef TN_BASE_H
#define TN_BASE_H

#include <stdatomic.h>
#include <stdint.h>

#include "tmanorm.h"

typedef struct tn_base {
    tn_allocator alloc;
    uint64_t serial;                   /* unique per process: whose error a thread's message is */
    atomic_int refs;                   /* the caller's handle, plus one per live fusion and plan */
    void (*finalize)(tn_context *ctx); /* frees the context once refs reach 0 */
} tn_base;

static inline tn_base *tn_base_of(const tn_context *ctx) { return (tn_base *)(uintptr_t)ctx; }
static inline const tn_allocator *tn_ctx_alloc(const tn_context *ctx) { return &tn_base_of(ctx)->alloc; }

void tn_base_init(tn_base *b, const tn_allocator *alloc, void (*finalize)(tn_context *));
/* Fusions and plans hold their context, so it may be destroyed before them. */
void tn_context_retain(tn_context *ctx);
void tn_context_release(tn_context *ctx);

/* Files a formatted message as the calling thread's last error on ctx and
   returns status. No allocation: it works when memory is exhausted. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tn_status tn_set_error(tn_context *ctx, tn_status status, const char *fmt, ...);
/* The calling thread's last error on ctx, or "". */
const char *tn_error_text(const tn_context *ctx);
/* Longest message kept (bytes, NUL included); longer ones are cut with a note. */
#define TN_ERROR_CAP 8192

#endif
