/* Fuzz target: the IR pipeline, minus NVRTC. The bytes are a little program
   of builder calls (operands, dtypes, shape classes, op codes and names all
   from the bytes: out-of-range enums, values of another fusion or of no
   fusion, more inputs, params and outputs than allowed, long names and names
   with newlines, quotes and format directives); the fusion then goes through
   the verifier, the printer, the hash and a clone, and a valid one through the
   analysis, the scheduler at a shape from the bytes (M up to 2^62, N up to
   2^31 - 1, any alignment, a forced kind, three targets), the plan check, the
   plan's JSON round trip and codegen. Every fusion, valid or not, goes through
   the reference on a tiny shape with exact-sized host tensors.
   Input: 6 header bytes (rows, cols, alignment, kind and target, reference
   shape, row padding; a rows or cols byte may take more), the fusion's name,
   then instructions (see step(); tests/fuzz/seeds.py assembles them).
   Beyond "no crash, no sanitizer report", the properties:
   - a clone verifies, hashes and prints as the original does;
   - the printer's (buf, cap) contract holds;
   - what the scheduler makes passes the plan check and prints back to itself,
     and the check refuses what the scheduler refuses (a replayed plan is
     only checked);
   - the reference accepts every verified fusion and rejects every other one. */
#include <limits.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "ref/ref.h"
#include "sched/analysis.h"
#include "sched/heuristics.h"
#include "sched/plan.h"
#include "tmanorm.h"

#include "fuzz_target.h" /* after sched/plan.h: its launch check needs the plan */

typedef struct reader {
    const uint8_t *p;
    size_t n, i;
} reader;

/* Little-endian; one read per statement, as the order of two calls in one
   expression is unspecified (and gcc and clang would decode differently). */
