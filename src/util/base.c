/* Context reference counting and per-thread error messages (see base.h).
   The message lives in thread-local storage, so one thread's error never
   replaces or frees the text another thread is reading. */
#include "util/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static atomic_uint_fast64_t g_next_serial = 1;

static _Thread_local struct {
    uint64_t serial; /* the context the message belongs to; 0: none */
    char text[TN_ERROR_CAP];
} tl_error;

void tn_base_init(tn_base *b, const tn_allocator *alloc, void (*finalize)(tn_context *)) {
    b->alloc = *alloc;
    b->serial = atomic_fetch_add(&g_next_serial, 1);
    atomic_init(&b->refs, 1);
    b->finalize = finalize;
}

void tn_context_retain(tn_context *ctx) { atomic_fetch_add(&tn_base_of(ctx)->refs, 1); }

void tn_context_release(tn_context *ctx) {
    if (!ctx) return;
    tn_base *b = tn_base_of(ctx);
    if (atomic_fetch_sub(&b->refs, 1) == 1) b->finalize(ctx);
}

tn_status tn_set_error(tn_context *ctx, tn_status status, const char *fmt, ...) {
    if (!ctx) return status;
    static const char cut[] = "\n[... message cut at 8 KiB]";
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tl_error.text, sizeof tl_error.text, fmt, ap);
    va_end(ap);
    if (n < 0) snprintf(tl_error.text, sizeof tl_error.text, "(error message could not be formatted)");
    else if ((size_t)n >= sizeof tl_error.text)
        memcpy(tl_error.text + sizeof tl_error.text - sizeof cut, cut, sizeof cut);
    tl_error.serial = tn_base_of(ctx)->serial;
    return status;
}

const char *tn_error_text(const tn_context *ctx) {
    return ctx && tl_error.serial == tn_base_of(ctx)->serial ? tl_error.text : "";
}
