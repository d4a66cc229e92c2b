/* The on-disk kernel cache (issue 8): SHA-256 against the FIPS 180-2 vectors;
   a second context loads from disk what the first compiled; entries
   truncated, flipped or swapped for another key's are removed, recompiled and
   written again; TMANORM_DISK_CACHE=0 and an unwritable directory only
   compile. Each case points TMANORM_CACHE_DIR at a fresh temporary directory
   before creating its contexts: a context reads the environment when it is
   created. */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt/disk_cache.h"
#include "rt/runtime.h"
#include "util/alloc.h"
#include "util/sha256.h"
#include "test.h"

static void test_sha256(void) {
    static const char *const vectors[][2] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    unsigned char d[TN_SHA256_SIZE];
    char hex[2 * TN_SHA256_SIZE + 1];
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        tn_sha256_bytes(vectors[i][0], strlen(vectors[i][0]), d);
        tn_sha256_hex(d, hex);
        CHECK(strcmp(hex, vectors[i][1]) == 0, "sha256 of \"%.10s...\": %s", vectors[i][0], hex);
    }
    /* One million 'a', fed in pieces that straddle the 64-byte blocks. */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    tn_sha256 s;
    tn_sha256_init(&s);
    for (size_t off = 0, step = 1; off < sizeof a; off += step, step = step % 97 + 1)
        tn_sha256_update(&s, a + off, off + step <= sizeof a ? step : sizeof a - off);
    tn_sha256_final(&s, d);
    tn_sha256_hex(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "million a: %s", hex);
}

/* ---- helpers ----------------------------------------------------------------- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    chmod(path, 0700); /* so an unwritable case's directory empties */
    return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

static int g_files;
static int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)path, (void)ftw;
    if (flag == FTW_F && S_ISREG(st->st_mode)) g_files++;
    return 0;
}

/* Regular files under dir: entries and any temporary file left behind. */
static int count_files(const char *dir) {
    g_files = 0;
    nftw(dir, count_one, 16, FTW_PHYS);
    return g_files;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int ok = in && out;
    char buf[4096];
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

/* What one fresh context (an empty memory cache) did to plan rmsnorm. */
typedef struct outcome {
    tn_status st;
    int compiles, disk_hits, registers;
    double compile_ms;
    char path[TN_DISK_CACHE_DIR_MAX + 80]; /* the kernel's entry ("" with the cache off) */
    unsigned char key[TN_SHA256_SIZE];
    char dir[TN_DISK_CACHE_DIR_MAX];
} outcome;

static outcome plan_rmsnorm(int64_t cols) {
    outcome o;
    memset(&o, 0, sizeof o);
    tn_context *ctx = test_context();
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    o.st = tn_plan_create(ctx, f, 64, cols, NULL, &plan);
    if (plan) {
        tn_resources r;
        tn_plan_resources(plan, &r);
        o.compile_ms = r.compile_ms;
        o.registers = r.registers;
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
        tn_disk_cache_key(src, ctx->arch, o.key);
        if (ctx->cache.disk_dir[0]) tn_disk_cache_path(ctx->cache.disk_dir, o.key, o.path, sizeof o.path);
        free(src);
    }
    o.compiles = ctx->cache.compiles;
    o.disk_hits = ctx->cache.disk_hits;
    snprintf(o.dir, sizeof o.dir, "%s", ctx->cache.disk_dir);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    tn_context_destroy(ctx);
    return o;
}

/* Whether key's entry under dir passes every check the cache makes. */
static int entry_valid(const char *dir, const unsigned char key[TN_SHA256_SIZE]) {
    char *image = NULL, *log = NULL;
    size_t size = 0;
    const int ok = tn_disk_cache_load(&tn_default_allocator, dir, key, &image, &size, &log);
    free(image);
    free(log);
    return ok;
}

static void make_temp_dir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/tn_disk_cache_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) dir[0] = '\0';
}

/* ---- cases ------------------------------------------------------------------- */

/* The directory follows TMANORM_CACHE_DIR, XDG_CACHE_HOME, HOME, TMANORM_DISK_CACHE. */
static void test_dir_from_env(void) {
    char dir[TN_DISK_CACHE_DIR_MAX];
    setenv("TMANORM_CACHE_DIR", "/a/b", 1);
    setenv("XDG_CACHE_HOME", "/x", 1);
    CHECK(tn_disk_cache_dir(dir) && strcmp(dir, "/a/b") == 0, "TMANORM_CACHE_DIR: %s", dir);
    unsetenv("TMANORM_CACHE_DIR");
    CHECK(tn_disk_cache_dir(dir) && strcmp(dir, "/x/tmanorm") == 0, "XDG_CACHE_HOME: %s", dir);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    CHECK(tn_disk_cache_dir(dir) && strcmp(dir, "/h/.cache/tmanorm") == 0, "HOME: %s", dir);
    static const char *const offs[] = {"0", "off", "FALSE", "no"};
    for (int i = 0; i < 4; i++) {
        setenv("TMANORM_DISK_CACHE", offs[i], 1);
        CHECK(!tn_disk_cache_dir(dir) && dir[0] == '\0', "TMANORM_DISK_CACHE=%s: %s", offs[i], dir);
    }
    setenv("TMANORM_DISK_CACHE", "1", 1);
    CHECK(tn_disk_cache_dir(dir), "TMANORM_DISK_CACHE=1 turned it off");
    unsetenv("TMANORM_DISK_CACHE");
}

