/* Code generation (see codegen.h), in three layers:
   - the row program, emitted from the fusion phase by phase: each phase is a
     loop over the row's vectors that computes what its reductions need
     (recomputing elementwise values from the inputs), then the reductions
     across threads, then the per-row values that follow; the same text for
     every plan kind;
   - the row storage: where the row lives and how its vectors are fetched
     (registers, global memory, shared memory filled by bulk copies);
   - the skeleton: the kernel's frame around the row program (a grid-stride
     loop over row groups, or a ring of shared-memory stages).
   A plan kind is a row of k_kinds: a storage and a skeleton. The device-side
   parts are in the device folder's .cuh files; op -> expression and dtype -> type are tables. */
#include "codegen/codegen.h"

#include "sched/abi.h"
#include "sched/heuristics.h"

#include <math.h>
#include <stdio.h>

extern const char tn_device_cuh[], tn_bulk_cuh[];

typedef struct dtype_code {
    const char *storage, *to_f32, *from_f32, *round;
} dtype_code;

static const dtype_code k_dtype_code[TN_DTYPE_COUNT] = {
    [TN_DTYPE_F32] = {"float", "%s", "%s", "%s"},
    [TN_DTYPE_F16] = {"tn_u16", "tn_f16_to_f32(%s)", "tn_f32_to_f16(%s)", "tn_round_f16(%s)"},
    [TN_DTYPE_BF16] = {"tn_u16", "tn_bf16_to_f32(%s)", "tn_f32_to_bf16(%s)", "tn_round_bf16(%s)"},
    [TN_DTYPE_F8E4M3] = {"tn_u8", "tn_f8_to_f32(%s)", "tn_f32_to_f8(%s)", "%s"},
};

static const char *const k_unary_code[TN_UNARY_COUNT] = {
    [TN_UNARY_NEG] = "(-%s)",        [TN_UNARY_ABS] = "fabsf(%s)",
    [TN_UNARY_EXP] = "tn_exp(%s)",   [TN_UNARY_LOG] = "logf(%s)",
    [TN_UNARY_SQRT] = "sqrtf(%s)",   [TN_UNARY_RSQRT] = "rsqrtf(%s)",
    [TN_UNARY_RECIPROCAL] = "(1.0f / %s)", [TN_UNARY_TANH] = "tanhf(%s)",
    [TN_UNARY_SIGMOID] = "tn_sigmoid(%s)", [TN_UNARY_SILU] = "tn_silu(%s)",
    [TN_UNARY_GELU] = "tn_gelu(%s)",
};

static const char *const k_binary_code[TN_BINARY_COUNT] = {
    [TN_BINARY_ADD] = "(%s + %s)", [TN_BINARY_SUB] = "(%s - %s)", [TN_BINARY_MUL] = "(%s * %s)",
    [TN_BINARY_DIV] = "(%s / %s)", [TN_BINARY_MAX] = "fmaxf(%s, %s)", [TN_BINARY_MIN] = "fminf(%s, %s)",
};

static const char *const k_reduce_identity[TN_REDUCE_COUNT] = {"0.0f", "TN_NEG_INF"};

typedef struct gen gen;

/* Where a row lives and how it moves: what each row group sets up, the loop
   over one thread's vectors of its row, and how a ROW input's vector is
   fetched inside that loop (as b<k>). */
typedef struct storage_code {
    const char *name;
    void (*setup)(gen *g);
    void (*loop_open)(gen *g, int output_phase); /* defines vi */
    void (*loop_close)(gen *g);
    void (*fetch)(gen *g, int node, const char *indent);
    /* ... and a COL input's vector (as c<k>); NULL: loaded from global memory where a phase needs it. */
    void (*col_fetch)(gen *g, int node, const char *indent);
    const char *p_is; /* what P (= batch) counts where the loop numbers a thread's vectors by p (NULL: it does not) */
    int late_stores;  /* outputs wait for the output phase (early_output): see the storages below */
} storage_code;

/* The kernel's frame around the row program. */
typedef struct skeleton_code {
    const char *name;
    void (*open)(gen *g);  /* up to the row group's `tr`, `rr`, `row` and `live` */
    void (*close)(gen *g); /* after the row group's outputs */
    /* The reduction across a row's threads: the scratch it needs (T > 32) and
       the expression that reduces acc<k> of every thread of a row. */
    void (*scratch)(gen *g);
    void (*reduce)(gen *g, int node);
    const char *row_leader; /* the one thread that stores a row's per-row outputs */
    void (*before_wait)(gen *g); /* NULL, or set-up that reads no global memory, emitted before the PDL wait */
} skeleton_code;

struct gen {
    const tn_fusion *f;
    const tn_analysis *a;
    const tn_plan_desc *p;
    tn_strbuf *sb;
    const storage_code *storage;
    const skeleton_code *skeleton;
    int nred;                  /* reductions, each with a slot in tn_red */
    int slot_of[TN_MAX_NODES]; /* reduction node -> its shared-memory slot */
    int first_phase, last_phase; /* the phase being emitted is the first / last to read the row */
    int carry;                 /* carried values are kept in kv<k>[P][V] (the plan's carry, a storage that keeps the row) */
    int released;              /* the stage was handed back before the row group's end (ring, staged cluster) */
    int uneven;                /* cluster: the last CTA's slice is shorter, or peeled (NVL a run-time value, copies sized by it) */
    int online_pass;           /* the second pass of an online pair's phase: its max is the thread's own (ml<k>) */
    int storing_early;         /* the first phase's first pass: it stores the early outputs too */
    unsigned char early[TN_MAX_IO]; /* ROW output o is stored in the first phase (early_output) */
};

static int is_elementwise(tn_shape_class s) { return s == TN_SHAPE_ROW || s == TN_SHAPE_COL; }
static int is_row_input(const tn_node *n) { return n->kind == TN_OP_INPUT && n->shape == TN_SHAPE_ROW; }
static int is_col_input(const tn_node *n) { return n->kind == TN_OP_INPUT && n->shape == TN_SHAPE_COL; }

/* The name of value k where it is used: e<k> per element, s<k> per row. */
static void value_name(const gen *g, int k, char *out, size_t cap) {
    if (g->online_pass && g->a->online_sum[k]) snprintf(out, cap, "ml%d", k);
    else snprintf(out, cap, "%c%d", is_elementwise(g->f->nodes[k].shape) ? 'e' : 's', k);
}

static void fmt1(char *out, size_t cap, const char *fmt, const char *a) { snprintf(out, cap, fmt, a); }

/* The expression that computes node k from its operands' names. */
static void node_expr(const gen *g, int k, char *out, size_t cap) {
    const tn_node *n = &g->f->nodes[k];
    char a[32] = "", b[32] = "", raw[160];
    if (n->nargs > 0) value_name(g, (int)n->args[0].index, a, sizeof a);
    if (n->nargs > 1) value_name(g, (int)n->args[1].index, b, sizeof b);
    switch (n->kind) {
    case TN_OP_PARAM: snprintf(out, cap, "prm%d", n->io_index); return;
    case TN_OP_ROW_LENGTH: snprintf(out, cap, "%.1ff", (double)g->p->cols); return;
    case TN_OP_CONSTANT: {
        float c = (float)n->constant;
        if (isnan(c)) snprintf(out, cap, "__int_as_float(0x7fc00000)");
        else if (isinf(c)) snprintf(out, cap, "__int_as_float(0x%s)", c > 0 ? "7f800000" : "ff800000");
        else snprintf(out, cap, "%af", (double)c);
        return;
    }
    case TN_OP_INPUT: {
        char src[48];
        if (n->shape == TN_SHAPE_ROW) snprintf(src, sizeof src, "b%d.e[v]", k);
        else if (n->shape == TN_SHAPE_COL) snprintf(src, sizeof src, "c%d.e[v]", k);
        else snprintf(src, sizeof src, "(live ? in%d[row] : %s(0))", n->io_index, k_dtype_code[n->dtype].storage);
        fmt1(out, cap, k_dtype_code[n->dtype].to_f32, src);
        return;
    }
    case TN_OP_CAST: snprintf(raw, sizeof raw, "%s", a); break;
    case TN_OP_UNARY: fmt1(raw, sizeof raw, k_unary_code[n->op], a); break;
    case TN_OP_BINARY:
        if (n->op == TN_BINARY_DIV && is_elementwise(n->shape) && !is_elementwise(g->f->nodes[n->args[1].index].shape))
            snprintf(raw, sizeof raw, "(%s * rcp%u)", a, n->args[1].index); /* see emit_value */
        else
            snprintf(raw, sizeof raw, k_binary_code[n->op], a, b);
        break;
    default: snprintf(out, cap, "0.0f /* unreachable */"); return;
    }
    /* A value of a narrower dtype is rounded to it, as the fusion says. */
    fmt1(out, cap, k_dtype_code[n->dtype].round, raw);
}

/* 1: per-row (or scalar) value k divides an elementwise value somewhere. */
static int divides_elements(const gen *g, int k) {
    for (int i = k + 1; i < g->f->num_nodes; i++) {
        const tn_node *n = &g->f->nodes[i];
        if (g->a->used[i] && n->kind == TN_OP_BINARY && n->op == TN_BINARY_DIV && (int)n->args[1].index == k &&
            is_elementwise(n->shape))
            return 1;
    }
    return 0;
}

static void emit_value(gen *g, const char *indent, int k) {
    char name[32], expr[256];
    value_name(g, k, name, sizeof name);
    node_expr(g, k, expr, sizeof expr);
    tn_strbuf_printf(g->sb, "%sconst float %s = %s;\n", indent, name, expr);
    /* Elements divided by a per-row value are multiplied by its reciprocal, taken once
       per row: an IEEE division per element costs more than the memory traffic. */
    if (!is_elementwise(g->f->nodes[k].shape) && divides_elements(g, k))
        tn_strbuf_printf(g->sb, "%sconst float rcp%d = 1.0f / %s;\n", indent, k, name);
}

