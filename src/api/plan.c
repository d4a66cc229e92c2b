/* Plans: schedule -> generate -> compile at creation; validate -> launch on
   the caller's stream. A plan keeps one kernel variant per tensor alignment,
   so misaligned tensors fall back to narrower accesses instead of faulting,
   and, with row tiers, one set per run of row counts the scheduler treats
   alike, so a launch of any row count up to M runs the scheduler's choice for
   it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/runtime.h"
#include "api/plan_internal.h"
#include "codegen/codegen.h"
#include "rt/launch.h"
#include "ir/ir.h"
#include "sched/heuristics.h"
#include "util/alloc.h"
#include "util/strbuf.h"

#define TN_ALIGN_CLASSES 5 /* tensors aligned to 1, 2, 4, 8, 16 bytes */

typedef struct tn_variant {
    tn_plan_desc desc;
    char *source;
    tn_kernel *kernel; /* held from the cache until the plan is destroyed */
    int num_launches;
    tn_launch_desc launches[TN_MAX_LAUNCHES];
    CUfunction fns[TN_MAX_LAUNCHES]; /* looked up by name once, with a GPU */
    int compiled;      /* 1: this plan compiled the kernel (0: a cache hit) */
    atomic_int ready;  /* set once desc, source and kernel are final */
} tn_variant;

/* The kernels scheduled for one row count: they serve launches of up to `rows`
   rows (of more than the tier below's). */
typedef struct tn_tier {
    int64_t rows;
    tn_variant *primary; /* built at creation, for the options' alignment */
    tn_variant variants[TN_ALIGN_CLASSES];
    /* For tensors at different offsets from a 16-byte boundary, where the plan for their alignment peels: never
       peeled; where the primary peels, the one for the options' alignment is built at creation (unpeeled_primary,
       which odd N's element-aligned plan makes serve every alignment), the others on first need. */
    tn_variant unpeeled[TN_ALIGN_CLASSES];
    tn_variant *unpeeled_primary;
} tn_tier;

/* Row tiers a plan may hold (where the scheduler's choice changes more often, the powers of two below M). */
#define TN_MAX_TIERS 64

struct tn_plan {
    tn_context *ctx;
    tn_fusion *fusion; /* the plan's own copy */
    tn_analysis an;
    int64_t rows, cols;
    int kind; /* a forced tn_plan_kind, or -1 */
    int pdl;  /* programmatic dependent launch: 1 on, 0 off */
    tn_io_info inputs[TN_MAX_IO], outputs[TN_MAX_IO]; /* looked up once: the launch path reads these */
    tn_abi abi;                                        /* the kernel's parameters, for packing */
    int num_tiers; /* 1 without row tiers: the tier for M */
    tn_tier *tiers; /* by rows, ascending; the last is M's */
    pthread_mutex_t lock; /* serializes building fallback variants */
};

static const tn_tier *top_tier(const tn_plan *plan) { return &plan->tiers[plan->num_tiers - 1]; }

static int align_class(int align) {
    int c = 0;
    while (c + 1 < TN_ALIGN_CLASSES && (1 << (c + 1)) <= align) c++;
    return c;
}

/* A cluster kernel loops over row groups: launch as many clusters as the
   device runs at once (the driver knows the GPCs' sizes; the scheduler only
   estimates), at most one a row group. More would wait for a second wave and
   double the time of the rows they take; fewer leave SMs idle. A plan whose
   slices stay in shared memory keeps its grid (a cluster a row group, in
   waves, as the hardware schedules clusters when SMs free up; the check
   allows no more): its one stage would not overlap one row's copy with
   another's work if it looped. So does a plan of a cluster a row group over
   many rows (over half the SMs) that takes two or more waves of what the
   driver runs at once: launched in waves on purpose (tune's candidates), not
   a persistent grid sized by estimate. Few rows' plans are sized for one
   round and take the driver's count, which clusters_short then checks. A
   plan whose slices stay in L2 (l2_slice) keeps its grid, or the driver's
   count where that is less. */
static void persistent_clusters(tn_plan *plan, const tn_plan_desc *desc, tn_variant *var, int i, int64_t active) {
    tn_launch_desc *l = &var->launches[i];
    if (desc->shared_slice) return;
    if (desc->l2_slice) {
        if (active > 0 && active * l->cluster < l->grid) l->grid = active * l->cluster;
        return;
    }
    const int64_t rows = desc->rows;
    const int64_t groups = rows / desc->rows_per_cta + (rows % desc->rows_per_cta != 0);
    if (active > 0 && l->grid == groups * l->cluster && groups >= 2 * active && rows * 2 > plan->ctx->props.sm_count)
        return;
    if (active > 0) l->grid = (active < groups ? active : groups) * l->cluster;
}

/* Appends a clause to desc's why. */
__attribute__((format(printf, 2, 3))) static void add_why(tn_plan_desc *desc, const char *fmt, ...) {
    const size_t len = strlen(desc->why);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(desc->why + len, sizeof desc->why - len, fmt, ap);
    va_end(ap);
}

/* Generates and compiles desc's kernel (or finds it in the cache). */
static tn_status compile_desc(tn_plan *plan, const tn_plan_desc *desc, char **source, tn_kernel **k, int *compiled) {
    tn_context *ctx = plan->ctx;
    tn_strbuf sb;
    /* An online plan's kernel reduces the fusion's online pairs together: the analysis that pairs them. */
    tn_analysis *online = NULL;
    if (desc->online) {
        char err[256] = "the fusion sums no exp(t - max(t)) that an output needs";
        if (!(online = tn_calloc(&ctx->base.alloc, 1, sizeof *online)))
            return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "codegen: out of memory");
        const int paired = tn_analyze_online(plan->fusion, online) > 0;
        if (!paired || !tn_analysis_within_limits(online, err, sizeof err)) {
            tn_free(&ctx->base.alloc, online);
            return tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "plan: online pairs: %s", err);
        }
    }
    tn_strbuf_init(&sb, &ctx->base.alloc);
    tn_codegen(plan->fusion, online ? online : &plan->an, desc, &sb);
    tn_free(&ctx->base.alloc, online);
    *source = tn_strbuf_take(&sb);
    if (!*source) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "codegen: out of memory");
    tn_status st = tn_cache_get(ctx, *source, k, compiled);
    if (st != TN_STATUS_OK) {
        tn_free(&ctx->base.alloc, *source);
        *source = NULL;
    }
    return st;
}

