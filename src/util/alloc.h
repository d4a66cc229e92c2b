/* Host allocation through the caller's tn_allocator (malloc/free by default). */
#ifndef TN_ALLOC_H
#define TN_ALLOC_H

#include <stddef.h>

#include "tmanorm.h"

void *tn_alloc(const tn_allocator *a, size_t size);
void *tn_calloc(const tn_allocator *a, size_t count, size_t size);
void tn_free(const tn_allocator *a, void *ptr);
char *tn_strdup(const tn_allocator *a, const char *s);
extern const tn_allocator tn_default_allocator;

#endif
