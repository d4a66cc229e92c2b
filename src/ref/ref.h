/* The reference: a CPU interpreter of any verified fusion in double precision,
   the oracle of every test. f32 values are kept in double (exact arithmetic up
   to double rounding); f16/bf16 values are rounded to their dtype, as the
   fusion says they are stored. */
#ifndef TN_REF_H
#define TN_REF_H

#include "tmanorm.h"

/* Runs f over rows [0, rows) of host tensors. inputs[i]: ROW inputs hold rows
   rows of cols elements (row_stride apart, 0: cols), COL inputs cols values,
   ROWSCALAR inputs rows values. outputs[o] receives, as double and before
   rounding to the output dtype: rows*cols values for ROW outputs,
   rows for ROWSCALAR, cols for COL (outer reductions). */
tn_status tn_ref_run(const tn_fusion *f, int64_t rows, int64_t cols, const tn_tensor *inputs,
                     const float *params, double *const *outputs);

#endif
