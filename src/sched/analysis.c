/* Fusion analysis (see analysis.h). */
#include "sched/analysis.h"

#include <string.h>

static void note_size(tn_analysis *an, int size) {
    if (size < an->min_row_elem_size) an->min_row_elem_size = size;
    if (size > an->max_elem_size) an->max_elem_size = size;
}

void tn_analyze(const tn_fusion *f, tn_analysis *an) {
    memset(an, 0, sizeof *an);
    an->num_nodes = f->num_nodes;
    an->min_row_elem_size = 16;
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        int lv = 0;
        for (int a = 0; a < n->nargs; a++)
            if (an->level[n->args[a].index] > lv) lv = an->level[n->args[a].index];
        if (n->kind == TN_OP_REDUCE && n->axis == TN_AXIS_INNER) lv++;
        an->level[i] = lv;
    }
    for (int o = 0; o < f->num_outputs; o++) an->used[f->outputs[o].value.index] = 1;
    for (int i = f->num_nodes - 1; i >= 0; i--)
        if (an->used[i])
            for (int a = 0; a < f->nodes[i].nargs; a++) an->used[f->nodes[i].args[a].index] = 1;
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
}

int64_t tn_analysis_bytes(const tn_analysis *a, int64_t rows, int64_t cols) {
    return rows * cols * a->row_elem_bytes + cols * a->col_elem_bytes + rows * a->rowscalar_bytes;
}