static unsigned u8(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static unsigned u16(reader *r) {
    unsigned lo = u8(r);
    return lo | u8(r) << 8;
}
static uint32_t u32(reader *r) {
    uint32_t lo = u16(r);
    return lo | (uint32_t)u16(r) << 16;
}
static uint64_t u64(reader *r) {
    uint64_t lo = u32(r);
    return lo | (uint64_t)u32(r) << 32;
}

static tn_context *g_ctx;
static tn_value g_foreign; /* a value of another fusion */
static int g_debug;        /* TN_FUZZ_DEBUG=1: say what each input reached (for writing seeds) */

static void setup(void) {
    if (g_ctx) return;
    g_debug = getenv("TN_FUZZ_DEBUG") && *getenv("TN_FUZZ_DEBUG") == '1';
    tn_context_options o = {0, NULL, "h200", 1};
    tn_fusion *other = NULL;
    if (tn_context_create(&o, &g_ctx) != TN_STATUS_OK || tn_fusion_create(g_ctx, "other", &other) != TN_STATUS_OK ||
        tn_fusion_input(other, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &g_foreign) != TN_STATUS_OK)
        fuzz_fail("setup");
    /* Its id stays taken for the process; the value must stay foreign, not dangle. */
    tn_fusion_destroy(other);
}

/* ---- decoding ------------------------------------------------------------- */

static char g_name[20000];

static const char *name(reader *r) {
    static const char *const k_names[] = {"x", "w", "b", "y", "eps", "residual", "sum", "x", "",
                                          "a\"b", "line\nbreak", "back\\slash", "%s%n%d", "*/ /*", "tab\t",
                                          "\x01\x7f\xff", "in0", "in1", "p0", "o0"};
    const unsigned m = u8(r);
    if (m < 0xd0) return k_names[m % (sizeof k_names / sizeof k_names[0])];
    if (m < 0xd8) return NULL;
    if (m < 0xe0) { /* long: one byte repeated */
        size_t len = (size_t)u8(r) * 70;
        len += u8(r);
        memset(g_name, (int)(u8(r) | 1), len);
        g_name[len] = '\0';
        return g_name;
    }
    size_t len = u8(r) % 64, k = 0; /* bytes of the input; a 0 ends the name early */
    while (k < len) g_name[k++] = (char)u8(r);
    g_name[k] = '\0';
    return g_name;
}

/* Mostly valid; then the first invalid value and a few far ones. */
static int small_enum(reader *r, int count) {
    const unsigned b = u8(r);
    if (b < 0xf0) return (int)(b % (unsigned)(count + 1));
    static const int k_far[] = {-1, INT_MIN, INT_MAX, 255, 256, 1 << 16};
    return b < 0xf6 ? k_far[b - 0xf0] : count + (int)(b & 3);
}

static tn_dtype dtype(reader *r) { return (tn_dtype)small_enum(r, TN_DTYPE_COUNT); }
static tn_shape_class shape(reader *r) { return (tn_shape_class)small_enum(r, TN_SHAPE_SCALAR + 1); }

#define MAX_VALS 4096
typedef struct program {
    tn_fusion *f;
    tn_value vals[MAX_VALS];
    int nvals;
} program;

static void keep(program *pg, tn_status st, tn_value v) {
    if (st == TN_STATUS_OK && pg->nvals < MAX_VALS) pg->vals[pg->nvals++] = v;
}

/* Recent values first; the top bytes forge values that are not this fusion's. */
static tn_value operand(reader *r, const program *pg) {
    const unsigned b = u8(r);
    if (b < 0xf0 && pg->nvals) return pg->vals[pg->nvals - 1 - (int)(b % (unsigned)pg->nvals)];
    const uint32_t id = pg->f->id;
    switch (b & 7) {
    case 0: return g_foreign;
    case 1: return (tn_value){id, (uint32_t)pg->f->num_nodes};   /* the next value, not made yet */
    case 2: return (tn_value){id, UINT32_MAX};
    case 3: return (tn_value){0, 0};
    case 4: return (tn_value){id, u16(r)};
    case 5: return (tn_value){UINT32_MAX, 0};                    /* no fusion's */
    default: {
        tn_value v = {u32(r), 0};
        v.index = u32(r);
        return v;
    }
    }
}

static double constant(reader *r) {
    static const double k_consts[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-6, 1e-30, 1e30, 65504.0, 448.0,
                                      3.4028234663852886e38, 3.5e38, 1e300, -1e300, 4.9e-324};
    const unsigned b = u8(r);
    if (b < 0x80) return k_consts[b % (sizeof k_consts / sizeof k_consts[0])];
    if (b == 0x80) return 1.0 / 0.0;
    if (b == 0x81) return -1.0 / 0.0;
    if (b == 0x82) return 0.0 / 0.0;
    uint64_t bits = u64(r);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* One instruction. Builder failures are expected (that is half the point):
   the program goes on with the values it has. */
static void step(reader *r, program *pg) {
    tn_fusion *f = pg->f;
    tn_value v = {0, 0};
    tn_status st;
    const unsigned op = u8(r);
    switch (op % 16) {
    case 0: {
        const char *nm = name(r);
        tn_dtype d = dtype(r);
        st = tn_fusion_input(f, nm, d, shape(r), &v);
        keep(pg, st, v);
        break;
    }
    case 1: st = tn_fusion_param(f, name(r), &v); keep(pg, st, v); break;
    case 2: st = tn_fusion_constant(f, constant(r), &v); keep(pg, st, v); break;
    case 3: st = tn_fusion_row_length(f, &v); keep(pg, st, v); break;
    case 4: {
        tn_value a = operand(r, pg);
        st = tn_fusion_cast(f, a, dtype(r), &v);
        keep(pg, st, v);
        break;
    }
    case 5:
    case 6: {
        int o = small_enum(r, TN_UNARY_COUNT);
        st = tn_fusion_unary(f, (tn_unary_op)o, operand(r, pg), &v);
        keep(pg, st, v);
        break;
    }
    case 7:
    case 8: {
        int o = small_enum(r, TN_BINARY_COUNT);
        tn_value a = operand(r, pg);
        st = tn_fusion_binary(f, (tn_binary_op)o, a, operand(r, pg), &v);
        keep(pg, st, v);
        break;
    }
    case 9: {
        int o = small_enum(r, TN_REDUCE_COUNT);
        const unsigned a = u8(r) % 8;
        tn_axis ax = a == 7 ? TN_AXIS_OUTER : a == 6 ? (tn_axis)2 : TN_AXIS_INNER;
        st = tn_fusion_reduce(f, (tn_reduce_op)o, ax, operand(r, pg), &v);
        keep(pg, st, v);
        break;
    }
    case 10:
    case 11: {
        const char *nm = name(r);
        tn_value a = operand(r, pg);
        tn_fusion_output(f, nm, a, dtype(r));
        break;
    }
    case 12: { /* many inputs of one dtype and shape, summed */
        const int n = 1 + (int)u8(r) % 48;
        tn_dtype d = dtype(r);
        tn_shape_class s = shape(r);
        tn_value acc = {0, 0};
        for (int k = 0; k < n; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "many%d_%d", pg->nvals, k);
            if (tn_fusion_input(f, nm, d, s, &v) != TN_STATUS_OK) break;
            keep(pg, TN_STATUS_OK, v);
            if (k == 0) acc = v;
            else if (tn_fusion_binary(f, TN_BINARY_ADD, acc, v, &acc) == TN_STATUS_OK) keep(pg, TN_STATUS_OK, acc);
        }
        break;
    }
    case 13: { /* many params or outputs */
        const int n = 1 + (int)u8(r) % 48, outputs = (int)(u8(r) & 1);
        for (int k = 0; k < n; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "%s%d_%d", outputs ? "out" : "prm", pg->nvals, k);
            if (outputs) {
                if (tn_fusion_output(f, nm, operand(r, pg), TN_DTYPE_F32) != TN_STATUS_OK) break;
            } else {
                if (tn_fusion_param(f, nm, &v) != TN_STATUS_OK) break;
                keep(pg, TN_STATUS_OK, v);
            }
        }
        break;
    }
    case 14: { /* a chain of reductions, each needing the one before: x - reduce(x), again */
        const int n = 1 + (int)u8(r) % 40;
        const int o = small_enum(r, TN_REDUCE_COUNT);
        tn_value x = operand(r, pg), s;
        for (int k = 0; k < n; k++) {
            if (tn_fusion_reduce(f, (tn_reduce_op)o, TN_AXIS_INNER, x, &s) != TN_STATUS_OK) break;
            keep(pg, TN_STATUS_OK, s);
            if (tn_fusion_binary(f, TN_BINARY_SUB, x, s, &x) != TN_STATUS_OK) break;
            keep(pg, TN_STATUS_OK, x);
        }
        break;
    }
    default: { /* an elementwise chain, or many reductions of one value; long ones rarely (they are slow) */
        const unsigned len = u8(r);
        const int n = len < 0xf0 ? 1 + (int)(len % 16) : len < 0xff ? 1 + (int)(len - 0xf0) * 8 : 1100;
        const int reduce = (int)(u8(r) & 1);
        const int o = small_enum(r, reduce ? TN_REDUCE_COUNT : TN_UNARY_COUNT);
        tn_value x = operand(r, pg);
        for (int k = 0; k < n; k++) {
            st = reduce ? tn_fusion_reduce(f, (tn_reduce_op)o, TN_AXIS_INNER, x, &v)
                        : tn_fusion_unary(f, (tn_unary_op)o, x, &v);
            if (st != TN_STATUS_OK) break;
            keep(pg, st, v);
            if (!reduce) x = v;
        }
        break;
    }
    }
}

