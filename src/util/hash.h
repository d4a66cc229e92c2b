/* 64-bit FNV-1a, for structural hashes and cache keys. */
#ifndef TN_HASH_H
#define TN_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TN_HASH_INIT 0xcbf29ce484222325ull

static inline uint64_t tn_hash_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static inline uint64_t tn_hash_u64(uint64_t h, uint64_t v) { return tn_hash_bytes(h, &v, sizeof v); }

#endif
