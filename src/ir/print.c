/* The printer and the structural hash. */
#include <string.h>

#include "util/base.h"
#include "ir/ir.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/strbuf.h"

static void print_node(tn_strbuf *sb, const tn_fusion *f, int i) {
    const tn_node *n = &f->nodes[i];
    tn_strbuf_printf(sb, "  %%%d = ", i);
    switch (n->kind) {
    case TN_OP_INPUT: tn_strbuf_printf(sb, "input \"%s\"", n->name); break;
    case TN_OP_PARAM: tn_strbuf_printf(sb, "param \"%s\"", n->name); break;
    case TN_OP_CONSTANT: tn_strbuf_printf(sb, "constant %.17g", n->constant); break;
    case TN_OP_ROW_LENGTH: tn_strbuf_append(sb, "row_length"); break;
    case TN_OP_CAST: tn_strbuf_append(sb, "cast"); break;
    case TN_OP_UNARY: tn_strbuf_append(sb, tn_unary_name(n->op)); break;
    case TN_OP_BINARY: tn_strbuf_append(sb, tn_binary_name(n->op)); break;
    case TN_OP_REDUCE:
        tn_strbuf_printf(sb, "reduce_%s.%s", tn_reduce_name(n->op),
                         n->axis == TN_AXIS_OUTER ? "outer" : "inner");
        break;
    default: tn_strbuf_append(sb, "?"); break;
    }
    for (int a = 0; a < n->nargs; a++) {
        if (n->args[a].fusion_id == f->id) tn_strbuf_printf(sb, " %%%u", n->args[a].index);
        else tn_strbuf_append(sb, " %<foreign>");
    }
    tn_strbuf_printf(sb, " : %s %s\n", tn_dtype_name(n->dtype), tn_shape_class_name(n->shape));
}

tn_status tn_fusion_print(const tn_fusion *f, char *buf, size_t cap, size_t *needed) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_strbuf sb;
    tn_strbuf_init(&sb, &f->alloc);
    tn_strbuf_printf(&sb, "fusion %s {\n", f->name);
    for (int i = 0; i < f->num_nodes; i++) print_node(&sb, f, i);
    for (int o = 0; o < f->num_outputs; o++) {
        const tn_output *out = &f->outputs[o];
        tn_strbuf_printf(&sb, "  output \"%s\" = %%%u as %s\n", out->name, out->value.index,
                         tn_dtype_name(out->dtype));
    }
    tn_strbuf_append(&sb, "}\n");
    char *text = tn_strbuf_take(&sb);
    if (!text) return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "print: out of memory");
    tn_status st = tn_copy_out(text, buf, cap, needed);
    tn_free(&f->alloc, text);
    return st;
}

tn_status tn_fusion_hash(const tn_fusion *f, uint64_t *out) {
    if (!f || !out) return TN_STATUS_INVALID_ARGUMENT;
    uint64_t h = TN_HASH_INIT;
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        int64_t fields[6] = {n->kind, n->dtype, n->shape, n->op, n->axis, n->io_index};
        h = tn_hash_bytes(h, fields, sizeof fields);
        h = tn_hash_bytes(h, &n->constant, sizeof n->constant);
        for (int a = 0; a < n->nargs; a++)
            h = tn_hash_u64(h, n->args[a].fusion_id == f->id ? n->args[a].index : UINT64_MAX);
    }
    for (int o = 0; o < f->num_outputs; o++) {
        h = tn_hash_u64(h, f->outputs[o].value.index);
        h = tn_hash_u64(h, (uint64_t)f->outputs[o].dtype);
    }
    *out = h;
    return TN_STATUS_OK;
}