/* A second context loads the first one's kernel; every bad entry is replaced. */
static void test_reuse_and_corruption(const char *root) {
    char dir[TN_DISK_CACHE_DIR_MAX];
    snprintf(dir, sizeof dir, "%s/new/cache", root); /* created on the first store */
    setenv("TMANORM_CACHE_DIR", dir, 1);
    outcome a = plan_rmsnorm(4096);
    CHECK(a.st == TN_STATUS_OK && a.compiles == 1 && a.disk_hits == 0 && a.compile_ms > 0,
          "first plan: %s, %d compiles, %d disk hits, %.1f ms", tn_status_string(a.st), a.compiles, a.disk_hits,
          a.compile_ms);
    CHECK(strcmp(a.dir, dir) == 0, "the context's cache is at %s", a.dir);
    CHECK(file_size(a.path) > TN_DISK_CACHE_HEADER && entry_valid(dir, a.key), "no valid entry at %s", a.path);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "cache directory mode %o", st.st_mode & 0777);

    outcome again = plan_rmsnorm(4096);
    CHECK(again.st == TN_STATUS_OK && again.compiles == 0 && again.disk_hits == 1 && again.compile_ms == 0.0,
          "second context: %d compiles, %d disk hits, %.1f ms", again.compiles, again.disk_hits, again.compile_ms);
    CHECK(again.registers == a.registers && a.registers > 0, "registers %d from disk, %d compiled", again.registers,
          a.registers);

    outcome b = plan_rmsnorm(2048); /* another key, to copy over a's entry */
    CHECK(b.st == TN_STATUS_OK && b.compiles == 1 && strcmp(b.path, a.path) != 0, "second kernel");
    CHECK(count_files(dir) == 2, "%d files for 2 entries", count_files(dir));

    enum { TRUNCATE, FLIP, SWAP, APPEND };
    /* Offsets into the header (see disk_cache.h), then the payload's image length. */
    static const struct { int how; long at; const char *what; } bad[] = {
        {TRUNCATE, 0, "truncated to 0"},        {TRUNCATE, 5, "truncated in the magic"},
        {TRUNCATE, 40, "truncated in the key"}, {TRUNCATE, TN_DISK_CACHE_HEADER - 1, "truncated in the digest"},
        {TRUNCATE, TN_DISK_CACHE_HEADER, "no payload"}, {TRUNCATE, TN_DISK_CACHE_HEADER + 4, "truncated in the image length"},
        {TRUNCATE, -1, "one byte short"},       {FLIP, -2, "a payload byte flipped"},
        {FLIP, 3, "the magic flipped"},         {FLIP, 8, "the version flipped"},
        {FLIP, 20, "the key flipped"},          {FLIP, 48, "the length flipped"},
        {FLIP, 70, "the digest flipped"},       {FLIP, TN_DISK_CACHE_HEADER, "the image length flipped"},
        {SWAP, 0, "another key's entry"},       {APPEND, 0, "a byte appended"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const long size = file_size(a.path); /* varies by a few bytes: ptxas' report holds its time */
        const long at = bad[i].at == -2 ? TN_DISK_CACHE_HEADER + (size - TN_DISK_CACHE_HEADER) / 2
                        : bad[i].at < 0 ? size + bad[i].at : bad[i].at;
        if (bad[i].how == TRUNCATE) CHECK(truncate(a.path, at) == 0, "truncate");
        if (bad[i].how == FLIP) flip_byte(a.path, at);
        if (bad[i].how == SWAP) CHECK(copy_file(b.path, a.path), "copy");
        if (bad[i].how == APPEND) {
            FILE *f = fopen(a.path, "ab");
            if (f) fputc(0, f), fclose(f);
        }
        outcome o = plan_rmsnorm(4096);
        CHECK(o.st == TN_STATUS_OK && o.compiles == 1 && o.disk_hits == 0 && o.compile_ms > 0 &&
                  o.registers == a.registers,
              "%s: %s, %d compiles, %d disk hits", bad[i].what, tn_status_string(o.st), o.compiles, o.disk_hits);
        CHECK(entry_valid(dir, a.key), "%s: not replaced by a valid entry (%ld bytes)", bad[i].what,
              file_size(a.path));
        CHECK(count_files(dir) == 2 && entry_valid(dir, b.key), "%s: %d files", bad[i].what, count_files(dir));
    }
    /* Not regular files of ours: a FIFO at the path (must not block), a symlink to a valid entry (not
       followed), a sparse file past the size limit (refused before anything is allocated). Each recompiles. */
    static const char *const planted[] = {"a FIFO", "a symlink to a valid entry", "an entry of 65 MiB"};
    char other[sizeof a.path + 8];
    snprintf(other, sizeof other, "%s.keep", b.path);
    CHECK(copy_file(b.path, other), "copy");
    for (int i = 0; i < 3; i++) {
        unlink(a.path);
        const int made = i == 0   ? mkfifo(a.path, 0600) == 0
                         : i == 1 ? symlink(other, a.path) == 0
                                  : copy_file(b.path, a.path) && truncate(a.path, (65LL << 20)) == 0;
        CHECK(made, "%s: could not make it", planted[i]);
        outcome o = plan_rmsnorm(4096);
        CHECK(o.st == TN_STATUS_OK && o.compiles == 1 && o.disk_hits == 0, "%s: %d compiles, %d disk hits",
              planted[i], o.compiles, o.disk_hits);
        CHECK(entry_valid(dir, a.key), "%s: not replaced by a valid entry", planted[i]);
    }
    unlink(other);
    /* A bad entry is removed by the check itself, before anything rewrites it. */
    flip_byte(a.path, file_size(a.path) - 1);
    CHECK(!entry_valid(dir, a.key) && file_size(a.path) == -1, "a bad entry was loaded or kept");
    unsetenv("TMANORM_CACHE_DIR");
}