/* How a COL input's vector is loaded: element by element where a peeled row leaves it off its 16-byte boundaries;
   through the read-only path said outright where early_l2 hands the inputs' addresses to inline asm (nvcc then
   stops inferring ld.global.nc: every weight load of rmsnorm 1 x 12289 lost it); else as nvcc infers (explicit
   __ldg everywhere cost a pipelined layernorm 32768 x 2048 8 bytes of spills). */
static const char *col_loader(const gen *g) {
    if (g->p->early_l2) return g->p->peel ? "tn_vload_any_ro" : "tn_vload_ro";
    return g->p->peel ? "tn_vload_any" : "tn_vload";
}

/* A COL input's vector vi, from global memory (L2 after the first rows). A peeled row's vectors start at
   column H, no 16-byte boundary of the COL input: element by element. */
static void col_load(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%stn_vec<%s, V> c%d;\n%s%s(c%d, in%d + %svi * V);\n", ind,
                     k_dtype_code[g->f->nodes[k].dtype].storage, k, ind, col_loader(g), k,
                     g->f->nodes[k].io_index, g->p->peel ? "H + " : "");
}

/* A COL input's vector from the CTA's cache of its slice (col_cache, filled by cluster_open). */
static void cached_col_fetch(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> c%d = tn_cc%d[vl];\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage,
                     k, k);
}

/* The values phase `phase` computes per element (carried ones taken as computed). */
static const unsigned char *phase_need(const gen *g, int phase) {
    return (g->carry ? g->a->phase_need_carry : g->a->phase_need)[phase];
}

/* Value k in phase `phase`: computed (and, in the phase that first computes a
   carried value, kept for the later ones), or taken from where it was kept. */
static void emit_phase_value(gen *g, const char *ind, int k, int phase) {
    const int carried = g->carry ? g->a->carried[k] : 0;
    if (carried && carried - 1 < phase) {
        /* An online pair's exp was carried as exp(t - the thread's max): rescaled to the row's max. */
        if (g->a->online_exp[k])
            tn_strbuf_printf(g->sb, "%sconst float e%d = kv%d[p][v] * osc%d;\n", ind, k, k, g->a->online_exp[k] - 1);
        else
            tn_strbuf_printf(g->sb, "%sconst float e%d = kv%d[p][v];\n", ind, k, k);
        return;
    }
    emit_value(g, ind, k);
    if (carried) tn_strbuf_printf(g->sb, "%skv%d[p][v] = e%d;\n", ind, k, k);
}

/* The registers a thread keeps its vectors of the row in (every used ROW input's words, P of each), and the
   registers a thread may have: 65536 an SM over the CTAs the kernel is compiled to hold at once (ptxas's
   choice taken as one), at most 255. */
static int row_words(const gen *g) {
    int words = 0;
    for (int i = 0; i < g->f->num_nodes; i++)
        if (g->a->used[i] && is_row_input(&g->f->nodes[i]))
            words += ((int)tn_dtype_size(g->f->nodes[i].dtype) * g->p->vec + 3) / 4;
    return words * g->p->batch;
}
static int thread_regs(const gen *g) {
    const int ctas = tn_plan_bound_ctas(g->p), cap = 65536 / (g->p->block_threads * (ctas > 1 ? ctas : 1));
    return cap < 255 ? cap : 255;
}
static void registers_fetch(gen *g, int k, const char *ind);
/* Whether ROW output o is stored in the first reduction phase rather than the output phase (plan field
   early_stores): its value needs no reduction and that phase computes it anyway (add_rmsnorm's x + residual), and
   the storage keeps the row on chip, so a store that overwrites a ROW input in place comes after this thread's
   every read of those elements. Its writes then stream while the row's reductions wait, where the output phase
   would carry them all. */
static int early_output(const gen *g, int o) {
    /* Not where the row kept in registers takes over half of a thread's: the stores' values and addresses in the
       first phase cost registers there (add_rmsnorm bf16, staged cluster tune candidates: 512 x 131080 over 4
       CTAs of 256 x 17 vectors, 136 words of 255, 247 registers and then 255 with an 8-byte spill; 4 CTAs of
       512 x 9, 72 words of 128, a 20-byte spill; 1000 x 8192 over 2 CTAs of 32 x 16 at 12 an SM, 128 of 170, 4
       bytes). In a loop of their own after the first phase's (the values computed again), ptxas kept the first
       loop's values and spilled 140 bytes at 512 x 131080. */
    const int crowded = g->storage->fetch == registers_fetch && 2 * row_words(g) > thread_regs(g);
    return g->p->early_stores && g->a->early_output[o] && !g->storage->late_stores && !crowded;
}
static void find_early_outputs(gen *g) {
    for (int r = 0; r < g->a->num_row_outputs; r++)
        g->early[g->a->row_outputs[r]] = (unsigned char)early_output(g, g->a->row_outputs[r]);
}

/* ROW output o's store of vector vi (o<o>, built in the element loop), at indent `ind`. */
static void emit_store(gen *g, int o, const char *ind) {
    tn_strbuf_printf(g->sb, "%s%s(out%d + row * out%d_ld + %svi * V, o%d);\n", ind,
                     g->p->peel ? "tn_vstore_peeled" : "tn_vstore", o, o, g->p->peel ? "H + " : "", o);
}

/* The body of one element loop for vector vi: fetches, the needed values,
   then the accumulations of phase `level` or (level < 0) the output stores. */
static void emit_element_loop_body(gen *g, const unsigned char *need, int level, int phase, const char *ind) {
    const int phase_is_output = level < 0;
    const tn_fusion *f = g->f;
    char ind2[32];
    snprintf(ind2, sizeof ind2, "%s    ", ind);
    for (int i = 0; i < f->num_nodes; i++)
        if (need[i] && is_row_input(&f->nodes[i])) g->storage->fetch(g, i, ind);
    for (int i = 0; i < f->num_nodes; i++)
        if (need[i] && is_col_input(&f->nodes[i]))
            (g->p->col_cache ? cached_col_fetch : g->storage->col_fetch ? g->storage->col_fetch : col_load)(g, i, ind);
    /* The outputs this loop stores: the output phase's, or the early ones in the first phase's first pass. */
    int stores[TN_MAX_IO], nstores = 0;
    for (int r = 0; r < g->a->num_row_outputs && (phase_is_output || g->storing_early); r++)
        if (phase_is_output != g->early[g->a->row_outputs[r]]) stores[nstores++] = g->a->row_outputs[r];
    for (int s = 0; s < nstores; s++)
        tn_strbuf_printf(g->sb, "%stn_vec<%s, V> o%d;\n", ind, k_dtype_code[f->outputs[stores[s]].dtype].storage,
                         stores[s]);
    tn_strbuf_printf(g->sb, "%s#pragma unroll\n%sfor (int v = 0; v < V; v++) {\n", ind, ind);
    for (int i = 0; i < f->num_nodes; i++)
        if (need[i]) emit_phase_value(g, ind2, i, phase);
    for (int s = 0; s < nstores; s++) {
        const int o = stores[s];
        char name[32], conv[64];
        value_name(g, (int)f->outputs[o].value.index, name, sizeof name);
        fmt1(conv, sizeof conv, k_dtype_code[f->outputs[o].dtype].from_f32, name);
        tn_strbuf_printf(g->sb, "%so%d.e[v] = %s;\n", ind2, o, conv);
    }
    if (!phase_is_output) {
        for (int i = 0; i < f->num_nodes; i++) {
            const tn_node *n = &f->nodes[i];
            /* An online pair's sum accumulates in the phase's second pass, everything else in the first. */
            if (!g->a->used[i] || n->kind != TN_OP_REDUCE || g->a->level[i] != level ||
                !g->a->online_max[i] != !g->online_pass)
                continue;
            tn_strbuf_printf(g->sb, "%sacc%d[v %% A] = tn_combine<%d>(acc%d[v %% A], e%u);\n", ind2, i, n->op, i,
                             n->args[0].index);
        }
    }
    tn_strbuf_printf(g->sb, "%s}\n", ind);
    /* The output phase's loop runs for live rows only; a reduction phase's for every row of the group. */
    if (nstores && !phase_is_output) tn_strbuf_printf(g->sb, "%sif (live) {  // stored before the reductions\n", ind);
    for (int s = 0; s < nstores; s++) emit_store(g, stores[s], phase_is_output ? ind : ind2);
    if (nstores && !phase_is_output) tn_strbuf_printf(g->sb, "%s}\n", ind);
}

static const storage_code k_outside;

/* A peeled row's element outside its vectors (column xc, for threads tr < NX): the phase's element loop
   body again, at a vector of one element (V, H and vi shadowed: its addresses are column xc's). */
static void emit_outside_element(gen *g, const unsigned char *need, int level, int phase, int out_phase) {
    tn_strbuf_printf(g->sb, "        if (%str < NX) {  // the element outside the vectors this thread takes\n"
                            "            constexpr int V = 1;\n"
                            "            const int H = 0, vi = xc;\n"
                            "            (void)H, (void)vi;\n",
                     out_phase ? "live && " : "");
    const storage_code *storage = g->storage;
    g->storage = &k_outside;
    emit_element_loop_body(g, need, level, phase, "            ");
    g->storage = storage;
    tn_strbuf_append(g->sb, "        }\n");
}

/* The reciprocal of per-row value k, where elements are divided by it. */
static void emit_rcp(gen *g, int k) {
    if (divides_elements(g, k)) tn_strbuf_printf(g->sb, "        const float rcp%d = 1.0f / s%d;\n", k, k);
}

