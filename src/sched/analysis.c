/* Fusion analysis (see analysis.h). */
#include "sched/analysis.h"

#include <stdio.h>
#include <string.h>

static int is_elementwise(tn_shape_class s) { return s == TN_SHAPE_ROW || s == TN_SHAPE_COL; }

/* Marks the elementwise values that the roots in need[] depend on; a value
   with leaf[i] set is taken as it is (its operands are not marked for it). */
static void close_over(const tn_fusion *f, unsigned char *need, const unsigned char *leaf) {
    for (int i = f->num_nodes - 1; i >= 0; i--) {
        if (!need[i] || (leaf && leaf[i])) continue;
        const tn_node *n = &f->nodes[i];
        for (int a = 0; a < n->nargs; a++) {
            int k = (int)n->args[a].index;
            if (is_elementwise(f->nodes[k].shape)) need[k] = 1;
        }
    }
}

/* An elementwise op of the special-function unit (about 16 results per clock
   per SM on sm_90, an eighth of the FMA rate). */
static int is_special(const tn_node *n) {
    if (n->kind != TN_OP_UNARY || (n->shape != TN_SHAPE_ROW && n->shape != TN_SHAPE_COL)) return 0;
    switch (n->op) {
    case TN_UNARY_EXP: case TN_UNARY_LOG: case TN_UNARY_TANH: case TN_UNARY_SIGMOID: case TN_UNARY_SILU:
    case TN_UNARY_GELU: return 1;
    default: return 0;
    }
}

/* The values phase p consumes per element: the operands of its reductions
   (or, in the output phase, the ROW outputs). */
static void phase_roots(const tn_fusion *f, const tn_analysis *an, int p, unsigned char *need) {
    if (p == an->num_levels)
        for (int r = 0; r < an->num_row_outputs; r++) need[f->outputs[an->row_outputs[r]].value.index] = 1;
    else
        for (int i = 0; i < f->num_nodes; i++) {
            const tn_node *n = &f->nodes[i];
            if (an->used[i] && n->kind == TN_OP_REDUCE && n->axis == TN_AXIS_INNER && an->level[i] == p + 1 &&
                !an->online_max[i])
                need[n->args[0].index] = 1;
        }
}

/* What each phase computes per element: its roots and everything elementwise
   they need. */
static void analyze_phases(const tn_fusion *f, tn_analysis *an) {
    if (an->num_levels > TN_MAX_REDUCTION_LEVELS) return;
    for (int p = 0; p <= an->num_levels; p++) {
        unsigned char *need = an->phase_need[p], *again = an->online_need[p];
        phase_roots(f, an, p, need);
        close_over(f, need, NULL);
        for (int i = 0; i < f->num_nodes; i++)
            if (an->used[i] && an->online_max[i] && an->level[i] == p + 1) again[f->nodes[i].args[0].index] = 1;
        close_over(f, again, NULL);
        for (int i = 0; i < f->num_nodes; i++) {
            an->emitted_values += need[i] + again[i];
            an->special_evals += (need[i] + again[i]) * is_special(&f->nodes[i]);
        }
    }
}

/* Special-function ROW values that more than one phase computes (softmax's
   exp: summed in one phase, divided in the output phase), and what each phase
   computes when they are carried from their first phase. */
static void analyze_carries(const tn_fusion *f, tn_analysis *an) {
    if (an->num_levels > TN_MAX_REDUCTION_LEVELS) return;
    unsigned char later[TN_MAX_PHASES][TN_MAX_NODES] = {{0}}; /* carried in from an earlier phase */
    for (int i = 0; i < f->num_nodes; i++) {
        if (!is_special(&f->nodes[i]) || f->nodes[i].shape != TN_SHAPE_ROW) continue;
        int first = -1;
        for (int p = 0; p <= an->num_levels; p++) {
            if (!an->phase_need[p][i] && !an->online_need[p][i]) continue;
            if (first < 0) first = p;
            else later[p][i] = 1;
        }
        an->carried[i] = (unsigned char)(first + 1); /* kept below only if a later phase takes it as it is */
    }
    for (int p = 0; p <= an->num_levels; p++) {
        phase_roots(f, an, p, an->phase_need_carry[p]);
        close_over(f, an->phase_need_carry[p], later[p]);
    }
    for (int i = 0; i < f->num_nodes; i++) {
        int taken = 0;
        for (int p = 0; p <= an->num_levels; p++) taken |= later[p][i] && an->phase_need_carry[p][i];
        if (!taken) an->carried[i] = 0;
        an->num_carried += taken;
    }
}

/* The values computed before any reduction (level 0) that a later phase takes
   into a value after a reduction or into an output: held in f32 from the first
   phase on. add_rmsnorm keeps its one rounded sum, not x and residual. A
   widening cast is the same register as its operand. */
