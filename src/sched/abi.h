/* The kernel ABI: the generated kernel's parameters, in order. One table, read
   by codegen (the signature) and by launch packing (the values), so the two
   cannot drift apart. Derived from the fusion alone: every kind shares it. */
#ifndef TN_ABI_H
#define TN_ABI_H

#include "ir/ir.h"

typedef enum tn_arg_kind {
    TN_ARG_INPUT = 0, /* pointer to input `index` */
    TN_ARG_INPUT_LD,  /* its row stride in elements (ROW inputs), long long */
    TN_ARG_OUTPUT,    /* pointer to output `index` */
    TN_ARG_OUTPUT_LD, /* its row stride (ROW outputs), long long */
    TN_ARG_PARAM,     /* run-time parameter `index`, float */
    TN_ARG_ROWS,      /* M, long long */
    TN_ARG_KIND_COUNT
} tn_arg_kind;

typedef struct tn_abi_arg {
    tn_arg_kind kind;
    int index;
    tn_dtype dtype; /* of the tensor, for pointers */
} tn_abi_arg;

#define TN_MAX_KERNEL_ARGS (2 * TN_MAX_INPUTS + 2 * TN_MAX_OUTPUTS + TN_MAX_PARAMS + 1)

typedef struct tn_abi {
    tn_abi_arg args[TN_MAX_KERNEL_ARGS];
    int count;
} tn_abi;

/* f must be verified. */
void tn_abi_of(const tn_fusion *f, tn_abi *out);

#endif
