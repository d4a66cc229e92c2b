/* SHA-256 (FIPS 180-4), for the on-disk kernel cache's keys and checksums:
   a collision there would load the wrong kernel, so not FNV. */
#ifndef TN_SHA256_H
#define TN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TN_SHA256_SIZE 32

typedef struct tn_sha256 {
    uint32_t state[8];
    uint64_t bytes; /* hashed so far */
    unsigned char block[64];
    size_t fill; /* bytes waiting in block */
} tn_sha256;

void tn_sha256_init(tn_sha256 *s);
void tn_sha256_update(tn_sha256 *s, const void *data, size_t n);
void tn_sha256_final(tn_sha256 *s, unsigned char out[TN_SHA256_SIZE]);
/* The digest of one buffer. */
void tn_sha256_bytes(const void *data, size_t n, unsigned char out[TN_SHA256_SIZE]);
/* The digest as 64 lowercase hex digits and a NUL. */
void tn_sha256_hex(const unsigned char digest[TN_SHA256_SIZE], char out[2 * TN_SHA256_SIZE + 1]);

#endif