static int kept_value(const tn_fusion *f, int i) {
    while (f->nodes[i].kind == TN_OP_CAST) {
        const int src = (int)f->nodes[i].args[0].index;
        if (f->nodes[src].shape != TN_SHAPE_ROW || tn_dtype_size(f->nodes[i].dtype) < tn_dtype_size(f->nodes[src].dtype))
            break;
        i = src;
    }
    return i;
}

static int values_kept_across_phases(const tn_fusion *f, const tn_analysis *an) {
    unsigned char kept[TN_MAX_NODES] = {0};
    int count = 0;
    for (int p = 1; p <= an->num_levels && an->num_levels <= TN_MAX_REDUCTION_LEVELS; p++) {
        const unsigned char *need = an->phase_need[p];
        for (int j = 0; j < f->num_nodes; j++) {
            if (!need[j] || an->level[j] == 0) continue;
            for (int a = 0; a < f->nodes[j].nargs; a++) {
                const int i = kept_value(f, (int)f->nodes[j].args[a].index);
                if (f->nodes[i].shape == TN_SHAPE_ROW && an->level[i] == 0 && !kept[i]) kept[i] = 1, count++;
            }
        }
        if (p == an->num_levels)
            for (int r = 0; r < an->num_row_outputs; r++) {
                const int i = kept_value(f, (int)f->outputs[an->row_outputs[r]].value.index);
                if (an->level[i] == 0 && !kept[i]) kept[i] = 1, count++;
            }
    }
    return count;
}

static void note_size(tn_analysis *an, int size) {
    if (size < an->min_row_elem_size) an->min_row_elem_size = size;
    if (size > an->max_elem_size) an->max_elem_size = size;
}

static int arg(const tn_fusion *f, int i, int a) { return (int)f->nodes[i].args[a].index; }
static int is_f32(const tn_fusion *f, int i, tn_op_kind kind, int op) {
    const tn_node *n = &f->nodes[i];
    return n->kind == kind && n->op == op && n->dtype == TN_DTYPE_F32 &&
           (kind != TN_OP_REDUCE || n->axis == TN_AXIS_INNER);
}

/* Online pairs (see analysis.h): S = sum(exp(t - M)) with M = max(t), every value f32 (so no rounding of the
   fusion's is skipped), each M in one pair at most: marked, and counted in online_pairs. */
static void find_online(const tn_fusion *f, tn_analysis *an) {
    for (int s = 0; s < f->num_nodes; s++) {
        if (!is_f32(f, s, TN_OP_REDUCE, TN_REDUCE_SUM)) continue;
        const int e = arg(f, s, 0);
        if (!is_f32(f, e, TN_OP_UNARY, TN_UNARY_EXP)) continue;
        const int d = arg(f, e, 0);
        if (!is_f32(f, d, TN_OP_BINARY, TN_BINARY_SUB)) continue;
        const int m = arg(f, d, 1);
        if (!is_f32(f, m, TN_OP_REDUCE, TN_REDUCE_MAX) || arg(f, m, 0) != arg(f, d, 0) || an->online_sum[m]) continue;
        an->online_sum[m] = s + 1, an->online_max[s] = m + 1, an->online_exp[e] = m + 1;
        an->online_pairs++;
    }
}

