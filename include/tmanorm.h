/* tmanorm: row-wise normalization fusions compiled to CUDA kernels at run time.
 *
 * The one public header. A fusion (built with tn_fusion_* or a built-in) is
 * scheduled for a shape [M, N] and a GPU into a plan; the plan's kernel is
 * generated as CUDA C, compiled with NVRTC and launched on the caller's stream.
 * Every function returns tn_status; tn_context_last_error() has the details.
 */
#ifndef TMANORM_H
#define TMANORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API: the library is built with hidden visibility, so the
   shared library exports these and nothing else. */
#if defined(__GNUC__) || defined(__clang__)
#define TN_API __attribute__((visibility("default")))
#else
#define TN_API
#endif

/* The version this header belongs to (CMakeLists.txt reads it from here). */
#define TN_VERSION_MAJOR 0
#define TN_VERSION_MINOR 3
#define TN_VERSION_PATCH 0

/* Shapes a plan accepts: 1 <= M <= TN_MAX_ROWS and 1 <= N <= TN_MAX_COLS, and
   the tensors' bytes must fit in 64 bits. */
#define TN_MAX_ROWS (1LL << 48)
#define TN_MAX_COLS 2147483647LL

/* What one fusion may hold; the builder and the verifier refuse more. */
#define TN_MAX_VALUES 1024          /* values (ops) of all kinds */
#define TN_MAX_INPUTS 32
#define TN_MAX_OUTPUTS 32
#define TN_MAX_PARAMS 32
#define TN_MAX_REDUCTIONS 64        /* inner reductions that reach an output */
#define TN_MAX_REDUCTION_LEVELS 16  /* reductions in a chain, each needing the one before */

typedef enum tn_status {
    TN_STATUS_OK = 0,
    TN_STATUS_INVALID_ARGUMENT, /* a null pointer, a bad shape, stride or dtype */
    TN_STATUS_INVALID_FUSION,   /* the verifier rejected the fusion */
    TN_STATUS_UNSUPPORTED,      /* valid, but no plan kind here can run it */
    TN_STATUS_OUT_OF_MEMORY,    /* host allocation failed */
    TN_STATUS_NO_DEVICE,        /* no CUDA driver or GPU */
    TN_STATUS_COMPILE_ERROR,    /* NVRTC failed; the message holds its log */
    TN_STATUS_CUDA_ERROR,       /* a CUDA driver call failed */
    TN_STATUS_INTERNAL          /* a bug in tmanorm */
} tn_status;

/* The library's version, "MAJOR.MINOR.PATCH": the library loaded, which may be
   newer than the header a program was built with. */
TN_API const char *tn_version(void);
TN_API const char *tn_status_string(tn_status status);

typedef enum tn_dtype {
    TN_DTYPE_F32 = 0,
    TN_DTYPE_F16,
    TN_DTYPE_BF16,
    TN_DTYPE_F8E4M3, /* outputs only, saturating; needs sm_89+ */
    TN_DTYPE_COUNT
} tn_dtype;

TN_API const char *tn_dtype_name(tn_dtype dtype);
TN_API size_t tn_dtype_size(tn_dtype dtype);
TN_API tn_status tn_dtype_from_name(const char *name, tn_dtype *out);

typedef enum tn_shape_class {
    TN_SHAPE_ROW = 0,   /* [M, N] */
    TN_SHAPE_COL,       /* [N], broadcast over rows */
    TN_SHAPE_ROWSCALAR, /* [M], one value per row */
    TN_SHAPE_SCALAR     /* a constant or a run-time parameter */
} tn_shape_class;

TN_API const char *tn_shape_class_name(tn_shape_class shape);

typedef enum tn_unary_op {
    TN_UNARY_NEG = 0, TN_UNARY_ABS, TN_UNARY_EXP, TN_UNARY_LOG, TN_UNARY_SQRT,
    TN_UNARY_RSQRT, TN_UNARY_RECIPROCAL, TN_UNARY_TANH, TN_UNARY_SIGMOID,
    TN_UNARY_SILU, TN_UNARY_GELU, TN_UNARY_COUNT
} tn_unary_op;

