/* Analysis of a verified fusion: which values are needed, how many reduction
   phases the row program has, what must stay on chip, and the bytes moved. */
#ifndef TN_ANALYSIS_H
#define TN_ANALYSIS_H

#include "ir/ir.h"

typedef struct tn_analysis {
    int num_nodes;
    int level[TN_MAX_NODES];          /* inner reductions on the longest path to the value */
    unsigned char used[TN_MAX_NODES]; /* reachable from an output */
    int num_levels;                   /* phases that reduce; the row program has one more */
    int num_reductions;
    int has_outer_reduction;
    int row_inputs[TN_MAX_IO], num_row_inputs; /* node indices */
    int col_inputs[TN_MAX_IO], num_col_inputs;
    int rowscalar_inputs[TN_MAX_IO], num_rowscalar_inputs;
    int row_outputs[TN_MAX_IO], num_row_outputs; /* output indices */
    int rowscalar_outputs[TN_MAX_IO], num_rowscalar_outputs;
    int row_elem_bytes;       /* per element of a row: ROW inputs read + ROW outputs written */
    int col_elem_bytes;       /* per column: COL inputs, read once */
    int rowscalar_bytes;      /* per row: ROWSCALAR inputs and outputs */
    int buffer_elem_bytes;    /* per element of a row: the ROW inputs kept on chip */
    int min_row_elem_size;    /* smallest element of any ROW or COL tensor */
    int max_elem_size;        /* largest element of any ROW or COL tensor */
    int has_f8_output;
} tn_analysis;

/* f must be verified. */
void tn_analyze(const tn_fusion *f, tn_analysis *out);
/* Bytes at the floor for [rows, cols]. */
int64_t tn_analysis_bytes(const tn_analysis *a, int64_t rows, int64_t cols);

#endif
