/* strbuf: growable text on a caller's allocator (see strbuf.h). */
#include "util/strbuf.h"

#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

void tn_strbuf_init(tn_strbuf *sb, const tn_allocator *alloc) {
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = 0;
    sb->alloc = alloc;
}

void tn_strbuf_free(tn_strbuf *sb) {
    tn_free(sb->alloc, sb->data);
    tn_strbuf_init(sb, sb->alloc);
}

static int reserve(tn_strbuf *sb, size_t extra) {
    if (sb->failed) return 0;
    if (sb->len + extra + 1 <= sb->cap) return 1;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) cap *= 2;
    char *data = tn_alloc(sb->alloc, cap);
    if (!data) {
        sb->failed = 1;
        return 0;
    }
    if (sb->data) memcpy(data, sb->data, sb->len + 1);
    else data[0] = '\0';
    tn_free(sb->alloc, sb->data);
    sb->data = data;
    sb->cap = cap;
    return 1;
}

void tn_strbuf_append(tn_strbuf *sb, const char *text) {
    size_t n = strlen(text);
    if (!reserve(sb, n)) return;
    memcpy(sb->data + sb->len, text, n + 1);
    sb->len += n;
}

void tn_strbuf_vprintf(tn_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        sb->failed = 1;
        return;
    }
    if (!reserve(sb, (size_t)n)) return;
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void tn_strbuf_printf(tn_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tn_strbuf_vprintf(sb, fmt, ap);
    va_end(ap);
}

char *tn_strbuf_take(tn_strbuf *sb) {
    if (!reserve(sb, 0)) {
        tn_strbuf_free(sb);
        return NULL;
    }
    char *out = sb->data;
    sb->data = NULL;
    sb->len = sb->cap = 0;
    return out;
}

tn_status tn_copy_out(const char *text, char *buf, size_t cap, size_t *needed) {
    size_t n = strlen(text) + 1;
    if (needed) *needed = n;
    if (!buf || cap == 0) return needed ? TN_STATUS_OK : TN_STATUS_INVALID_ARGUMENT;
    size_t k = n < cap ? n : cap;
    memcpy(buf, text, k);
    buf[k - 1] = '\0';
    return TN_STATUS_OK;
}
