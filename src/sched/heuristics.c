/* The heuristics of the register and looped plans (see heuristics.h). Each
   decision appends a clause to plan.why, so `tmanorm explain` can say it. */
#include "sched/heuristics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void why(tn_plan_desc *p, const char *fmt, ...) {
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

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int min_i(int a, int b) { return a < b ? a : b; }

/* Widest vector (elements) that divides cols, fits one 16-byte access of the
   narrowest tensor and whose accesses the tensors' alignment allows. */
static int pick_vec(const tn_schedule_request *r, tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    int vec = 16 / a->min_row_elem_size;
    while (vec > 1 && (r->cols % vec || min_i(16, vec * a->max_elem_size) > r->align)) vec /= 2;
    /* vec 1 needs only element alignment, which every launch checks. */
    if (vec < 16 / a->min_row_elem_size)
        why(p, "vec %d (not %d: %s)", vec, 16 / a->min_row_elem_size,
            r->cols % (2 * vec) ? "cols not divisible" : "tensors aligned to fewer bytes");
    else
        why(p, "vec %d = one 16-byte access of the narrowest tensor", vec);
    return vec;
}

static int regs_cap(const tn_device_props *d, int block) {
    int cap = (d->regs_per_sm / block) & ~7;
    return cap > 255 ? 255 : cap;
}

static int schedule_register(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    const int64_t nv = r->cols / p->vec;
    const int words = (int)ceil_div((int64_t)p->vec * a->buffer_elem_bytes, 4);
    int t = 1;
    while (t < 1024 && ceil_div(nv, t) > TN_REG_BATCH_TARGET) t *= 2;
    /* Few rows: give each row more threads so the SMs have work. */
    const int64_t wanted = (int64_t)d->sm_count * 1024;
    int widened = 0;
    while (t < 1024 && t < nv && r->rows < wanted / t) t *= 2, widened = 1;
    /* From the widest useful t up; then, for rows too long for 1024 threads'
       registers, narrower CTAs whose threads may hold more (the cap per thread
       rises as the block shrinks). */
    int tried[16], ntried = 0;
    for (int up = t; up <= 1024 && up <= d->max_threads_per_block; up *= 2) tried[ntried++] = up;
    for (int down = t / 2; down >= 128; down /= 2) tried[ntried++] = down;
    int found = 0, need = 0, block = 0;
    for (int k = 0; k < ntried && !found; k++) {
        t = tried[k];
        int batch = (int)ceil_div(nv, t);
        int rmin = t < 32 ? 32 / t : 1;
        int rows_per_cta = TN_BLOCK_TARGET / t > rmin ? TN_BLOCK_TARGET / t : rmin;
        while (rows_per_cta > rmin && ceil_div(r->rows, rows_per_cta) < 2 * d->sm_count) rows_per_cta /= 2;
        block = t * rows_per_cta;
        need = TN_REG_NEED(batch * words);
        if (need <= regs_cap(d, block) && batch <= 64) {
            p->threads_per_row = t;
            p->batch = batch;
            p->rows_per_cta = rows_per_cta;
            p->block_threads = block;
            found = 1;
        }
    }
    if (!found) {
        snprintf(err, cap, "register plan: a row of %lld vectors needs %d registers per thread at %d threads, above "
                 "the cap of %d", (long long)nv, need, t, regs_cap(d, block));
        return 0;
    }
    why(p, "%d threads per row x %d vectors each hold the row in registers (%d words/thread)%s",
        p->threads_per_row, p->batch, p->batch * words, widened ? ", widened for few rows" : "");
    why(p, "%d rows per CTA -> %d threads", p->rows_per_cta, p->block_threads);
    p->grid = ceil_div(r->rows, p->rows_per_cta);
    if (p->grid > 0x7fffffff) p->grid = 0x7fffffff;
    return 1;
}

static void schedule_looped(const tn_schedule_request *r, tn_plan_desc *p) {
    const int64_t nv = r->cols / p->vec;
    int block = 32;
    while (block < 1024 && (int64_t)block * 4 < nv) block *= 2;
    p->threads_per_row = p->block_threads = block;
    p->rows_per_cta = 1;
    p->batch = 4;
    /* A grid of about two waves keeps each CTA's row in L2 between passes. */
    int64_t ctas = (int64_t)r->props->sm_count * (r->props->max_threads_per_sm / block);
    p->grid = r->rows < ctas ? r->rows : ctas;
    why(p, "%d threads per row loop over it once per phase (%d phases), %d loads in flight",
        block, r->analysis->num_levels + 1, p->batch);
}

int tn_schedule(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    memset(p, 0, sizeof *p);
    p->rows = r->rows;
    p->cols = r->cols;
    p->cc = r->props->cc_major * 10 + r->props->cc_minor;
    if (!tn_analysis_plannable(a, r->props, err, cap)) return 0;
    p->vec = pick_vec(r, p);
    p->align_bytes = tn_plan_access_align(p, a->max_elem_size);
    char reg_err[256] = "";
    if (r->kind == TN_PLAN_REGISTER || r->kind < 0) {
        p->kind = TN_PLAN_REGISTER;
        if (schedule_register(r, p, reg_err, sizeof reg_err)) return 1;
        if (r->kind == TN_PLAN_REGISTER) {
            snprintf(err, cap, "%s", reg_err);
            return 0;
        }
    }
    p->kind = TN_PLAN_LOOPED;
    if (r->kind < 0) why(p, "looped: %s", reg_err);
    else why(p, "looped plan forced");
    schedule_looped(r, p);
    return 1;
}