static tn_status build_variant(tn_plan *plan, tn_variant *var, const tn_plan_desc *in) {
    tn_context *ctx = plan->ctx;
    tn_plan_desc bounded = *in, *desc = &bounded;
    char *source = NULL;
    tn_kernel *k = NULL;
    int compiled = 0;
    tn_status st = compile_desc(plan, desc, &source, &k, &compiled);
    if (st != TN_STATUS_OK) return st;
    /* Where ptxas spilled, its report wins over the scheduler's register
       estimate (a bound the scheduler set) and over ptxas's own aim at more
       CTAs an SM under a bare thread bound (a random three-input fusion: 64
       registers and spills aiming at four CTAs of 256 threads, 72 and none at
       one): compile again for as many CTAs an SM as leave it the registers it
       used plus 8, fewer each time, down to one. */
    for (int tries = 0; tries < 3 && (k->res.spill_store_bytes || k->res.spill_load_bytes); tries++) {
        const int now = tn_plan_bound_ctas(desc);
        if (now == 1) break;
        int next = (int)(ctx->props.regs_per_sm / ((int64_t)(k->res.registers + 8) * desc->block_threads));
        if (now && next >= now) next = now - 1;
        if (next < 1) next = 1;
        const int spilled = k->res.spill_store_bytes, regs = k->res.registers;
        tn_cache_release(ctx, k);
        tn_free(&ctx->base.alloc, source);
        desc->ctas_per_sm = next;
        add_why(desc, "%scompiled for %d CTAs an SM: ptxas spilled %d bytes at %d registers", desc->why[0] ? "; " : "",
                next, spilled, regs);
        st = compile_desc(plan, desc, &source, &k, &compiled);
        if (st != TN_STATUS_OK) return st;
    }
    /* Register sharing only moves registers within what the CTA got at launch:
       a setmaxnreg.inc beyond that pool would wait forever, so refuse instead. */
    if (desc->consumer_regs &&
        (int64_t)k->res.registers * desc->block_threads <
            128LL * (desc->producer_regs + (int64_t)desc->consumer_groups * desc->consumer_regs))
        st = tn_set_error(ctx, TN_STATUS_INTERNAL,
                          "tma-ws: ptxas gave %d registers a thread at launch, too few for %d threads to share as "
                          "producer %d and %d consumer groups x %d (the kernel would hang)",
                          k->res.registers, desc->block_threads, desc->producer_regs, desc->consumer_groups,
                          desc->consumer_regs);
    /* The scheduler estimates the static part; ptxas's report decides. */
    if (st == TN_STATUS_OK && desc->smem_bytes &&
        (int64_t)desc->smem_bytes + k->res.static_smem_bytes > ctx->props.smem_per_block_optin)
        st = tn_set_error(ctx, TN_STATUS_UNSUPPORTED,
                          "plan: %d bytes of dynamic shared memory and %d static (ptxas) are above the device's %d "
                          "per CTA: fewer stages",
                          desc->smem_bytes, k->res.static_smem_bytes, ctx->props.smem_per_block_optin);
    var->num_launches = tn_plan_desc_launches(desc, var->launches);
    for (int i = 0; i < var->num_launches && ctx->has_gpu && st == TN_STATUS_OK; i++) {
        st = tn_kernel_function(ctx, k, &var->launches[i], &var->fns[i]);
        if (st != TN_STATUS_OK || var->launches[i].cluster < 2) continue;
        /* The clusters the driver runs at once: a cluster over the portable size runs only where it places one
           at all (GPCs of fewer SMs, or a CTA too large for 16 of them in a GPC). */
        const int64_t active = tn_max_active_clusters(ctx, var->fns[i], &var->launches[i]);
        if (var->launches[i].cluster > TN_MAX_CLUSTER && active < 1)
            st = tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "plan: the driver places no cluster of %d CTAs of %d "
                              "threads and %d bytes of shared memory on this GPU", var->launches[i].cluster,
                              var->launches[i].block, var->launches[i].smem_bytes);
        else
            persistent_clusters(plan, desc, var, i, active);
    }
    if (st != TN_STATUS_OK) {
        tn_cache_release(ctx, k);
        tn_free(&ctx->base.alloc, source);
        return st;
    }
    var->desc = *desc;
    var->desc.grid = var->launches[0].grid;
    var->source = source;
    var->kernel = k;
    var->compiled = compiled;
    return TN_STATUS_OK;
}

static int spill_bytes(const tn_variant *var) {
    return var->kernel->res.spill_store_bytes + var->kernel->res.spill_load_bytes;
}

/* Moves a built variant into place, all but `ready`, which other threads read
   without the plan's lock (its caller publishes it once final). */
static void move_variant(tn_variant *to, const tn_variant *from) {
    to->desc = from->desc;
    to->source = from->source;
    to->kernel = from->kernel;
    to->num_launches = from->num_launches;
    memcpy(to->launches, from->launches, sizeof to->launches);
    memcpy(to->fns, from->fns, sizeof to->fns);
    to->compiled = from->compiled;
}

static void release_variant(tn_context *ctx, tn_variant *var) {
    tn_free(&ctx->base.alloc, var->source);
    tn_cache_release(ctx, var->kernel);
    var->source = NULL;
    var->kernel = NULL;
}

/* Puts the built variant `other` in var's place; its why (add_why) says what was passed over and why. */
static void adopt_variant(tn_plan *plan, tn_variant *var, tn_variant *other) {
    release_variant(plan->ctx, var);
    move_variant(var, other);
}

/* What a variant is built for: the rows of its tier, the tensors' alignment, and whether the launch's
   tensors allow a peeled plan (tn_plan_desc.peel). */
typedef struct build_for {
    int64_t rows;
    int align, no_peel;
} build_for;

static tn_schedule_request request(const tn_plan *plan, build_for b, int kind, unsigned avoid) {
    tn_schedule_request r = {&plan->an, b.rows, plan->cols, b.align, kind, &plan->ctx->props, plan->pdl, avoid};
    r.no_peel = b.no_peel;
    return r;
}

static tn_status schedule(tn_plan *plan, build_for b, int kind, tn_plan_desc *desc) {
    char err[320];
    const int64_t rows = b.rows;
    const tn_schedule_request req = request(plan, b, kind, 0);
    if (tn_schedule(&req, desc, err, sizeof err)) return TN_STATUS_OK;
    return tn_set_error(plan->ctx, TN_STATUS_UNSUPPORTED, "fusion '%s' at [%lld, %lld]: %s", plan->fusion->name,
                        (long long)rows, (long long)plan->cols, err);
}