/* One pass over the row's vectors: phase `level` (its reductions) or, with
   level < 0, the output phase. */
static void emit_phase(gen *g, int level) {
    const tn_fusion *f = g->f;
    const tn_analysis *a = g->a;
    const int out_phase = level < 0, phase = out_phase ? a->num_levels : level - 1;
    const unsigned char *need = phase_need(g, phase);
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        if (!a->used[i] || n->kind != TN_OP_REDUCE || a->level[i] != level) continue;
        /* One accumulator per vector lane: V independent chains, not one chain of V x batch. */
        tn_strbuf_printf(g->sb, "        float acc%d[A];\n#pragma unroll\n        for (int v = 0; v < A; v++) acc%d[v] = %s;\n",
                         i, i, k_reduce_identity[n->op]);
    }
    int pairs = 0;
    for (int i = 0; i < f->num_nodes && !out_phase; i++) pairs += a->online_sum[i] && a->level[i] == level;
    const int last = out_phase || (level == a->num_levels && !a->num_row_outputs);
    g->first_phase = level == 1 || (out_phase && a->num_levels == 0);
    g->last_phase = last && !pairs; /* an online pair's second pass is the phase's last */
    g->storing_early = level == 1;
    g->storage->loop_open(g, out_phase);
    emit_element_loop_body(g, need, level, phase, "                ");
    g->storage->loop_close(g);
    if (g->p->peel) emit_outside_element(g, need, level, phase, out_phase);
    g->storing_early = 0;
    if (out_phase) return;
    if (pairs) {
        /* Online pairs: each thread's max, then a second pass summing exp(t - that max) (a thread of no finite
           value sums exp(t - 0) = 0), so that the pair takes one reduction round where max and sum took two. */
        for (int i = 0; i < f->num_nodes; i++)
            if (a->online_sum[i] && a->level[i] == level)
                tn_strbuf_printf(g->sb,
                                 "        const float mt%d = tn_fold<A, 1>(acc%d);  // this thread's max\n"
                                 "        const float ml%d = mt%d == -__int_as_float(0x7f800000) ? 0.0f : mt%d;\n",
                                 i, i, i, i, i);
        g->first_phase = 0;
        g->last_phase = last;
        g->online_pass = 1;
        g->storage->loop_open(g, 0);
        emit_element_loop_body(g, a->online_need[phase], level, phase, "                ");
        g->storage->loop_close(g);
        g->online_pass = 0;
    }
    for (int i = 0; i < f->num_nodes; i++) {
        if (g->slot_of[i] < 0 || a->level[i] != level) continue;
        const int s = a->online_sum[i] - 1;
        if (s < 0) {
            tn_strbuf_printf(g->sb, "        const float s%d = ", i);
            g->skeleton->reduce(g, i);
            tn_strbuf_append(g->sb, ";\n");
        } else {
            tn_strbuf_printf(g->sb, "        const tn_online q%d = ", i);
            g->skeleton->reduce(g, i);
            tn_strbuf_printf(g->sb,
                             ";\n        const float s%d = q%d.m, s%d = q%d.s;\n"
                             "        const float osc%d = tn_online_scale(1.0f, mt%d, s%d);  // carried exps to the row's max\n"
                             "        (void)osc%d;\n",
                             i, i, s, i, i, i, i, i);
        }
        emit_rcp(g, i);
        if (s >= 0) emit_rcp(g, s);
    }
}

/* Per-row values (ROWSCALAR) of one level, in order. */
static void emit_row_values(gen *g, int level) {
    for (int i = 0; i < g->f->num_nodes; i++) {
        const tn_node *n = &g->f->nodes[i];
        if (!g->a->used[i] || n->shape != TN_SHAPE_ROWSCALAR || n->kind == TN_OP_REDUCE) continue;
        if (g->a->level[i] == level) emit_value(g, "        ", i);
    }
}

/* The caller's fusion name as it may appear in source: letters, digits, '_',
   '-' and '.' kept, anything else (a newline, a quote, a '*' '/') becomes '_'. */
static void source_safe_name(const char *name, char *out, size_t cap) {
    size_t n = 0;
    for (; name[n] && n + 1 < cap; n++) {
        char c = name[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                 c == '.';
        out[n] = ok ? c : '_';
    }
    out[n] = '\0';
}

static void emit_signature(gen *g) {
    tn_abi abi;
    tn_abi_of(g->f, &abi);
    /* A persistent warp-specialized CTA runs alone on its SM; told so, ptxas
       stops aiming at several CTAs per SM (it spilled at 32-40 registers). A
       cluster CTA likewise (ptxas spilled around the exchange's wait at 40
       registers, aiming at three 512-thread CTAs an SM), unless the scheduler
       sized the plan for several CTAs an SM (ctas_per_sm). */
    const int ctas = tn_plan_bound_ctas(g->p);
    if (ctas)
        tn_strbuf_printf(g->sb, "extern \"C\" __global__ void __launch_bounds__(%d, %d) " TN_KERNEL_NAME "(",
                         g->p->block_threads, ctas);
    else
        tn_strbuf_printf(g->sb, "extern \"C\" __global__ void __launch_bounds__(%d) " TN_KERNEL_NAME "(", g->p->block_threads);
    for (int i = 0; i < abi.count; i++) {
        const tn_abi_arg *a = &abi.args[i];
        tn_strbuf_append(g->sb, i ? ",\n    " : "\n    ");
        switch (a->kind) {
        case TN_ARG_INPUT: tn_strbuf_printf(g->sb, "const %s *__restrict__ in%d", k_dtype_code[a->dtype].storage, a->index); break;
        case TN_ARG_INPUT_LD: tn_strbuf_printf(g->sb, "const long long in%d_ld", a->index); break;
        case TN_ARG_OUTPUT: tn_strbuf_printf(g->sb, "%s *__restrict__ out%d", k_dtype_code[a->dtype].storage, a->index); break;
        case TN_ARG_OUTPUT_LD: tn_strbuf_printf(g->sb, "const long long out%d_ld", a->index); break;
        case TN_ARG_PARAM: tn_strbuf_printf(g->sb, "const float prm%d", a->index); break;
        case TN_ARG_ROWS: tn_strbuf_append(g->sb, "const long long M"); break;
        default: break;
        }
    }
    tn_strbuf_append(g->sb, ") {\n");
}

/* ---- row storage ------------------------------------------------------------ */

/* registers: each thread loads its P vectors of every ROW input once per row
   group (bb<k>[p]) and every phase reads them from there. `index` names the
   vector vi of the row and `bound` says it is in the row (a cluster CTA's: in
   its slice). */
typedef struct row_index {
    const char *index, *bound;
} row_index;
static const row_index k_whole_row = {"const int vi = p * T + tr;", "vi < NV"};
static const row_index k_peeled_row = {"const int vi = p * T + tr;", "vi < NVB"}; /* from the row's boundary */
static const row_index k_slice = {"const int vl = p * T + tr, vi = VB + vl;\n            (void)vi;", "vl < NVL"};
/* ... a slice whose length is known only at run time (the last CTA's is
   shorter): a thread's first PF vectors are in every CTA's slice, so the
   unrolled loop checks only the rest (ptxas kept the checks and spilled). */
static const row_index k_uneven_slice = {"const int vl = p * T + tr, vi = VB + vl;\n            (void)vi;",
                                         "(p < PF || vl < NVL)"};
static const row_index *slice_index(const gen *g) { return g->uneven ? &k_uneven_slice : &k_slice; }
/* Where the plan takes its COL vectors into registers with the row's loads (TN_COL_IN_REGISTERS_MAX_VECTORS). */
static int cols_in_registers(const gen *g) {
    return g->p->cols_early || (g->p->batch <= TN_COL_IN_REGISTERS_MAX_VECTORS && !g->p->col_cache);
}

/* A peeled row (plan field peel): its first 16-byte boundary, found from the narrowest ROW tensor (the
   launch checked that every other one is at the same offset from a boundary, in its own elements), its whole
   vectors from there, and the column of the element outside them this thread takes. */
static void peel_row(gen *g) {
    const tn_fusion *f = g->f;
    int best = -1, best_size = 0, is_output = 0;
    for (int i = 0; i < f->num_nodes; i++)
        if (g->a->used[i] && is_row_input(&f->nodes[i]) &&
            (best < 0 || (int)tn_dtype_size(f->nodes[i].dtype) < best_size))
            best = f->nodes[i].io_index, best_size = (int)tn_dtype_size(f->nodes[i].dtype);
    for (int r = 0; r < g->a->num_row_outputs; r++) {
        const int o = g->a->row_outputs[r];
        if (best < 0 || (int)tn_dtype_size(f->outputs[o].dtype) < best_size)
            best = o, best_size = (int)tn_dtype_size(f->outputs[o].dtype), is_output = 1;
    }
    const char *t = is_output ? "out" : "in";
    tn_strbuf_printf(g->sb,
                     "        const int H = live ? tn_head(%s%d + row * %s%d_ld) : 0;  // elements before the row's "
                     "first 16-byte boundary\n",
                     t, best, t, best);
    if (g->p->kind == TN_PLAN_CLUSTER) /* the first CTA takes the elements outside; each its slice of the vectors */
        tn_strbuf_append(g->sb,
                         "        const int NVB = (N - H) / V, NX = rank == 0 ? N - NVB * V : 0;  // whole vectors from "
                         "there; elements outside them (the first CTA's)\n"
                         "        const int NVL = (int)rank + 1 < CL ? NVC : NVB - (CL - 1) * NVC;  // this CTA's slice of "
                         "them\n");
    else
        tn_strbuf_append(g->sb, "        const int NVB = (N - H) / V, NX = N - NVB * V;  // whole vectors from there; "
                                "elements outside them\n");
    tn_strbuf_append(g->sb, "        const int xc = tr < H ? tr : NVB * V + tr;  // the column of the one thread tr < NX takes\n"
                            "        (void)xc;\n");
}

static void register_loads(gen *g, const row_index *x, int staged) {
    const tn_fusion *f = g->f;
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        /* cols_early: the COL loads on `live` as the row's are, so ptxas issues the row's loads first (and may take
           these after the first reduction); without it, unconditional: ptxas issues them first and keeps them. */
        if (g->a->used[i] && is_col_input(n) && cols_in_registers(g))
            tn_strbuf_printf(g->sb,
                             "        tn_vec<%s, V> cc%d[P];  // issued with the row's loads\n"
                             "#pragma unroll\n        for (int p = 0; p < P; p++) {\n"
                             "            %s\n"
                             "            if (%s%s) %s(cc%d[p], in%d + %svi * V);\n"
                             "            else tn_vzero(cc%d[p]);\n        }\n",
                             k_dtype_code[n->dtype].storage, i, x->index,
                             staged || !g->p->cols_early ? "" : "live && ", x->bound, col_loader(g), i, n->io_index,
                             g->p->peel ? "H + " : "", i);
        if (!g->a->used[i] || !is_row_input(n)) continue;
        tn_strbuf_printf(g->sb, "        tn_vec<%s, V> bb%d[P];\n"
                                "#pragma unroll\n        for (int p = 0; p < P; p++) {\n"
                                "            %s\n",
                         k_dtype_code[n->dtype].storage, i, x->index);
        if (staged) /* the slice's stage in shared memory (r<i>, from stage_pointers) */
            tn_strbuf_printf(g->sb, "            if (%s) bb%d[p] = r%d[vl];\n", x->bound, i, i);
        else
            tn_strbuf_printf(g->sb, "            if (live && %s) tn_vload(bb%d[p], in%d + row * in%d_ld + %svi * V);\n",
                             x->bound, i, n->io_index, n->io_index, g->p->peel ? "H + " : "");
        tn_strbuf_printf(g->sb, "            else tn_vzero(bb%d[p]);\n        }\n", i);
        if (g->p->peel) /* the element outside the vectors, with them */
            tn_strbuf_printf(g->sb, "        tn_vec<%s, 1> xb%d;\n"
                                    "        if (live && tr < NX) xb%d.e[0] = in%d[row * in%d_ld + xc];\n"
                                    "        else tn_vzero(xb%d);\n",
                             k_dtype_code[n->dtype].storage, i, i, n->io_index, n->io_index, i);
    }
}
/* pipeline: ROW input vectors of the row `row` (live: in M) into arr<i>[P], at indent `ind`; the COL
   vectors (cc<i>) where `cols` (once, before the loop: every row group of the CTA reads the same ones). */