typedef enum tn_binary_op {
    TN_BINARY_ADD = 0, TN_BINARY_SUB, TN_BINARY_MUL, TN_BINARY_DIV,
    TN_BINARY_MAX, TN_BINARY_MIN, TN_BINARY_COUNT
} tn_binary_op;

typedef enum tn_reduce_op { TN_REDUCE_SUM = 0, TN_REDUCE_MAX, TN_REDUCE_COUNT } tn_reduce_op;

typedef enum tn_axis {
    TN_AXIS_INNER = 0, /* over N: ROW -> ROWSCALAR */
    TN_AXIS_OUTER      /* over M: ROW -> COL (planned in a later release) */
} tn_axis;

/* ---- context ---------------------------------------------------------- */

typedef struct tn_context tn_context;

/* A caller-supplied allocator for every host allocation the library makes. */
typedef struct tn_allocator {
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} tn_allocator;

/* What the scheduler knows of a GPU. Read from the device when there is one. */
typedef struct tn_device_props {
    char name[64];
    int cc_major, cc_minor;
    int sm_count;
    int max_threads_per_block;
    int max_threads_per_sm;
    int regs_per_sm;
    int regs_per_block;
    int smem_per_sm;          /* bytes */
    int smem_per_block_optin; /* bytes, the most one block may ask for */
    int l2_bytes;
} tn_device_props;

typedef struct tn_context_options {
    int device;                  /* CUDA device ordinal; default 0 */
    const tn_allocator *allocator; /* NULL: malloc/free */
    /* Target for a machine without a GPU ("h200", "h100", "a100"); NULL: "h200".
       Ignored when a GPU is present, unless force_target is set. */
    const char *target;
    int force_target;
} tn_context_options;

/* Creates a context. Succeeds without a GPU: then plans can be made, explained
   and compiled but not launched (launch returns TN_STATUS_NO_DEVICE). */
TN_API tn_status tn_context_create(const tn_context_options *options, tn_context **out);
/* Lets go of the caller's handle. Fusions and plans made on the context keep
   it alive, so they may be destroyed before or after it, in any order. */
TN_API void tn_context_destroy(tn_context *ctx);
/* The message of the calling thread's last error on this context ("" if none),
   e.g. which value broke which rule, or NVRTC's log. Each thread has its own:
   another thread's errors never replace it. Valid until this thread's next
   failing call; messages over 8 KiB are cut. */
TN_API const char *tn_context_last_error(const tn_context *ctx);
/* 1 when a GPU is present and usable. */
TN_API int tn_context_has_gpu(const tn_context *ctx);
TN_API tn_status tn_context_device_props(const tn_context *ctx, tn_device_props *out);
/* Looks up a built-in target's properties ("h200", "h100", "a100"). */
TN_API tn_status tn_device_props_for_target(const char *target, tn_device_props *out);

/* ---- fusions (the IR) -------------------------------------------------- */

typedef struct tn_fusion tn_fusion;

/* A value of a fusion. Only meaningful to the fusion that made it. */
typedef struct tn_value {
    uint32_t fusion_id;
    uint32_t index;
} tn_value;

TN_API tn_status tn_fusion_create(tn_context *ctx, const char *name, tn_fusion **out);
TN_API void tn_fusion_destroy(tn_fusion *fusion);

/* The builder records ops as given; tn_fusion_verify() checks every rule. */
TN_API tn_status tn_fusion_input(tn_fusion *f, const char *name, tn_dtype dtype,
                                 tn_shape_class shape, tn_value *out);
TN_API tn_status tn_fusion_param(tn_fusion *f, const char *name, tn_value *out); /* f32 SCALAR */
TN_API tn_status tn_fusion_constant(tn_fusion *f, double value, tn_value *out); /* f32 SCALAR */
TN_API tn_status tn_fusion_row_length(tn_fusion *f, tn_value *out);              /* N, f32 SCALAR */
TN_API tn_status tn_fusion_cast(tn_fusion *f, tn_value a, tn_dtype dtype, tn_value *out);
TN_API tn_status tn_fusion_unary(tn_fusion *f, tn_unary_op op, tn_value a, tn_value *out);
TN_API tn_status tn_fusion_binary(tn_fusion *f, tn_binary_op op, tn_value a, tn_value b,
                                  tn_value *out);
