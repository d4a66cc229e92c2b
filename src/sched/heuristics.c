/* The scheduler (see heuristics.h): one table of plan kinds, each with its
   schedule, check and candidate functions (one file a kind: register.c,
   looped.c, tma.c, tma_ws.c, cluster.c; what they share in common.c and
   sched_internal.h). tn_schedule walks the table in preference order and
   keeps why each kind was passed over; `tmanorm tune` enumerates the same
   candidates. Every decision appends a clause to plan.why, so `tmanorm
   explain` can say it. */
#include "sched/sched_internal.h"

#include <string.h>

/* Widest vector (elements) that divides cols, fits one 16-byte access of the
   narrowest tensor and whose accesses the tensors' alignment allows. */
static int pick_vec(const tn_schedule_request *r, tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    int vec = 16 / a->min_row_elem_size;
    while (vec > 1 && (r->cols % vec || min_i(16, vec * a->max_elem_size) > r->align)) vec /= 2;
    /* vec 1 needs only element alignment, which every launch checks. */
    if (vec < 16 / a->min_row_elem_size)
        tn_why(p, "vec %d (not %d: %s)", vec, 16 / a->min_row_elem_size,
               r->cols % (2 * vec) ? "cols not divisible" : "tensors aligned to fewer bytes");
    else
        tn_why(p, "vec %d = one 16-byte access of the narrowest tensor", vec);
    return vec;
}

/* ---- the kind table -------------------------------------------------------------- */