/* build_variant for a plan that may replace one already built: where it
   fails, the caller's last error stays as it was (the first plan stands). */
static tn_status build_alternative(tn_plan *plan, tn_variant *other, const tn_plan_desc *desc) {
    char last[512];
    snprintf(last, sizeof last, "%s", tn_error_text(plan->ctx));
    const tn_status st = build_variant(plan, other, desc);
    if (st != TN_STATUS_OK) tn_set_error(plan->ctx, TN_STATUS_OK, "%s", last);
    return st;
}

/* Whether the scheduler sized var's cluster plan for every row at once (few
   rows, under half the SMs, spread over clusters) and the driver places fewer
   clusters than that: the last rows would take a second round (tune, H200,
   bf16: rmsnorm 64 x 65536 over 4 CTAs a row, 62 clusters placed, 8.1 us;
   7.35 over 2). Plans of many rows loop over them whatever the count. */
static int clusters_short(const tn_plan *plan, const tn_variant *var, const tn_plan_desc *planned) {
    const int64_t all = planned->rows * planned->cluster;
    return var->desc.kind == TN_PLAN_CLUSTER && planned->rows * 2 <= plan->ctx->props.sm_count && planned->grid >= all &&
           var->launches[0].grid < all && planned->cluster > 2;
}

/* The plan req makes, built into other (zeroed first); 0 where the scheduler refuses it or the build fails. */
static int build_replan(tn_plan *plan, const tn_schedule_request *req, tn_variant *other) {
    char err[320];
    tn_plan_desc next;
    memset(other, 0, sizeof *other);
    return tn_schedule(req, &next, err, sizeof err) && build_alternative(plan, other, &next) == TN_STATUS_OK;
}

/* The scheduler's plan, built into var. Where the driver would not run all of
   a few-row cluster plan's clusters at once (the scheduler only estimates how
   clusters pack into GPCs), the plan the scheduler makes for that
   (tn_schedule_short_clusters), twice at most, where it spills no more. Where
   ptxas still spills after build_variant's recompiles (the scheduler's
   register estimate fell short for this fusion: rmsnorm bf16 1000 x 57344, 52
   bytes at 255 registers in the register plan of 256 threads x 28 vectors),
   the plan it makes passing over that kind (under the same cap), where that
   one compiles without spills and is not the looped plan (which reads every
   row twice from memory: a few spilled bytes cost less). A forced kind keeps
   its plan. */
static tn_status schedule_build(tn_plan *plan, tn_variant *var, build_for b, int kind) {
    const int64_t rows = b.rows;
    tn_plan_desc desc;
    tn_status st = schedule(plan, b, kind, &desc);
    char last[512];
    snprintf(last, sizeof last, "%s", tn_error_text(plan->ctx));
    if (st == TN_STATUS_OK) st = build_variant(plan, var, &desc);
    /* The limits the plan adopted was made under (max_cluster, wide_slices): every later re-plan keeps them. */
    tn_schedule_request adopted = request(plan, b, -1, 0);
    /* A non-portable cluster (few long rows over 16 CTAs) that the driver places nowhere on this GPU (no GPC of
       16 free SMs): the plan made within the portable size. */
    if (st == TN_STATUS_UNSUPPORTED && kind < 0 && desc.kind == TN_PLAN_CLUSTER && desc.cluster > TN_MAX_CLUSTER) {
        char err[320];
        const int refused = desc.cluster;
        adopted.max_cluster = TN_MAX_CLUSTER;
        if (tn_schedule(&adopted, &desc, err, sizeof err) && (st = build_variant(plan, var, &desc)) == TN_STATUS_OK) {
            tn_set_error(plan->ctx, TN_STATUS_OK, "%s", last);
            add_why(&var->desc, "; clusters of %d passed over: the driver places none on this GPU", refused);
        }
    }
    for (int tries = 0; st == TN_STATUS_OK && kind < 0 && tries < 2 && clusters_short(plan, var, &desc); tries++) {
        tn_schedule_request req = adopted;
        tn_plan_desc next;
        tn_variant other;
        memset(&other, 0, sizeof other);
        if (!tn_schedule_short_clusters(&req, &desc, &next) || build_alternative(plan, &other, &next) != TN_STATUS_OK)
            break;
        if (spill_bytes(&other) > spill_bytes(var)) {
            release_variant(plan->ctx, &other);
            break;
        }
        const long long placed = var->launches[0].grid / desc.cluster;
        if (req.wide_slices)
            add_why(&other.desc, "; slices of %d vectors a thread passed over: the driver runs %lld of their "
                    "clusters at once, under the %lld rows", desc.batch, placed, (long long)rows);
        else
            add_why(&other.desc, "; clusters of %d passed over: the driver runs %lld at once, under the %lld rows",
                    desc.cluster, placed, (long long)rows);
        adopt_variant(plan, var, &other);
        desc = next;
        adopted = req;
    }
    /* Shared slices whose recompiles (ptxas spilled under the bound) left fewer than TN_SHARED_SLICE_CTAS CTAs
       an SM lost what they were for: several CTAs an SM overlapping one's copy with another's reductions (a
       random fusion at 3200 x 65536 ran 1 an SM at 230 registers). The plan made without them, where it spills
       no more; else they stay, saying so. */
    if (st == TN_STATUS_OK && kind < 0 && var->desc.shared_slice &&
        tn_plan_bound_ctas(&var->desc) < TN_SHARED_SLICE_CTAS) {
        tn_schedule_request req = adopted;
        req.no_shared_slice = 1;
        tn_variant other;
        if (build_replan(plan, &req, &other)) {
            if (spill_bytes(&other) <= spill_bytes(var)) {
                add_why(&other.desc, "; shared slices passed over: ptxas left them %d CTA%s an SM",
                        tn_plan_bound_ctas(&var->desc), tn_plan_bound_ctas(&var->desc) == 1 ? "" : "s");
                adopt_variant(plan, var, &other);
                adopted.no_shared_slice = 1; /* a later re-plan (the pipeline's) keeps them passed over */
            } else {
                add_why(&var->desc, "; shared slices kept: the %s plan without them spilled %d bytes",
                        tn_plan_kind_name(other.desc.kind), spill_bytes(&other));
                release_variant(plan->ctx, &other);
            }
        }
    }
    /* COL vectors taken with the row's loads (cols_early) on registers the estimate had room for; where ptxas
       spilled anyway, the same plan loading them after the reductions, if it spills less (also after
       the replacements above, and before the kind is passed over for spilling). */
    if (st == TN_STATUS_OK && var->desc.cols_early && spill_bytes(var)) {
        tn_plan_desc late = var->desc;
        late.cols_early = 0;
        tn_variant other;
        memset(&other, 0, sizeof other);
        if (build_alternative(plan, &other, &late) == TN_STATUS_OK) {
            if (spill_bytes(&other) < spill_bytes(var)) {
                add_why(&other.desc, "; cols_early passed over: ptxas spilled %d bytes with it", spill_bytes(var));
                adopt_variant(plan, var, &other);
            } else {
                release_variant(plan->ctx, &other);
            }
        }
    }
    /* A pipelined register plan (the next row's vectors beside this one's) on registers the estimate had room
       for; where ptxas spilled anyway (layernorm f16 512 x 16384: 44 bytes at 64 registers), the plan made
       without pipelining, if it spills less (before the kind is passed over for spilling). */
    if (st == TN_STATUS_OK && kind < 0 && var->desc.pipeline && spill_bytes(var)) {
        tn_schedule_request req = adopted;
        req.no_pipeline = 1;
        tn_variant other;
        if (build_replan(plan, &req, &other)) {
            if (spill_bytes(&other) < spill_bytes(var)) {
                add_why(&other.desc, "; pipeline passed over: ptxas spilled %d bytes in it", spill_bytes(var));
                adopt_variant(plan, var, &other);
            } else {
                release_variant(plan->ctx, &other);
            }
        }
    }
    if (st != TN_STATUS_OK || kind >= 0 || !spill_bytes(var)) return st;
    char err[320];
    tn_schedule_request req = adopted;
    req.avoid = 1u << var->desc.kind;
    tn_variant other;
    memset(&other, 0, sizeof other);
    if (!tn_schedule(&req, &desc, err, sizeof err) || desc.kind == TN_PLAN_LOOPED) return TN_STATUS_OK;
    if (build_alternative(plan, &other, &desc) != TN_STATUS_OK) return TN_STATUS_OK; /* keep the spilling plan */
    if (spill_bytes(&other)) {
        release_variant(plan->ctx, &other);
        return TN_STATUS_OK;
    }
    add_why(&other.desc, "; the %s plan passed over: ptxas spilled %d bytes in it at %d registers",
            tn_plan_kind_name(var->desc.kind), var->kernel->res.spill_store_bytes, var->kernel->res.registers);
    adopt_variant(plan, var, &other);
    return TN_STATUS_OK;
}