/* ---- checks ------------------------------------------------------------------ */

/* The text of f (malloc'd). Printing a 1024-value fusion is most of a run's
   time, so the (buf, cap) contract is checked on every eighth fusion only. */
static char *print(const tn_fusion *f, int check_contract) {
    size_t cap = 4096, need = 0;
    char *text = malloc(cap);
    if (!text) fuzz_fail("out of memory");
    FUZZ_CHECK(tn_fusion_print(f, text, cap, &need) == TN_STATUS_OK && need > 0, "print failed");
    if (need > cap) {
        free(text);
        text = malloc(cap = need);
        if (!text) fuzz_fail("out of memory");
        size_t again = 0;
        FUZZ_CHECK(tn_fusion_print(f, text, cap, &again) == TN_STATUS_OK && again == need,
                   "print: %zu bytes needed, then %zu", need, again);
    }
    FUZZ_CHECK(strlen(text) + 1 == need, "print: %zu bytes reported, %zu written", need, strlen(text) + 1);
    if (check_contract) {
        size_t query = 0;
        FUZZ_CHECK(tn_fusion_print(f, NULL, 0, &query) == TN_STATUS_OK && query == need, "print: size query gave %zu",
                   query);
        char small[8];
        memset(small, 'z', sizeof small);
        FUZZ_CHECK(tn_fusion_print(f, small, 5, NULL) == TN_STATUS_OK && strlen(small) < 5 && small[5] == 'z',
                   "print: a 5-byte buffer was overrun or left unterminated");
    }
    return text;
}

