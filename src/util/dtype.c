/* dtype names, sizes and exact conversions. */
#include "util/dtype.h"

#include <math.h>
#include <string.h>

typedef struct dtype_info {
    const char *name;
    int size;
    int mantissa_bits; /* significant bits, the implicit one included */
    int min_exp;       /* exponent of the smallest normal: 2^min_exp */
    double max_finite;
} dtype_info;

static const dtype_info k_dtypes[TN_DTYPE_COUNT] = {
    [TN_DTYPE_F32] = {"f32", 4, 24, -126, 3.4028234663852886e38},
    [TN_DTYPE_F16] = {"f16", 2, 11, -14, 65504.0},
    [TN_DTYPE_BF16] = {"bf16", 2, 8, -126, 3.3895313892515355e38},
    [TN_DTYPE_F8E4M3] = {"f8e4m3", 1, 4, -6, 448.0},
};

int tn_dtype_is_valid(tn_dtype dtype) { return (unsigned)dtype < TN_DTYPE_COUNT; }

const char *tn_dtype_name(tn_dtype dtype) {
    return tn_dtype_is_valid(dtype) ? k_dtypes[dtype].name : "invalid";
}

size_t tn_dtype_size(tn_dtype dtype) {
    return tn_dtype_is_valid(dtype) ? (size_t)k_dtypes[dtype].size : 0;
}

tn_status tn_dtype_from_name(const char *name, tn_dtype *out) {
    static const struct { const char *alias; tn_dtype dtype; } aliases[] = {
        {"fp32", TN_DTYPE_F32}, {"float32", TN_DTYPE_F32}, {"float", TN_DTYPE_F32},
        {"fp16", TN_DTYPE_F16}, {"float16", TN_DTYPE_F16}, {"half", TN_DTYPE_F16},
        {"bfloat16", TN_DTYPE_BF16}, {"fp8", TN_DTYPE_F8E4M3}, {"e4m3", TN_DTYPE_F8E4M3},
    };
    if (!name || !out) return TN_STATUS_INVALID_ARGUMENT;
    for (int d = 0; d < TN_DTYPE_COUNT; d++)
        if (strcmp(name, k_dtypes[d].name) == 0) {
            *out = (tn_dtype)d;
            return TN_STATUS_OK;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].dtype;
            return TN_STATUS_OK;
        }
    return TN_STATUS_INVALID_ARGUMENT;
}

double tn_dtype_eps(tn_dtype dtype) {
    return tn_dtype_is_valid(dtype) ? ldexp(1.0, -k_dtypes[dtype].mantissa_bits) : 0.0;
}

double tn_dtype_tiny(tn_dtype dtype) {
    if (!tn_dtype_is_valid(dtype)) return 0.0;
    return ldexp(1.0, k_dtypes[dtype].min_exp - (k_dtypes[dtype].mantissa_bits - 1));
}

double tn_round_to_dtype(tn_dtype dtype, double x) {
    if (!tn_dtype_is_valid(dtype) || isnan(x) || x == 0.0) return x;
    const dtype_info *d = &k_dtypes[dtype];
    int e;
    frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    int exp = e - 1 < d->min_exp ? d->min_exp : e - 1;
    double quantum = ldexp(1.0, exp - (d->mantissa_bits - 1));
    double r = nearbyint(x / quantum) * quantum; /* ties to even in the default mode */
    if (fabs(r) > d->max_finite) {
        if (dtype == TN_DTYPE_F8E4M3) return copysign(d->max_finite, x);
        /* Past the largest finite value by half a quantum or more: infinity. */
        double q_max = ldexp(1.0, (int)floor(log2(d->max_finite)) - (d->mantissa_bits - 1));
        return fabs(x) >= d->max_finite + q_max / 2 ? copysign(INFINITY, x)
                                                    : copysign(d->max_finite, x);
    }
    return r;
}

static double decode_minifloat(unsigned bits, int exp_bits, int man_bits, int bias, int has_inf) {
    int sign = (bits >> (exp_bits + man_bits)) & 1;
    unsigned ex = (bits >> man_bits) & ((1u << exp_bits) - 1);
    unsigned man = bits & ((1u << man_bits) - 1);
    double v;
    if (ex == (1u << exp_bits) - 1 && has_inf) v = man ? NAN : INFINITY;
    else if (!has_inf && ex == (1u << exp_bits) - 1 && man == (1u << man_bits) - 1) v = NAN;
    else if (ex == 0) v = ldexp((double)man, 1 - bias - man_bits);
    else v = ldexp((double)(man | (1u << man_bits)), (int)ex - bias - man_bits);
    return sign ? -v : v;
}

static unsigned encode_minifloat(double r, int exp_bits, int man_bits, int bias, int has_inf) {
    unsigned sign = signbit(r) ? 1u : 0u;
    unsigned out;
    double a = fabs(r);
    if (isnan(r)) out = has_inf ? (((1u << exp_bits) - 1) << man_bits) | (1u << (man_bits - 1))
                                : (((1u << exp_bits) - 1) << man_bits) | ((1u << man_bits) - 1);
    else if (isinf(r)) out = ((1u << exp_bits) - 1) << man_bits;
    else if (a == 0.0) out = 0;
    else {
        int e;
        frexp(a, &e);
        int ex = e - 1 + bias;
        if (ex <= 0) out = (unsigned)ldexp(a, bias - 1 + man_bits); /* subnormal */
        else out = ((unsigned)ex << man_bits) |
                   ((unsigned)(ldexp(a, man_bits - (e - 1))) & ((1u << man_bits) - 1));
    }
    return (sign << (exp_bits + man_bits)) | out;
}

double tn_load_elem(tn_dtype dtype, const void *data, int64_t i) {
    switch (dtype) {
    case TN_DTYPE_F32: return ((const float *)data)[i];
    case TN_DTYPE_F16: return decode_minifloat(((const uint16_t *)data)[i], 5, 10, 15, 1);
    case TN_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    case TN_DTYPE_F8E4M3: return decode_minifloat(((const uint8_t *)data)[i], 4, 3, 7, 0);
    default: return NAN;
    }
}

void tn_store_elem(tn_dtype dtype, void *data, int64_t i, double x) {
    double r = tn_round_to_dtype(dtype, x);
    switch (dtype) {
    case TN_DTYPE_F32: ((float *)data)[i] = (float)r; break;
    case TN_DTYPE_F16: ((uint16_t *)data)[i] = (uint16_t)encode_minifloat(r, 5, 10, 15, 1); break;
    case TN_DTYPE_BF16: {
        float f = (float)r; /* exact: r is a bf16 value */
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        ((uint16_t *)data)[i] = (uint16_t)(isnan(r) ? 0x7fc0u : u >> 16);
        break;
    }
    case TN_DTYPE_F8E4M3: ((uint8_t *)data)[i] = (uint8_t)encode_minifloat(r, 4, 3, 7, 0); break;
    default: break;
    }
}