static void pipeline_loads(gen *g, const char *arr, const char *ind, int cols) {
    const tn_fusion *f = g->f;
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        const int col = is_col_input(n) && cols_in_registers(g);
        if (!g->a->used[i] || !(cols ? col : is_row_input(n))) continue;
        tn_strbuf_printf(g->sb, "#pragma unroll\n%sfor (int p = 0; p < P; p++) {\n%s    %s\n", ind, ind,
                         k_whole_row.index);
        if (cols)
            tn_strbuf_printf(g->sb, "%s    if (vi < NV) %s(cc%d[p], in%d + vi * V);\n", ind, col_loader(g), i, n->io_index);
        else
            tn_strbuf_printf(g->sb, "%s    if (live && vi < NV) tn_vload(%s%d[p], in%d + row * in%d_ld + vi * V);\n",
                             ind, arr, i, n->io_index, n->io_index);
        tn_strbuf_printf(g->sb, "%s    else tn_vzero(%s%d[p]);\n%s}\n", ind, cols ? "cc" : arr, i, ind);
    }
}
/* pipeline, before the row-group loop: the COL vectors and the first row group's vectors (nb<i>). */
static void pipeline_prologue(gen *g) {
    const tn_fusion *f = g->f;
    tn_strbuf_append(g->sb, "    // pipeline: each row group's vectors are loaded while the one before it reduces and stores\n");
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        if (!g->a->used[i] || n->kind != TN_OP_INPUT) continue;
        if (is_row_input(n))
            tn_strbuf_printf(g->sb, "    tn_vec<%s, V> nb%d[P];  // the next row group's\n", k_dtype_code[n->dtype].storage, i);
        else if (n->shape == TN_SHAPE_COL && cols_in_registers(g))
            tn_strbuf_printf(g->sb, "    tn_vec<%s, V> cc%d[P];  // for every row group\n", k_dtype_code[n->dtype].storage, i);
    }
    pipeline_loads(g, "nb", "    ", 1);
    tn_strbuf_append(g->sb, "    {\n        const long long row = (long long)blockIdx.x * R + rr;\n"
                            "        const bool live = row < M;\n");
    pipeline_loads(g, "nb", "        ", 0);
    tn_strbuf_append(g->sb, "    }\n");
}
/* pipeline, at a row group's top: its vectors taken from nb<i>, and the next row group's loads issued. */
static void pipeline_setup(gen *g) {
    const tn_fusion *f = g->f;
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        if (!g->a->used[i] || !is_row_input(n)) continue;
        tn_strbuf_printf(g->sb, "        tn_vec<%s, V> bb%d[P];\n"
                                "#pragma unroll\n        for (int p = 0; p < P; p++) bb%d[p] = nb%d[p];\n",
                         k_dtype_code[n->dtype].storage, i, i, i);
    }
    tn_strbuf_append(g->sb, "        {\n            const long long row = (g + gridDim.x) * R + rr;\n"
                            "            const bool live = row < M;\n");
    pipeline_loads(g, "nb", "            ", 0);
    tn_strbuf_append(g->sb, "        }\n");
}
static void register_loop(gen *g, int output_phase, const row_index *x) {
    tn_strbuf_printf(g->sb, "#pragma unroll\n        for (int p = 0; p < P; p++) {\n"
                            "            %s\n"
                            "            if (%s%s) {\n", x->index, output_phase ? "live && " : "", x->bound);
}
static const row_index *row_of(const gen *g) { return g->p->peel ? &k_peeled_row : &k_whole_row; }
static void registers_setup(gen *g) {
    if (g->p->pipeline) {
        pipeline_setup(g);
        return;
    }
    if (g->p->peel) peel_row(g);
    register_loads(g, row_of(g), 0);
}
static void registers_loop(gen *g, int output_phase) { register_loop(g, output_phase, row_of(g)); }
static void slice_setup(gen *g) {
    if (g->p->peel) peel_row(g);
    register_loads(g, slice_index(g), 0);
}
static void slice_loop(gen *g, int output_phase) { register_loop(g, output_phase, slice_index(g)); }
static void registers_col_fetch(gen *g, int k, const char *ind) {
    if (!cols_in_registers(g)) {
        col_load(g, k, ind);
        return;
    }
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> &c%d = cc%d[p];\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage,
                     k, k);
}
static void registers_fetch(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> &b%d = bb%d[p];\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage,
                     k, k);
}

/* The loop of the storages that stream a row: every thread strides over its
   row's vectors. 64-bit only where a 32-bit index could pass INT_MAX on its
   last step. */
static void strided_loop(gen *g, int output_phase) {
    const int wide = g->p->cols / g->p->vec + g->p->threads_per_row > 0x7fffffff;
    if (g->carry) { /* whole rows on chip: the vectors a thread takes are numbered like kept ones (kv<k>[p]) */
        register_loop(g, output_phase, &k_whole_row);
        return;
    }
    /* Rows past M in the last row group compute on stale data and store nothing. */
    tn_strbuf_printf(g->sb, "#pragma unroll %d\n        for (%s vi = tr; vi < NV; vi += T) {\n            if (%s) {\n",
                     g->p->batch, wide ? "long long" : "int", output_phase ? "live" : "true");
}

/* global: no copy on chip; each phase reads the row from memory again (L2).
   One row per CTA, so every row it loads is live. */
static void global_setup(gen *g) { (void)g; }
static void global_fetch(gen *g, int k, const char *ind) {
    const tn_node *n = &g->f->nodes[k];
    tn_strbuf_printf(g->sb, "%stn_vec<%s, V> b%d;\n%stn_vload(b%d, in%d + row * in%d_ld + vi * V);\n", ind,
                     k_dtype_code[n->dtype].storage, k, ind, k, n->io_index, n->io_index);
}

/* l2 slice (cluster plan, l2_slice): the global storage over the CTA's slice of the row, vectors [VB, VB + NVL):
   each phase streams it from memory again, L2 holding the grid's rows between phases. */
static void l2_slice_loop(gen *g, int output_phase) {
    tn_strbuf_printf(g->sb, "#pragma unroll %d\n        for (int vl = tr; vl < NVL; vl += T) {\n"
                            "            const int vi = VB + vl;\n            if (%s) {\n",
                     g->p->batch, output_phase ? "live" : "true");
}

/* shared: the ring skeleton's bulk copies put each row of each ROW input in
   the stage's shared memory; phases read it with 16-byte loads. */
/* r<i>: this row's part of the stage for each ROW input (the stage is tn_stage). */
static void stage_pointers(gen *g, const char *ind) {
    for (int k = 0; k < g->a->num_stage_inputs; k++) {
        const int i = g->a->stage_inputs[k];
        const char *st = k_dtype_code[g->f->nodes[i].dtype].storage;
        tn_strbuf_printf(g->sb,
                         "%sconst tn_vec<%s, V> *__restrict__ r%d = reinterpret_cast<const tn_vec<%s, V> *>(\n"
                         "%s    tn_stage + tn_src[%d].smem_offset + rr * tn_src[%d].row_bytes);\n",
                         ind, st, i, st, ind, k, k);
    }
}
static void shared_setup(gen *g) { stage_pointers(g, "        "); }
static void shared_fetch(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> b%d = r%d[vi];\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage, k,
                     k);
}