static void check_io(const tn_fusion *f) {
    for (int kind = 0; kind < 4; kind++) {
        const int n = tn_fusion_io_count(f, (tn_io_kind)kind);
        FUZZ_CHECK(n >= 0 && (kind < 3 || n == 0), "io count %d for kind %d", n, kind);
        for (int i = -1; i <= n; i++) {
            tn_io_info info;
            tn_status st = tn_fusion_io_info(f, (tn_io_kind)kind, i, &info);
            FUZZ_CHECK((i >= 0 && i < n) == (st == TN_STATUS_OK), "io info %d of %d (kind %d): %s", i, n, kind,
                       tn_status_string(st));
            if (st == TN_STATUS_OK) FUZZ_CHECK(info.name != NULL, "io %d of kind %d has no name", i, kind);
        }
    }
}

static int64_t pick_rows(reader *r) {
    static const int64_t k_rows[] = {1, 2, 3, 31, 32, 33, 263, 264, 4095, 4096, 65535, 65536, 1000003,
                                     2147483647LL, 2147483648LL, 4294967296LL + 1, 1LL << 40, 1LL << 48,
                                     (1LL << 48) + 1, 1LL << 62};
    const unsigned m = u8(r);
    switch (m % 4) {
    case 0: return 1 + (int64_t)(m >> 2);
    case 1: return k_rows[(m >> 2) % (sizeof k_rows / sizeof k_rows[0])];
    case 2: return 1 + (int64_t)(u32(r) & 0x7fffffff);
    default: return 1 + (int64_t)(u64(r) & ((1ULL << 62) - 1));
    }
}

static int64_t pick_cols(reader *r) {
    static const int64_t k_cols[] = {1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 1000, 1024, 4096, 4097, 8192,
                                     65536, 65537, 1048576, 16777217, 1LL << 30, 2147483632LL, 2147483647LL};
    const unsigned m = u8(r);
    switch (m % 4) {
    case 0: return 1 + (int64_t)(m >> 2);
    case 1: return k_cols[(m >> 2) % (sizeof k_cols / sizeof k_cols[0])];
    case 2: return 1 + (int64_t)u16(r) * 16;
    default: return 1 + (int64_t)(u32(r) % 2147483647u);
    }
}

static char *take(tn_strbuf *sb) {
    char *text = tn_strbuf_take(sb);
    FUZZ_CHECK(text != NULL, "strbuf allocation failed");
    return text;
}

/* Schedules a valid fusion as tn_plan_create would, and checks what comes out. */
static void schedule(const tn_fusion *f, const tn_analysis *an, int64_t rows, int64_t cols, int align, int kind,
                     const char *target) {
    char err[320];
    if (!tn_analysis_within_limits(an, err, sizeof err) || rows > TN_MAX_ROWS || cols > TN_MAX_COLS ||
        tn_analysis_bytes(an, rows, cols) < 0) {
        if (g_debug) fprintf(stderr, "not planned at [%lld, %lld]: beyond the limits\n", (long long)rows, (long long)cols);
        return;
    }
    tn_device_props props;
    if (tn_device_props_for_target(target, &props) != TN_STATUS_OK) fuzz_fail("target %s", target);
    /* A replayed plan is only checked, never scheduled: the check must refuse
       what the scheduler refuses. A looped plan of one element per access runs
       every fusion the scheduler can plan at all. */
    tn_plan_desc u = {.kind = TN_PLAN_LOOPED, .rows = rows, .cols = cols, .vec = 1, .threads_per_row = 32,
                      .rows_per_cta = 1, .batch = 4, .block_threads = 32, .grid = rows < INT_MAX ? rows : INT_MAX,
                      .cc = props.cc_major * 10 + props.cc_minor};
    u.align_bytes = tn_plan_access_align(&u, an->max_elem_size);
    if (tn_plan_desc_check(&u, an, &props, align, err, sizeof err)) {
        tn_schedule_request lr = {an, rows, cols, align, TN_PLAN_LOOPED, &props};
        tn_plan_desc l;
        FUZZ_CHECK(tn_schedule(&lr, &l, err, sizeof err),
                   "the plan check accepts a looped plan at [%lld, %lld] on %s that the scheduler refuses: %s",
                   (long long)rows, (long long)cols, target, err);
    }

    tn_schedule_request req = {an, rows, cols, align, kind, &props};
    tn_plan_desc p;
    err[0] = '\0';
    if (!tn_schedule(&req, &p, err, sizeof err)) {
        FUZZ_CHECK(err[0], "the scheduler failed without a reason");
        if (g_debug) fprintf(stderr, "not scheduled at [%lld, %lld]: %s\n", (long long)rows, (long long)cols, err);
        return;
    }
    FUZZ_CHECK(p.rows == rows && p.cols == cols, "scheduled [%lld, %lld] for [%lld, %lld]", (long long)p.rows,
               (long long)p.cols, (long long)rows, (long long)cols);
    FUZZ_CHECK(kind < 0 || (int)p.kind == kind, "asked for kind %d, got %d", kind, (int)p.kind);
    FUZZ_CHECK(tn_plan_desc_check(&p, an, &props, align, err, sizeof err),
               "the scheduler's plan fails the check at [%lld, %lld] align %d on %s: %s", (long long)rows,
               (long long)cols, align, target, err);
    fuzz_check_launches(&p, &props);
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_plan_desc_json(&p, &sb);
    char *json = take(&sb);
    tn_plan_desc q;
    FUZZ_CHECK(tn_plan_desc_parse(json, &q, err, sizeof err), "a scheduled plan's JSON does not parse: %s\n%s", err,
               json);
    /* Both were zeroed whole before their fields were set: compare bytes up to "why", then "why". */
    FUZZ_CHECK(memcmp(&q, &p, offsetof(tn_plan_desc, why)) == 0 && strcmp(q.why, p.why) == 0,
               "a scheduled plan's JSON parses to another plan:\n%s", json);
    if (g_debug) fprintf(stderr, "plan at [%lld, %lld] align %d on %s: %s\n", (long long)rows, (long long)cols, align,
                         target, json);
    free(json);
    tn_plan_desc_text(&p, &sb);
    free(take(&sb));
    tn_codegen(f, an, &p, &sb);
    char *source = take(&sb);
    FUZZ_CHECK(strstr(source, TN_KERNEL_NAME "(") != NULL, "generated source without the kernel");
    free(source);
}

