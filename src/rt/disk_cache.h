/* The on-disk kernel cache: compiled images (and ptxas' report, which holds
   the resources a CPU-only process cannot ask a driver for) kept across
   processes, so a second process loads what the first compiled.

   An entry is <dir>/<2 hex>/<64 hex>.tnk, named by its key: SHA-256 of the
   format version, the architecture, the NVRTC version, the compile options
   and the full source. It holds an 88-byte header, then the payload:
     0  magic "tnkcache"   8  format version (u64)   16  key (32 bytes)
     48 payload bytes (u64)    56  SHA-256 of the payload
   payload: image bytes (u64), the image, then the log (no NUL).
   Integers are little-endian. Entries are written to a temporary file and
   renamed into place, so readers see a whole entry or none; every field is
   checked on load and an entry that fails is removed. The cache never fails
   a call: anything wrong with it means compiling as if it were not there. */
#ifndef TN_DISK_CACHE_H
#define TN_DISK_CACHE_H

#include <stddef.h>

#include "tmanorm.h"
#include "util/sha256.h"

/* Bumped whenever the entry layout or what the key covers changes. */
#define TN_DISK_CACHE_FORMAT 1
#define TN_DISK_CACHE_HEADER 88
/* The largest entry read: kernels are tens of KiB; a header claiming more is not one of ours. */
#define TN_DISK_CACHE_MAX_ENTRY (64LL << 20)
/* Longest cache directory (bytes, NUL included); a longer one disables the cache. */
#define TN_DISK_CACHE_DIR_MAX 4000

/* The cache directory the environment names: $TMANORM_CACHE_DIR, else
   $XDG_CACHE_HOME/tmanorm, else $HOME/.cache/tmanorm. Returns 0 with dir ""
   when TMANORM_DISK_CACHE=0 or none applies. Nothing is created here. */
int tn_disk_cache_dir(char dir[TN_DISK_CACHE_DIR_MAX]);
/* The key of the kernel compiled from source for arch with this NVRTC. */
void tn_disk_cache_key(const char *source, const char *arch, unsigned char key[TN_SHA256_SIZE]);
/* Where key's entry lives in dir; 0 if the path does not fit in cap. */
int tn_disk_cache_path(const char *dir, const unsigned char key[TN_SHA256_SIZE], char *path, size_t cap);
/* 1 with key's image and log (NUL-terminated) allocated from a; 0 on a miss.
   An entry that fails a check is removed. */
int tn_disk_cache_load(const tn_allocator *a, const char *dir, const unsigned char key[TN_SHA256_SIZE],
                       char **image, size_t *image_size, char **log);
/* Writes key's entry (creating directories, mode 0700); 1 if it is in place.
   On failure nothing is left behind. */
int tn_disk_cache_store(const char *dir, const unsigned char key[TN_SHA256_SIZE], const char *image,
                        size_t image_size, const char *log);

#endif
