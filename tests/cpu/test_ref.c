/* Reference tests: closed-form results of each built-in, and the exact
   dtype conversions the reference and the harness rely on. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "util/dtype.h"
#include "ref/ref.h"

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol * (fabs(b) + 1e-300); }

static void run_builtin(tn_context *ctx, tn_builtin op, int stats, int64_t rows, int64_t cols, const tn_tensor *in,
                        float eps, double *const *out) {
    tn_builtin_options o = {TN_DTYPE_F32, TN_DTYPE_F32, TN_DTYPE_F32, stats};
    tn_fusion *f = NULL;
    CHECK(tn_fusion_builtin(ctx, op, &o, &f) == TN_STATUS_OK, "builtin");
    tn_status st = tn_ref_run(f, rows, cols, in, &eps, out);
    CHECK(st == TN_STATUS_OK, "ref %s: %s", tn_builtin_name(op), tn_context_last_error(ctx));
    tn_fusion_destroy(f);
}

static void test_closed_forms(tn_context *ctx) {
    /* rmsnorm of [3, 4] with w = [1, 2]: mean square 12.5. */
    float x[2] = {3, 4}, w[2] = {1, 2};
    double y[2], r[1];
    tn_tensor in[2] = {{x, TN_DTYPE_F32, 0}, {w, TN_DTYPE_F32, 0}};
    double *outs[2] = {y, r};
    run_builtin(ctx, TN_BUILTIN_RMSNORM, 1, 1, 2, in, 0.5f, outs);
    double rr = 1 / sqrt(12.5 + 0.5);
    CHECK(close_to(y[0], 3 * rr, 1e-15) && close_to(y[1], 8 * rr, 1e-15), "rmsnorm y = %g %g", y[0], y[1]);
    CHECK(close_to(r[0], rr, 1e-15), "rmsnorm rstd = %g", r[0]);

    /* layernorm of [1, 2, 3, 4]: mean 2.5, variance 1.25. */
    float lx[4] = {1, 2, 3, 4}, lw[4] = {1, 1, 2, 2}, lb[4] = {0, 1, 0, 1};
    double ly[4], lm[1], lr[1];
    tn_tensor lin[3] = {{lx, TN_DTYPE_F32, 0}, {lw, TN_DTYPE_F32, 0}, {lb, TN_DTYPE_F32, 0}};
    double *louts[3] = {ly, lm, lr};
    run_builtin(ctx, TN_BUILTIN_LAYERNORM, 1, 1, 4, lin, 0.0f, louts);
    double s = 1 / sqrt(1.25);
    CHECK(close_to(lm[0], 2.5, 1e-15) && close_to(lr[0], s, 1e-15), "layernorm stats %g %g", lm[0], lr[0]);
    for (int i = 0; i < 4; i++)
        CHECK(close_to(ly[i], (lx[i] - 2.5) * s * lw[i] + lb[i], 1e-14), "layernorm y[%d] = %g", i, ly[i]);

    /* softmax of [0, ln 2, ln 3] over two rows, the second shifted by 100. */
    float sx[6] = {0, (float)log(2.0), (float)log(3.0), 100, 100 + (float)log(2.0), 100 + (float)log(3.0)};
    double sy[6];
    tn_tensor sin_[1] = {{sx, TN_DTYPE_F32, 0}};
    double *souts[1] = {sy};
    run_builtin(ctx, TN_BUILTIN_SOFTMAX, 0, 2, 3, sin_, 0, souts);
    double z = exp(0.0) + exp((double)sx[1]) + exp((double)sx[2]);
    for (int i = 0; i < 3; i++) CHECK(close_to(sy[i], exp((double)sx[i]) / z, 1e-12), "softmax[%d] = %g", i, sy[i]);
    CHECK(close_to(sy[0] + sy[1] + sy[2], 1.0, 1e-12) && close_to(sy[3] + sy[4] + sy[5], 1.0, 1e-6), "softmax sums");

    /* add_rmsnorm: the sum output is x + residual; y is rmsnorm of the sum. A row stride of 3 skips a pad. */
    float ax[6] = {1, 2, -7, 3, 3, -7}, ares[6] = {2, 2, -7, 0, 1, -7}, aw[2] = {1, 1};
    double ay[4], asum[4];
    tn_tensor ain[3] = {{ax, TN_DTYPE_F32, 3}, {ares, TN_DTYPE_F32, 3}, {aw, TN_DTYPE_F32, 0}};
    double *aouts[2] = {ay, asum};
    run_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, 0, 2, 2, ain, 0, aouts);
    CHECK(asum[0] == 3 && asum[1] == 4 && asum[2] == 3 && asum[3] == 4, "sum %g %g %g %g", asum[0], asum[1], asum[2], asum[3]);
    CHECK(close_to(ay[0], 3 / sqrt(12.5), 1e-15) && close_to(ay[3], 4 / sqrt(12.5), 1e-15), "add_rmsnorm y");
}

