/* Analysis of a verified fusion: which values are needed, the reduction
   phases of the row program and the values each phase computes, what must
   stay on chip, the bytes moved, and whether the fusion is within what one
   kernel can be asked to do. */
#ifndef TN_ANALYSIS_H
#define TN_ANALYSIS_H

#include "ir/ir.h"

/* Phases of the row program: one per reduction level, then the output phase. */
#define TN_MAX_PHASES (TN_MAX_REDUCTION_LEVELS + 1)
/* Elementwise expressions emitted over all phases (values are recomputed from
   the loaded inputs in each phase that needs them); bounds the kernel's size. */
#define TN_MAX_EMITTED_VALUES 4096

typedef struct tn_analysis {
    int num_nodes;
    int level[TN_MAX_NODES];          /* inner reductions on the longest path to the value */
    unsigned char used[TN_MAX_NODES]; /* reachable from an output */
    int num_levels;                   /* phases that reduce; the row program has one more */
    int num_reductions;
    /* Online pairs: M = max(t) and S = sum(exp(t - M)), every value f32
       (softmax's). online_pairs counts them in any analysis; only
       tn_analyze_online pairs them (a plan with `online`): S is then reduced
       with M, in M's phase (online_sum[M] = 1 + S, online_max[S] = 1 + M), a
       second pass over the row summing each thread's exp(t - its own max)
       computes online_need[p], and S's exp is online_exp[E] = 1 + M: a later
       phase that takes it carried rescales it by exp(thread's max - M). */
    int online_pairs;
    int online_sum[TN_MAX_NODES], online_max[TN_MAX_NODES], online_exp[TN_MAX_NODES];
    unsigned char online_need[TN_MAX_PHASES][TN_MAX_NODES];
    int has_outer_reduction;
    /* phase_need[p][i]: elementwise value i is computed in phase p (p = level - 1
       for the reduction phases, num_levels for the output phase). Valid when
       num_levels <= TN_MAX_REDUCTION_LEVELS. */
    unsigned char phase_need[TN_MAX_PHASES][TN_MAX_NODES];
    int emitted_values;               /* sum over phases of the values computed */
    int special_evals;                /* ... of those, special functions (exp, log, tanh, ...) per element */
    int row_inputs[TN_MAX_IO], num_row_inputs; /* node indices */
    int col_inputs[TN_MAX_IO], num_col_inputs;
    int rowscalar_inputs[TN_MAX_IO], num_rowscalar_inputs;
    int row_outputs[TN_MAX_IO], num_row_outputs; /* output indices */
    int rowscalar_outputs[TN_MAX_IO], num_rowscalar_outputs;
    int row_elem_bytes;       /* per element of a row: ROW inputs read + ROW outputs written */
    int col_elem_bytes;       /* per column: COL inputs, read once */
    int rowscalar_bytes;      /* per row: ROWSCALAR inputs and outputs */
    int buffer_elem_bytes;    /* per element of a row: the ROW inputs kept on chip */
    /* per element of a row: the values computed before the first reduction that
       later phases take (the compiler keeps them from the first phase on), at
       most one per ROW input kept on chip; add_rmsnorm keeps 1 of its 2 */
    int kept_values;
    /* The ROW inputs kept on chip (used ones), in input order, and where each
       starts in a row's on-chip copy: bytes per element of the ones before it. */
    int stage_inputs[TN_MAX_IO], num_stage_inputs;
    int stage_elem_offset[TN_MAX_IO];
    int min_row_elem_size;    /* smallest element of any ROW or COL tensor */
    int max_elem_size;        /* largest element of any ROW or COL tensor */
    int has_f8_output;
    /* ROW outputs that need no reduction and that the first reduction phase computes anyway (add_rmsnorm's
       x + residual): a plan with `early_stores` stores them in that phase, before the reductions.
       early_output[o] for output o (its value the same with or without carry: no phase precedes the first). */
    unsigned char early_output[TN_MAX_IO];
    int early_row_outputs;
    /* Special-function values per element (exp, log, ...) that a later phase
       needs again: carried[i] = 1 + the phase that first computes value i (0:
       not carried). A plan with `carry` keeps them in f32 registers from that
       phase on instead of recomputing them; phase_need_carry is phase_need with
       those values taken as computed in the phases after it. */
    unsigned char carried[TN_MAX_NODES];
    int num_carried;
    unsigned char phase_need_carry[TN_MAX_PHASES][TN_MAX_NODES];
} tn_analysis;

/* f must be verified. */
void tn_analyze(const tn_fusion *f, tn_analysis *out);
/* The analysis for a plan with `online`: tn_analyze's, with its online pairs
   reduced together. Returns the pairs (0: out is tn_analyze's). */
int tn_analyze_online(const tn_fusion *f, tn_analysis *out);
/* 1 if one kernel can run the fusion; else 0 and the reason in err. */
int tn_analysis_within_limits(const tn_analysis *a, char *err, size_t cap);
/* 1 if some plan kind can run the fusion on props (outer reductions, f8 outputs
   below sm_89 and the limits above cannot); else 0 and the reason in err. */
int tn_analysis_plannable(const tn_analysis *a, const tn_device_props *props, char *err, size_t cap);
/* Bytes at the floor for [rows, cols]; -1 if they do not fit in 64 bits. */
int64_t tn_analysis_bytes(const tn_analysis *a, int64_t rows, int64_t cols);

#endif
