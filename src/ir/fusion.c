/* The fusion builder. It records what it is given; tn_fusion_verify() is the
   one place that decides whether a fusion is well formed. */
#include <stdatomic.h>
#include <string.h>

#include "util/base.h"
#include "ir/ir.h"
#include "util/alloc.h"

static atomic_uint g_next_fusion_id = 1;

static const char *const k_kind_names[TN_OP_KIND_COUNT] = {
    "input", "param", "constant", "row_length", "cast", "unary", "binary", "reduce"};
static const char *const k_unary_names[TN_UNARY_COUNT] = {
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "silu", "gelu"};
static const char *const k_binary_names[TN_BINARY_COUNT] = {"add", "sub", "mul",
                                                            "div", "max", "min"};
static const char *const k_reduce_names[TN_REDUCE_COUNT] = {"sum", "max"};

const char *tn_op_kind_name(tn_op_kind k) {
    return (unsigned)k < TN_OP_KIND_COUNT ? k_kind_names[k] : "invalid";
}
const char *tn_unary_name(int op) {
    return (unsigned)op < TN_UNARY_COUNT ? k_unary_names[op] : "invalid";
}
const char *tn_binary_name(int op) {
    return (unsigned)op < TN_BINARY_COUNT ? k_binary_names[op] : "invalid";
}
const char *tn_reduce_name(int op) {
    return (unsigned)op < TN_REDUCE_COUNT ? k_reduce_names[op] : "invalid";
}

const char *tn_shape_class_name(tn_shape_class s) {
    switch (s) {
    case TN_SHAPE_ROW: return "ROW";
    case TN_SHAPE_COL: return "COL";
    case TN_SHAPE_ROWSCALAR: return "ROWSCALAR";
    case TN_SHAPE_SCALAR: return "SCALAR";
    }
    return "invalid";
}

tn_status tn_fusion_create(tn_context *ctx, const char *name, tn_fusion **out) {
    if (!ctx || !out) return TN_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    tn_fusion *f = tn_calloc(tn_ctx_alloc(ctx), 1, sizeof *f);
    if (!f) return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    f->ctx = ctx;
    f->alloc = *tn_ctx_alloc(ctx);
    f->id = atomic_fetch_add(&g_next_fusion_id, 1);
    f->name = tn_strdup(&f->alloc, name ? name : "fusion");
    if (!f->name) {
        tn_free(&f->alloc, f);
        return tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    }
    tn_context_retain(ctx);
    *out = f;
    return TN_STATUS_OK;
}

void tn_fusion_destroy(tn_fusion *f) {
    if (!f) return;
    for (int i = 0; i < f->num_nodes; i++) tn_free(&f->alloc, f->nodes[i].name);
    for (int i = 0; i < f->num_outputs; i++) tn_free(&f->alloc, f->outputs[i].name);
    tn_free(&f->alloc, f->nodes);
    tn_free(&f->alloc, f->outputs);
    tn_free(&f->alloc, f->name);
    tn_context *ctx = f->ctx;
    tn_allocator a = f->alloc;
    tn_free(&a, f);
    tn_context_release(ctx);
}

static int grow(const tn_allocator *a, void **items, int *cap, int count, size_t size) {
    if (count < *cap) return 1;
    int ncap = *cap ? *cap * 2 : 16;
    void *n = tn_alloc(a, (size_t)ncap * size);
    if (!n) return 0;
    if (*items) memcpy(n, *items, (size_t)count * size);
    tn_free(a, *items);
    *items = n;
    *cap = ncap;
    return 1;
}

static int owns(const tn_fusion *f, tn_value v) {
    return v.fusion_id == f->id && v.index < (uint32_t)f->num_nodes;
}

/* Shape of a binary result: the broadcast of both shape classes. */
static tn_shape_class broadcast(tn_shape_class a, tn_shape_class b) {
    if (a == b) return a;
    if (a == TN_SHAPE_SCALAR) return b;
    if (b == TN_SHAPE_SCALAR) return a;
    return TN_SHAPE_ROW; /* ROW with anything, or COL with ROWSCALAR */
}

