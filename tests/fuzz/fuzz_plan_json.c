/* Fuzz target: the plan reader (tn_plan_options.plan_json) and what
   tn_plan_create does with a plan it has read, minus NVRTC: parse, the shape
   checks, tn_plan_desc_check against a built-in fusion on a target without a
   GPU, then the plan's text, its JSON and its generated source.
   Input: byte 0 picks the fusion (op, dtypes, saved statistics), byte 1 the
   promised alignment and the target; the rest, as a NUL-terminated string, is
   the JSON. Its own rows and cols are the shape (a replay must match the plan's
   shape; taking it from the plan lets every shape reach the check).
   Beyond "no crash, no sanitizer report", the properties:
   - a rejection says why, and leaves the output untouched;
   - an accepted text is one JSON object, each member once, nothing after it;
   - every integer accepted is the integer stored (no wrap, no clamp);
   - the accepted plan printed back as JSON parses to the same plan;
   - a plan that passes the check also satisfies it in exact arithmetic, is
     one the scheduler could have made for the target (f8 outputs need
     sm_89), and generates a kernel. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "codegen/codegen.h"
#include "sched/analysis.h"
#include "sched/plan.h"
#include "tmanorm.h"

#include "fuzz_target.h" /* after sched/plan.h: its launch check needs the plan */

#define NUM_FUSIONS 128 /* 4 ops x 3 input dtypes x stats x f8 output x f32 weights */

typedef struct prepared {
    tn_fusion *f;
    tn_analysis *an;
} prepared;

static tn_context *g_ctx;
static prepared g_fusions[NUM_FUSIONS];
static int g_debug = -1; /* TN_FUZZ_DEBUG=1: say how far each input got (for writing seeds) */

static void debug(const char *what, const char *detail) {
    if (g_debug < 0) g_debug = getenv("TN_FUZZ_DEBUG") && *getenv("TN_FUZZ_DEBUG") == '1';
    if (g_debug) fprintf(stderr, "%s: %s\n", what, detail);
}

/* Built once per process and kept: reachable, so not a leak. */
static const prepared *fusion_for(unsigned b) {
    unsigned i = b % NUM_FUSIONS;
    if (g_fusions[i].f) return &g_fusions[i];
    if (!g_ctx) {
        tn_context_options o = {0, NULL, "h200", 1};
        if (tn_context_create(&o, &g_ctx) != TN_STATUS_OK) fuzz_fail("no context");
    }
    static const tn_dtype k_in[3] = {TN_DTYPE_F32, TN_DTYPE_F16, TN_DTYPE_BF16};
    tn_dtype in = k_in[((i >> 2) & 3) % 3];
    tn_builtin_options o = {in, i & 64 ? TN_DTYPE_F32 : in, i & 32 ? TN_DTYPE_F8E4M3 : in, (int)((i >> 4) & 1)};
    tn_fusion *f = NULL;
    if (tn_fusion_builtin(g_ctx, (tn_builtin)(i & 3), &o, &f) != TN_STATUS_OK)
        fuzz_fail("built-in %u: %s", i, tn_context_last_error(g_ctx));
    tn_analysis *an = malloc(sizeof *an);
    if (!an) fuzz_fail("out of memory");
    tn_analyze(f, an);
    g_fusions[i] = (prepared){f, an};
    return &g_fusions[i];
}

/* ---- an independent reading of what the parser accepted ---------------- */

static const char *ws(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') s++;
    return s;
}

/* Past a string the parser accepted, decoded into key: a \\uXXXX of ASCII is
   that character, anything else that no member name holds. */
