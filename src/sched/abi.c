/* The kernel ABI (see abi.h): inputs (pointer, and row stride for ROW ones),
   outputs likewise, the parameters, then M. */
#include "sched/abi.h"

static void add(tn_abi *abi, tn_arg_kind kind, int index, tn_dtype dtype) {
    abi->args[abi->count++] = (tn_abi_arg){kind, index, dtype};
}

void tn_abi_of(const tn_fusion *f, tn_abi *abi) {
    abi->count = 0;
    for (int i = 0; i < f->num_inputs; i++) {
        const tn_node *n = &f->nodes[tn_fusion_input_node(f, i)];
        add(abi, TN_ARG_INPUT, i, n->dtype);
        if (n->shape == TN_SHAPE_ROW) add(abi, TN_ARG_INPUT_LD, i, n->dtype);
    }
    for (int o = 0; o < f->num_outputs; o++) {
        add(abi, TN_ARG_OUTPUT, o, f->outputs[o].dtype);
        if (f->nodes[f->outputs[o].value.index].shape == TN_SHAPE_ROW) add(abi, TN_ARG_OUTPUT_LD, o, f->outputs[o].dtype);
    }
    for (int k = 0; k < f->num_params; k++) add(abi, TN_ARG_PARAM, k, TN_DTYPE_F32);
    add(abi, TN_ARG_ROWS, 0, TN_DTYPE_F32);
}