/* ---- row tiers ---------------------------------------------------------------- */

/* Whether two plans are the same choice but for the row count: the grid it gives (cut at launch) and the CTAs
   an SM its launch bound asks for one wave (the plan for more rows asks for more, which fewer rows run too). */
static int same_choice(const tn_plan_desc *a, const tn_plan_desc *b) {
    tn_plan_desc x = *a, y = *b;
    x.rows = y.rows = x.grid = y.grid = 0;
    x.ctas_per_sm = y.ctas_per_sm = 0;
    return !memcmp(&x, &y, offsetof(tn_plan_desc, why));
}

typedef struct tier_search {
    tn_plan *plan;
    int align, n, overflow;
    int64_t *ends;
} tier_search;

/* The scheduler's plan at m rows into d; 0 where it refuses (a forced kind): a choice of its own. */
static int choice_at(tier_search *t, int64_t m, tn_plan_desc *d) {
    char err[320];
    const tn_schedule_request req = request(t->plan, (build_for){m, t->align, 0}, t->plan->kind, 0);
    if (tn_schedule(&req, d, err, sizeof err)) return 1;
    memset(d, 0, sizeof *d);
    return 0;
}

static void add_end(tier_search *t, int64_t end) {
    if (t->n < TN_MAX_TIERS) t->ends[t->n++] = end;
    else t->overflow = 1;
}

/* Tier ends in (lo, hi], whose choices a and b the caller knows: where they differ, the last row count of a's
   choice found by bisection ends a tier, and the rest is searched again. A choice that leaves and comes back
   between two row counts of the same one is not seen (that stretch takes the choice around it). */
static void search_ends(tier_search *t, int64_t lo, const tn_plan_desc *a, int64_t hi, const tn_plan_desc *b) {
    if (t->overflow || same_choice(a, b)) return;
    int64_t l = lo, h = hi;
    tn_plan_desc mid_choice, h_choice = *b;
    while (h - l > 1) {
        const int64_t mid = l + (h - l) / 2;
        choice_at(t, mid, &mid_choice);
        if (same_choice(a, &mid_choice)) l = mid;
        else h = mid, h_choice = mid_choice;
    }
    add_end(t, l);
    search_ends(t, h, &h_choice, hi, b);
}

/* The row counts a plan of row tiers is built for, ascending, the last M: where the scheduler's choice (but for
   the grid and the launch bound's CTAs an SM) changes between 1 and M, found by asking the scheduler at every
   row count up to 16 waves and at samples beyond, bisecting between two samples that differ, so every row
   count runs the kernel the scheduler would choose for it (the choices it makes for few rows, spreading them
   over clusters or wider rows, change at row counts set by the SM count, not at powers of two). Beyond
   TN_MAX_TIERS, the powers of two. Returns how many. */
static int row_tiers(tn_plan *plan, int64_t rows, int align, int64_t *ends) {
    /* Samples: every row count up to 16 waves of one CTA an SM (where the choices for few rows and the wave
       counts decide, and can leave and come back: a random fusion at N = 12288 took 256 threads a row at
       282-351 rows, 512 around them), then eight a doubling (1.09 apart). */
    const int64_t dense = 16 * (int64_t)plan->ctx->props.sm_count;
    tier_search t = {plan, align, 0, 0, ends};
    tn_plan_desc prev, next;
    int64_t at = 1;
    choice_at(&t, at, &prev);
    while (at < rows && !t.overflow) {
        int64_t to = at < dense ? at + 1 : at + (at / 8 > 1 ? at / 8 : 1);
        if (to > rows || to < at) to = rows;
        choice_at(&t, to, &next);
        search_ends(&t, at, &prev, to, &next);
        prev = next;
        at = to;
    }
    if (!t.overflow) {
        add_end(&t, rows);
        if (!t.overflow) return t.n;
    }
    int n = 0;
    for (int64_t r = 1; r < rows; r *= 2) ends[n++] = r;
    ends[n++] = rows;
    return n;
}