static void analyze(const tn_fusion *f, tn_analysis *an, int online) {
    memset(an, 0, sizeof *an);
    an->num_nodes = f->num_nodes;
    an->min_row_elem_size = 16;
    find_online(f, an);
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        int lv = 0;
        for (int a = 0; a < n->nargs; a++)
            if (an->level[n->args[a].index] > lv) lv = an->level[n->args[a].index];
        if (n->kind == TN_OP_REDUCE && n->axis == TN_AXIS_INNER) lv++;
        /* Online, a pair's sum is reduced with its max, in its phase. */
        an->level[i] = online && an->online_max[i] ? an->level[an->online_max[i] - 1] : lv;
    }
    for (int o = 0; o < f->num_outputs; o++) an->used[f->outputs[o].value.index] = 1;
    for (int i = f->num_nodes - 1; i >= 0; i--)
        if (an->used[i])
            for (int a = 0; a < f->nodes[i].nargs; a++) an->used[f->nodes[i].args[a].index] = 1;
    /* A pair counts where an output needs its sum; only the online analysis keeps the marks (unused sums' levels
       set above are no used value's). */
    for (int s = 0; s < f->num_nodes; s++) {
        if (!an->online_max[s]) continue;
        if (!an->used[s]) an->online_pairs--;
        if (an->used[s] && online) continue;
        an->online_sum[an->online_max[s] - 1] = an->online_exp[arg(f, s, 0)] = 0;
        an->online_max[s] = 0;
    }
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        if (!an->used[i]) continue;
        if (an->level[i] > an->num_levels) an->num_levels = an->level[i];
        if (n->kind == TN_OP_REDUCE) {
            if (n->axis == TN_AXIS_OUTER) an->has_outer_reduction = 1;
            else an->num_reductions++;
        }
    }
    /* Every input is bound at launch; unused ones are neither read nor buffered. */
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        if (n->kind != TN_OP_INPUT) continue;
        int size = (int)tn_dtype_size(n->dtype);
        if (n->shape == TN_SHAPE_ROW) {
            an->row_inputs[an->num_row_inputs++] = i;
            if (!an->used[i]) continue;
            an->row_elem_bytes += size;
            an->stage_elem_offset[an->num_stage_inputs] = an->buffer_elem_bytes;
            an->stage_inputs[an->num_stage_inputs++] = i;
            an->buffer_elem_bytes += size;
        } else if (n->shape == TN_SHAPE_COL) {
            an->col_inputs[an->num_col_inputs++] = i;
            if (!an->used[i]) continue;
            an->col_elem_bytes += size;
        } else {
            an->rowscalar_inputs[an->num_rowscalar_inputs++] = i;
            if (!an->used[i]) continue;
            an->rowscalar_bytes += size;
        }
        if (n->shape != TN_SHAPE_ROWSCALAR) note_size(an, size);
    }
    for (int o = 0; o < f->num_outputs; o++) {
        const tn_node *n = &f->nodes[f->outputs[o].value.index];
        int size = (int)tn_dtype_size(f->outputs[o].dtype);
        if (f->outputs[o].dtype == TN_DTYPE_F8E4M3) an->has_f8_output = 1;
        if (n->shape == TN_SHAPE_ROW) {
            an->row_outputs[an->num_row_outputs++] = o;
            an->row_elem_bytes += size;
            note_size(an, size);
        } else if (n->shape == TN_SHAPE_ROWSCALAR) {
            an->rowscalar_outputs[an->num_rowscalar_outputs++] = o;
            an->rowscalar_bytes += size;
        }
    }
    analyze_phases(f, an);
    analyze_carries(f, an);
    const int kept = values_kept_across_phases(f, an);
    an->kept_values = kept < an->num_stage_inputs && an->num_levels ? kept : an->num_stage_inputs;
    for (int r = 0; r < an->num_row_outputs && an->num_levels >= 1 && an->num_levels <= TN_MAX_REDUCTION_LEVELS; r++) {
        const int o = an->row_outputs[r], v = (int)f->outputs[o].value.index;
        an->early_output[o] = an->level[v] == 0 && an->phase_need[0][v];
        an->early_row_outputs += an->early_output[o];
    }
}

void tn_analyze(const tn_fusion *f, tn_analysis *an) { analyze(f, an, 0); }

int tn_analyze_online(const tn_fusion *f, tn_analysis *an) {
    analyze(f, an, 1);
    return an->online_pairs;
}

int tn_analysis_within_limits(const tn_analysis *a, char *err, size_t cap) {
    if (a->num_levels > TN_MAX_REDUCTION_LEVELS) {
        snprintf(err, cap, "%d reductions in a chain (each needing the one before); at most %d are supported",
                 a->num_levels, TN_MAX_REDUCTION_LEVELS);
        return 0;
    }
    if (a->num_reductions > TN_MAX_REDUCTIONS) {
        snprintf(err, cap, "%d inner reductions; at most %d are supported", a->num_reductions, TN_MAX_REDUCTIONS);
        return 0;
    }
    if (a->emitted_values > TN_MAX_EMITTED_VALUES) {
        snprintf(err, cap, "its phases recompute %d elementwise values per element (at most %d): fewer reduction "
                 "levels or fewer values before the last reduction", a->emitted_values, TN_MAX_EMITTED_VALUES);
        return 0;
    }
    return 1;
}

int tn_analysis_plannable(const tn_analysis *a, const tn_device_props *props, char *err, size_t cap) {
    const int cc = props->cc_major * 10 + props->cc_minor;
    if (a->has_outer_reduction) {
        snprintf(err, cap, "outer reductions (over M) are not planned yet");
        return 0;
    }
    if (a->has_f8_output && cc < 89) {
        snprintf(err, cap, "f8e4m3 outputs need sm_89 or newer; the target is sm_%d", cc);
        return 0;
    }
    return tn_analysis_within_limits(a, err, cap);
}

int64_t tn_analysis_bytes(const tn_analysis *a, int64_t rows, int64_t cols) {
    int64_t elems, row_bytes, col_bytes, scalar_bytes, total;
    if (__builtin_mul_overflow(rows, cols, &elems) || __builtin_mul_overflow(elems, (int64_t)a->row_elem_bytes, &row_bytes) ||
        __builtin_mul_overflow(cols, (int64_t)a->col_elem_bytes, &col_bytes) ||
        __builtin_mul_overflow(rows, (int64_t)a->rowscalar_bytes, &scalar_bytes) ||
        __builtin_add_overflow(row_bytes, col_bytes, &total) || __builtin_add_overflow(total, scalar_bytes, &total))
        return -1;
    return total;
}
