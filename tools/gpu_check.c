/* The device harness (see gpu_check.h). */
#include "gpu_check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/runtime.h"
#include "api/plan_internal.h"
#include "ref/ref.h"
#include "util/dtype.h"

extern const char tn_device_cuh[];

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            st = tn_set_error(ctx, TN_STATUS_CUDA_ERROR, "%s: %s", #call, tn_cuda_error_text(r_)); \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define TRY(call)                                  \
    do {                                           \
        if ((st = (call)) != TN_STATUS_OK) goto done; \
    } while (0)

/* ---- random inputs, the same on both sides ----------------------------------------- */

static const char k_fill_src[] =
    "extern \"C\" __global__ void tn_kernel(void *p, long long n, int dtype, unsigned long long seed,\n"
    "                                       float lo, float hi) {\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        unsigned long long z = seed + (unsigned long long)i * 0x9E3779B97F4A7C15ull;\n"
    "        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;\n"
    "        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;\n"
    "        z ^= z >> 31;\n"
    "        float u = (float)(z >> 40) * (1.0f / 16777216.0f);\n"
    "        float x = __fadd_rn(lo, __fmul_rn(hi - lo, u));\n"
    "        if (dtype == 0) ((float *)p)[i] = x;\n"
    "        else if (dtype == 1) ((tn_u16 *)p)[i] = tn_f32_to_f16(x);\n"
    "        else ((tn_u16 *)p)[i] = tn_f32_to_bf16(x);\n"
    "    }\n"
    "}\n";

/* neg_inf's mask (tn_check_options): one expression, compiled here and pasted into the device's kernel. */
#define TN_MASKED(r, c, cols) ((r) % 3 == 1 ? (c) < (cols) / 8 * 5 : (r) % 3 == 2 && (c) % 97 != 13)
#define TN_STR(x) #x
#define TN_XSTR(x) TN_STR(x)
static int masked(int64_t r, int64_t c, int64_t cols) { return TN_MASKED(r, c, cols); }
static const char k_mask_src[] =
    "extern \"C\" __global__ void tn_kernel(void *p, long long rows, long long cols, long long stride, int dtype) {\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * stride;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        const long long r = i / stride, c = i % stride;\n"
    "        if (c >= cols || !" TN_XSTR(TN_MASKED(r, c, cols)) ") continue;\n"
    "        if (dtype == 0) ((unsigned *)p)[i] = 0xff800000u;\n"
    "        else ((tn_u16 *)p)[i] = dtype == 1 ? 0xfc00 : 0xff80;\n"
    "    }\n"
    "}\n";

/* Counts output elements still poisoned inside rows, and elements no longer
   poisoned outside them (padding and the guard after the end). */
static const char k_poison_src[] =
    "extern \"C\" __global__ void tn_kernel(const unsigned char *p, long long rows, long long cols,\n"
    "        long long stride, long long total, int size, unsigned long long *counts) {\n"
    "    unsigned long long inside = 0, outside = 0;\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        bool poison = true;\n"
    "        for (int b = 0; b < size; b++) poison = poison && p[i * size + b] == 0xff;\n"
    "        bool in_row = i < rows * stride && i % stride < cols;\n"
    "        if (in_row && poison) inside++;\n"
    "        if (!in_row && !poison) outside++;\n"
    "    }\n"
    "    if (inside) atomicAdd(&counts[0], inside);\n"
    "    if (outside) atomicAdd(&counts[1], outside);\n"
    "}\n";

static double host_value(uint64_t seed, int64_t i, float lo, float hi, tn_dtype dtype) {
    uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float u = (float)(z >> 40) * (1.0f / 16777216.0f);
    float d = hi - lo;
    float m = d * u;
    float x = lo + m;
    return tn_round_to_dtype(dtype, x);
}

static void input_range(const char *name, float *lo, float *hi) {
    if (strcmp(name, "w") == 0) *lo = 0.5f, *hi = 1.5f;
    else if (strcmp(name, "b") == 0) *lo = -0.5f, *hi = 0.5f;
    else *lo = -2.0f, *hi = 2.0f;
}

tn_status tn_gpu_helper_kernel(tn_context *ctx, const char *body, tn_kernel **k) {
    size_t n = strlen(tn_device_cuh) + strlen(body) + 2;
    char *src = malloc(n);
    if (!src) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "harness: out of memory");
    snprintf(src, n, "%s\n%s", tn_device_cuh, body);
    int compiled;
    tn_status st = tn_cache_get(ctx, src, k, &compiled);
    free(src);
    return st;
}

