/* The device harness shared by `tmanorm demo/run` and the GPU test tier:
   random inputs made on the GPU (and remade bit for bit on the host), poisoned
   outputs, validation of sampled rows against the reference, graph timing over
   rotated buffer sets, and the copy ceiling. Internal to the project. */
#ifndef TN_GPU_CHECK_H
#define TN_GPU_CHECK_H

#include "rt/cache.h"
#include "tmanorm.h"

typedef struct tn_check_options {
    uint64_t seed;
    int sample_rows;     /* rows compared with the reference (all if M is smaller) */
    int64_t row_pad;     /* extra elements per row of every ROW tensor (stride = N + pad) */
    int byte_offset;     /* shift every tensor by this many bytes (misalignment tests) */
    int64_t launch_rows; /* launch for this many rows (0: the plan's M), the tensors holding only those */
    int out_offset;      /* shift every output by this many bytes more than the inputs (offsets that disagree) */
    int in_place;        /* each ROW output written over the first unclaimed ROW input of its dtype (y over x, h
                            over residual): not poisoned first, so only the values are checked */
    int neg_inf;         /* masked rows (attention masks): in every third row from row 1 the first 5/8 of each ROW
                            input is -inf, in every third from row 2 all but one element in 97 (never a whole row) */
} tn_check_options;

typedef struct tn_check_result {
    int passed;
    int64_t unwritten;   /* output elements still holding the poison */
    int64_t bad;         /* sampled elements beyond tolerance, plus bytes written outside the rows */
    int64_t outside;     /* bytes written outside the rows (padding, past the end) */
    double max_rel_err;  /* max over sampled elements of |out - ref| / (|ref| + atol) */
    double norm_err;     /* max over outputs of ||out - ref|| / ||ref|| */
    char detail[320];    /* the first failure */
} tn_check_result;

typedef struct tn_timing {
    double us;         /* median time of one launch */
    double us_spread;  /* (max - min) of the per-replay medians, over launches */
    double gbs;        /* bytes at the floor over us */
    int buffer_sets;   /* rotated so the working set is >= 4x L2 */
} tn_timing;

/* Runs plan once on fresh random inputs and checks every output. */
tn_status tn_gpu_check(tn_plan *plan, const float *params, const tn_check_options *opts, tn_check_result *out);
/* Times plan in CUDA graphs over rotated buffer sets: the median of 15 replays after 3 warm-ups. */
tn_status tn_gpu_time(tn_plan *plan, const float *params, tn_timing *out);
/* The same with `replays` (1 to 15) replays after one warm-up: a quick screen. */
tn_status tn_gpu_time_replays(tn_plan *plan, const float *params, int replays, tn_timing *out);
/* The same for launches of launch_rows rows (0: the plan's M), the tensors holding only those. */
tn_status tn_gpu_time_rows(tn_plan *plan, const float *params, int replays, int64_t launch_rows, tn_timing *out);
/* Device-to-device copy of bytes, counted read + written, in GB/s. */
tn_status tn_gpu_copy_ceiling(tn_context *ctx, size_t bytes, double *gbs);
/* Host cost of tn_plan_launch and of the bare cuLaunchKernelEx it makes, in µs per call. */
tn_status tn_gpu_launch_overhead(tn_plan *plan, const float *params, int calls, double *tn_us, double *raw_us);

/* A kernel of the harness's own (body after the device helpers) from ctx's
   cache; the caller releases it once its launches have finished. */
tn_status tn_gpu_helper_kernel(tn_context *ctx, const char *body, tn_kernel **k);
/* The plan's kind as its JSON names it ("?" if it cannot be read). */
void tn_gpu_plan_kind(const tn_plan *plan, char *out, size_t cap);

#endif
