/* What the scheduler's files share: heuristics.c (the kind table, tn_schedule), one file a plan kind
   (register.c, looped.c, tma.c, tma_ws.c, cluster.c) and common.c. The helpers that word a plan's why and
   count a row's registers, and each kind's schedule, check and candidate functions. Internal to src/sched/. */
#ifndef TN_SCHED_INTERNAL_H
#define TN_SCHED_INTERNAL_H

#include "sched/heuristics.h"

#include <stdio.h>

/* Appends a clause to plan.why ("; " between clauses), so `tmanorm explain` can say it. */
void tn_why(tn_plan_desc *p, const char *fmt, ...);

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int min_i(int a, int b) { return a < b ? a : b; }
static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

#define REJECT(...) return snprintf(err, cap, __VA_ARGS__), 0

/* p peeled at vec `full` (one 16-byte access of the narrowest tensor, from each row's first 16-byte boundary):
   element alignment is enough. */
static inline tn_plan_desc peeled(const tn_plan_desc *p, int full) {
    tn_plan_desc q = *p;
    q.vec = full;
    q.peel = 1;
    q.align_bytes = 1;
    return q;
}

/* Whether the request passes over a kind (its plan spilled for this fusion). */
static inline int avoided(const tn_schedule_request *r, tn_plan_kind kind) { return (r->avoid >> kind) & 1u; }

/* Registers a thread of a CTA of `block` threads may take: the register file over the block, in 8-register steps,
   at most 255. */
static inline int regs_cap(const tn_device_props *d, int block) {
    int cap = (d->regs_per_sm / block) & ~7;
    return cap > 255 ? 255 : cap;
}

/* Words of row buffer per vector: the loaded inputs, scaled to the share that
   later phases still take (kept_values of num_stage_inputs). */
static inline int words_per_vector(const tn_analysis *a, int vec) {
    const int inputs = a->num_stage_inputs ? a->num_stage_inputs : 1;
    return (int)ceil_div((int64_t)vec * a->buffer_elem_bytes * (a->kept_values ? a->kept_values : 1), 4 * inputs);
}

/* CTAs of `block` threads needing `regs` registers a thread that one SM holds
   at once, by its register file and its threads. */
static inline int64_t ctas_an_sm(const tn_device_props *d, int64_t regs, int block) {
    return min_i64(d->regs_per_sm / (regs * block), d->max_threads_per_sm / block);
}

/* Registers a thread needs to keep `batch` vectors of its row (or slice). */
static inline int row_regs(const tn_schedule_request *r, int vec, int batch) {
    return TN_REG_NEED(batch * words_per_vector(r->analysis, vec));
}

/* Registers a cluster thread needs for `batch` vectors of its slice. */
static inline int slice_regs(const tn_schedule_request *r, int vec, int batch) {
    return row_regs(r, vec, batch) + TN_CLUSTER_EXCHANGE_REGS;
}

/* Whether `nv` vectors over `t` threads leave a thread's last vector to only some of them, where a thread
   keeps TN_RAGGED_MIN_VECTORS or more: ptxas issues that vector's loads after the first vectors' values are
   used, a second wait for memory a row (SASS: add_rmsnorm bf16 5 x 40960 over clusters of 256 x 3;
   softmax 1000 x 9216 at 256 x 5). Over the H200's tune tables, such a plan lost to the same plan at half
   the threads, whose vectors divide the row or slice, in 248 of 279 pairs (median 1.125; register plans 19
   of 19, median 1.13), where plans that divide theirs lose to their neighbours half the time (median 1.000).
   True where t leaves such a ragged vector and t / 2 threads divide the vectors: take t / 2. */
static inline int halve_ragged(int64_t nv, int t) {
    return nv % t && ceil_div(nv, t) >= TN_RAGGED_MIN_VECTORS && nv % (t / 2) == 0;
}

/* Special-function values carried in registers (common.c): whether they fit p, and p set to carry them if so. */
int tn_carry_fits(const tn_schedule_request *r, const tn_plan_desc *p);
void tn_choose_carry(const tn_schedule_request *r, tn_plan_desc *p);

/* The rules several kinds' checks share (common.c). */
int tn_check_no_ws_fields(const tn_plan_desc *p, char *err, size_t cap);
int tn_check_access_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap);
int tn_check_vector_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap);

/* Each kind's row of the kind table (heuristics.c, kind_row): schedule, check, candidates. */
int tn_schedule_register(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_schedule_register_kind(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_register_pipelines(const tn_schedule_request *r, const tn_plan_desc *reg);
int tn_check_register(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
int tn_candidates_register(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);

int tn_schedule_looped(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_check_looped(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
int tn_candidates_looped(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);

int tn_schedule_tma(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_check_tma(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
int tn_candidates_tma(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);

int tn_schedule_tma_ws(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_check_tma_ws(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
int tn_candidates_tma_ws(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);

int tn_schedule_cluster(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
int tn_check_cluster(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
int tn_candidates_cluster(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);

/* What the tma-ws and cluster kinds ask of the tma plans (tma.c): whether two whole rows fit a CTA's shared
   memory, what makes a tma plan impossible (0 and why), whether the register plan's rows are the tma plans'. */
int tn_two_rows_fit(const tn_device_props *d, int64_t row_bytes);
int tn_tma_possible(const tn_analysis *a, int64_t cols, int align, const tn_device_props *d, char *err, size_t cap);
int tn_tma_takes_from_registers(const tn_schedule_request *r, const tn_plan_desc *reg);

#endif
