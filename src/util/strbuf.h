/* strbuf: a growable text buffer on a caller's allocator. Used by the printer,
   the plan writer and codegen. An allocation failure sticks (failed = 1) so
   callers append freely and check once at the end. */
#ifndef TN_STRBUF_H
#define TN_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "tmanorm.h"

typedef struct tn_strbuf {
    char *data;
    size_t len, cap;
    int failed;
    const tn_allocator *alloc;
} tn_strbuf;

void tn_strbuf_init(tn_strbuf *sb, const tn_allocator *alloc);
void tn_strbuf_free(tn_strbuf *sb);
void tn_strbuf_append(tn_strbuf *sb, const char *text);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void tn_strbuf_printf(tn_strbuf *sb, const char *fmt, ...);
void tn_strbuf_vprintf(tn_strbuf *sb, const char *fmt, va_list ap);
/* Hands the text over (NUL-terminated) and empties sb; NULL if allocation failed. */
char *tn_strbuf_take(tn_strbuf *sb);

/* Copies text into the caller's (buf, cap) contract of tn_*_print/describe. */
tn_status tn_copy_out(const char *text, char *buf, size_t cap, size_t *needed);

#endif