/* Exact-sized host tensors, so an overread in the reference is an ASan report. */
static void reference(const tn_fusion *f, tn_status verified, int64_t rows, int64_t cols, int pad) {
    void *in[TN_MAX_IO + 1] = {0};
    tn_tensor t[TN_MAX_IO + 1];
    double *out[TN_MAX_IO + 1] = {0};
    float params[TN_MAX_IO + 1];
    const int ni = tn_fusion_io_count(f, TN_IO_INPUT), no = tn_fusion_io_count(f, TN_IO_OUTPUT);
    const int np = tn_fusion_io_count(f, TN_IO_PARAM);
    if (ni > TN_MAX_IO || no > TN_MAX_IO || np > TN_MAX_IO) {
        FUZZ_CHECK(verified != TN_STATUS_OK, "a verified fusion with %d inputs, %d outputs, %d params", ni, no, np);
        return;
    }
    for (int k = 0; k < np; k++) params[k] = (float)k - 0.75f;
    for (int i = 0; i < ni; i++) {
        tn_io_info info;
        tn_fusion_io_info(f, TN_IO_INPUT, i, &info);
        size_t size = tn_dtype_size(info.dtype);
        int64_t stride = pad ? cols + pad : 0, elems = 1;
        if (info.shape == TN_SHAPE_ROW) elems = (rows - 1) * (stride ? stride : cols) + cols;
        else if (info.shape == TN_SHAPE_COL) elems = cols;
        else if (info.shape == TN_SHAPE_ROWSCALAR) elems = rows;
        size_t bytes = (size_t)elems * (size ? size : 1);
        in[i] = malloc(bytes);
        if (!in[i]) fuzz_fail("out of memory");
        for (size_t b = 0; b < bytes; b++) ((unsigned char *)in[i])[b] = (unsigned char)(b * 37 + (size_t)i * 11 + 60);
        t[i] = (tn_tensor){in[i], info.dtype, stride};
    }
    for (int o = 0; o < no; o++) {
        tn_io_info info;
        tn_fusion_io_info(f, TN_IO_OUTPUT, o, &info);
        int64_t elems = info.shape == TN_SHAPE_ROW ? rows * cols
                        : info.shape == TN_SHAPE_ROWSCALAR ? rows
                        : info.shape == TN_SHAPE_COL ? cols : 1;
        out[o] = malloc((size_t)elems * sizeof(double));
        if (!out[o]) fuzz_fail("out of memory");
    }
    tn_status st = tn_ref_run(f, rows, cols, ni ? t : NULL, np ? params : NULL, out);
    if (verified == TN_STATUS_OK)
        FUZZ_CHECK(st == TN_STATUS_OK, "the reference refused a verified fusion: %s: %s", tn_status_string(st),
                   tn_context_last_error(g_ctx));
    else
        FUZZ_CHECK(st == verified, "the reference ran an invalid fusion (%s; the verifier said %s)",
                   tn_status_string(st), tn_status_string(verified));
    for (int i = 0; i < ni; i++) free(in[i]);
    for (int o = 0; o < no; o++) free(out[o]);
}

