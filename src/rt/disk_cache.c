/* The on-disk kernel cache (see disk_cache.h). */
#include "rt/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt/nvrtc.h"
#include "util/alloc.h"

static const char k_magic[8] = {'t', 'n', 'k', 'c', 'a', 'c', 'h', 'e'};

int tn_disk_cache_dir(char dir[TN_DISK_CACHE_DIR_MAX]) {
    const char *off = getenv("TMANORM_DISK_CACHE");
    const char *own = getenv("TMANORM_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = -1;
    dir[0] = '\0';
    if (off && (!strcmp(off, "0") || !strcasecmp(off, "off") || !strcasecmp(off, "false") || !strcasecmp(off, "no")))
        return 0;
    if (own && own[0]) n = snprintf(dir, TN_DISK_CACHE_DIR_MAX, "%s", own);
    else if (xdg && xdg[0] == '/') n = snprintf(dir, TN_DISK_CACHE_DIR_MAX, "%s/tmanorm", xdg); /* XDG: absolute only */
    else if (home && home[0]) n = snprintf(dir, TN_DISK_CACHE_DIR_MAX, "%s/.cache/tmanorm", home);
    if (n < 0 || n >= TN_DISK_CACHE_DIR_MAX) {
        dir[0] = '\0';
        return 0;
    }
    return 1;
}

/* A field with its NUL, so no two lists of fields hash alike. */
static void add_field(tn_sha256 *s, const char *text) { tn_sha256_update(s, text, strlen(text) + 1); }

void tn_disk_cache_key(const char *source, const char *arch, unsigned char key[TN_SHA256_SIZE]) {
    char format[32];
    snprintf(format, sizeof format, "tmanorm kernel cache %d", TN_DISK_CACHE_FORMAT);
    tn_sha256 s;
    tn_sha256_init(&s);
    add_field(&s, format);
    add_field(&s, arch);
    add_field(&s, tn_nvrtc_version());
    for (int i = 0; i < TN_NVRTC_OPTION_COUNT; i++) add_field(&s, tn_nvrtc_options[i]);
    add_field(&s, source);
    tn_sha256_final(&s, key);
}

int tn_disk_cache_path(const char *dir, const unsigned char key[TN_SHA256_SIZE], char *path, size_t cap) {
    char hex[2 * TN_SHA256_SIZE + 1];
    tn_sha256_hex(key, hex);
    const int n = snprintf(path, cap, "%s/%.2s/%s.tnk", dir, hex, hex);
    return n > 0 && (size_t)n < cap;
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Over the whole payload: its image length too, so no split of it goes unseen. */
static void payload_digest(const unsigned char size[8], const char *image, size_t image_size, const char *log,
                           size_t log_size, unsigned char out[TN_SHA256_SIZE]) {
    tn_sha256 s;
    tn_sha256_init(&s);
    tn_sha256_update(&s, size, 8);
    tn_sha256_update(&s, image, image_size);
    tn_sha256_update(&s, log, log_size);
    tn_sha256_final(&s, out);
}

/* All n bytes or failure (EOF included: the file is shorter than it says). */
static int read_all(int fd, void *buf, size_t n) {
    for (char *p = buf; n > 0;) {
        const ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        p += got;
        n -= (size_t)got;
    }
    return 1;
}

static int write_all(int fd, const void *buf, size_t n) {
    for (const char *p = buf; n > 0;) {
        const ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return 0;
        p += put;
        n -= (size_t)put;
    }
    return 1;
}

int tn_disk_cache_load(const tn_allocator *a, const char *dir, const unsigned char key[TN_SHA256_SIZE],
                       char **image, size_t *image_size, char **log) {
    char path[TN_DISK_CACHE_DIR_MAX + 80];
    if (!tn_disk_cache_path(dir, key, path, sizeof path)) return 0;
    /* Not through a symlink, and never blocking on a FIFO planted at the path. */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return 0;
    enum { BAD, MISS, HIT } verdict = BAD;
    unsigned char h[TN_DISK_CACHE_HEADER], size[8], digest[TN_SHA256_SIZE];
    char *img = NULL, *text = NULL;
    uint64_t payload = 0, img_size = 0;
    struct stat st;
    /* The header must match exactly and the payload fill the rest of the file:
       a renamed entry has another key, a truncated one a shorter payload. */
    /* Ours only (anyone who can write the folder could plant a valid-looking kernel), and of a size a kernel
       has: the lengths inside then bound what a bad entry makes us allocate. */
    const int have_st = fstat(fd, &st) == 0;
    int ok = have_st && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             st.st_size <= TN_DISK_CACHE_MAX_ENTRY && read_all(fd, h, sizeof h) &&
             memcmp(h, k_magic, sizeof k_magic) == 0 && get_u64(h + 8) == TN_DISK_CACHE_FORMAT &&
             memcmp(h + 16, key, TN_SHA256_SIZE) == 0;
    if (ok) {
        payload = get_u64(h + 48);
        ok = payload == (uint64_t)st.st_size - TN_DISK_CACHE_HEADER && payload > 8 && read_all(fd, size, 8);
    }
    if (ok) {
        img_size = get_u64(size);
        ok = img_size > 0 && img_size <= payload - 8;
    }
    if (ok) {
        const size_t log_size = (size_t)(payload - 8 - img_size);
        img = tn_alloc(a, (size_t)img_size);
        text = tn_alloc(a, log_size + 1);
        if (!img || !text) {
            verdict = MISS; /* out of memory says nothing of the entry */
        } else if (read_all(fd, img, (size_t)img_size) && read_all(fd, text, log_size)) {
            text[log_size] = '\0';
            payload_digest(size, img, (size_t)img_size, text, log_size, digest); /* flipped bytes */
            if (memcmp(digest, h + 56, TN_SHA256_SIZE) == 0) verdict = HIT;
        }
    }
    close(fd);
    if (verdict == HIT) {
        *image = img;
        *image_size = (size_t)img_size;
        *log = text;
        return 1;
    }
    tn_free(a, img);
    tn_free(a, text);
    /* The caller compiles and writes it again. Only the file read is removed: another process may have
       renamed a good entry into place since. */
    struct stat now;
    if (verdict == BAD && have_st && lstat(path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
        unlink(path);
    return 0;
}

/* Creates every directory above path's last component that is missing. */
static int make_parents(const char *path) {
    char buf[TN_DISK_CACHE_DIR_MAX + 80];
    struct stat st;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return 0;
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        /* EEXIST and a directory we may not write to both count as there. */
        if (mkdir(buf, 0700) != 0 && (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))) return 0;
        *p = '/';
    }
    return 1;
}

int tn_disk_cache_store(const char *dir, const unsigned char key[TN_SHA256_SIZE], const char *image,
                        size_t image_size, const char *log) {
    char path[TN_DISK_CACHE_DIR_MAX + 80], tmp[TN_DISK_CACHE_DIR_MAX + 90];
    if (!tn_disk_cache_path(dir, key, path, sizeof path)) return 0;
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path); /* loads never open this name */
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && make_parents(path)) {
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
        fd = mkostemp(tmp, O_CLOEXEC);
    }
    if (fd < 0) return 0;
    const size_t log_size = strlen(log);
    unsigned char h[TN_DISK_CACHE_HEADER], size[8];
    put_u64(size, image_size);
    memcpy(h, k_magic, sizeof k_magic);
    put_u64(h + 8, TN_DISK_CACHE_FORMAT);
    memcpy(h + 16, key, TN_SHA256_SIZE);
    put_u64(h + 48, 8 + (uint64_t)image_size + log_size);
    payload_digest(size, image, image_size, log, log_size, h + 56);
    /* No fsync: an entry torn by a crash fails its checks and is rebuilt. */
    int ok = write_all(fd, h, sizeof h) && write_all(fd, size, 8) && write_all(fd, image, image_size) &&
             write_all(fd, log, log_size);
    ok = close(fd) == 0 && ok;
    /* rename is atomic: a reader sees the old entry or the new, and of two
       writers of one key the last wins with an entry as good as the other. */
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    return ok;
}