static tn_status replay(tn_plan *plan, const char *json, int align, tn_plan_desc *desc) {
    char err[320];
    if (!tn_plan_desc_parse(json, desc, err, sizeof err))
        return tn_set_error(plan->ctx, TN_STATUS_INVALID_ARGUMENT, "%s", err);
    if (desc->rows != plan->rows || desc->cols != plan->cols)
        return tn_set_error(plan->ctx, TN_STATUS_INVALID_ARGUMENT,
                            "plan JSON is for [%lld, %lld], the plan is for [%lld, %lld]", (long long)desc->rows,
                            (long long)desc->cols, (long long)plan->rows, (long long)plan->cols);
    if (!tn_plan_desc_check(desc, &plan->an, &plan->ctx->props, align, err, sizeof err))
        return tn_set_error(plan->ctx, TN_STATUS_INVALID_ARGUMENT, "%s", err);
    plan->kind = (int)desc->kind; /* fallbacks keep the replayed kind */
    return TN_STATUS_OK;
}

void tn_plan_destroy(tn_plan *plan) {
    if (!plan) return;
    tn_context *ctx = plan->ctx;
    for (int t = 0; t < plan->num_tiers; t++)
        for (int i = 0; i < TN_ALIGN_CLASSES; i++) {
            release_variant(ctx, &plan->tiers[t].variants[i]);
            release_variant(ctx, &plan->tiers[t].unpeeled[i]);
        }
    tn_free(&ctx->base.alloc, plan->tiers);
    tn_fusion_destroy(plan->fusion);
    pthread_mutex_destroy(&plan->lock);
    tn_free(&ctx->base.alloc, plan);
    tn_context_release(ctx);
}

tn_status tn_plan_create(tn_context *ctx, const tn_fusion *f, int64_t rows, int64_t cols,
                         const tn_plan_options *options, tn_plan **out) {
    if (!ctx) return TN_STATUS_INVALID_ARGUMENT;
    if (!f || !out) return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "tn_plan_create: null fusion or output");
    *out = NULL;
    if (rows < 1 || cols < 1)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "tn_plan_create: rows (M = %lld) and cols (N = %lld) "
                            "must be at least 1", (long long)rows, (long long)cols);
    if (cols > TN_MAX_COLS)
        return tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "tn_plan_create: cols (N = %lld) above 2^31 - 1", (long long)cols);
    if (rows > TN_MAX_ROWS)
        return tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "tn_plan_create: rows (M = %lld) above 2^48", (long long)rows);
    tn_plan_options opts = {16, NULL, NULL, 0, 0};
    if (options) opts = *options;
    if (opts.align_bytes == 0) opts.align_bytes = 16;
    if (opts.align_bytes < 0 || (opts.align_bytes & (opts.align_bytes - 1)))
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "tn_plan_create: align_bytes %d is not a power of two",
                            opts.align_bytes);
    if (opts.align_bytes > 16) opts.align_bytes = 16;
    int kind = -1;
    if (opts.kind && (kind = tn_plan_kind_from_name(opts.kind)) < 0)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "tn_plan_create: unknown plan kind '%s' "
                            "(register, looped)", opts.kind);
    if (opts.row_tiers && opts.plan_json)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "tn_plan_create: a plan replayed from JSON is for its "
                            "own row count: row tiers need the scheduler");
    tn_status st = tn_fusion_verify(f);
    if (st != TN_STATUS_OK) return st;

    tn_plan *plan = tn_calloc(&ctx->base.alloc, 1, sizeof *plan);
    if (!plan) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "plan: out of memory");
    tn_context_retain(ctx);
    plan->ctx = ctx;
    plan->rows = rows;
    plan->cols = cols;
    plan->kind = kind;
    /* PDL is on by default where the device has it (sm_90+), as other libraries do. */
    plan->pdl = opts.pdl < 0 ? 0 : opts.pdl > 0 ? 1 : ctx->props.cc_major >= 9;
    pthread_mutex_init(&plan->lock, NULL);
    st = tn_fusion_clone(f, &plan->fusion);
    if (st != TN_STATUS_OK) goto done;
    tn_analyze(plan->fusion, &plan->an);
    char limit[320];
    if (!tn_analysis_within_limits(&plan->an, limit, sizeof limit)) {
        st = tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "fusion '%s': %s", plan->fusion->name, limit);
        goto done;
    }
    if (tn_analysis_bytes(&plan->an, rows, cols) < 0) {
        st = tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "fusion '%s' at [%lld, %lld]: its tensors hold more than "
                          "2^63 bytes", plan->fusion->name, (long long)rows, (long long)cols);
        goto done;
    }
    for (int i = 0; i < plan->fusion->num_inputs; i++) tn_fusion_io_info(plan->fusion, TN_IO_INPUT, i, &plan->inputs[i]);
    for (int o = 0; o < plan->fusion->num_outputs; o++) tn_fusion_io_info(plan->fusion, TN_IO_OUTPUT, o, &plan->outputs[o]);
    tn_abi_of(plan->fusion, &plan->abi);
    int64_t tier_rows[TN_MAX_TIERS];
    int n = 1;
    tier_rows[0] = rows;
    if (opts.row_tiers) n = row_tiers(plan, rows, opts.align_bytes, tier_rows);
    plan->tiers = tn_calloc(&ctx->base.alloc, (size_t)n, sizeof *plan->tiers);
    if (!plan->tiers) {
        st = tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "plan: out of memory");
        goto done;
    }
    for (int t = 0; t < n && st == TN_STATUS_OK; t++) {
        tn_tier *tier = &plan->tiers[t];
        tier->rows = tier_rows[t];
        plan->num_tiers = t + 1; /* so a failure below releases what this tier built */
        tn_variant built;
        memset(&built, 0, sizeof built);
        if (opts.plan_json) {
            tn_plan_desc desc;
            st = replay(plan, opts.plan_json, opts.align_bytes, &desc);
            if (st == TN_STATUS_OK) st = build_variant(plan, &built, &desc);
        } else {
            st = schedule_build(plan, &built, (build_for){tier->rows, opts.align_bytes, 0}, plan->kind);
        }
        if (st != TN_STATUS_OK) break;
        /* Kept under the alignment its plan needs (the vector width may need less than the tensors give). */
        tier->primary = &tier->variants[align_class(built.desc.align_bytes)];
        move_variant(tier->primary, &built);
        atomic_store(&tier->primary->ready, 1);
        /* A peeled primary runs only where the tensors agree: the plan without peel beside it, built now, so a
           launch whose tensors disagree compiles nothing (and may be captured). */
        if (!tier->primary->desc.peel) continue;
        memset(&built, 0, sizeof built);
        st = schedule_build(plan, &built, (build_for){tier->rows, opts.align_bytes, 1}, plan->kind);
        if (st == TN_STATUS_UNSUPPORTED && plan->kind >= 0)
            st = schedule_build(plan, &built, (build_for){tier->rows, opts.align_bytes, 1}, -1);
        if (st != TN_STATUS_OK) break;
        tier->unpeeled_primary = &tier->unpeeled[align_class(built.desc.align_bytes)];
        move_variant(tier->unpeeled_primary, &built);
        atomic_store(&tier->unpeeled_primary->ready, 1);
    }
