/* dtype facts and exact host-side conversions (storage bits <-> double),
   shared by the reference, the tests and the command-line tool. */
#ifndef TN_DTYPE_H
#define TN_DTYPE_H

#include <stdint.h>

#include "tmanorm.h"

/* Rounds x to the nearest value of dtype (ties to even); f32 rounds to float,
   f8e4m3 saturates to +-448. */
double tn_round_to_dtype(tn_dtype dtype, double x);
/* Reads element i of an array stored in dtype. */
double tn_load_elem(tn_dtype dtype, const void *data, int64_t i);
/* Writes x, rounded, as element i of an array stored in dtype. */
void tn_store_elem(tn_dtype dtype, void *data, int64_t i, double x);
/* Relative rounding unit of dtype (2^-p for p significant bits). */
double tn_dtype_eps(tn_dtype dtype);
int tn_dtype_is_valid(tn_dtype dtype);
/* The smallest positive value of dtype (its subnormal quantum). */
double tn_dtype_tiny(tn_dtype dtype);

#endif