/* Hands this row group's stage back (every thread; thread 0 refills it with
   the row group S turns ahead): rows R a stage, clusters `step` apart, chunk
   `chunk` of each row. */
static void stage_refill(gen *g, const char *rows, const char *step, const char *chunk) {
    tn_strbuf_printf(g->sb, "        tn_ring_refill<%s, S, NIN>(tn_src, tn_smem + slot * STAGE_BYTES, &tn_full[slot], g, M, "
                            "%s, %s);\n", rows, step, chunk);
    g->released = 1;
}
static void slice_refill(gen *g) { stage_refill(g, "1", "gridDim.x / CL", g->uneven ? "0" : "rank"); }

/* A cluster plan whose slices stay in shared memory: the slice waits in its
   ring stage (bulk copies, see cluster_open), every phase reads its vectors
   there (r<k>[vl]), and the stage is refilled once the row group is done
   (cluster_close). */
static void shared_slice_setup(gen *g) {
    tn_strbuf_append(g->sb, "        const int slot = (int)(turn % S);\n"
                            "        tn_mbar_wait(&tn_full[slot], (unsigned)((turn / S) & 1));\n"
                            "        const unsigned char *tn_stage = tn_smem + slot * STAGE_BYTES;\n");
    stage_pointers(g, "        ");
}

/* A cluster plan with stages: the slice waits in its ring stage (bulk copies,
   see cluster_open), its threads take it into registers and the stage is
   refilled with the slice S row groups ahead before anything else. */
static void staged_slice_setup(gen *g) {
    shared_slice_setup(g);
    register_loads(g, slice_index(g), 1);
    slice_refill(g);
}

/* The close of the two-brace loops above. */
static void loop_close(gen *g) { tn_strbuf_append(g->sb, "            }\n        }\n"); }

/* shared ring of chunks (tma-ws): a row group spans K slots of this consumer
   group's ring; each phase walks them in order (the first phase waits for each
   slot's copies, the last releases each slot once read), and each thread
   strides over its rows' vectors within a slot. */
static void ws_loop_open(gen *g, int output_phase) {
    tn_strbuf_printf(g->sb, "%s        for (int ch = 0; ch < K; ch++) {\n"
                            "            const int slot = (int)((it + ch) %% S);\n",
                     g->p->chunks > 1 ? "#pragma unroll 1\n" : "");
    if (g->first_phase)
        tn_strbuf_append(g->sb, "            tn_mbar_wait(&tn_wfull[slot], (unsigned)(((it + ch) / S) & 1));\n");
    tn_strbuf_append(g->sb, "            const unsigned char *tn_stage = tn_ring + slot * STAGE_BYTES;\n");
    stage_pointers(g, "            ");
    tn_strbuf_printf(g->sb, "#pragma unroll %d\n            for (int vl = tr; vl < NV / K; vl += T) {\n"
                            "            const int vi = ch * (NV / K) + vl;\n            (void)vi;\n"
                            "            if (%s) {\n",
                     g->p->batch, output_phase ? "live" : "true");
}
static void ws_loop_close(gen *g) {
    tn_strbuf_append(g->sb, "            }\n            }\n");
    if (g->last_phase) tn_strbuf_append(g->sb, "            tn_ws_release(&tn_wempty[slot]);\n");
    tn_strbuf_append(g->sb, "        }\n");
}
/* A vector of the row in its stage by its place there, vl (the tma-ws chunk's, the cluster CTA's slice). */
static void ws_fetch(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> b%d = r%d[vl];\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage, k,
                     k);
}
static void no_setup(gen *g) { (void)g; }

#define KEEPS "vectors each thread keeps per row"
static const storage_code k_registers = {"registers", registers_setup, registers_loop, loop_close, registers_fetch,
                                         registers_col_fetch, KEEPS};
/* A peeled row's element outside its vectors: the ROW inputs' from xb<k> (register_loads), the COL inputs'
   from global memory at column xc (col_load, under emit_outside_element's V, H and vi). */
static void outside_fetch(gen *g, int k, const char *ind) {
    tn_strbuf_printf(g->sb, "%sconst tn_vec<%s, V> &b%d = xb%d;\n", ind, k_dtype_code[g->f->nodes[k].dtype].storage, k,
                     k);
}
static const storage_code k_outside = {"registers, the element outside a peeled row's vectors", NULL, NULL, NULL,
                                       outside_fetch, col_load, NULL};
/* late_stores: the global and L2-slice storages read the row from memory again in every phase (an output stored
   in place before the last would change what it reads); tma-ws keeps the whole row group in its slots, but its
   kernels have not been run with early stores (left as they were). */
static const storage_code k_global = {"global memory", global_setup, strided_loop, loop_close, global_fetch, NULL, NULL, 1};
static const storage_code k_l2_slice = {"global memory, a slice of each row per CTA (read again from L2 each phase)",
                                        global_setup, l2_slice_loop, loop_close, global_fetch, NULL, NULL, 1};
static const storage_code k_shared = {"shared memory (bulk copies)", shared_setup, strided_loop, loop_close,
                                      shared_fetch, NULL, NULL};
static const storage_code k_register_slice = {"registers, a slice of each row per CTA", slice_setup, slice_loop,
                                              loop_close, registers_fetch, registers_col_fetch, KEEPS};
static const storage_code k_staged_slice = {"registers, a slice of each row per CTA, staged in shared memory by bulk copies",
                                            staged_slice_setup, slice_loop, loop_close, registers_fetch,
                                            registers_col_fetch, KEEPS};
static const storage_code k_shared_slice = {"shared memory, a slice of each row per CTA (bulk copies)",
                                            shared_slice_setup, slice_loop, loop_close, ws_fetch, NULL,
                                            "vectors each thread takes of its slice"};
static const storage_code k_shared_chunks = {"shared memory, a ring of chunks (bulk copies)", no_setup, ws_loop_open,
                                             ws_loop_close, ws_fetch, NULL, NULL, 1};
#undef KEEPS

/* ---- skeletons ----------------------------------------------------------------- */

/* The CTA's threads split into rows of T: thread tr of row rr of the row group. */
static void cta_rows(gen *g) {
    tn_strbuf_append(g->sb, "    const int tr = threadIdx.x % T, rr = threadIdx.x / T;\n    (void)rr;\n");
}

/* pdl 2: the trigger at the top of the CTA's last row group (the loop steps by `step` row groups) instead of
   at the kernel's top. A grid whose CTAs loop over row groups holds its SMs to the end; triggered at the top, the next
   kernel's CTAs fill the slots this grid leaves (a cluster plan's, where the driver places fewer clusters
   than the SMs' CTAs) and start there, unevenly, ahead of the rest (H100, softmax 512 x 65536 over 92
   persistent clusters of 4: 53.3 us with the trigger at the top, 49.4 without PDL). */
static void late_trigger(gen *g, const char *step) {
    if (g->p->pdl == 2)
        tn_strbuf_printf(g->sb, "        if ((g + %s) * R >= M) tn_pdl_launch_dependents();  // this CTA's last row group\n",
                         step);
}

/* Reductions over the whole CTA (__syncthreads): every thread takes part. */
static void cta_scratch(gen *g) {
    if (g->p->threads_per_row > 32 && g->nred)
        tn_strbuf_printf(g->sb, "    __shared__ float tn_red[%d][R][T / 32];\n", g->nred);
}
/* Reduction k's operation for the device templates: its op, or 2 for an online pair. */
static int reduce_op(const gen *g, int k) { return g->a->online_sum[k] ? 2 : g->f->nodes[k].op; }
/* This thread's part of reduction k: its accumulator lanes folded (an online pair: its max and its sum). */
static void emit_thread_part(gen *g, int k) {
    if (g->a->online_sum[k])
        tn_strbuf_printf(g->sb, "tn_online{mt%d, tn_fold<A, 0>(acc%d)}", k, g->a->online_sum[k] - 1);
    else
        tn_strbuf_printf(g->sb, "tn_fold<A, %d>(acc%d)", g->f->nodes[k].op, k);
}
/* Where reduction k's parts meet: `base` (NULL where no part goes through
   shared memory) or, for an online pair, its two slots `stride` floats apart. */
static void emit_slots(gen *g, int k, const char *base, const char *stride) {
    if (g->a->online_sum[k]) tn_strbuf_printf(g->sb, "tn_oslot{%s, %s}", base ? base : "nullptr", base ? stride : "0");
    else tn_strbuf_append(g->sb, base ? base : "(float *)nullptr");
}
static void cta_reduce(gen *g, int k) {
    char slot[32];
    snprintf(slot, sizeof slot, "tn_red[%d][rr]", g->slot_of[k]);
    tn_strbuf_printf(g->sb, "tn_row_reduce<T, %d>(", reduce_op(g, k));
    emit_thread_part(g, k);
    tn_strbuf_append(g->sb, ", ");
    emit_slots(g, k, g->p->threads_per_row > 32 ? slot : NULL, "R * (T / 32)");
    tn_strbuf_append(g->sb, ")");
}

