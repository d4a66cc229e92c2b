/* What the fuzz targets of tests/fuzz share: libFuzzer's entry point, which
   each target defines and both libFuzzer (make fuzz) and fuzz_replay.c (ctest)
   call, and the way a broken property is reported. */
#ifndef TN_FUZZ_TARGET_H
#define TN_FUZZ_TARGET_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the library broke: say which, then abort, so libFuzzer saves the
   input as a crash and the replay driver counts it as a failure. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static inline void fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz property broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define FUZZ_CHECK(cond, ...) \
    do { if (!(cond)) fuzz_fail(__VA_ARGS__); } while (0)

#ifdef TN_PLAN_DESC_H
/* A checked plan's launches fit the device it was checked for. */
static inline void fuzz_check_launches(const tn_plan_desc *p, const tn_device_props *props) {
    tn_launch_desc l[TN_MAX_LAUNCHES + 1];
    const int n = tn_plan_desc_launches(p, l);
    FUZZ_CHECK(n >= 1 && n <= TN_MAX_LAUNCHES, "a checked plan makes %d launches", n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(l[i].kernel && l[i].grid >= 1 && l[i].grid <= 0x7fffffff && l[i].block >= 1 &&
                       l[i].block <= props->max_threads_per_block && l[i].smem_bytes >= 0 &&
                       l[i].smem_bytes <= props->smem_per_block_optin && l[i].cluster >= 1 &&
                       (l[i].pdl == 0 || l[i].pdl == 1),
                   "launch %d of a checked plan: grid %lld, block %d, %d bytes of shared memory, cluster %d, pdl %d",
                   i, (long long)l[i].grid, l[i].block, l[i].smem_bytes, l[i].cluster, l[i].pdl);
}
#endif

#endif