static tn_status add_node(tn_fusion *f, const tn_node *n, tn_value *out) {
    if (!out) return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "builder: null output value");
    if (f->num_nodes >= TN_MAX_NODES)
        return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT,
                            "fusion '%s' has more than %d values", f->name, TN_MAX_NODES);
    if (!grow(&f->alloc, (void **)&f->nodes, &f->cap_nodes, f->num_nodes, sizeof *n))
        return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    f->nodes[f->num_nodes] = *n;
    out->fusion_id = f->id;
    out->index = (uint32_t)f->num_nodes++;
    return TN_STATUS_OK;
}

static tn_status add_named(tn_fusion *f, tn_node *n, const char *name, tn_value *out) {
    if (!name) return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "builder: null name");
    n->name = tn_strdup(&f->alloc, name);
    if (!n->name) return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    tn_status st = add_node(f, n, out);
    if (st != TN_STATUS_OK) tn_free(&f->alloc, n->name);
    return st;
}

tn_status tn_fusion_input(tn_fusion *f, const char *name, tn_dtype dtype, tn_shape_class shape,
                          tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    if (f->num_inputs >= TN_MAX_INPUTS)
        return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "fusion '%s' has %d inputs; at most %d are supported",
                            f->name, f->num_inputs + 1, TN_MAX_INPUTS);
    tn_node n = {.kind = TN_OP_INPUT, .dtype = dtype, .shape = shape, .io_index = f->num_inputs};
    tn_status st = add_named(f, &n, name, out);
    if (st == TN_STATUS_OK) f->num_inputs++;
    return st;
}

tn_status tn_fusion_param(tn_fusion *f, const char *name, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    if (f->num_params >= TN_MAX_PARAMS)
        return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "fusion '%s' has %d params; at most %d are supported",
                            f->name, f->num_params + 1, TN_MAX_PARAMS);
    tn_node n = {.kind = TN_OP_PARAM, .dtype = TN_DTYPE_F32, .shape = TN_SHAPE_SCALAR,
                 .io_index = f->num_params};
    tn_status st = add_named(f, &n, name, out);
    if (st == TN_STATUS_OK) f->num_params++;
    return st;
}

tn_status tn_fusion_constant(tn_fusion *f, double value, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = {.kind = TN_OP_CONSTANT, .dtype = TN_DTYPE_F32, .shape = TN_SHAPE_SCALAR,
                 .constant = value};
    return add_node(f, &n, out);
}

tn_status tn_fusion_row_length(tn_fusion *f, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = {.kind = TN_OP_ROW_LENGTH, .dtype = TN_DTYPE_F32, .shape = TN_SHAPE_SCALAR};
    return add_node(f, &n, out);
}

static tn_node unary_like(const tn_fusion *f, tn_op_kind kind, tn_value a) {
    tn_node n = {.kind = kind, .nargs = 1, .args = {a}};
    n.dtype = owns(f, a) ? f->nodes[a.index].dtype : TN_DTYPE_F32;
    n.shape = owns(f, a) ? f->nodes[a.index].shape : TN_SHAPE_ROW;
    return n;
}

tn_status tn_fusion_cast(tn_fusion *f, tn_value a, tn_dtype dtype, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = unary_like(f, TN_OP_CAST, a);
    n.dtype = dtype;
    return add_node(f, &n, out);
}

tn_status tn_fusion_unary(tn_fusion *f, tn_unary_op op, tn_value a, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = unary_like(f, TN_OP_UNARY, a);
    n.op = (int)op;
    return add_node(f, &n, out);
}

tn_status tn_fusion_binary(tn_fusion *f, tn_binary_op op, tn_value a, tn_value b, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = unary_like(f, TN_OP_BINARY, a);
    n.op = (int)op;
    n.nargs = 2;
    n.args[1] = b;
    if (owns(f, a) && owns(f, b)) n.shape = broadcast(f->nodes[a.index].shape, f->nodes[b.index].shape);
    return add_node(f, &n, out);
}