done:
    if (st != TN_STATUS_OK) {
        tn_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return TN_STATUS_OK;
}

/* A line a tier: the rows it serves, its plan, and its kernel, named by the hash of its cache key
   (tiers whose plans differ only in the grid share one kernel). */
static void describe_tiers(const tn_plan *plan, tn_strbuf *sb) {
    int kernels = 0;
    for (int t = 0; t < plan->num_tiers; t++) {
        int seen = 0;
        for (int u = 0; u < t && !seen; u++) seen = plan->tiers[u].primary->kernel == plan->tiers[t].primary->kernel;
        kernels += !seen;
    }
    tn_strbuf_printf(sb, "%d row tier%s, %d kernel%s, for 1 to %lld rows\n", plan->num_tiers,
                     plan->num_tiers == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s", (long long)plan->rows);
    for (int t = 0; t < plan->num_tiers; t++) {
        const tn_variant *v = plan->tiers[t].primary;
        const tn_plan_desc *d = &v->desc;
        tn_strbuf_printf(sb, "  rows %lld-%lld: %s, %d threads, %d rows a CTA, cluster %d, %lld CTAs; kernel %016llx%s\n",
                         (long long)(t ? plan->tiers[t - 1].rows + 1 : 1), (long long)plan->tiers[t].rows,
                         tn_plan_kind_name(d->kind), d->block_threads, d->rows_per_cta, d->cluster,
                         (long long)d->grid, (unsigned long long)v->kernel->hash, v->compiled ? " (compiled)" : "");
        const tn_variant *u = plan->tiers[t].unpeeled_primary;
        if (u) /* peeled: the plan for tensors at different offsets from a 16-byte boundary, built beside it */
            tn_strbuf_printf(sb, "    peeled (vec %d from each row's 16-byte boundary); tensors at different offsets: "
                             "%s, vec %d; kernel %016llx%s\n", d->vec, tn_plan_kind_name(u->desc.kind), u->desc.vec,
                             (unsigned long long)u->kernel->hash, u->compiled ? " (compiled)" : "");
    }
}

tn_status tn_plan_describe(const tn_plan *plan, tn_describe_what what, char *buf, size_t cap, size_t *needed) {
    if (!plan) return TN_STATUS_INVALID_ARGUMENT;
    tn_context *ctx = plan->ctx;
    const tn_variant *v = top_tier(plan)->primary;
    tn_strbuf sb;
    tn_strbuf_init(&sb, &ctx->base.alloc);
    switch (what) {
    case TN_DESCRIBE_TEXT:
        tn_plan_desc_text(&v->desc, &sb);
        tn_strbuf_printf(&sb, "  bytes at the floor: %lld\n",
                         (long long)tn_analysis_bytes(&plan->an, plan->rows, plan->cols));
        break;
    case TN_DESCRIBE_JSON: tn_plan_desc_json(&v->desc, &sb); break;
    case TN_DESCRIBE_SOURCE: tn_strbuf_append(&sb, v->source); break;
    case TN_DESCRIBE_RESOURCES: {
        const tn_resources *r = &v->kernel->res;
        char compiled_note[48] = "from the kernel cache"; /* in memory or on disk: no compile for this plan */
        if (v->compiled) snprintf(compiled_note, sizeof compiled_note, "compiled in %.1f ms", r->compile_ms);
        tn_strbuf_printf(&sb, "resources (%s, NVRTC %s): %d registers, %d bytes spill stores, %d bytes spill "
                         "loads, %d bytes stack, %d bytes static shared memory, %d threads per CTA, %lld CTAs; "
                         "%s\n", ctx->arch, tn_nvrtc_version(), r->registers,
                         r->spill_store_bytes, r->spill_load_bytes, r->stack_bytes, r->static_smem_bytes,
                         v->desc.block_threads, (long long)v->desc.grid, compiled_note);
        break;
    }
    case TN_DESCRIBE_TIERS: describe_tiers(plan, &sb); break;
    default: tn_strbuf_free(&sb); return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "describe: unknown what %d", (int)what);
    }
    char *text = tn_strbuf_take(&sb);
    if (!text) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "describe: out of memory");
    tn_status st = tn_copy_out(text, buf, cap, needed);
    tn_free(&ctx->base.alloc, text);
    return st;
}

tn_status tn_plan_resources(const tn_plan *plan, tn_resources *out) {
    if (!plan || !out) return TN_STATUS_INVALID_ARGUMENT;
    const tn_variant *v = top_tier(plan)->primary;
    *out = v->kernel->res;
    out->compile_ms = 0;
    for (int t = 0; t < plan->num_tiers; t++)
        if (plan->tiers[t].primary->compiled) out->compile_ms += plan->tiers[t].primary->kernel->res.compile_ms;
    out->block_threads = v->desc.block_threads;
    out->grid_blocks = v->desc.grid;
    return TN_STATUS_OK;
}

tn_status tn_plan_bytes(const tn_plan *plan, int64_t *out) {
    if (!plan || !out) return TN_STATUS_INVALID_ARGUMENT;
    *out = tn_analysis_bytes(&plan->an, plan->rows, plan->cols);
    return TN_STATUS_OK;
}

/* ---- launch ------------------------------------------------------------------ */

/* Lowest set bit of the address and row stride, capped at 16. */
static int tensor_align(const tn_tensor *t, int64_t stride_bytes) {
    uintptr_t bits = (uintptr_t)t->data | (uintptr_t)stride_bytes | 16u;
    return (int)(bits & (~bits + 1));
}