/* 1 if f refers to fusion id: a forged operand that happens to carry the
   clone's id is the clone's own value there, so the two may differ. */
static int names_fusion(const tn_fusion *f, uint32_t id) {
    for (int i = 0; i < f->num_nodes; i++)
        for (int a = 0; a < f->nodes[i].nargs; a++)
            if (f->nodes[i].args[a].fusion_id == id) return 1;
    for (int o = 0; o < f->num_outputs; o++)
        if (f->outputs[o].value.fusion_id == id) return 1;
    return 0;
}

/* ---- the target -------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    reader r = {data, size, 0};
    const int64_t rows = pick_rows(&r), cols = pick_cols(&r);
    const int align = 1 << (u8(&r) % 5);
    const unsigned km = u8(&r); /* kind: 0 the scheduler's choice, else one of every kind forced; then a target */
    const int kind = km % (TN_PLAN_KIND_COUNT + 1) == 0 ? -1 : (int)(km % (TN_PLAN_KIND_COUNT + 1)) - 1;
    static const char *const k_targets[3] = {"h200", "h100", "a100"};
    const char *target = k_targets[(km / (TN_PLAN_KIND_COUNT + 1)) % 3];
    const unsigned rm = u8(&r);
    const int64_t ref_rows = 1 + rm % 3, ref_cols = 1 + (rm / 3) % 17;
    const int pad = (int)(u8(&r) % 3);

    program *pg = calloc(1, sizeof *pg);
    if (!pg) return 0;
    if (tn_fusion_create(g_ctx, name(&r), &pg->f) != TN_STATUS_OK) fuzz_fail("tn_fusion_create");
    for (int steps = 0; r.i < r.n && steps < 2048; steps++) step(&r, pg);
    tn_fusion *f = pg->f;

    const tn_status verified = tn_fusion_verify(f);
    FUZZ_CHECK(verified == TN_STATUS_OK || verified == TN_STATUS_INVALID_FUSION, "verify: %s",
               tn_status_string(verified));
    if (verified != TN_STATUS_OK) FUZZ_CHECK(tn_context_last_error(g_ctx)[0], "a rejection without a message");
    char *text = print(f, (int)(size % 8) == 0);
    if (g_debug)
        fprintf(stderr, "%s%s\n", text, verified == TN_STATUS_OK ? "verified" : tn_context_last_error(g_ctx));
    uint64_t hash = 0, hash2 = 0;
    FUZZ_CHECK(tn_fusion_hash(f, &hash) == TN_STATUS_OK, "hash failed");
    check_io(f);

    tn_fusion *c = NULL;
    if (tn_fusion_clone(f, &c) == TN_STATUS_OK && !names_fusion(f, c->id)) {
        FUZZ_CHECK(tn_fusion_verify(c) == verified, "the clone verifies otherwise");
        FUZZ_CHECK(tn_fusion_hash(c, &hash2) == TN_STATUS_OK && hash2 == hash, "the clone hashes otherwise");
        char *text2 = print(c, 0);
        FUZZ_CHECK(strcmp(text, text2) == 0, "the clone prints otherwise:\n%s\n%s", text, text2);
        free(text2);
    } else if (!c) {
        FUZZ_CHECK(verified != TN_STATUS_OK, "a verified fusion does not clone: %s", tn_context_last_error(g_ctx));
    }
    tn_fusion_destroy(c);
    free(text);

    if (verified == TN_STATUS_OK) {
        tn_analysis *an = malloc(sizeof *an);
        if (!an) fuzz_fail("out of memory");
        tn_analyze(f, an);
        schedule(f, an, rows, cols, align, kind, target);
        free(an);
    }
    reference(f, verified, ref_rows, ref_cols, pad);
    tn_fusion_destroy(f);
    free(pg);
    return 0;
}