TN_API tn_status tn_fusion_reduce(tn_fusion *f, tn_reduce_op op, tn_axis axis, tn_value a,
                                  tn_value *out);
/* Marks v as an output stored in dtype (converted on store). */
TN_API tn_status tn_fusion_output(tn_fusion *f, const char *name, tn_value v, tn_dtype dtype);

TN_API tn_status tn_fusion_verify(const tn_fusion *f);
/* Text form. Writes at most cap bytes (NUL included) and sets *needed. */
TN_API tn_status tn_fusion_print(const tn_fusion *f, char *buf, size_t cap, size_t *needed);
/* A hash of the structure (ops, dtypes, shapes); names are not part of it. */
TN_API tn_status tn_fusion_hash(const tn_fusion *f, uint64_t *out);

typedef enum tn_io_kind { TN_IO_INPUT = 0, TN_IO_OUTPUT, TN_IO_PARAM } tn_io_kind;
typedef struct tn_io_info {
    const char *name;
    tn_dtype dtype;
    tn_shape_class shape;
} tn_io_info;
/* Counts and describes inputs (in creation order), outputs and parameters. */
TN_API int tn_fusion_io_count(const tn_fusion *f, tn_io_kind kind);
TN_API tn_status tn_fusion_io_info(const tn_fusion *f, tn_io_kind kind, int i, tn_io_info *out);

/* ---- built-in fusions -------------------------------------------------- */

typedef enum tn_builtin {
    TN_BUILTIN_RMSNORM = 0, /* inputs x, w; param eps; outputs y [, rstd] */
    TN_BUILTIN_LAYERNORM,   /* inputs x, w, b; param eps; outputs y [, mean, rstd] */
    TN_BUILTIN_SOFTMAX,     /* input x; output y */
    TN_BUILTIN_ADD_RMSNORM, /* inputs x, residual, w; param eps; outputs y, sum [, rstd] */
    TN_BUILTIN_COUNT
} tn_builtin;

typedef struct tn_builtin_options {
    tn_dtype input_dtype;  /* x (and residual, and the sum output) */
    tn_dtype weight_dtype; /* w and b */
    tn_dtype output_dtype; /* y */
    int save_stats;        /* also output rstd (and mean for layernorm), f32 */
} tn_builtin_options;

TN_API const char *tn_builtin_name(tn_builtin op);
TN_API tn_status tn_builtin_from_name(const char *name, tn_builtin *out);
TN_API tn_status tn_fusion_builtin(tn_context *ctx, tn_builtin op, const tn_builtin_options *options,
                                   tn_fusion **out);

/* ---- plans --------------------------------------------------------------- */

typedef struct tn_plan tn_plan;

typedef struct tn_plan_options {
    /* Alignment in bytes the caller promises for every pointer and row stride
       (a power of two; 0: 16). A launch with less falls back to a narrower plan. */
    int align_bytes;
    /* A plan in JSON (as tn_plan_describe prints it) to replay instead of scheduling. */
    const char *plan_json;
    /* Force a plan kind by name ("register", "looped", "tma", "tma-ws", "cluster"); NULL: let the
       scheduler pick. Fallback variants for tensors aligned below what the
       forced kind needs use the scheduler's choice. */
    const char *kind;
    /* Programmatic dependent launch: 0 on where the device has it (sm_90+),
       1 on (an error below sm_90), -1 off. With it, the kernel waits for the
       previous kernel in the stream (griddepcontrol.wait) before its first
       read, and the next kernel's prologue overlaps this one's tail. */
    int pdl;
    /* Row tiers, for callers whose row count changes from launch to launch (a
       server's token count). 0: one kernel, scheduled for M; a launch of fewer
       rows runs it on a grid cut to them. 1: tiers of rows ending where the
       scheduler's choice changes between 1 and M (found at creation by
       sampling and bisection), each with the kernel scheduled for its last row
       count, all built at creation: a handful in all; a launch of m rows runs
       the first tier's of at least m rows, the scheduler's choice for m, so no
       launch of tensors at the plan's alignment compiles and any such launch
       may be captured in a graph (tensors aligned to less build a variant per
       tier on first need: launch once outside capture). Not with plan_json. */
    int row_tiers;
} tn_plan_options;