typedef struct kind_row {
    tn_plan_kind kind;
    /* Fills p (vec and the common fields are set); 0 and why not in err. Not
       forced: a kind may also decline shapes where another kind is better. */
    int (*schedule)(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
    /* The kind's own rules for a plan (the common ones are in tn_plan_desc_check). */
    int (*check)(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
    /* The plans `tune` times for this kind. */
    int (*candidates)(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);
} kind_row;

/* In preference order: the first kind that takes the shape is chosen. */
static const kind_row k_kinds[] = {
    {TN_PLAN_TMA_WS, tn_schedule_tma_ws, tn_check_tma_ws, tn_candidates_tma_ws},
    {TN_PLAN_CLUSTER, tn_schedule_cluster, tn_check_cluster, tn_candidates_cluster},
    {TN_PLAN_TMA, tn_schedule_tma, tn_check_tma, tn_candidates_tma},
    {TN_PLAN_REGISTER, tn_schedule_register_kind, tn_check_register, tn_candidates_register},
    {TN_PLAN_LOOPED, tn_schedule_looped, tn_check_looped, tn_candidates_looped},
};
#define NUM_KINDS (int)(sizeof k_kinds / sizeof k_kinds[0])

static const kind_row *kind_row_of(tn_plan_kind kind) {
    for (int i = 0; i < NUM_KINDS; i++)
        if (k_kinds[i].kind == kind) return &k_kinds[i];
    return NULL;
}

int tn_kind_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    const kind_row *k = kind_row_of(p->kind);
    if (!k) REJECT("plan: unknown kind %d", (int)p->kind);
    return k->check(p, a, d, err, cap);
}

/* The fields every kind shares: shape, target, vector width. */
static int common_fields(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    memset(p, 0, sizeof *p);
    p->chunks = 1;
    p->cluster = 1;
    p->rows = r->rows;
    p->cols = r->cols;
    p->cc = r->props->cc_major * 10 + r->props->cc_minor;
    if (!tn_analysis_plannable(r->analysis, r->props, err, cap)) return 0;
    if (r->pdl && p->cc < 90) REJECT("programmatic dependent launch needs sm_90 or newer; the target is sm_%d", p->cc);
    p->pdl = r->pdl;
    p->vec = pick_vec(r, p);
    p->align_bytes = tn_plan_access_align(p, r->analysis->max_elem_size);
    return 1;
}

/* ---- register and cluster: the COL vectors with the row's loads ------------------------------- */

/* CTAs an SM plan p's grid needs to run in one wave (a cluster plan one more where it needs two or more, as
   clusters pack into GPCs: clusters_all_run), or 0 where their threads do not fit an SM. */
static int64_t one_wave_ctas(const tn_schedule_request *r, const tn_plan_desc *p) {
    int64_t per_sm = ceil_div(p->grid, r->props->sm_count);
    if (p->kind == TN_PLAN_CLUSTER && per_sm >= 2) per_sm++;
    return per_sm * p->block_threads <= r->props->max_threads_per_sm ? per_sm : 0;
}

/* Registers a thread of register or cluster plan p needs by the scheduler's estimate: its row's (or slice's)
   vectors and the special-function values it carries. */
static int64_t plan_regs(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int64_t carried = p->carry ? tn_plan_carry_floats(p, r->analysis->num_carried) : 0;
    return (p->kind == TN_PLAN_CLUSTER ? slice_regs(r, p->vec, p->batch) : row_regs(r, p->vec, p->batch)) + carried;
}

/* The launch bound (ctas_per_sm) under which plan p takes its COL vectors (weight, bias) into registers with
   the row's own loads (plan field cols_early) rather than after the reductions; -1 where it does not. Where
   every CTA is resident at once and takes one row group, nothing hides that second wait for memory (tune,
   H100, add_rmsnorm bf16 5 x 40960: 3.60 us over 8 CTAs of 512 x 2, whose weight comes with the row, against
   3.98-4.61 for slices of 3-5 vectors a thread that load it after the cluster's exchange). The registers the
   plan already counts must leave room for them at the CTAs an SM that one wave needs (a cluster plan one more
   where it needs two or more, as clusters pack into GPCs: clusters_all_run); a few-row cluster plan's bound
   above that (bound_ctas, for more clusters at once) comes down to it. Rows of 2 vectors a thread or fewer
   hold their COL vectors with the row's anyway, and ptxas issues them first, ahead of the row's DRAM loads;
   cols_early there puts them behind those loads (on the row's `live`, where ptxas takes them after the first
   reduction, from L2), which only pays where an SM holds few rows: TN_COLS_BEHIND_MAX_ROWS_AN_SM. */
static int cols_early_bound(const tn_schedule_request *r, const tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (!a->col_elem_bytes || p->cols_early || p->pipeline || !tn_plan_cols_early_kind(p)) return -1;
    const int cluster = p->kind == TN_PLAN_CLUSTER;
    const int64_t groups = cluster ? r->rows : ceil_div(r->rows, p->rows_per_cta);
    if ((cluster ? p->grid / p->cluster : p->grid) < groups) return -1; /* CTAs loop: the next group hides it */
    const int64_t per_sm = one_wave_ctas(r, p);
    if (!per_sm) return -1;
    if (p->batch <= TN_COL_IN_REGISTERS_MAX_VECTORS)
        return r->rows <= (int64_t)TN_COLS_BEHIND_MAX_ROWS_AN_SM * d->sm_count ? p->ctas_per_sm : -1;
    /* Their words counted as the row's are (TN_REG_NEED: twice, raw and converted; at once they spilled 4 bytes
       in add_rmsnorm 1 x 262144's 16 CTAs of 128 x 16). */
    const int64_t cols = 2 * p->batch * ceil_div((int64_t)p->vec * a->col_elem_bytes, 4);
    const int64_t regs = plan_regs(r, p);
    const int64_t bound = per_sm > p->ctas_per_sm ? per_sm : p->ctas_per_sm;
    if (regs + cols <= regs_cap(d, (int)(bound * p->block_threads))) return p->ctas_per_sm;
    if (p->ctas_per_sm > per_sm && regs + cols <= regs_cap(d, (int)(per_sm * p->block_threads)))
        return per_sm >= 2 ? (int)per_sm : 0;
    return -1;
}

static tn_plan_desc with_cols_early(const tn_plan_desc *p, int bound) {
    tn_plan_desc q = *p;
    q.cols_early = 1;
    q.ctas_per_sm = bound;
    return q;
}

static void choose_cols_early(const tn_schedule_request *r, tn_plan_desc *p) {
    const int bound = cols_early_bound(r, p), was = p->ctas_per_sm;
    if (bound < 0) return;
    *p = with_cols_early(p, bound);
    tn_why(p, "cols_early: the COL vectors loaded with the row's, as every CTA runs at once and takes one row group");
    if (bound != was && bound) tn_why(p, "compiled for %d CTAs an SM (%d before): the wave needs no more", bound, was);
    if (bound != was && !bound) tn_why(p, "no launch bound (%d CTAs an SM before): the wave needs one an SM", was);
}

/* ---- register and cluster: the first row group into L2 before the PDL wait --------------------------------- */

/* Whether plan p prefetches its first row group into L2 before griddepcontrol.wait (plan field early_l2). With PDL
   the previous kernel lets this one be scheduled from its top, so where the whole grid is resident at once
   (one_wave_ctas), every CTA starts while that kernel still runs, and its first row group's DRAM latency can
   overlap that kernel's end (bench/probes/tail.cu stage 6, H200: 64 x 8192 bf16 rows not
   in L2, 2.12 us a launch without the prefetch, 1.72 with it; rows already in L2 1.05 and 1.03; A/B on the H100,
   bench/ab/noearly*: 0.74-0.94 over one-wave shapes of 512 B to 16 MiB). A CTA of a later wave starts once that
   kernel is done, where the prefetch only runs ahead of its own loads by a few cycles. The wave is counted by
   threads alone: grids that registers or the launch bound split into two waves gained or held in the A/B too
   (softmax 512 x 20480, 2 an SM by its bound, 4 needed: 0.926; add_rmsnorm 512 x 16384 0.996), and counting
   every limit turned off measured gains (softmax 512 x 8192 0.906, 64 x 65536 0.888). Up to the L2's size:
   past it, what the previous kernel streams through L2 while these CTAs wait evicts the lines before their use
   (H200, add_rmsnorm 64 x 131072, 67 MB over 60: 28.96 -> 31.13 us). Between half the L2 and all of it
   (bench/ab/early-l2-h100, H100, 2026-12-06, 29 shapes of 25-50 MB over its 50 MB): faster with the prefetch at
   18 (layernorm 200 x 40960 15.17 us against 18.08, 64 x 131072 17.68 against 19.30; softmax 64 x 131072 14.27
   against 15.56, 100 x 131072 (the whole L2) 20.66 against 22.16; rmsnorm 128 x 98304 18.96 against 20.81,
   512 x 16384 13.15 against 13.82; add_rmsnorm 50 x 65536 12.91 against 14.20), within 3% at 9, slower only
   where the whole grid is one wave of TN_EARLY_L2_CROWDED_CTAS or more CTAs an SM: there
   every CTA's prefetch, the whole problem's, is in flight at once with that kernel's last loads (add_rmsnorm
   1000 x 4096 at 8 an SM 13.42 against 12.37, 512 x 8192 at 4 13.45 against 12.57; clusters of 8 x 128 at 3 an
   SM, 64 x 65536-131072, held within 1.7%), so such grids keep what their first wave prefetches to half the
   L2 (their later waves prefetch nothing ahead: softmax 1000 x 8192 at 4 an SM, 16 MB in the first wave, 12.05
   us against 12.68; rmsnorm 1000 x 12288 at 3, 19 MB, 18.23 against 18.75). A grid without a launch bound counts
   the CTAs an SM its estimated registers and its threads allow (rmsnorm 2000 x 4096 at 8 or more an SM, at most
   17-25 MB in its first wave: 12.77 against 13.46; add_rmsnorm 700 x 8192, all 35 MB in one wave: 0.988). */
static int early_l2_fits(const tn_schedule_request *r, const tn_plan_desc *p) {
    if (!p->pdl || !tn_plan_early_l2_kind(p)) return 0;
    const int64_t bytes = tn_analysis_bytes(r->analysis, r->rows, r->cols); /* -1: past int64 */
    const int64_t l2 = r->props->l2_bytes, sms = r->props->sm_count;
    if (bytes < 0 || bytes > l2 || one_wave_ctas(r, p) == 0) return 0;
    /* The CTAs an SM its first wave runs: its launch bound, or (none) what the registers estimated and the
       threads allow; at most the grid's share. */
    const int64_t bound = p->ctas_per_sm ? p->ctas_per_sm : ctas_an_sm(r->props, plan_regs(r, p), p->block_threads);
    const int64_t per_sm = min_i64(bound, ceil_div(p->grid, sms));
    if (per_sm < TN_EARLY_L2_CROWDED_CTAS) return 1;
    const int64_t wave = per_sm * sms; /* bytes <= l2 and wave <= the SMs' thread slots: no overflow */
    return (p->grid > wave ? bytes * wave / p->grid : bytes) <= l2 / 2;
}

/* Whether plan p (pdl on) triggers the next kernel at each CTA's last row group (pdl 2) rather than at its top:
   cluster plans. Their grid loops wherever the driver places fewer clusters than the rows need, and leaves
   slots its clusters cannot fill; triggered at the top, the next kernel's CTAs take those slots at once and
   start unevenly (H100, softmax 512 x 65536 over 92 persistent clusters of 4: 53.3 us triggered at the top,
   49.4 without PDL; a grid of one row group a CTA triggers at its top either way). Other kinds' persistent
   grids fill whole SMs by threads: untimed as a rule, tune times both (tn_schedule_candidates). */
static int takes_late_trigger(const tn_plan_desc *p) { return p->pdl && p->kind == TN_PLAN_CLUSTER; }

/* Whether plan p stores the outputs that need no reduction (add_rmsnorm's x + residual) in its first phase,
   before the reductions (plan field early_stores), rather than beside the others after them: where every CTA (a
   cluster) takes one row group, nothing else of its SM's is in flight while the row's reductions wait, and the
   early writes stream through that wait. Where the CTAs loop over row groups, the next group's loads do, and
   the early writes compete with them. A/B on the H100 (bench/ab_code.sh against the stores after the
   reductions, session 22, 2026-12-07-h100-s22-ab-early*.log), add_rmsnorm bf16, one row group a CTA: 132 x
   32768 13.40 us against 15.03, 96 x 32768 11.65 against 12.33, 200 x 32768 21.50 against 23.50, 64 x 32768
   (clusters of 2) 7.43 against 8.10, 96 x 4096 1.96 against 2.14; 4096 x 4096 46.39 against 46.02; slower at
   264 x 4096 (4.01 against 3.67) and 96 x 12288 in f16 (5.25 against 4.60; bf16 4.38 against 4.67). Clusters
   that loop: 512 x 32768 50.01 against 48.90, 600 x 32768 59.04 against 57.85, f32 600 x 12288 43.92 against
   42.11 (264 x 32768 24.78 against 25.36). tune times both (tn_schedule_candidates). */
static int takes_early_stores(const tn_schedule_request *r, const tn_plan_desc *p) {
    return r->analysis->early_row_outputs && tn_plan_early_stores_kind(p) && !tn_plan_grid_loops(p);
}

int tn_schedule(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    tn_plan_desc base;
    if (!common_fields(r, &base, err, cap)) return 0;
    char passed[640] = "";
    for (int i = 0; i < NUM_KINDS; i++) {
        const kind_row *k = &k_kinds[i];
        const int forced = r->kind == (int)k->kind;
        if (r->kind >= 0 && !forced) continue;
        char why_not[320] = "";
        *p = base;
        p->kind = k->kind;
        if (forced) tn_why(p, "%s plan forced", tn_plan_kind_name(k->kind));
        else if (passed[0]) tn_why(p, "%s", passed);
        if (!forced && avoided(r, k->kind)) snprintf(why_not, sizeof why_not, "ptxas spilled in its plan");
        else if (k->schedule(r, p, forced, why_not, sizeof why_not)) {
            choose_cols_early(r, p);
            if (takes_late_trigger(p)) {
                p->pdl = 2;
                tn_why(p, "pdl 2: the next kernel triggered at each CTA's last row group, as a cluster grid may loop "
                          "over its rows");
            }
            if ((p->early_stores = takes_early_stores(r, p)))
                tn_why(p, "early_stores: the outputs that need no reduction stored before the reductions, as every "
                          "CTA takes one row group");
            if ((p->early_l2 = early_l2_fits(r, p)))
                tn_why(p, "early_l2: the first row group prefetched into L2 before the PDL wait, as the grid is one "
                          "wave and the problem's bytes fit the L2 (its first wave's half of it, at %d or more CTAs "
                          "an SM)", TN_EARLY_L2_CROWDED_CTAS);
            return 1;
        }
        if (forced) {
            snprintf(err, cap, "%s plan: %s", tn_plan_kind_name(k->kind), why_not);
            return 0;
        }
        size_t len = strlen(passed);
        snprintf(passed + len, sizeof passed - len, "%snot %s: %s", len ? "; " : "", tn_plan_kind_name(k->kind),
                 why_not);
    }
    snprintf(err, cap, "no plan kind takes the shape: %s", passed);
    return 0;
}

/* The plans that take an online pair (tn_plan_online_kind), but shared slices, sized for the few registers of
   many CTAs an SM (the pair's second pass spilled 460 bytes in softmax 4096 x 65536's 8 x 64 at 7 an SM). */
static int online_fits(const tn_plan_desc *p) { return tn_plan_online_kind(p) && !p->shared_slice; }

int tn_schedule_candidates(const tn_schedule_request *r, tn_plan_desc *out, int cap) {
    tn_plan_desc base;
    char err[320];
    if (!common_fields(r, &base, err, sizeof err)) return 0;
    memset(base.why, 0, sizeof base.why); /* a candidate is plain data: nothing left behind the text */
    snprintf(base.why, sizeof base.why, "tune candidate");
    int n = 0;
    for (int i = 0; i < NUM_KINDS && n < cap; i++) n += k_kinds[i].candidates(r, &base, out + n, cap - n);
    /* Plans that keep the row on chip, again with the special-function values a later phase needs carried in
       registers where they fit (untimed until tune on the GPU says: softmax's register plan takes 87 registers
       with it, 128 without, at 4096 x 16384). */
    for (int i = 0, plain = n; i < plain && n < cap; i++)
        if (tn_carry_fits(r, &out[i])) {
            out[n] = out[i];
            out[n++].carry = 1;
        }
    /* ... and each plan that would wait for its COL vectors after the reductions with nothing to hide it, again
       with them taken with the row's loads (cols_early_bound). */
    for (int i = 0, plain = n; i < plain && n < cap; i++) {
        const int bound = cols_early_bound(r, &out[i]);
        if (bound < 0) continue;
        out[n] = with_cols_early(&out[i], bound);
        int twice = 0; /* a plan and its other-bound twin may come down to the same bound */
        for (int k = plain; k < n && !twice; k++) twice = tn_plan_desc_same(&out[k], &out[n]);
        n += !twice;
    }
    /* ... and each plan of a fusion with online pairs (softmax's max and sum of exp) again with them reduced
       together (of a plan and its carrying twin, the twin): one reduction round and one cluster exchange a row
       instead of two (untimed: tune decides). */
    for (int i = 0, plain = n; i < plain && n < cap && r->analysis->online_pairs; i++)
        if (online_fits(&out[i]) && (out[i].carry || !tn_carry_fits(r, &out[i]))) { /* the carrying twin, where any */
            out[n] = out[i];
            out[n++].online = 1;
        }
    for (int i = 0; i < n; i++) {  /* as the scheduler would */
        out[i].pdl = takes_late_trigger(&out[i]) ? 2 : out[i].pdl;
        out[i].early_l2 = early_l2_fits(r, &out[i]);
        out[i].early_stores = takes_early_stores(r, &out[i]);
    }
    /* ... and each with the outputs that need no reduction stored the other way (early_stores). */
    for (int i = 0, plain = n; i < plain && n < cap && r->analysis->early_row_outputs; i++)
        if (tn_plan_early_stores_kind(&out[i])) {
            out[n] = out[i];
            out[n++].early_stores = !out[i].early_stores;
        }
    /* ... and each whose grid loops over row groups again with the other triggers: pdl 1 <-> 2, and 3 (none: each
       CTA triggers as it exits; H100, session 13: PDL off was 1-6% faster than pdl 2 at softmax 512 x 65536 and
       64 x 131072, where the next kernel's CTAs still start in the slots the first CTAs to finish leave). */
    for (int i = 0, plain = n; i < plain && n + 1 < cap; i++)
        if (out[i].pdl && tn_plan_grid_loops(&out[i])) {
            out[n] = out[i];
            out[n++].pdl = out[i].pdl == 2 ? 1 : 2;
            out[n] = out[i];
            out[n++].pdl = 3;
        }
    return n;
}