/* grid-stride: each CTA takes row groups blockIdx.x, + gridDim.x, ... */
static void grid_stride_open(gen *g) {
    cta_rows(g);
    if (g->p->pipeline) pipeline_prologue(g);
    tn_strbuf_append(g->sb, "    for (long long g = blockIdx.x; g * R < M; g += gridDim.x) {\n"
                            "        const long long row = g * R + rr;\n"
                            "        const bool live = row < M;\n        (void)live;\n");
    late_trigger(g, "gridDim.x");
}
/* The end of a row group taken by a loop that steps by `step` row groups: a barrier before tn_red is reused,
   only where the CTA takes another (the test is the same for all its threads), so the CTA of one row group,
   the small problems', exits without it. A pipelined plan's persistent CTAs take many (and ptxas spilled 8
   bytes around the test in layernorm's 64 x 4): always. */
static void row_group_close(gen *g, const char *step) {
    if (g->p->threads_per_row > 32 && g->nred) {
        if (g->p->pipeline)
            tn_strbuf_append(g->sb, "        __syncthreads();  // tn_red is reused by the next row group\n");
        else
            tn_strbuf_printf(g->sb,
                             "        if ((g + %s) * R < M) __syncthreads();  // tn_red is reused by the next row group\n",
                             step);
    }
    tn_strbuf_append(g->sb, "    }\n");
}
static void grid_stride_close(gen *g) { row_group_close(g, "gridDim.x"); }

/* The ROW inputs' places in a stage: input k's rows at stage_elem_offset[k] *
   rows * (elements of a row in a stage) bytes, each `elems` elements long. */
static void row_sources(gen *g, int rows, int64_t elems) {
    const tn_fusion *f = g->f;
    const tn_analysis *a = g->a;
    tn_strbuf_printf(g->sb, "    constexpr int NIN = %d;\n    const tn_row_src tn_src[NIN] = {\n", a->num_stage_inputs);
    for (int k = 0; k < a->num_stage_inputs; k++) {
        const tn_node *n = &f->nodes[a->stage_inputs[k]];
        const int size = (int)tn_dtype_size(n->dtype);
        if (g->uneven) /* this CTA's slice, from its own first vector, as long as it is (chunk 0) */
            tn_strbuf_printf(g->sb,
                             "        {reinterpret_cast<const unsigned char *>(in%d + (long long)VB * V), in%d_ld * %d, "
                             "(unsigned)NVL * V * %du, %lldu},\n",
                             n->io_index, n->io_index, size, size, (long long)a->stage_elem_offset[k] * rows * elems);
        else
            tn_strbuf_printf(g->sb, "        {reinterpret_cast<const unsigned char *>(in%d), in%d_ld * %d, %lldu, %lldu},\n",
                             n->io_index, n->io_index, size, (long long)elems * size,
                             (long long)a->stage_elem_offset[k] * rows * elems);
    }
    tn_strbuf_printf(g->sb, "    };\n    constexpr unsigned STAGE_BYTES = %lldu;\n"
                            "    extern __shared__ __align__(128) unsigned char tn_smem[];\n",
                     (long long)a->buffer_elem_bytes * elems * rows);
}

/* ring: a persistent CTA keeps S stages of shared memory in flight; thread 0
   fills a stage with bulk copies of a whole row group (tn_stage_issue, in
   tn_bulk.cuh), everyone waits on its mbarrier, and once all have read it the
   stage is refilled with the row group S turns ahead. */
/* The ring's stages (rows of `elems` elements each) and their "full" barriers after them. */
static void ring_declare(gen *g, int rows, int64_t elems) {
    tn_strbuf_printf(g->sb, "    constexpr int S = %d;\n", g->p->stages);
    row_sources(g, rows, elems);
    tn_strbuf_append(g->sb,
                     "    unsigned long long *tn_full = reinterpret_cast<unsigned long long *>(tn_smem + S * STAGE_BYTES);\n");
}
static void ring_open(gen *g) {
    cta_rows(g);
    ring_declare(g, g->p->rows_per_cta, g->p->cols);
    tn_strbuf_append(g->sb,
                     "    const long long G = M / R + (M % R != 0);\n"
                     "    tn_ring_start<R, S, NIN>(tn_src, tn_smem, STAGE_BYTES, tn_full, G, M, blockIdx.x, gridDim.x, 0);\n"
                     "    long long turn = 0;\n"
                     "    for (long long g = blockIdx.x; g < G; g += gridDim.x, turn++) {\n"
                     "        const int slot = (int)(turn % S);\n"
                     "        tn_mbar_wait(&tn_full[slot], (unsigned)((turn / S) & 1));\n"
                     "        const unsigned char *tn_stage = tn_smem + slot * STAGE_BYTES;\n"
                     "        const long long row = g * R + rr;\n"
                     "        const bool live = row < M;\n        (void)live;\n");
    late_trigger(g, "gridDim.x");
}
static void ring_refill(gen *g) { stage_refill(g, "R", "gridDim.x", "0"); }
static void ring_close(gen *g) {
    if (!g->released) ring_refill(g);
    tn_strbuf_append(g->sb, "    }\n");
}

/* warp-specialized ring: the producer (a warp, or a warp group that gives its
   registers to the consumers) fills each consumer warp group's ring of S slots
   (tn_ws_produce, in tn_bulk.cuh); consumer group wg takes the CTA's row groups
   wg, wg + C, ... of G rows, K slots each, and reduces within itself. */
static void ws_open(gen *g) {
    const tn_plan_desc *p = g->p;
    tn_strbuf_printf(g->sb, "    constexpr int S = %d, K = %d, C = %d, G = %d, PRODUCER = %d;\n", p->stages, p->chunks,
                     p->consumer_groups, 128 / p->threads_per_row, tn_plan_producer_threads(p));
    row_sources(g, 128 / p->threads_per_row, p->cols / p->chunks);
    tn_strbuf_append(g->sb,
                     "    unsigned long long *tn_full = reinterpret_cast<unsigned long long *>(tn_smem + C * S * STAGE_BYTES);\n"
                     "    unsigned long long *tn_empty = tn_full + C * S;\n"
                     "    const long long NG = M / G + (M % G != 0);  // row groups\n"
                     "    tn_ws_start<C * S>(tn_full, tn_empty);\n"
                     "    if (threadIdx.x < PRODUCER) {\n");
    if (p->producer_regs) tn_strbuf_printf(g->sb, "        tn_regs_dec<%d>();\n", p->producer_regs);
    tn_strbuf_append(g->sb,
                     "        const int pw = threadIdx.x / 32;  // producer warp pw fills group pw's ring\n"
                     "        if (pw < C)\n"
                     "            tn_ws_produce<G, S, K, NIN>(tn_src, tn_smem + pw * S * STAGE_BYTES, STAGE_BYTES, tn_full + pw * S,\n"
                     "                                        tn_empty + pw * S, blockIdx.x + pw * (long long)gridDim.x,\n"
                     "                                        C * (long long)gridDim.x, NG, M);\n"
                     "    } else {\n");
    if (p->consumer_regs) tn_strbuf_printf(g->sb, "        tn_regs_inc<%d>();\n", p->consumer_regs);
    tn_strbuf_append(g->sb,
                     "        const int wg = (threadIdx.x - PRODUCER) / 128, tr = (threadIdx.x - PRODUCER) % T,\n"
                     "                  rr = (threadIdx.x - PRODUCER) % 128 / T;\n"
                     "        const unsigned char *tn_ring = tn_smem + wg * S * STAGE_BYTES;\n"
                     "        unsigned long long *tn_wfull = tn_full + wg * S, *tn_wempty = tn_empty + wg * S;\n"
                     "        unsigned it = 0;  // slots this group has taken, mod 2S: the slot and its phase bit\n"
                     "        int jj = 0;       // row groups taken, mod 2: which tn_red\n"
                     "        for (long long g = blockIdx.x + wg * (long long)gridDim.x; g < NG;\n"
                     "             g += C * (long long)gridDim.x, it = (it + K) % (2 * S), jj ^= 1) {\n"
                     "        (void)jj;\n"
                     "        const long long row = g * G + rr;\n"
                     "        const bool live = row < M;\n        (void)live;\n");
}
static void ws_close(gen *g) {
    (void)g;
    tn_strbuf_append(g->sb, "        }\n    }\n");
}
/* Two row groups deep: the next row group's first reduction is the barrier that
   guards this one's scratch. */
static void ws_scratch(gen *g) {
    if (g->p->threads_per_row > 32 && g->nred)
        tn_strbuf_printf(g->sb, "    __shared__ float tn_red[2][%d][R][T / 32];\n", g->nred);
}
static void ws_reduce(gen *g, int k) {
    char slot[48] = "nullptr";
    if (g->p->threads_per_row > 32) snprintf(slot, sizeof slot, "tn_red[jj][%d][wg * G + rr]", g->slot_of[k]);
    tn_strbuf_printf(g->sb, "tn_group_reduce<T, %d>(tn_fold<A, %d>(acc%d), %s, tr, 1 + wg)", g->f->nodes[k].op,
                     g->f->nodes[k].op, k, slot);
}

/* Vectors of a cluster CTA's slice (the last CTA's may be fewer). */
static int64_t slice_vectors(const gen *g) { return tn_cluster_slice_vectors(g->p->cols / g->p->vec, g->p->cluster); }

/* col_cache: the CTA's slice of each COL input into shared memory (after the
   stages), once for all the rows the CTA takes. Each thread loads the vectors
   it reads back later (vl = p T + tr), so no barrier is needed. The widest
   dtypes first: a slice of NVL x V elements of a narrower one may end off its
   successor's vector alignment (f16 then f32 at V 4 and odd NVL: 8 bytes). */