/* Schedules f for [M, N] on the context's GPU (or target) and compiles the kernel.
   f may be destroyed afterwards; the plan keeps what it needs. Shapes beyond
   TN_MAX_ROWS / TN_MAX_COLS, or whose tensors would hold more than 2^63 bytes,
   and fusions beyond the limits above (reductions in a chain, reductions, the
   values recomputed per element) give TN_STATUS_UNSUPPORTED with the reason.
   Kernels are compiled outside any lock the context holds: a compile on one
   thread never delays another thread's plan whose kernel is cached. */
TN_API tn_status tn_plan_create(tn_context *ctx, const tn_fusion *f, int64_t rows, int64_t cols,
                                const tn_plan_options *options, tn_plan **out);
TN_API void tn_plan_destroy(tn_plan *plan);

typedef enum tn_describe_what {
    TN_DESCRIBE_TEXT = 0, /* the plan and why it was chosen */
    TN_DESCRIBE_JSON,     /* the plan as JSON, readable by tn_plan_options.plan_json */
    TN_DESCRIBE_SOURCE,   /* the generated CUDA C */
    TN_DESCRIBE_RESOURCES, /* the compiler's resource report */
    TN_DESCRIBE_TIERS      /* a line a row tier: the rows it serves, its plan, its kernel */
} tn_describe_what;

TN_API tn_status tn_plan_describe(const tn_plan *plan, tn_describe_what what, char *buf, size_t cap,
                                  size_t *needed);

typedef struct tn_resources {
    int registers;
    int spill_store_bytes;
    int spill_load_bytes;
    int stack_bytes;
    int static_smem_bytes;
    int dynamic_smem_bytes;
    int block_threads;
    int64_t grid_blocks;
    double compile_ms; /* NVRTC time for this plan's kernel; exactly 0 when it came from a
                          cache, in memory or on disk (TMANORM_CACHE_DIR, README "Kernel cache") */
} tn_resources;

TN_API tn_status tn_plan_resources(const tn_plan *plan, tn_resources *out);
/* Bytes the kernel must move at the floor (inputs read once, outputs written once). */
TN_API tn_status tn_plan_bytes(const tn_plan *plan, int64_t *out);

/* One tensor argument. row_stride is in elements, for ROW tensors (0: N); it
   must be at least N (rows may not overlap or broadcast) and the last row must
   end inside the address space. */
typedef struct tn_tensor {
    void *data;
    tn_dtype dtype;
    int64_t row_stride;
} tn_tensor;

typedef struct tn_launch_args {
    const tn_tensor *inputs; /* in the fusion's input order */
    int num_inputs;
    const tn_tensor *outputs; /* in the fusion's output order. An output may be exactly a ROW input
                                 (the same address, row stride and dtype): computed in place. Any other
                                 overlap of an output with an input, a COL input (weight, bias) included,
                                 is undefined */
    int num_outputs;
    const float *params; /* in the fusion's parameter order */
    int num_params;
    void *stream; /* a CUstream / cudaStream_t; NULL: the default stream */
    int64_t rows; /* rows to process, from the first: 0 = the plan's M (the zero-initialized default);
                     else 1 to M. A plan serves every smaller row count: with row_tiers, by the kernel
                     of the row count's tier; without, by M's kernel on a grid cut to the rows. A
                     batch of no rows is no launch: do not call with 0 meaning "none", it means all M */
} tn_launch_args;

/* Enqueues the kernel on the stream. No host synchronization, no device
   allocation; safe inside CUDA graph capture once the plan's kernel for the
   tensors' alignment is built (tn_plan_create builds the ones for align_bytes:
   for tensors at one offset from a 16-byte boundary and, where that plan
   peels, for tensors at different ones). */
TN_API tn_status tn_plan_launch(tn_plan *plan, const tn_launch_args *args);

#ifdef __cplusplus
}
#endif

#endif /* TMANORM_H */
