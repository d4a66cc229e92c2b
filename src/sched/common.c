/* The scheduler's shared helpers (sched_internal.h): the plan's why, carrying special-function values in
   registers, and the rules several kinds' checks share. */
#include "sched/sched_internal.h"

#include <stdarg.h>
#include <string.h>

void tn_why(tn_plan_desc *p, const char *fmt, ...) {
    size_t len = strlen(p->why);
    if (len + 3 >= sizeof p->why) return;
    if (len) {
        memcpy(p->why + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why + len, sizeof p->why - len, fmt, ap);
    va_end(ap);
}

/* Keeps the special-function values a later phase needs again in registers
   (plan field carry) where they fit: one evaluation an element instead of one
   a phase. tune on the H200, bf16 softmax, the same shapes with and without:
   register plans 3-5% faster (4096 x 32768 164.9 us against 171.3), cluster
   plans 4-6% (4096 x 131072 572.7 against 610.5; 4096 x 65536 283.0 against
   297.8). Not for tma plans, whose threads read their row back from shared
   memory at little cost: 2-5% slower at 4096 rows (141.0 against 147.6). */
int tn_carry_fits(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int64_t floats = tn_plan_carry_floats(p, r->analysis->num_carried);
    /* A slice in shared memory (or left in L2) is read again instead (and carry would cost it its few
       registers). */
    return r->analysis->num_carried && !p->shared_slice && !p->l2_slice && !p->peel && floats > 0 &&
           floats <= tn_plan_carry_limit(p, r->props); /* a peeled row's outside elements have no carry slots */
}

void tn_choose_carry(const tn_schedule_request *r, tn_plan_desc *p) {
    if (!tn_carry_fits(r, p)) return;
    const int64_t floats = tn_plan_carry_floats(p, r->analysis->num_carried);
    p->carry = 1;
    tn_why(p, "carry: %d special-function value%s an element kept in registers for the phase that takes %s again "
           "(%lld a thread)", r->analysis->num_carried, r->analysis->num_carried > 1 ? "s" : "",
           r->analysis->num_carried > 1 ? "them" : "it", (long long)floats);
}

/* The kinds without a producer warp leave its fields at rest. */
int tn_check_no_ws_fields(const tn_plan_desc *p, char *err, size_t cap) {
    if (p->consumer_groups || p->chunks != 1 || p->producer_regs || p->consumer_regs || p->cluster != 1)
        REJECT("plan: a %s plan has no consumer groups, chunks, register sharing or cluster (consumer_groups 0, "
               "chunks 1, producer_regs and consumer_regs 0, cluster 1)", tn_plan_kind_name(p->kind));
    return 1;
}

/* Register, looped and cluster plans need exactly their vector accesses' alignment. */
int tn_check_access_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap) {
    if (p->align_bytes != tn_plan_access_align(p, a->max_elem_size))
        REJECT("plan: align_bytes %d is not what vec %d needs (%d)", p->align_bytes, p->vec,
               tn_plan_access_align(p, a->max_elem_size));
    return 1;
}
int tn_check_vector_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap) {
    return tn_check_no_ws_fields(p, err, cap) && tn_check_access_align(p, a, err, cap);
}