static tn_status check_tensor(tn_plan *plan, const char *role, int i, const tn_tensor *t, const tn_io_info *io,
                              int64_t rows, int64_t *stride, int *align) {
    tn_context *ctx = plan->ctx;
    const char *name = io->name;
    const tn_dtype dtype = io->dtype;
    if (!t->data)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: %s %d ('%s') has a null data pointer", role, i, name);
    if (t->dtype != dtype)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: %s %d ('%s') is %s, the fusion's is %s", role, i,
                            name, tn_dtype_name(t->dtype), tn_dtype_name(dtype));
    int64_t size = (int64_t)tn_dtype_size(dtype);
    *stride = 0;
    if (io->shape == TN_SHAPE_ROW) {
        *stride = t->row_stride ? t->row_stride : plan->cols;
        if (*stride < plan->cols)
            return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: %s %d ('%s'): row stride %lld is less than "
                                "N = %lld", role, i, name, (long long)*stride, (long long)plan->cols);
        /* The kernel forms row * stride + column offsets in 64 bits: the last byte must be addressable. */
        int64_t last;
        if (__builtin_mul_overflow(rows - 1, *stride, &last) || __builtin_add_overflow(last, plan->cols, &last) ||
            __builtin_mul_overflow(last, size, &last) || (uint64_t)last > UINTPTR_MAX - (uintptr_t)t->data)
            return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: %s %d ('%s'): %lld rows of stride %lld "
                                "do not fit in the address space", role, i, name, (long long)rows,
                                (long long)*stride);
    }
    int a = tensor_align(t, *stride * size);
    if (a < size)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: %s %d ('%s') at %p is not aligned to its "
                            "%lld-byte elements", role, i, name, t->data, (long long)size);
    if (a < *align) *align = a;
    return TN_STATUS_OK;
}

/* The tier serving `rows` rows: the first whose plan was made for at least that many. */
static tn_tier *tier_for(tn_plan *plan, int64_t rows) {
    int lo = 0, hi = plan->num_tiers - 1;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (plan->tiers[mid].rows >= rows) hi = mid;
        else lo = mid + 1;
    }
    return &plan->tiers[lo];
}

/* The tier's variant for tensors aligned to align bytes, peeled only where they agree (tn_plan_rows_agree), built
   on first need. */
static tn_status variant_for(tn_plan *plan, tn_tier *tier, int align, const tn_launch_args *args, void *stream,
                             tn_variant **out) {
    /* A plan that does not peel runs whatever the tensors' offsets: the agreement is asked only past it. */
    const int fits = align >= tier->primary->desc.align_bytes;
    if (fits && !tier->primary->desc.peel) {
        *out = tier->primary;
        return TN_STATUS_OK;
    }
    const int agree = tn_plan_rows_agree(plan, args);
    if (fits && agree) {
        *out = tier->primary;
        return TN_STATUS_OK;
    }
    if (!agree && tier->unpeeled_primary && align >= tier->unpeeled_primary->desc.align_bytes) {
        *out = tier->unpeeled_primary;
        return TN_STATUS_OK;
    }
    tn_variant *v = &tier->variants[align_class(align)];
    if (atomic_load(&v->ready) && (agree || !v->desc.peel)) { /* built for this alignment, and runs here */
        *out = v;
        return TN_STATUS_OK;
    }
    if (!agree) v = &tier->unpeeled[align_class(align)];
    if (atomic_load(&v->ready)) {
        *out = v;
        return TN_STATUS_OK;
    }
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    plan->ctx->cu->StreamIsCapturing((CUstream)stream, &cap);
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE)
        return tn_set_error(plan->ctx, TN_STATUS_INVALID_ARGUMENT,
                            "launch: tensors aligned to %d bytes%s need a kernel variant that is not built yet, and "
                            "the stream is capturing a graph; launch once outside capture with such tensors, or "
                            "create the plan with align_bytes = %d", align,
                            agree ? "" : ", at different offsets from a 16-byte boundary,", align);
    pthread_mutex_lock(&plan->lock);
    tn_status st = TN_STATUS_OK;
    if (!atomic_load(&v->ready)) {
        const build_for b = {tier->rows, align, !agree};
        st = schedule_build(plan, v, b, plan->kind);
        /* A forced kind that cannot take these tensors (tma below 16-byte alignment) yields to the scheduler's choice. */
        if (st == TN_STATUS_UNSUPPORTED && plan->kind >= 0) st = schedule_build(plan, v, b, -1);
        if (st == TN_STATUS_OK) atomic_store(&v->ready, 1);
    }
    pthread_mutex_unlock(&plan->lock);
    if (st == TN_STATUS_OK) *out = v;
    return st;
}

/* Whether every ROW tensor is at the narrowest one's offset from a 16-byte boundary, counted in its own
   elements, on every row: then a peeled plan's vectors start at one column in all of them. Element offsets
   e_t(row) = address_t / size_t + row * stride_t agree modulo 16 / size_t for every row exactly when the
   addresses' and the strides' do. */
int tn_plan_rows_agree(const tn_plan *plan, const tn_launch_args *args) {
    const tn_fusion *f = plan->fusion;
    uint64_t e[2 * TN_MAX_IO], st[2 * TN_MAX_IO];
    int size[2 * TN_MAX_IO], n = 0, narrow = 0;
    /* The ROW tensors the kernel touches: the inputs the fusion uses (the kernel finds its boundary from the
       narrowest of those and of the outputs), every output. */
    for (int k = 0; k < f->num_nodes + f->num_outputs; k++) {
        const int is_out = k >= f->num_nodes, i = is_out ? k - f->num_nodes : f->nodes[k].io_index;
        if (!is_out && (f->nodes[k].kind != TN_OP_INPUT || !plan->an.used[k])) continue;
        const tn_io_info *io = is_out ? &plan->outputs[i] : &plan->inputs[i];
        const tn_tensor *t = is_out ? &args->outputs[i] : &args->inputs[i];
        if (io->shape != TN_SHAPE_ROW) continue;
        size[n] = (int)tn_dtype_size(io->dtype);
        e[n] = (uint64_t)(uintptr_t)t->data / (uint64_t)size[n];
        st[n] = (uint64_t)(t->row_stride ? t->row_stride : plan->cols);
        if (size[n] < size[narrow]) narrow = n;
        n++;
    }
    const int64_t rows = args->rows ? args->rows : plan->rows;
    for (int t = 0; t < n; t++) {
        const uint64_t m = (uint64_t)(16 / size[t]) - 1;
        /* Strides matter only from the second row on. */
        if (((e[t] - e[narrow]) & m) || (rows > 1 && ((st[t] - st[narrow]) & m))) return 0;
    }
    return 1;
}