static uint16_t to_u16(double v, tn_dtype d) {
    uint16_t u;
    tn_store_elem(d, &u, 0, v);
    return u;
}

static void test_dtypes(void) {
    /* Ties go to even; the quantum is the dtype's. */
    CHECK(tn_round_to_dtype(TN_DTYPE_BF16, 1 + ldexp(1, -8)) == 1.0, "bf16 tie to even (down)");
    CHECK(tn_round_to_dtype(TN_DTYPE_BF16, 1 + 3 * ldexp(1, -8)) == 1 + ldexp(1, -6), "bf16 tie to even (up)");
    CHECK(tn_round_to_dtype(TN_DTYPE_F16, 65520.0) == INFINITY, "f16 overflow to inf");
    CHECK(tn_round_to_dtype(TN_DTYPE_F16, 65519.0) == 65504.0, "f16 just below overflow");
    CHECK(tn_round_to_dtype(TN_DTYPE_F16, ldexp(1, -25)) == 0.0, "f16 subnormal tie to zero");
    CHECK(tn_round_to_dtype(TN_DTYPE_F16, ldexp(3, -26)) == ldexp(1, -24), "f16 smallest subnormal");
    CHECK(tn_round_to_dtype(TN_DTYPE_F8E4M3, 1000.0) == 448.0, "f8 saturates");
    CHECK(tn_round_to_dtype(TN_DTYPE_F8E4M3, -1.0625) == -1.0, "f8 rounding");
    CHECK(to_u16(1.0, TN_DTYPE_BF16) == 0x3f80 && to_u16(-2.0, TN_DTYPE_F16) == 0xc000, "encodings");
    /* Every 16-bit pattern decodes and re-encodes to itself (NaNs aside). */
    int bad_bf16 = 0, bad_f16 = 0, bad_f8 = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        uint16_t u = (uint16_t)b, back;
        double v = tn_load_elem(TN_DTYPE_BF16, &u, 0);
        if (!isnan(v)) {
            tn_store_elem(TN_DTYPE_BF16, &back, 0, v);
            bad_bf16 += back != u;
        }
        v = tn_load_elem(TN_DTYPE_F16, &u, 0);
        if (!isnan(v)) {
            tn_store_elem(TN_DTYPE_F16, &back, 0, v);
            bad_f16 += back != u;
        }
    }
    for (uint32_t b = 0; b < 256; b++) {
        uint8_t u = (uint8_t)b, back;
        double v = tn_load_elem(TN_DTYPE_F8E4M3, &u, 0);
        if (!isnan(v)) {
            tn_store_elem(TN_DTYPE_F8E4M3, &back, 0, v);
            bad_f8 += back != u;
        }
    }
    CHECK(bad_bf16 == 0 && bad_f16 == 0 && bad_f8 == 0, "round trips: bf16 %d, f16 %d, f8 %d bad", bad_bf16, bad_f16, bad_f8);
    tn_dtype d;
    CHECK(tn_dtype_from_name("bfloat16", &d) == TN_STATUS_OK && d == TN_DTYPE_BF16, "dtype alias");
    CHECK(tn_dtype_from_name("int8", &d) == TN_STATUS_INVALID_ARGUMENT, "unknown dtype");
}

/* A bf16 intermediate is rounded to bf16 in the reference, as stored. */
static void test_rounding_semantics(tn_context *ctx) {
    tn_fusion *f;
    tn_value x, h, h32, y;
    tn_fusion_create(ctx, "round", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_cast(f, x, TN_DTYPE_BF16, &h);
    tn_fusion_cast(f, h, TN_DTYPE_F32, &h32);
    tn_fusion_binary(f, TN_BINARY_SUB, x, h32, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_F32);
    float in[1] = {1.0f + 0x1p-10f};
    double out[1];
    tn_tensor t = {in, TN_DTYPE_F32, 0};
    double *outs[1] = {out};
    CHECK(tn_ref_run(f, 1, 1, &t, NULL, outs) == TN_STATUS_OK, "ref run");
    CHECK(out[0] == 0x1p-10, "x - bf16(x) = %g", out[0]);
    tn_fusion_destroy(f);
}

void test_ref(void) {
    tn_context *ctx = test_context();
    test_closed_forms(ctx);
    test_dtypes();
    test_rounding_semantics(ctx);
    tn_context_destroy(ctx);
}