static const char *skip_string(const char *s, char *key, size_t cap) {
    size_t n = 0;
    for (s++; *s && *s != '"'; s++) {
        char c = *s;
        if (c == '\\' && s[1]) {
            c = *++s;
            if (c == 'u') {
                unsigned v = 0;
                int k = 0;
                for (; k < 4 && s[1] && strchr("0123456789abcdefABCDEF", s[1]); k++, s++)
                    v = v * 16 + (unsigned)(s[1] <= '9' ? s[1] - '0' : (s[1] | 0x20) - 'a' + 10);
                c = k == 4 && v > 0 && v < 0x80 ? (char)v : '\x7f';
            }
        }
        if (n + 1 < cap) key[n++] = c;
    }
    key[n] = '\0';
    return *s ? s + 1 : s;
}

/* Calls fn for each member of a flat object the parser accepted; returns
   what follows the closing brace. */
typedef void (*member_fn)(const char *key, const char *value, const char *value_end, void *ctx);
static const char *walk(const char *json, member_fn fn, void *ctx) {
    const char *s = ws(json);
    FUZZ_CHECK(*s == '{', "accepted a plan that does not start with '{'");
    s = ws(s + 1);
    while (*s == '"') {
        char key[64];
        s = ws(skip_string(s, key, sizeof key));
        FUZZ_CHECK(*s == ':', "accepted a member without ':'");
        s = ws(s + 1);
        const char *v = s;
        if (*s == '"') s = skip_string(s, (char[64]){0}, 64);
        else
            while (*s && *s != ',' && *s != '}' && *s != ' ' && *s != '\n' && *s != '\t' && *s != '\r') s++;
        fn(key, v, s, ctx);
        s = ws(s);
        if (*s == ',') s = ws(s + 1);
    }
    FUZZ_CHECK(*s == '}', "accepted a plan whose members end in 0x%02x", (unsigned char)*s);
    return ws(s + 1);
}

typedef struct members {
    char key[32][64];
    const char *value[32];
    int n;
} members;

static void collect(const char *key, const char *value, const char *value_end, void *ctx) {
    (void)value_end;
    members *m = ctx;
    for (int k = 0; k < m->n; k++) FUZZ_CHECK(strcmp(m->key[k], key) != 0, "accepted a member twice: \"%s\"", key);
    FUZZ_CHECK(m->n < 32, "accepted more than 32 members");
    snprintf(m->key[m->n], sizeof m->key[0], "%s", key);
    m->value[m->n++] = value;
}

/* Each integer member accepted must be the integer the plan holds, which
   the plan's own JSON (printed from the struct) says. */
static void same_integer(const char *key, const char *value, const char *value_end, void *ctx) {
    const members *printed = ctx;
    if (*value == '"') return;
    for (int k = 0; k < printed->n; k++) {
        if (strcmp(printed->key[k], key) != 0) continue;
        /* Any JSON number form (4096, 4096.0, 4.096e3): strtold is exact for the integers a plan holds
           (at most 19 significant digits fit its 64-bit mantissa) in the C locale the fuzzer runs in. */
        errno = 0;
        long double v = strtold(value, NULL);
        FUZZ_CHECK(errno != ERANGE && v == floorl(v) && v >= -9223372036854775808.0L &&
                       v <= 9223372036854775807.0L,
                   "accepted \"%s\" that is no 64-bit integer: %.*s", key, (int)(value_end - value), value);
        long long held = strtoll(printed->value[k], NULL, 10);
        FUZZ_CHECK(v == (long double)held, "accepted \"%s\" as another value: %.*s as %lld", key,
                   (int)(value_end - value), value, held);
        return;
    }
    fuzz_fail("accepted \"%s\", which the plan does not print back", key);
}

/* The parser said yes to json, and the plan it made prints as again. */
static void check_accepted(const char *json, const char *again) {
    members in = {.n = 0}, out = {.n = 0};
    const char *rest = walk(json, collect, &in);
    FUZZ_CHECK(*rest == '\0', "accepted text after the plan's closing brace:\n%.40s", rest);
    walk(again, collect, &out);
    walk(json, same_integer, &out);
}

