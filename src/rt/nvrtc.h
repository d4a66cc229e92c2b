/* NVRTC: CUDA C to a CUBIN (or PTX for GPUs newer than NVRTC) for the
   context's architecture, with ptxas' resource report. */
#ifndef TN_NVRTC_H
#define TN_NVRTC_H

#include <stddef.h>

#include "tmanorm.h"

/* The compile options, one list for both the compile and the cache key. */
extern const char *const tn_nvrtc_options[];
#define TN_NVRTC_OPTION_COUNT 2

/* Compiles source with NVRTC for arch (the cache calls it).
   On failure the context's error holds NVRTC's log. */
tn_status tn_nvrtc_compile(tn_context *ctx, const char *source, const char *arch, char **image,
                           size_t *image_size, char **log, double *ms);
/* "major.minor" of the linked NVRTC. */
const char *tn_nvrtc_version(void);
/* Reads registers, spills, stack and shared memory from ptxas' report. */
void tn_parse_ptxas_log(const char *log, tn_resources *res);

#endif
