/* `tmanorm tune`: time every candidate plan for one fusion and shape. */
#ifndef TN_TUNE_H
#define TN_TUNE_H

#include "tmanorm.h"

/* Prints the candidates fastest first; returns a process exit code. */
int tn_tune(tn_context *ctx, const tn_fusion *f, int64_t rows, int64_t cols, const float *params);

#endif