static void cluster_cache_cols(gen *g) {
    const tn_fusion *f = g->f;
    if (!g->p->stages) tn_strbuf_append(g->sb, "    extern __shared__ __align__(128) unsigned char tn_smem[];\n");
    int64_t offset = tn_cluster_col_offset(g->a, g->p);
    for (int size = 8; size >= 1; size /= 2) {
        for (int i = 0; i < f->num_nodes; i++) {
            const tn_node *n = &f->nodes[i];
            if (!g->a->used[i] || !is_col_input(n)) continue;
            if ((int)tn_dtype_size(n->dtype) != size) continue;
            const char *st = k_dtype_code[n->dtype].storage;
            tn_strbuf_printf(g->sb,
                             "    tn_vec<%s, V> *tn_cc%d = reinterpret_cast<tn_vec<%s, V> *>(tn_smem + %lldu);  // this "
                             "CTA's slice of %s\n"
                             "    for (int vl = tr; vl < NVL; vl += T) %s(tn_cc%d[vl], in%d + (long long)(VB + vl) * V);\n",
                             st, i, st, (long long)offset, n->name ? n->name : "a COL input", col_loader(g), i, n->io_index);
            offset += slice_vectors(g) * g->p->vec * (int64_t)tn_dtype_size(n->dtype);
        }
    }
}

/* cluster: the grid-stride loop over clusters; CTA `rank` of a cluster holds
   vectors [VB, VB + NVL) of its row group's rows, and a reduction reduces over
   the CTA, then over the cluster (tn_cluster_reduce: the parts travel to the
   other CTAs' shared memory with st.async onto their mbarriers). Every CTA of a
   cluster takes the same row groups, so all take part in every reduction. */
static void cluster_open(gen *g) {
    cta_rows(g);
    if (g->uneven && g->p->peel) { /* as below, NVL each row's (peel_row): its vectors start at its boundary */
        tn_strbuf_printf(g->sb, "    constexpr int CL = %d, NVC = %lld;  // a slice's vectors (the last CTA's fewer)\n"
                                "    const unsigned rank = tn_cluster_rank();\n"
                                "    const int VB = (int)rank * NVC;  // this CTA's slice of every row's vectors\n"
                                "    constexpr int PF = ((N - V + 1) / V - (CL - 1) * NVC) / T;  // vectors a thread takes "
                                "in every slice of every row\n",
                         g->p->cluster, (long long)slice_vectors(g));
    } else if (g->uneven) { /* CTAs 0 to CL - 2 take NVC vectors each, the last the rest */
        tn_strbuf_printf(g->sb, "    constexpr int CL = %d, NVC = %lld;  // a slice's vectors (the last CTA's fewer)\n"
                                "    const unsigned rank = tn_cluster_rank();\n"
                                "    const int NVL = (int)rank + 1 < CL ? NVC : NV - (CL - 1) * NVC;  // this CTA's\n"
                                "    const int VB = (int)rank * NVC;  // this CTA's slice of every row\n"
                                "    constexpr int PF = (NV - (CL - 1) * NVC) / T;  // vectors a thread takes in every slice\n",
                         g->p->cluster, (long long)slice_vectors(g));
    } else {
        tn_strbuf_printf(g->sb, "    constexpr int CL = %d, NVL = NV / CL;\n", g->p->cluster);
        tn_strbuf_append(g->sb, "    const unsigned rank = tn_cluster_rank();\n"
                                "    const int VB = (int)rank * NVL;  // this CTA's slice of every row\n");
    }
    if (g->p->stages) {
        ring_declare(g, 1, slice_vectors(g) * g->p->vec);
        tn_strbuf_printf(g->sb, "    tn_ring_start<1, S, NIN>(tn_src, tn_smem, STAGE_BYTES, tn_full, M, M, blockIdx.x / CL, "
                                "gridDim.x / CL, %s);\n", g->uneven ? "0" : "rank");
    }
    if (g->p->col_cache) cluster_cache_cols(g);
    if (g->nred) /* tn_cluster_start: before the PDL wait (cluster_before_wait) */
        tn_strbuf_append(g->sb, "    bool tn_joined = false;  // waited for the cluster's barriers to be set up\n");
    tn_strbuf_append(g->sb,
                     "    long long turn = 0;  // row groups taken: which tn_cred and tn_cbar, and the phase\n"
                     "    for (long long g = blockIdx.x / CL; g * R < M; g += gridDim.x / CL, turn++) {\n"
                     "        const long long row = g * R + rr;\n"
                     "        const bool live = row < M;\n        (void)live;\n");
    late_trigger(g, "gridDim.x / CL");
    if (!g->p->prefetch) return;
    /* One thread: this CTA's slice of the row it takes next (a cluster plan's
       row group is one row), into L2: the DRAM stays busy while this one
       reduces, meets the cluster and stores. */
    tn_strbuf_append(g->sb, "        if (threadIdx.x == 0 && g + gridDim.x / CL < M) {\n"
                            "            const long long next = g + gridDim.x / CL;\n");
    for (int k = 0; k < g->a->num_stage_inputs; k++) {
        const tn_node *n = &g->f->nodes[g->a->stage_inputs[k]];
        const int size = (int)tn_dtype_size(n->dtype);
        if (g->p->peel) /* the next row's head is unknown here: the slice and a vector past it, whole 16-byte units */
            tn_strbuf_printf(g->sb, "            tn_prefetch_l2_span<%lluull>(in%d + next * in%d_ld + (long long)VB * V, "
                                    "(N - VB * V < (NVC + 1) * V ? N - VB * V : (NVC + 1) * V) * %du);\n",
                             (unsigned long long)(slice_vectors(g) + 1) * g->p->vec * size, n->io_index, n->io_index,
                             size);
        else
            tn_strbuf_printf(g->sb, "            tn_prefetch_l2(in%d + next * in%d_ld + (long long)VB * V, NVL * V * %du);\n",
                             n->io_index, n->io_index, size);
    }
    tn_strbuf_append(g->sb, "        }\n");
}
/* A stage still held (the slice read up to the output phase) is handed back
   here; the refill's barrier also guards tn_red. */
static void cluster_close(gen *g) {
    if (!g->p->stages || g->released) {
        row_group_close(g, "gridDim.x / CL");
        return;
    }
    slice_refill(g);
    tn_strbuf_append(g->sb, "    }\n");
}
static void cluster_scratch(gen *g) {
    cta_scratch(g);
    if (g->nred)
        tn_strbuf_printf(g->sb,
                         "    constexpr int NRED = %d;\n"
                         "    __shared__ float tn_cred[2][NRED][R][%d];\n"
                         "    __shared__ unsigned long long tn_cbar[2][NRED];\n",
                         g->nred, g->p->cluster);
}
/* A cluster's reduction barriers set up and its cluster barrier arrived at before the PDL wait: neither touches
   global memory, so the peers' arrivals land while the previous kernel ends, and the wait before the first
   remote store (tn_cluster_reduce) finds them there. After the PDL wait, one cluster barrier cost 0.60-0.75 us
   a launch on the H100 (bench/probes/cluster_launch.cu, 2026-12-07), most of a few-row cluster's cost over
   one CTA. */
static void cluster_before_wait(gen *g) {
    if (g->nred) tn_strbuf_append(g->sb, "    tn_cluster_start(&tn_cbar[0][0], 2 * NRED, R);  // before the PDL wait\n");
}
static void cluster_reduce(gen *g, int k) {
    char slot[48];
    snprintf(slot, sizeof slot, "tn_cred[turn & 1][%d][rr]", g->slot_of[k]);
    tn_strbuf_printf(g->sb, "tn_cluster_reduce<CL, %d>(", reduce_op(g, k));
    cta_reduce(g, k);
    tn_strbuf_append(g->sb, ", ");
    emit_slots(g, k, slot, "R * CL");
    tn_strbuf_printf(g->sb, ", &tn_cbar[turn & 1][%d], (unsigned)(turn >> 1) & 1u, tr, rank, tn_joined)",
                     g->slot_of[k]);
}

static const skeleton_code k_grid_stride = {"grid-stride", grid_stride_open, grid_stride_close, cta_scratch, cta_reduce,
                                            "tr == 0"};
static const skeleton_code k_ring = {"ring of shared-memory stages", ring_open, ring_close, cta_scratch, cta_reduce,
                                     "tr == 0"};
static const skeleton_code k_cluster = {"grid-stride over clusters (a row group split over the cluster's CTAs)",
                                        cluster_open, cluster_close, cluster_scratch, cluster_reduce,
                                        "tr == 0 && rank == 0", cluster_before_wait};
static const skeleton_code k_ws_ring = {"warp-specialized ring (producer warp, consumer warp groups)", ws_open, ws_close,
                                        ws_scratch, ws_reduce, "tr == 0"};

/* ---- the kinds ------------------------------------------------------------------- */

typedef struct kind_code {
    const storage_code *storage;
    const skeleton_code *skeleton;
    const storage_code *staged; /* the storage where the plan has stages and the kind does not always (or NULL) */
    const storage_code *shared; /* ... and where the plan's slices stay in shared memory (shared_slice) */
    const storage_code *l2;     /* ... and where they stay in global memory, read from L2 (l2_slice) */
} kind_code;

static const kind_code k_kinds[TN_PLAN_KIND_COUNT] = {
    [TN_PLAN_REGISTER] = {&k_registers, &k_grid_stride, NULL},
    [TN_PLAN_LOOPED] = {&k_global, &k_grid_stride, NULL},
    [TN_PLAN_TMA] = {&k_shared, &k_ring, NULL},
    [TN_PLAN_TMA_WS] = {&k_shared_chunks, &k_ws_ring, NULL},
    [TN_PLAN_CLUSTER] = {&k_register_slice, &k_cluster, &k_staged_slice, &k_shared_slice, &k_l2_slice},
};

/* Whether a phase after `phase` reads a ROW input (with carried values taken as computed). */
static int reads_row_after(const gen *g, int phase) {
    for (int q = phase + 1; q <= g->a->num_levels; q++)
        for (int i = 0; i < g->f->num_nodes; i++)
            if (phase_need(g, q)[i] && is_row_input(&g->f->nodes[i]))
                return 1;
    return 0;
}