void tn_gpu_plan_kind(const tn_plan *plan, char *out, size_t cap) {
    char json[2048] = "";
    snprintf(out, cap, "?");
    if (tn_plan_describe(plan, TN_DESCRIBE_JSON, json, sizeof json, NULL) != TN_STATUS_OK) return;
    const char *k = strstr(json, "\"kind\": \"");
    if (!k) return;
    k += 9;
    size_t n = strcspn(k, "\"");
    snprintf(out, cap, "%.*s", (int)n, k);
}

/* ---- device buffers for one set of a plan's tensors ------------------------------------ */

#define GUARD_BYTES 256

typedef struct tensor_buf {
    CUdeviceptr base;
    size_t bytes; /* allocated, guard included */
    int offset;   /* bytes from the allocation to the tensor */
    tn_io_info info;
    int64_t rows, cols, stride; /* layout: rows of cols, stride apart (ROWSCALAR/COL: rows x 1) */
    tn_tensor t;
} tensor_buf;

typedef struct buffer_set {
    tensor_buf in[TN_MAX_IO], out[TN_MAX_IO];
    int num_in, num_out;
} buffer_set;

static void layout(tensor_buf *b, int64_t rows, int64_t cols, int64_t pad) {
    if (b->info.shape == TN_SHAPE_ROW) b->rows = rows, b->cols = cols, b->stride = cols + pad;
    else if (b->info.shape == TN_SHAPE_COL) b->rows = cols, b->cols = 1, b->stride = 1;
    else b->rows = rows, b->cols = 1, b->stride = 1;
}

static int64_t elems(const tensor_buf *b) { return b->rows * b->stride; }

static void free_set(tn_context *ctx, buffer_set *s) {
    for (int i = 0; i < s->num_in; i++)
        if (s->in[i].base) ctx->cu->MemFree(s->in[i].base);
    for (int o = 0; o < s->num_out; o++)
        if (s->out[o].base) ctx->cu->MemFree(s->out[o].base);
    memset(s, 0, sizeof *s);
}

static tn_status alloc_buf(tn_context *ctx, tensor_buf *b, int offset) {
    tn_status st = TN_STATUS_OK;
    size_t size = tn_dtype_size(b->info.dtype);
    b->bytes = (size_t)elems(b) * size + (size_t)offset + GUARD_BYTES;
    b->offset = offset;
    CU(ctx->cu->MemAlloc(&b->base, b->bytes));
    b->t.data = (void *)(uintptr_t)(b->base + (CUdeviceptr)offset);
    b->t.dtype = b->info.dtype;
    b->t.row_stride = b->info.shape == TN_SHAPE_ROW ? b->stride : 0;
done:
    return st;
}

static tn_status alloc_set(tn_plan *plan, int64_t rows, int64_t cols, int64_t pad, int offset, int out_offset,
                           buffer_set *s) {
    const tn_fusion *f = tn_plan_fusion(plan);
    tn_context *ctx = tn_plan_context(plan);
    tn_status st = TN_STATUS_OK;
    memset(s, 0, sizeof *s);
    s->num_in = tn_fusion_io_count(f, TN_IO_INPUT);
    s->num_out = tn_fusion_io_count(f, TN_IO_OUTPUT);
    for (int i = 0; i < s->num_in && st == TN_STATUS_OK; i++) {
        tn_fusion_io_info(f, TN_IO_INPUT, i, &s->in[i].info);
        layout(&s->in[i], rows, cols, pad);
        st = alloc_buf(ctx, &s->in[i], offset);
    }
    for (int o = 0; o < s->num_out && st == TN_STATUS_OK; o++) {
        tn_fusion_io_info(f, TN_IO_OUTPUT, o, &s->out[o].info);
        if (s->out[o].info.shape == TN_SHAPE_COL)
            st = tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "harness: COL outputs are not checked yet");
        layout(&s->out[o], rows, cols, pad);
        if (st == TN_STATUS_OK) st = alloc_buf(ctx, &s->out[o], offset + out_offset);
    }
    if (st != TN_STATUS_OK) free_set(ctx, s);
    return st;
}

