/* looped: several passes over global memory. The looped plan's schedule, check and tune candidates for the
   kind table in heuristics.c (its last row: the plan every shape can take). */
#include "sched/sched_internal.h"

static void looped_shape(const tn_schedule_request *r, tn_plan_desc *p, int block) {
    p->threads_per_row = p->block_threads = block;
    p->rows_per_cta = 1;
    p->batch = 4;
    /* As many CTAs as the SMs hold by threads, each looping over rows; their re-read inputs stay in L2
       between passes while the grid's rows fit in it (132 SMs x 2 CTAs of 1024 threads: rows up to about
       120 KiB), longer ones are read from DRAM again. */
    int64_t ctas = (int64_t)r->props->sm_count * (r->props->max_threads_per_sm / block);
    p->grid = min_i64(r->rows, ctas);
}

int tn_schedule_looped(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    (void)forced, (void)err, (void)cap;
    const int64_t nv = r->cols / p->vec;
    int block = 32;
    while (block < 1024 && (int64_t)block * 4 < nv) block *= 2;
    looped_shape(r, p, block);
    tn_why(p, "%d threads per row loop over it once per phase (%d phases), %d loads in flight", block,
           r->analysis->num_levels + 1, p->batch);
    return 1;
}

int tn_check_looped(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    (void)d;
    if (!tn_check_vector_align(p, a, err, cap)) return 0;
    if (p->rows_per_cta != 1) REJECT("plan: a looped plan takes one row per CTA");
    if (p->stages || p->smem_bytes) REJECT("plan: a looped plan has no shared-memory ring (stages and smem_bytes 0)");
    return 1;
}

int tn_candidates_looped(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    int n = 0;
    const int64_t resident = tn_plan_l2_resident_rows(r->analysis, r->props, r->cols);
    for (int block = 128; block <= 1024 && n < cap; block *= 2) {
        out[n] = *base;
        out[n].kind = TN_PLAN_LOOPED;
        looped_shape(r, &out[n], block);
        const tn_plan_desc p = out[n++];
        /* ... and a row a CTA launched in waves (about as torch.compile's looped reductions run; untimed as a
           rule) ... */
        if (n < cap && p.grid < r->rows && r->rows <= 0x7fffffff) {
            out[n] = p;
            out[n++].grid = r->rows;
        }
        /* ... and a persistent grid of only as many CTAs as rows fit in L2 (untimed as a rule). Why: at 512 x
           131072 bf16 on an H100 the looped candidates ran 139 us, what reading every row twice from DRAM costs,
           where FlashInfer's rmsnorm (a CTA of 1024 threads a row, two passes over global memory) ran 91 us, 99%
           of the copy; whether L2 residency is the difference is what timing this candidate tells
           (bench/probes/ncu.sh reads the L2 hit rate). */
        if (n < cap && resident < p.grid) {
            out[n] = p;
            out[n++].grid = resident;
        }
    }
    return n;
}