/* Contexts in two threads compiling one key both write it; the last rename wins. */
static void *plan_thread(void *arg) {
    *(outcome *)arg = plan_rmsnorm(1024);
    return NULL;
}

static void test_concurrent_writers(const char *root) {
    char dir[TN_DISK_CACHE_DIR_MAX];
    snprintf(dir, sizeof dir, "%s/concurrent", root);
    setenv("TMANORM_CACHE_DIR", dir, 1);
    static outcome o[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, plan_thread, &o[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(o[0].st == TN_STATUS_OK && o[1].st == TN_STATUS_OK, "concurrent plans");
    CHECK(entry_valid(dir, o[0].key) && count_files(dir) == 1, "%d files after two writers", count_files(dir));
    unsetenv("TMANORM_CACHE_DIR");
}

/* TMANORM_DISK_CACHE=0, or a directory that cannot be written, only compiles. */
static void test_off_and_unwritable(const char *root) {
    char dir[TN_DISK_CACHE_DIR_MAX];
    snprintf(dir, sizeof dir, "%s/off", root);
    setenv("TMANORM_CACHE_DIR", dir, 1);
    setenv("TMANORM_DISK_CACHE", "0", 1);
    outcome o = plan_rmsnorm(512);
    CHECK(o.st == TN_STATUS_OK && o.compiles == 1 && o.dir[0] == '\0' && access(dir, F_OK) != 0,
          "TMANORM_DISK_CACHE=0: %d compiles, cache at '%s'", o.compiles, o.dir);
    unsetenv("TMANORM_DISK_CACHE");

    if (geteuid() == 0) {
        printf("disk cache: unwritable directory not tested (root writes anywhere)\n");
    } else {
        snprintf(dir, sizeof dir, "%s/ro", root);
        mkdir(dir, 0500);
        char sub[TN_DISK_CACHE_DIR_MAX + 8];
        snprintf(sub, sizeof sub, "%s/sub", dir);
        const char *const dirs[] = {dir, sub}; /* unwritable; cannot be created */
        for (int i = 0; i < 2; i++) {
            setenv("TMANORM_CACHE_DIR", dirs[i], 1);
            o = plan_rmsnorm(512);
            CHECK(o.st == TN_STATUS_OK && o.compiles == 1 && o.compile_ms > 0, "%s: %s, %d compiles", dirs[i],
                  tn_status_string(o.st), o.compiles);
            CHECK(count_files(dir) == 0, "%s: %d files written", dirs[i], count_files(dir));
        }
    }
    unsetenv("TMANORM_CACHE_DIR");
}

void test_disk_cache(void) {
    static const char *const vars[] = {"TMANORM_CACHE_DIR", "TMANORM_DISK_CACHE", "XDG_CACHE_HOME", "HOME"};
    char *saved[4];
    for (int i = 0; i < 4; i++) saved[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
    unsetenv("TMANORM_DISK_CACHE"); /* the tier may turn the cache off for the other suites */
    test_sha256();
    test_dir_from_env();
    char root[512];
    make_temp_dir(root, sizeof root);
    CHECK(root[0], "no temporary directory");
    if (root[0]) {
        test_reuse_and_corruption(root);
        test_concurrent_writers(root);
        test_off_and_unwritable(root);
        remove_tree(root);
        CHECK(access(root, F_OK) != 0, "%s left behind", root);
    }
    for (int i = 0; i < 4; i++) {
        if (saved[i]) setenv(vars[i], saved[i], 1);
        else unsetenv(vars[i]);
        free(saved[i]);
    }
}