static uint64_t input_seed(uint64_t seed, int i) { return seed * 1000003ull + (uint64_t)i * 7919ull + 1; }

static tn_status fill_inputs(tn_context *ctx, buffer_set *s, uint64_t seed, int neg_inf) {
    tn_status st = TN_STATUS_OK;
    tn_kernel *fill = NULL, *mask = NULL;
    TRY(tn_gpu_helper_kernel(ctx, k_fill_src, &fill));
    if (neg_inf) TRY(tn_gpu_helper_kernel(ctx, k_mask_src, &mask));
    for (int i = 0; i < s->num_in; i++) {
        tensor_buf *b = &s->in[i];
        long long n = elems(b);
        int dtype = (int)b->info.dtype;
        unsigned long long sd = input_seed(seed, i);
        float lo, hi;
        input_range(b->info.name, &lo, &hi);
        void *args[] = {&b->t.data, &n, &dtype, &sd, &lo, &hi};
        CU(ctx->cu->LaunchKernel(fill->fn, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        if (mask && b->info.shape == TN_SHAPE_ROW) {
            void *margs[] = {&b->t.data, &b->rows, &b->cols, &b->stride, &dtype};
            CU(ctx->cu->LaunchKernel(mask->fn, 1024, 1, 1, 256, 1, 1, 0, NULL, margs, NULL));
        }
    }
    CU(ctx->cu->CtxSynchronize());
done:
    tn_cache_release(ctx, fill);
    tn_cache_release(ctx, mask);
    return st;
}

static void fill_args(const buffer_set *s, const float *params, int num_params, tn_tensor *in, tn_tensor *out,
                      tn_launch_args *a) {
    for (int i = 0; i < s->num_in; i++) in[i] = s->in[i].t;
    for (int o = 0; o < s->num_out; o++) out[o] = s->out[o].t;
    *a = (tn_launch_args){in, s->num_in, out, s->num_out, params, num_params, NULL};
}

/* ---- validation ---------------------------------------------------------------------- */

static int sample_row(int64_t rows, int samples, int k) {
    return samples >= rows ? k : (int)((int64_t)k * (rows - 1) / (samples - 1));
}

tn_status tn_gpu_check(tn_plan *plan, const float *params, const tn_check_options *opts, tn_check_result *res) {
    tn_context *ctx = tn_plan_context(plan);
    const tn_fusion *f = tn_plan_fusion(plan);
    tn_status st = TN_STATUS_OK;
    buffer_set s;
    memset(&s, 0, sizeof s);
    memset(res, 0, sizeof *res);
    void *host_in[TN_MAX_IO] = {0}, *host_out[TN_MAX_IO] = {0};
    double *ref[TN_MAX_IO] = {0};
    CUdeviceptr counts = 0;
    tn_kernel *poison = NULL;
    /* The launch covers `rows` of the plan's M (opts->launch_rows). */
    const int64_t plan_rows = tn_plan_rows(plan), cols = tn_plan_cols(plan);
    const int64_t rows = opts->launch_rows > 0 && opts->launch_rows < plan_rows ? opts->launch_rows : plan_rows;
    if (!ctx->has_gpu) return tn_set_error(ctx, TN_STATUS_NO_DEVICE, "check: no GPU: %s", ctx->no_gpu_reason);
    const int samples = (int)(rows < opts->sample_rows ? rows : opts->sample_rows);
    const int num_params = tn_fusion_io_count(f, TN_IO_PARAM);
    /* Only the rows launched exist: a kernel reading or writing past them is out of bounds (the sanitizers)
       or writes the guard after the end (counted below). */
    TRY(alloc_set(plan, rows, cols, opts->row_pad, opts->byte_offset, opts->out_offset, &s));
    TRY(fill_inputs(ctx, &s, opts->seed, opts->neg_inf));
    for (int o = 0; o < s.num_out; o++) CU(ctx->cu->MemsetD8(s.out[o].base, 0xff, s.out[o].bytes));
    int aliased[TN_MAX_IO] = {0};
    if (opts->in_place) { /* the inputs are remade on the host for the reference, so writing over them is fine */
        int claimed[TN_MAX_IO] = {0};
        for (int o = 0; o < s.num_out; o++)
            for (int i = 0; i < s.num_in && s.out[o].info.shape == TN_SHAPE_ROW && !aliased[o]; i++)
                if (!claimed[i] && s.in[i].info.shape == TN_SHAPE_ROW && s.in[i].info.dtype == s.out[o].info.dtype) {
                    claimed[i] = aliased[o] = 1;
                    s.out[o].t.data = s.in[i].t.data;
                }
    }
    tn_tensor tin[TN_MAX_IO], tout[TN_MAX_IO];
    tn_launch_args la;
    fill_args(&s, params, num_params, tin, tout, &la);
    la.rows = rows < plan_rows ? rows : 0;
    TRY(tn_plan_launch(plan, &la));
    CU(ctx->cu->CtxSynchronize());

    /* Every element written, nothing outside the rows touched. */
    TRY(tn_gpu_helper_kernel(ctx, k_poison_src, &poison));
    CU(ctx->cu->MemAlloc(&counts, 2 * sizeof(unsigned long long)));
    for (int o = 0; o < s.num_out; o++) {
        tensor_buf *b = &s.out[o];
        if (aliased[o]) continue; /* written over its input: no poison to count */
        unsigned long long c[2] = {0, 0};
        CU(ctx->cu->MemsetD8(counts, 0, sizeof c));
        long long r = b->rows, cl = b->cols, sd = b->stride;
        int size = (int)tn_dtype_size(b->info.dtype);
        long long total = (long long)((b->bytes - (size_t)b->offset) / (size_t)size);
        void *p = b->t.data;
        void *args[] = {&p, &r, &cl, &sd, &total, &size, &counts};
        CU(ctx->cu->LaunchKernel(poison->fn, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        CU(ctx->cu->MemcpyDtoH(c, counts, sizeof c));
        res->unwritten += (int64_t)c[0];
        if (c[1] && !res->detail[0])
            snprintf(res->detail, sizeof res->detail, "output '%s': %llu bytes written outside its rows",
                     b->info.name, c[1]);
        if (c[1]) res->bad += (int64_t)c[1], res->outside += (int64_t)c[1];
        if (c[0] && !res->detail[0])
            snprintf(res->detail, sizeof res->detail, "output '%s': %llu elements never written", b->info.name, c[0]);
    }

    /* Sampled rows: the inputs remade on the host, the reference, the comparison. */
    for (int i = 0; i < s.num_in; i++) {
        tensor_buf *b = &s.in[i];
        int64_t n = b->info.shape == TN_SHAPE_ROW ? (int64_t)samples * cols : b->info.shape == TN_SHAPE_COL ? cols : samples;
        host_in[i] = malloc((size_t)n * tn_dtype_size(b->info.dtype));
        if (!host_in[i]) TRY(tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "check: out of memory"));
        float lo, hi;
        input_range(b->info.name, &lo, &hi);
        for (int k = 0; k < (b->info.shape == TN_SHAPE_COL ? 1 : samples); k++) {
            int64_t row = sample_row(rows, samples, k);
            int64_t len = b->info.shape == TN_SHAPE_ROWSCALAR ? 1 : cols;
            int64_t src0 = b->info.shape == TN_SHAPE_ROW ? row * b->stride : b->info.shape == TN_SHAPE_COL ? 0 : row;
            for (int64_t c = 0; c < len; c++)
                tn_store_elem(b->info.dtype, host_in[i], k * len + c,
                              opts->neg_inf && b->info.shape == TN_SHAPE_ROW && masked(row, c, cols)
                                  ? -INFINITY
                                  : host_value(input_seed(opts->seed, i), src0 + c, lo, hi, b->info.dtype));
        }
        tin[i] = (tn_tensor){host_in[i], b->info.dtype, 0};
    }
    for (int o = 0; o < s.num_out; o++) {
        int64_t n = s.out[o].info.shape == TN_SHAPE_ROW ? (int64_t)samples * cols : samples;
        ref[o] = malloc((size_t)n * sizeof(double));
        host_out[o] = malloc((size_t)n * tn_dtype_size(s.out[o].info.dtype));
        if (!ref[o] || !host_out[o]) TRY(tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "check: out of memory"));
    }
    TRY(tn_ref_run(f, samples, cols, tin, params, ref));
    for (int o = 0; o < s.num_out; o++) {
        tensor_buf *b = &s.out[o];
        size_t size = tn_dtype_size(b->info.dtype);
        int64_t len = b->info.shape == TN_SHAPE_ROW ? cols : 1;
        for (int k = 0; k < samples; k++) {
            int64_t row = sample_row(rows, samples, k);
            CUdeviceptr src = (CUdeviceptr)(uintptr_t)b->t.data + (CUdeviceptr)((size_t)(row * b->stride) * size);
            CU(ctx->cu->MemcpyDtoH((char *)host_out[o] + (size_t)(k * len) * size, src, (size_t)len * size));
        }
        const double eps = tn_dtype_eps(b->info.dtype);
        const double rtol = 2 * eps + 1e-5, atol_scale = eps + 1e-6;
        /* A per-row value (a mean, a sum) accumulated in f32 over the row carries an absolute error of about (the
           chain and the tree, log2 N + 16 steps) x f32's eps x the row's inputs' magnitude, however small it is
           itself: a mean near zero cancels (layernorm's mean 1.03e-6 of values up to 1 over 100008 columns was off
           by 2e-10; summed in another order by slices of other lengths, its error is another). */
        const double accum = b->info.shape == TN_SHAPE_ROWSCALAR ? (log2((double)cols) + 16) * FLT_EPSILON : 0;
        double err2 = 0, ref2 = 0;
        for (int k = 0; k < samples; k++) {
            double rowmax = 0, inmax = 0;
            for (int64_t c = 0; c < len; c++)
                if (isfinite(ref[o][k * len + c])) rowmax = fmax(rowmax, fabs(ref[o][k * len + c]));
            for (int i = 0; i < s.num_in && accum > 0; i++)
                if (s.in[i].info.shape == TN_SHAPE_ROW)
                    for (int64_t c = 0; c < cols; c++)
                        inmax = fmax(inmax, fabs(tn_load_elem(s.in[i].info.dtype, host_in[i], k * cols + c)));
            for (int64_t c = 0; c < len; c++) {
                double want = ref[o][k * len + c];
                double got = tn_load_elem(b->info.dtype, host_out[o], k * len + c);
                double d = fabs(got - want);
                int finite = isfinite(want) && isfinite(got);
                /* Values under half the dtype's smallest step may round to zero. */
                const double atol = atol_scale * rowmax + accum * inmax + tn_dtype_tiny(b->info.dtype);
                int same = got == want || (isnan(got) && isnan(want)); /* infinities and NaNs agree */
                if (same) d = 0;
                if (finite) err2 += d * d, ref2 += want * want;
                if (finite && fabs(want) > 1e-3 * rowmax && d / fabs(want) > res->max_rel_err) res->max_rel_err = d / fabs(want);
                if (!same && !(d <= atol + rtol * fabs(want))) {
                    if (!res->bad && !res->detail[0])
                        snprintf(res->detail, sizeof res->detail,
                                 "output '%s' row %lld col %lld: got %.9g, want %.9g (tolerance %.3g)", b->info.name,
                                 (long long)sample_row(rows, samples, k), (long long)c, got, want,
                                 atol + rtol * fabs(want));
                    res->bad++;
                }
            }
        }
        double ne = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
        if (ne > res->norm_err || isnan(ne)) res->norm_err = ne;
    }
    res->passed = res->bad == 0 && res->unwritten == 0;
done:
    tn_cache_release(ctx, poison);
    if (counts) ctx->cu->MemFree(counts);
    for (int i = 0; i < TN_MAX_IO; i++) free(host_in[i]), free(host_out[i]), free(ref[i]);
    free_set(ctx, &s);
    return st;
}

/* ---- timing -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_SETS 64
#define REPLAYS 15

tn_status tn_gpu_time(tn_plan *plan, const float *params, tn_timing *out) {
    return tn_gpu_time_rows(plan, params, REPLAYS, 0, out);
}

tn_status tn_gpu_time_replays(tn_plan *plan, const float *params, int replays, tn_timing *out) {
    return tn_gpu_time_rows(plan, params, replays, 0, out);
}

tn_status tn_gpu_time_rows(tn_plan *plan, const float *params, int replays, int64_t launch_rows, tn_timing *out) {
    tn_context *ctx = tn_plan_context(plan);
    const tn_fusion *f = tn_plan_fusion(plan);
    tn_status st = TN_STATUS_OK;
    static buffer_set sets[MAX_SETS];
    int nsets = 0;
    CUstream stream = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUevent e0 = NULL, e1 = NULL;
    memset(out, 0, sizeof *out);
    if (!ctx->has_gpu) return tn_set_error(ctx, TN_STATUS_NO_DEVICE, "time: no GPU: %s", ctx->no_gpu_reason);
    const int64_t plan_rows = tn_plan_rows(plan), cols = tn_plan_cols(plan);
    const int64_t rows = launch_rows > 0 && launch_rows < plan_rows ? launch_rows : plan_rows;
    const int64_t bytes = tn_plan_bytes_for_rows(plan, rows);
    size_t free_b = 0, total_b = 0;
    CU(ctx->cu->MemGetInfo(&free_b, &total_b));
    int want = (int)((4.0 * ctx->props.l2_bytes + (double)bytes - 1) / (double)bytes);
    if (want < 1) want = 1;
    if (want > MAX_SETS) want = MAX_SETS;
    while (want > 1 && (double)want * (double)bytes > 0.5 * (double)free_b) want--;
    const int num_params = tn_fusion_io_count(f, TN_IO_PARAM);
    for (nsets = 0; nsets < want; nsets++) {
        TRY(alloc_set(plan, rows, cols, 0, 0, 0, &sets[nsets]));
        TRY(fill_inputs(ctx, &sets[nsets], 1234 + (uint64_t)nsets, 0));
    }
    const int launches = nsets * ((20 + nsets - 1) / nsets);
    CU(ctx->cu->StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    /* Build every variant outside capture first. */
    for (int i = 0; i < nsets; i++) {
        tn_tensor tin[TN_MAX_IO], tout[TN_MAX_IO];
        tn_launch_args la;
        fill_args(&sets[i], params, num_params, tin, tout, &la);
        la.stream = stream;
        la.rows = rows < plan_rows ? rows : 0;
        TRY(tn_plan_launch(plan, &la));
    }
    CU(ctx->cu->StreamSynchronize(stream));
    CU(ctx->cu->StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < launches; i++) {
        tn_tensor tin[TN_MAX_IO], tout[TN_MAX_IO];
        tn_launch_args la;
        fill_args(&sets[i % nsets], params, num_params, tin, tout, &la);
        la.stream = stream;
        la.rows = rows < plan_rows ? rows : 0;
        st = tn_plan_launch(plan, &la);
        if (st != TN_STATUS_OK) {
            ctx->cu->StreamEndCapture(stream, &graph);
            goto done;
        }
    }
    CU(ctx->cu->StreamEndCapture(stream, &graph));
    CU(ctx->cu->GraphInstantiate(&exec, graph, 0));
    CU(ctx->cu->EventCreate(&e0, CU_EVENT_DEFAULT));
    CU(ctx->cu->EventCreate(&e1, CU_EVENT_DEFAULT));
    double per[REPLAYS];
    replays = replays < 1 ? 1 : replays > REPLAYS ? REPLAYS : replays;
    for (int w = 0; w < (replays < REPLAYS ? 1 : 3); w++) CU(ctx->cu->GraphLaunch(exec, stream));
    for (int r = 0; r < replays; r++) {
        float ms = 0;
        CU(ctx->cu->EventRecord(e0, stream));
        CU(ctx->cu->GraphLaunch(exec, stream));
        CU(ctx->cu->EventRecord(e1, stream));
        CU(ctx->cu->EventSynchronize(e1));
        CU(ctx->cu->EventElapsedTime(&ms, e0, e1));
        per[r] = ms * 1e3 / launches;
    }
    qsort(per, (size_t)replays, sizeof per[0], cmp_double);
    out->us = per[replays / 2];
    out->us_spread = per[replays - 1] - per[0];
    out->gbs = (double)bytes / (out->us * 1e3);
    out->buffer_sets = nsets;
done:
    if (e0) ctx->cu->EventDestroy(e0);
    if (e1) ctx->cu->EventDestroy(e1);
    if (exec) ctx->cu->GraphExecDestroy(exec);
    if (graph) ctx->cu->GraphDestroy(graph);
    if (stream) ctx->cu->StreamDestroy(stream);
    for (int i = 0; i < MAX_SETS; i++) free_set(ctx, &sets[i]);
    return st;
}

tn_status tn_gpu_copy_ceiling(tn_context *ctx, size_t bytes, double *gbs) {
    tn_status st = TN_STATUS_OK;
    CUdeviceptr a = 0, b = 0;
    CUevent e0 = NULL, e1 = NULL;
    if (!ctx->has_gpu) return tn_set_error(ctx, TN_STATUS_NO_DEVICE, "copy: no GPU: %s", ctx->no_gpu_reason);
    CU(ctx->cu->MemAlloc(&a, bytes));
    CU(ctx->cu->MemAlloc(&b, bytes));
    CU(ctx->cu->MemsetD8(a, 0x5a, bytes));
    CU(ctx->cu->EventCreate(&e0, CU_EVENT_DEFAULT));
    CU(ctx->cu->EventCreate(&e1, CU_EVENT_DEFAULT));
    double per[REPLAYS];
    for (int r = -2; r < REPLAYS; r++) {
        float ms = 0;
        CU(ctx->cu->EventRecord(e0, NULL));
        for (int i = 0; i < 5; i++) CU(ctx->cu->MemcpyDtoDAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, NULL));
        CU(ctx->cu->EventRecord(e1, NULL));
        CU(ctx->cu->EventSynchronize(e1));
        CU(ctx->cu->EventElapsedTime(&ms, e0, e1));
        if (r >= 0) per[r] = ms / 5;
    }
    qsort(per, REPLAYS, sizeof per[0], cmp_double);
    *gbs = 2.0 * (double)bytes / (per[REPLAYS / 2] * 1e6);
done:
    if (e0) ctx->cu->EventDestroy(e0);
    if (e1) ctx->cu->EventDestroy(e1);
    if (a) ctx->cu->MemFree(a);
    if (b) ctx->cu->MemFree(b);
    return st;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

tn_status tn_gpu_launch_overhead(tn_plan *plan, const float *params, int calls, double *tn_us, double *raw_us) {
    tn_context *ctx = tn_plan_context(plan);
    const tn_fusion *f = tn_plan_fusion(plan);
    tn_status st = TN_STATUS_OK;
    buffer_set s;
    memset(&s, 0, sizeof s);
    const int64_t rows = tn_plan_rows(plan), cols = tn_plan_cols(plan);
    TRY(alloc_set(plan, rows, cols, 0, 0, 0, &s));
    TRY(fill_inputs(ctx, &s, 7, 0));
    tn_tensor tin[TN_MAX_IO], tout[TN_MAX_IO];
    tn_launch_args la;
    fill_args(&s, params, tn_fusion_io_count(f, TN_IO_PARAM), tin, tout, &la);
    static tn_prepared prep;
    TRY(tn_plan_prepare(plan, &la, &prep));
    /* Batches of 100 calls, synchronized between, keep the launch queue from filling. */
    double t_tn = 0, t_raw = 0;
    for (int done_calls = 0; done_calls < calls; done_calls += 100) {
        double t0 = now_us();
        for (int i = 0; i < 100; i++) TRY(tn_plan_launch(plan, &la));
        t_tn += now_us() - t0;
        CU(ctx->cu->CtxSynchronize());
        t0 = now_us();
        for (int i = 0; i < 100; i++) TRY(tn_prepared_launch(plan, &prep));
        t_raw += now_us() - t0;
        CU(ctx->cu->CtxSynchronize());
    }
    int n = (calls + 99) / 100 * 100;
    *tn_us = t_tn / n;
    *raw_us = t_raw / n;
done:
    free_set(ctx, &s);
    return st;
}
