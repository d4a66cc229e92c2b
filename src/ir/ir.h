/* The fusion IR: a list of nodes in creation (topological) order plus named
   outputs. Internal layout; the public builder is in tmanorm.h. */
#ifndef TN_IR_H
#define TN_IR_H

#include <stdint.h>

#include "tmanorm.h"

#define TN_MAX_NODES TN_MAX_VALUES
#define TN_MAX_IO 32 /* the largest of TN_MAX_INPUTS, TN_MAX_OUTPUTS, TN_MAX_PARAMS */
#if TN_MAX_INPUTS > TN_MAX_IO || TN_MAX_OUTPUTS > TN_MAX_IO || TN_MAX_PARAMS > TN_MAX_IO
#error "TN_MAX_IO must bound every I/O limit"
#endif

typedef enum tn_op_kind {
    TN_OP_INPUT = 0,
    TN_OP_PARAM,
    TN_OP_CONSTANT,
    TN_OP_ROW_LENGTH,
    TN_OP_CAST,
    TN_OP_UNARY,
    TN_OP_BINARY,
    TN_OP_REDUCE,
    TN_OP_KIND_COUNT
} tn_op_kind;

typedef struct tn_node {
    tn_op_kind kind;
    tn_dtype dtype;
    tn_shape_class shape; /* as the builder inferred it; the verifier re-derives */
    int op;               /* tn_unary_op, tn_binary_op or tn_reduce_op */
    tn_axis axis;
    int nargs;
    tn_value args[2];
    double constant;
    char *name;   /* inputs and params */
    int io_index; /* position among inputs / params */
} tn_node;

typedef struct tn_output {
    char *name;
    tn_value value;
    tn_dtype dtype;
} tn_output;

struct tn_fusion {
    tn_context *ctx;
    tn_allocator alloc;
    uint32_t id; /* unique per process: tells values of other fusions apart */
    char *name;
    tn_node *nodes;
    int num_nodes, cap_nodes;
    tn_output *outputs;
    int num_outputs, cap_outputs;
    int num_inputs, num_params;
};

const char *tn_op_kind_name(tn_op_kind kind);
const char *tn_unary_name(int op);
const char *tn_binary_name(int op);
const char *tn_reduce_name(int op);

/* A deep copy of f on the same context (plans keep one). */
tn_status tn_fusion_clone(const tn_fusion *f, tn_fusion **out);
/* The node behind input / param i. */
int tn_fusion_input_node(const tn_fusion *f, int i);
int tn_fusion_param_node(const tn_fusion *f, int i);

#endif