/* early_l2: before the PDL wait, the CTA's first row group into L2 (threads 0 to R - 1 a row each, every used ROW
   input) and, by thread 0, its piece of what its row group reads of every used COL input: a register plan's whole rows, a cluster CTA's
   slice (tn_cluster_slice_vectors each, the last the rest). Only the 16-byte units inside each span are taken
   (tn_prefetch_l2_span), so no address outside the tensors is named, whatever the rows' alignment. */
static void emit_early_l2(gen *g) {
    const tn_fusion *f = g->f;
    tn_strbuf *sb = g->sb;
    /* Elements a span takes at most (tn_ne): the row, or a cluster CTA's slice; the helper's bound in bytes. */
    const unsigned long long span =
        g->p->kind == TN_PLAN_CLUSTER ? (unsigned long long)slice_vectors(g) * g->p->vec : (unsigned long long)g->p->cols;
    tn_strbuf_append(sb, "    {  // early_l2: the DRAM latency of the first row group overlaps the previous kernel's end\n");
    if (g->p->kind == TN_PLAN_CLUSTER)
        tn_strbuf_printf(sb, "        constexpr long long NVC = %lld;  // a slice's vectors (the last CTA's the rest)\n"
                             "        const long long tn_g0 = blockIdx.x / %d, tn_e0 = tn_cluster_rank() * NVC * V,\n"
                             "                        tn_ne = N - tn_e0 < NVC * V ? N - tn_e0 : NVC * V;\n",
                         (long long)slice_vectors(g), g->p->cluster);
    else
        tn_strbuf_append(sb, "        const long long tn_g0 = blockIdx.x, tn_e0 = 0, tn_ne = N;\n");
    tn_strbuf_append(sb, "        const long long tn_r0 = tn_g0 * R + threadIdx.x;\n"
                         "        if (threadIdx.x < R && tn_r0 < M) {\n");
    for (int i = 0; i < f->num_nodes; i++)
        if (g->a->used[i] && is_row_input(&f->nodes[i]))
            tn_strbuf_printf(sb, "            tn_prefetch_l2_span<%lluull>(in%d + tn_r0 * in%d_ld + tn_e0, tn_ne * %du);\n",
                             span * (unsigned long long)tn_dtype_size(f->nodes[i].dtype), f->nodes[i].io_index,
                             f->nodes[i].io_index, (unsigned)tn_dtype_size(f->nodes[i].dtype));
    tn_strbuf_append(sb, "        }\n");
    if (g->a->col_elem_bytes) {
        /* Every row group reads the same COL span: it is split among the first row groups, 4 KiB a piece or more
           (16-element multiples: whole 16-byte units), as hundreds of CTAs naming the same lines at once queued
           on them (H100: add_rmsnorm 512 x 512, 512 CTAs, 2.15 -> 2.93 us). */
        tn_strbuf_printf(sb, "        const long long tn_groups = gridDim.x / %d, tn_bytes = tn_ne * %d,\n"
                             "                        tn_pieces = tn_groups < (tn_bytes + 4095) / 4096 ? tn_groups : (tn_bytes + 4095) / 4096,\n"
                             "                        tn_per = ((tn_ne + tn_pieces - 1) / tn_pieces + 15) / 16 * 16, tn_c0 = tn_g0 * tn_per;\n"
                             "        if (threadIdx.x == 0 && tn_c0 < tn_ne) {\n",
                         g->p->cluster, g->a->col_elem_bytes);
        for (int i = 0; i < f->num_nodes; i++) {
            const tn_node *n = &f->nodes[i];
            if (g->a->used[i] && is_col_input(n))
                tn_strbuf_printf(sb, "            tn_prefetch_l2_span<%lluull>(in%d + tn_e0 + tn_c0, (tn_ne - tn_c0 < tn_per ? tn_ne - tn_c0 : tn_per) * %du);\n",
                                 span * (unsigned long long)tn_dtype_size(n->dtype), n->io_index,
                                 (unsigned)tn_dtype_size(n->dtype));
        }
        tn_strbuf_append(sb, "        }\n");
    }
    tn_strbuf_append(sb, "    }\n");
}

void tn_codegen(const tn_fusion *f, const tn_analysis *a, const tn_plan_desc *p, tn_strbuf *sb) {
    const kind_code *kc = &k_kinds[p->kind];
    const storage_code *storage = p->l2_slice && kc->l2                     ? kc->l2
                                  : p->stages && p->shared_slice && kc->shared ? kc->shared
                                  : p->stages && kc->staged                    ? kc->staged
                                                                               : kc->storage;
    gen g = {f, a, p, sb, storage, kc->skeleton, 0, {0}, 0, 0, 0, 0};
    g.carry = p->carry && tn_plan_carry_floats(p, 1) && a->num_carried;
    g.uneven = p->kind == TN_PLAN_CLUSTER && ((p->cols / p->vec) % p->cluster != 0 || p->peel);
    find_early_outputs(&g); /* by the kernel's own storage: the peeled element's (k_outside) follows it */
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        /* An online pair: two slots for its max (max, sum), none for its sum. */
        g.slot_of[i] = a->used[i] && n->kind == TN_OP_REDUCE && !a->online_max[i] ? g.nred : -1;
        if (g.slot_of[i] >= 0) g.nred += a->online_sum[i] ? 2 : 1;
    }
    char safe_name[65];
    source_safe_name(f->name, safe_name, sizeof safe_name);
    tn_strbuf_printf(sb, "// generated by tmanorm %d.%d: fusion %s, plan %s\n", TN_VERSION_MAJOR, TN_VERSION_MINOR,
                     safe_name, tn_plan_kind_name(p->kind));
    tn_strbuf_append(sb, tn_device_cuh);
    if (p->stages || p->cluster > 1) tn_strbuf_append(sb, tn_bulk_cuh); /* sm_90: bulk copies, clusters */
    tn_strbuf_printf(sb, "\n// row storage: %s; skeleton: %s\n", g.storage->name, g.skeleton->name);
    emit_signature(&g);
    tn_strbuf_printf(sb, "    constexpr int N = %lld, V = %d, NV = N / V, T = %d, R = %d;\n", (long long)p->cols,
                     p->vec, p->threads_per_row, p->rows_per_cta);
    if (g.storage->p_is)
        tn_strbuf_printf(sb, "    constexpr int P = %d;  // %s\n", p->batch, g.storage->p_is);
    else if (g.carry)
        tn_strbuf_append(sb, "    constexpr int P = (NV + T - 1) / T;  // vectors each thread takes of a row\n");
    /* Accumulator lanes per reduction: independent chains for the latency-bound
       few-warp kinds; two where 1024-thread CTAs leave 64 registers a thread. */
    tn_strbuf_printf(sb, "    constexpr int A = %d;  // accumulators per reduction and thread\n",
                     p->block_threads > 512 ? (p->vec < 2 ? p->vec : 2) : p->vec);
    tn_strbuf_append(sb, "    (void)R;\n");
    g.skeleton->scratch(&g);
    for (int i = 0; i < f->num_nodes; i++)
        if (a->used[i] && f->nodes[i].shape == TN_SHAPE_SCALAR) emit_value(&g, "    ", i);
    /* The trigger only lets the next kernel's CTAs be scheduled: its own
       griddepcontrol.wait still waits for this whole grid to finish and flush.
       It fires once every CTA of this grid has started, so it never takes a
       slot this grid needs; at the top (pdl 1), the next launch overlaps all of
       this one instead of only its last CTA's exit; at the CTA's last row group
       (pdl 2, late_trigger), it leaves a looping grid's spare slots empty; with
       none (pdl 3), each CTA triggers as it exits. */
    if (p->early_l2) emit_early_l2(&g);
    if (g.skeleton->before_wait) g.skeleton->before_wait(&g);
    if (p->pdl) tn_strbuf_append(sb, "    tn_pdl_wait();  // the previous kernel's writes are visible from here on\n");
    if (p->pdl == 1)
        tn_strbuf_append(sb, "    tn_pdl_launch_dependents();  // the next kernel may be scheduled; it still waits for our end\n");
    g.skeleton->open(&g);
    g.storage->setup(&g);
    for (int i = 0; i < f->num_nodes && g.carry; i++)
        if (a->carried[i])
            tn_strbuf_printf(sb, "        float kv%d[P][V];  // e%d of each kept vector, computed once\n", i, i);
    emit_row_values(&g, 0);
    for (int level = 1; level <= a->num_levels; level++) {
        emit_phase(&g, level);
        emit_row_values(&g, level);
        /* With carried values the later phases may not read the row again: hand the ring's stage back now, so
           the next row group's copy overlaps the rest of this one (softmax's output phase). */
        if (g.skeleton == &k_ring && g.carry && !g.released && !reads_row_after(&g, level - 1)) {
            tn_strbuf_append(sb, "        // the rest of the row group reads no shared memory: refill the stage now\n");
            ring_refill(&g);
        }
    }
    if (a->num_row_outputs) emit_phase(&g, -1);
    for (int r = 0; r < a->num_rowscalar_outputs; r++) {
        int o = a->rowscalar_outputs[r];
        char name[32], conv[64];
        value_name(&g, (int)f->outputs[o].value.index, name, sizeof name);
        fmt1(conv, sizeof conv, k_dtype_code[f->outputs[o].dtype].from_f32, name);
        tn_strbuf_printf(sb, "        if (live && %s) out%d[row] = %s;\n", g.skeleton->row_leader, o, conv);
    }
    g.skeleton->close(&g);
    tn_strbuf_append(sb, "}\n");
}