/* The grid of launch l for `rows` rows of a plan made for more: every kernel loops over its row
   groups with the row count it is given (grid-stride), so any grid is correct; cut to the CTAs
   (whole clusters) that have a row group, never grown, so no cluster is left without rows. */
static int64_t grid_for_rows(const tn_plan_desc *d, const tn_launch_desc *l, int64_t rows) {
    const int64_t per_cta = d->rows_per_cta > 0 ? d->rows_per_cta : 1, cl = l->cluster > 1 ? l->cluster : 1;
    const int64_t needed = (rows + per_cta - 1) / per_cta * cl;
    return needed < l->grid ? needed : l->grid;
}

/* The grid launch i of the tier's variant v gets for `rows` rows: cut where the tier was made for more. */
static int64_t launch_grid(const tn_tier *tier, const tn_variant *v, int i, int64_t rows) {
    return rows < tier->rows ? grid_for_rows(&v->desc, &v->launches[i], rows) : v->launches[i].grid;
}

tn_status tn_plan_prepare(tn_plan *plan, const tn_launch_args *args, tn_prepared *out) {
    if (!plan) return TN_STATUS_INVALID_ARGUMENT;
    tn_context *ctx = plan->ctx;
    const tn_fusion *f = plan->fusion;
    if (!args || !out) return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: null arguments");
    if (args->num_inputs != f->num_inputs || args->num_outputs != f->num_outputs || args->num_params != f->num_params)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: fusion '%s' takes %d inputs, %d outputs and %d "
                            "params; got %d, %d and %d", f->name, f->num_inputs, f->num_outputs, f->num_params,
                            args->num_inputs, args->num_outputs, args->num_params);
    if ((f->num_inputs && !args->inputs) || !args->outputs || (f->num_params && !args->params))
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: null inputs, outputs or params array");
    const int64_t rows = args->rows ? args->rows : plan->rows;
    if (rows < 1 || rows > plan->rows)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "launch: rows %lld: the plan serves 1 to %lld rows "
                            "(0: all of them); make a plan for more", (long long)args->rows, (long long)plan->rows);
    int64_t in_stride[TN_MAX_IO], out_stride[TN_MAX_IO];
    int align = 16;
    for (int i = 0; i < f->num_inputs; i++) {
        tn_status st = check_tensor(plan, "input", i, &args->inputs[i], &plan->inputs[i], rows, &in_stride[i], &align);
        if (st != TN_STATUS_OK) return st;
    }
    for (int o = 0; o < f->num_outputs; o++) {
        tn_status st = check_tensor(plan, "output", o, &args->outputs[o], &plan->outputs[o], rows, &out_stride[o], &align);
        if (st != TN_STATUS_OK) return st;
    }
    tn_kernel_arg *vals = out->vals;
    for (int i = 0; i < plan->abi.count; i++) {
        const tn_abi_arg *a = &plan->abi.args[i];
        switch (a->kind) {
        case TN_ARG_INPUT: vals[i].ptr = args->inputs[a->index].data; break;
        case TN_ARG_INPUT_LD: vals[i].i64 = in_stride[a->index]; break;
        case TN_ARG_OUTPUT: vals[i].ptr = args->outputs[a->index].data; break;
        case TN_ARG_OUTPUT_LD: vals[i].i64 = out_stride[a->index]; break;
        case TN_ARG_PARAM: vals[i].f32 = args->params[a->index]; break;
        case TN_ARG_ROWS: vals[i].i64 = rows; break;
        default: return tn_set_error(ctx, TN_STATUS_INTERNAL, "launch: unknown kernel argument kind %d", (int)a->kind);
        }
        out->ptrs[i] = &vals[i];
    }

    /* Arguments are checked first, so a machine without a GPU tests them too. */
    if (!ctx->has_gpu) return tn_set_error(ctx, TN_STATUS_NO_DEVICE, "launch: no GPU: %s", ctx->no_gpu_reason);
    tn_status st = tn_context_bind(ctx);
    tn_tier *tier = tier_for(plan, rows);
    tn_variant *v = NULL;
    if (st == TN_STATUS_OK)
        st = variant_for(plan, tier, align, args, args->stream, &v);
    if (st != TN_STATUS_OK) return st;
    out->num_launches = v->num_launches;
    for (int i = 0; i < v->num_launches; i++) {
        out->launches[i] = v->launches[i];
        out->fns[i] = v->fns[i];
        out->launches[i].grid = launch_grid(tier, v, i, rows);
    }
    /* grid_for_rows maps rows to CTAs by the plan's rows_per_cta: a plan of several launches (a finishing
       kernel) will need its own mapping per launch. */
    if (rows < tier->rows && v->num_launches > 1)
        return tn_set_error(ctx, TN_STATUS_UNSUPPORTED, "launch: rows %lld of %lld: a plan of %d launches runs "
                            "all its rows", (long long)rows, (long long)tier->rows, v->num_launches);
    out->stream = (CUstream)args->stream;
    return TN_STATUS_OK;
}

tn_status tn_prepared_launch(tn_plan *plan, tn_prepared *p) {
    for (int i = 0; i < p->num_launches; i++) {
        tn_status st = tn_launch_kernel(plan->ctx, p->fns[i], &p->launches[i], p->ptrs, p->stream);
        if (st != TN_STATUS_OK) return st;
    }
    return TN_STATUS_OK;
}

tn_status tn_plan_launch(tn_plan *plan, const tn_launch_args *args) {
    tn_prepared p;
    tn_status st = tn_plan_prepare(plan, args, &p);
    return st == TN_STATUS_OK ? tn_prepared_launch(plan, &p) : st;
}

const tn_fusion *tn_plan_fusion(const tn_plan *plan) { return plan->fusion; }
tn_context *tn_plan_context(const tn_plan *plan) { return plan->ctx; }
int64_t tn_plan_rows(const tn_plan *plan) { return plan->rows; }
int64_t tn_plan_cols(const tn_plan *plan) { return plan->cols; }
int64_t tn_plan_tier_launch(tn_plan *plan, int64_t rows, int64_t *tier_rows, const tn_plan_desc **desc) {
    const tn_tier *tier = tier_for(plan, rows);
    *tier_rows = tier->rows;
    *desc = &tier->primary->desc;
    return launch_grid(tier, tier->primary, 0, rows);
}
int64_t tn_plan_bytes_for_rows(const tn_plan *plan, int64_t rows) { return tn_analysis_bytes(&plan->an, rows, plan->cols); }
const tn_plan_desc *tn_plan_primary_desc(const tn_plan *plan) { return &top_tier(plan)->primary->desc; }