tn_status tn_fusion_reduce(tn_fusion *f, tn_reduce_op op, tn_axis axis, tn_value a, tn_value *out) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    tn_node n = unary_like(f, TN_OP_REDUCE, a);
    n.op = (int)op;
    n.axis = axis;
    n.shape = axis == TN_AXIS_OUTER ? TN_SHAPE_COL : TN_SHAPE_ROWSCALAR;
    return add_node(f, &n, out);
}

tn_status tn_fusion_output(tn_fusion *f, const char *name, tn_value v, tn_dtype dtype) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    if (!name) return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "builder: null output name");
    if (f->num_outputs >= TN_MAX_OUTPUTS)
        return tn_set_error(f->ctx, TN_STATUS_INVALID_ARGUMENT, "fusion '%s' has %d outputs; at most %d are supported",
                            f->name, f->num_outputs + 1, TN_MAX_OUTPUTS);
    if (!grow(&f->alloc, (void **)&f->outputs, &f->cap_outputs, f->num_outputs, sizeof(tn_output)))
        return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    char *copy = tn_strdup(&f->alloc, name);
    if (!copy) return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "fusion: out of memory");
    f->outputs[f->num_outputs++] = (tn_output){copy, v, dtype};
    return TN_STATUS_OK;
}

int tn_fusion_input_node(const tn_fusion *f, int i) {
    for (int k = 0; k < f->num_nodes; k++)
        if (f->nodes[k].kind == TN_OP_INPUT && f->nodes[k].io_index == i) return k;
    return -1;
}

int tn_fusion_param_node(const tn_fusion *f, int i) {
    for (int k = 0; k < f->num_nodes; k++)
        if (f->nodes[k].kind == TN_OP_PARAM && f->nodes[k].io_index == i) return k;
    return -1;
}

int tn_fusion_io_count(const tn_fusion *f, tn_io_kind kind) {
    if (!f) return 0;
    switch (kind) {
    case TN_IO_INPUT: return f->num_inputs;
    case TN_IO_OUTPUT: return f->num_outputs;
    case TN_IO_PARAM: return f->num_params;
    }
    return 0;
}

tn_status tn_fusion_io_info(const tn_fusion *f, tn_io_kind kind, int i, tn_io_info *out) {
    if (!f || !out || i < 0 || i >= tn_fusion_io_count(f, kind)) return TN_STATUS_INVALID_ARGUMENT;
    if (kind == TN_IO_OUTPUT) {
        const tn_output *o = &f->outputs[i];
        tn_shape_class s = owns(f, o->value) ? f->nodes[o->value.index].shape : TN_SHAPE_ROW;
        *out = (tn_io_info){o->name, o->dtype, s};
        return TN_STATUS_OK;
    }
    int k = kind == TN_IO_INPUT ? tn_fusion_input_node(f, i) : tn_fusion_param_node(f, i);
    if (k < 0) return TN_STATUS_INTERNAL;
    *out = (tn_io_info){f->nodes[k].name, f->nodes[k].dtype, f->nodes[k].shape};
    return TN_STATUS_OK;
}

tn_status tn_fusion_clone(const tn_fusion *f, tn_fusion **out) {
    tn_fusion *c = NULL;
    tn_status st = tn_fusion_create(f->ctx, f->name, &c);
    if (st != TN_STATUS_OK) return st;
    for (int i = 0; i < f->num_nodes && st == TN_STATUS_OK; i++) {
        tn_node n = f->nodes[i];
        for (int a = 0; a < n.nargs; a++)
            if (n.args[a].fusion_id == f->id) n.args[a].fusion_id = c->id;
        tn_value v;
        if (n.name) st = add_named(c, &n, n.name, &v);
        else st = add_node(c, &n, &v);
    }
    c->num_inputs = f->num_inputs;
    c->num_params = f->num_params;
    for (int i = 0; i < f->num_outputs && st == TN_STATUS_OK; i++) {
        tn_value v = f->outputs[i].value;
        if (v.fusion_id == f->id) v.fusion_id = c->id;
        st = tn_fusion_output(c, f->outputs[i].name, v, f->outputs[i].dtype);
    }
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(c);
        return st;
    }
    *out = c;
    return TN_STATUS_OK;
}