/* Field by field up to "why" (padding included: both were zeroed whole), then "why". */
static int same_plan(const tn_plan_desc *a, const tn_plan_desc *b) {
    return memcmp(a, b, offsetof(tn_plan_desc, why)) == 0 && strcmp(a->why, b->why) == 0;
}

static char *take(tn_strbuf *sb) {
    char *text = tn_strbuf_take(sb);
    FUZZ_CHECK(text != NULL, "strbuf allocation failed");
    return text;
}

/* ---- the target ---------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const prepared *fu = fusion_for(data[0]);
    const int align = 1 << (data[1] % 5);
    static const char *const k_targets[3] = {"h200", "h100", "a100"};
    tn_device_props props;
    if (tn_device_props_for_target(k_targets[(data[1] / 5) % 3], &props) != TN_STATUS_OK) fuzz_fail("no target");
    char *json = malloc(size - 1);
    if (!json) return 0;
    memcpy(json, data + 2, size - 2);
    json[size - 2] = '\0';

    tn_plan_desc p, untouched;
    memset(&p, 0x5a, sizeof p);
    untouched = p;
    char err[320];
    memset(err, 0x5a, sizeof err);
    if (!tn_plan_desc_parse(json, &p, err, sizeof err)) {
        FUZZ_CHECK(memchr(err, '\0', sizeof err) && err[0], "a rejected plan without a reason");
        FUZZ_CHECK(memcmp(&p, &untouched, sizeof p) == 0, "a rejected plan changed the output (%s)", err);
        debug("not parsed", err);
        free(json);
        return 0;
    }
    /* What is accepted prints, and prints back to itself. */
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_plan_desc_json(&p, &sb);
    char *again = take(&sb);
    check_accepted(json, again);
    tn_plan_desc q;
    FUZZ_CHECK(tn_plan_desc_parse(again, &q, err, sizeof err), "the plan printed back does not parse: %s\n%s", err,
               again);
    FUZZ_CHECK(same_plan(&p, &q), "the plan printed back parses to another plan:\nin:  %s\nout: %s", json, again);
    tn_plan_desc_text(&p, &sb);
    free(take(&sb));
    free(again);

    /* As tn_plan_create: the shape's bounds and the bytes first, then the check. */
    if (p.rows < 1 || p.rows > TN_MAX_ROWS || p.cols < 1 || p.cols > TN_MAX_COLS ||
        tn_analysis_bytes(fu->an, p.rows, p.cols) < 0) {
        debug("parsed; refused before the check", "shape out of bounds");
        free(json);
        return 0;
    }
    if (!tn_plan_desc_check(&p, fu->an, &props, align, err, sizeof err)) {
        FUZZ_CHECK(memchr(err, '\0', sizeof err) && err[0], "a plan failed the check without a reason");
        debug("parsed; failed the check", err);
        free(json);
        return 0;
    }
    /* The check's rules, again in exact arithmetic. */
    const int64_t tpr = p.threads_per_row, rpc = p.rows_per_cta, block = p.block_threads;
    const int64_t producer = tn_plan_producer_threads(&p); /* tma-ws: the producer warp (group) */
    FUZZ_CHECK(tpr * rpc + producer == block,
               "checked plan: threads_per_row %lld x rows_per_cta %lld + %lld producer threads != block_threads %lld",
               (long long)tpr, (long long)rpc, (long long)producer, (long long)block);
    FUZZ_CHECK(block >= 32 && block % 32 == 0 && block <= props.max_threads_per_block,
               "checked plan: block_threads %lld", (long long)block);
    /* (a peeled row's vectors start at its first 16-byte boundary: any length) */
    FUZZ_CHECK(p.vec >= 1 && p.vec <= 16 && (p.cols % p.vec == 0 || p.peel), "checked plan: vec %d, cols %lld", p.vec,
               (long long)p.cols);
    FUZZ_CHECK(p.grid >= 1 && p.grid <= INT_MAX, "checked plan: grid %lld", (long long)p.grid);
    FUZZ_CHECK(p.batch >= 1 && p.batch <= 64, "checked plan: batch %d", p.batch);
    FUZZ_CHECK(p.align_bytes <= align, "checked plan: needs %d-byte alignment, given %d", p.align_bytes, align);
    /* (a peeled row: whole vectors from its first 16-byte boundary, at most cols / vec of them, and the at most
       2 vec - 2 elements outside them one a thread) */
    FUZZ_CHECK(p.kind != TN_PLAN_REGISTER ||
                   (p.peel ? tpr * p.batch >= p.cols / p.vec && tpr >= 2 * p.vec - 2 : tpr * p.batch * p.vec >= p.cols),
               "checked register plan: %lld threads x %d vectors of %d do not cover %lld columns%s", (long long)tpr,
               p.batch, p.vec, (long long)p.cols, p.peel ? " (peeled)" : "");
    FUZZ_CHECK(p.kind != TN_PLAN_LOOPED || rpc == 1, "checked looped plan with %lld rows per CTA", (long long)rpc);
    FUZZ_CHECK(p.ctas_per_sm >= 0 && (int64_t)p.ctas_per_sm * block <= props.max_threads_per_sm,
               "checked plan: %d CTAs of %lld threads an SM", p.ctas_per_sm, (long long)block);
    FUZZ_CHECK(!p.prefetch || (p.kind == TN_PLAN_CLUSTER && p.align_bytes == 16),
               "checked plan: prefetch in a %s plan aligned to %d", tn_plan_kind_name(p.kind), p.align_bytes);
    FUZZ_CHECK(p.pdl >= 0 && p.pdl <= 3 && (p.pdl != 2 || p.kind != TN_PLAN_TMA_WS), "checked plan: pdl %d in a %s plan",
               p.pdl, tn_plan_kind_name(p.kind));
    FUZZ_CHECK(!p.early_l2 || (p.pdl && (p.kind == TN_PLAN_REGISTER || p.kind == TN_PLAN_CLUSTER)),
               "checked plan: early_l2 in a %s plan, pdl %d", tn_plan_kind_name(p.kind), p.pdl);
    FUZZ_CHECK(!p.early_stores || (p.early_stores == 1 && tn_plan_early_stores_kind(&p) && fu->an->early_row_outputs),
               "checked plan: early_stores %d in a %s plan", p.early_stores, tn_plan_kind_name(p.kind));
    FUZZ_CHECK(!p.l2_slice || (p.kind == TN_PLAN_CLUSTER && !p.stages && !p.shared_slice && !p.carry && !p.col_cache &&
                               !p.cols_early && !p.prefetch && p.batch <= 16),
               "checked plan: l2_slice in a %s plan, %d stages, carry %d, batch %d", tn_plan_kind_name(p.kind), p.stages,
               p.carry, p.batch);
    FUZZ_CHECK(!p.carry || ((p.kind == TN_PLAN_REGISTER || p.kind == TN_PLAN_CLUSTER || p.kind == TN_PLAN_TMA) &&
                            fu->an->num_carried &&
                            tn_plan_carry_floats(&p, fu->an->num_carried) <= tn_plan_carry_limit(&p, &props)),
               "checked plan: carry in a %s plan of a fusion with %d carried values", tn_plan_kind_name(p.kind),
               fu->an->num_carried);
    /* What the scheduler refuses, a replay must not get past the check either. */
    FUZZ_CHECK(!fu->an->has_f8_output || p.cc >= 89,
               "checked plan for sm_%d with an f8e4m3 output (the scheduler refuses: it needs sm_89)", p.cc);

    fuzz_check_launches(&p, &props);
    tn_codegen(fu->f, fu->an, &p, &sb);
    char *source = take(&sb);
    FUZZ_CHECK(strstr(source, TN_KERNEL_NAME "(") != NULL, "generated source without the kernel");
    debug("parsed, checked, generated", tn_plan_kind_name(p.kind));
    free(source);
    free(json);
    return 0;
}
