/* Host allocation through the caller's tn_allocator. */
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, size_t size) {
    (void)user;
    return malloc(size);
}
static void default_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}
const tn_allocator tn_default_allocator = {default_alloc, default_free, NULL};

void *tn_alloc(const tn_allocator *a, size_t size) {
    if (!a) a = &tn_default_allocator;
    return a->alloc(a->user, size ? size : 1);
}

void *tn_calloc(const tn_allocator *a, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = tn_alloc(a, count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void tn_free(const tn_allocator *a, void *ptr) {
    if (!ptr) return;
    if (!a) a = &tn_default_allocator;
    a->free(a->user, ptr);
}

char *tn_strdup(const tn_allocator *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = tn_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}
