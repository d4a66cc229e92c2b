/* Plan printing, JSON round trip and checking (see plan.h). */
#include "sched/plan.h"

#include "sched/heuristics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_kind_names[TN_PLAN_KIND_COUNT] = {"register", "looped", "tma", "tma-ws", "cluster"};

const char *tn_plan_kind_name(tn_plan_kind kind) {
    return (unsigned)kind < TN_PLAN_KIND_COUNT ? k_kind_names[kind] : "invalid";
}

int tn_plan_kind_from_name(const char *name) {
    for (int k = 0; k < TN_PLAN_KIND_COUNT; k++)
        if (name && strcmp(name, k_kind_names[k]) == 0) return k;
    return -1;
}

/* The integer fields, in print order: one table drives text, JSON and parsing.
   A plan's JSON may leave out the optional ones (what a kind does not use). */
typedef struct field {
    const char *name;
    size_t offset;
    int is64;
    int optional, fallback; /* fallback: the value of an optional field left out */
} field;
#define F32(n) {#n, offsetof(tn_plan_desc, n), 0, 0, 0}
#define F64(n) {#n, offsetof(tn_plan_desc, n), 1, 0, 0}
#define OPT(n, v) {#n, offsetof(tn_plan_desc, n), 0, 1, v}
static const field k_fields[] = {F64(rows), F64(cols), F32(vec), F32(threads_per_row), F32(rows_per_cta),
                                 F32(batch), F32(block_threads), F64(grid), F32(cc), F32(align_bytes),
                                 OPT(stages, 0), OPT(smem_bytes, 0), OPT(pdl, 0), OPT(consumer_groups, 0),
                                 OPT(chunks, 1), OPT(producer_regs, 0), OPT(consumer_regs, 0), OPT(cluster, 1),
                                 OPT(ctas_per_sm, 0), OPT(prefetch, 0), OPT(carry, 0),
                                 OPT(shared_slice, 0), OPT(col_cache, 0), OPT(cols_early, 0), OPT(peel, 0),
                                 OPT(pipeline, 0), OPT(online, 0), OPT(early_l2, 0), OPT(l2_slice, 0),
                                 OPT(early_stores, 0)};
#define NUM_FIELDS (sizeof k_fields / sizeof k_fields[0])

static int64_t get(const tn_plan_desc *p, const field *f) {
    const char *base = (const char *)p + f->offset;
    return f->is64 ? *(const int64_t *)(const void *)base : *(const int *)(const void *)base;
}

static void set(tn_plan_desc *p, const field *f, int64_t v) {
    char *base = (char *)p + f->offset;
    if (f->is64) *(int64_t *)(void *)base = v;
    else *(int *)(void *)base = (int)v;
}

void tn_plan_desc_text(const tn_plan_desc *p, tn_strbuf *sb) {
    tn_strbuf_printf(sb, "plan %s\n", tn_plan_kind_name(p->kind));
    for (size_t i = 0; i < NUM_FIELDS; i++)
        tn_strbuf_printf(sb, "  %-16s %lld\n", k_fields[i].name, (long long)get(p, &k_fields[i]));
    tn_strbuf_printf(sb, "  why: %s\n", p->why);
}

void tn_plan_desc_json(const tn_plan_desc *p, tn_strbuf *sb) {
    tn_strbuf_printf(sb, "{\"kind\": \"%s\"", tn_plan_kind_name(p->kind));
    for (size_t i = 0; i < NUM_FIELDS; i++)
        tn_strbuf_printf(sb, ", \"%s\": %lld", k_fields[i].name, (long long)get(p, &k_fields[i]));
    tn_strbuf_append(sb, ", \"why\": \"");
    for (const char *c = p->why; *c; c++) {
        if (*c == '"' || *c == '\\') tn_strbuf_printf(sb, "\\%c", *c);
        else if (*c == '\n') tn_strbuf_append(sb, "\\n");
        else if (*c == '\t') tn_strbuf_append(sb, "\\t");
        else if ((unsigned char)*c < 0x20) tn_strbuf_printf(sb, "\\u%04x", (unsigned)(unsigned char)*c);
        else tn_strbuf_printf(sb, "%c", *c);
    }
    tn_strbuf_append(sb, "\"}");
}

/* A flat JSON object of string and integer members; nothing else is a plan.
   Strict: every member once, integers in range, nothing after the object. */
static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A JSON string into out (cap bytes); NULL if malformed or longer than cap - 1.
   \uXXXX escapes outside ASCII become '?': the only free text of a plan is "why". */
static const char *parse_string(const char *s, char *out, size_t cap) {
    if (*s != '"') return NULL;
    size_t n = 0;
    for (s++; *s != '"'; s++) {
        char c = *s;
        if (c == '\0' || (unsigned char)c < 0x20) return NULL;
        if (c == '\\') {
            s++;
            switch (*s) {
            case '"': case '\\': case '/': c = *s; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                int v = 0;
                for (int k = 1; k <= 4; k++) {
                    int d = hex_digit(s[k]);
                    if (d < 0) return NULL;
                    v = v * 16 + d;
                }
                s += 4;
                c = v > 0 && v < 0x80 ? (char)v : '?';
                break;
            }
            default: return NULL;
            }
        }
        if (n + 1 >= cap) return NULL;
        out[n++] = c;
    }
    out[n] = '\0';
    return s + 1;
}

/* Any JSON number whose value is an integer: 4096, 4096.0, 4.096e3, exactly
   (digit by digit, not through a locale-dependent strtod). NULL if malformed,
   fractional or outside int64. */
static const char *parse_int(const char *s, int64_t *v) {
    /* The JSON number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    char digits[48];
    int nd = 0, point = 0, exp = 0, neg = 0; /* value = digits * 10^(exp - point) */
    const char *p = s;
    if (*p == '-') neg = 1, p++;
    if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9')) return NULL;
    for (; *p >= '0' && *p <= '9'; p++)
        if (nd || *p != '0') {
            if (nd == (int)sizeof digits) return NULL;
            digits[nd++] = *p;
        }
    if (*p == '.') {
        if (*++p < '0' || *p > '9') return NULL;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (nd == (int)sizeof digits) return NULL;
            if (nd || *p != '0') digits[nd++] = *p;
            point++;
        }
    }
    if (*p == 'e' || *p == 'E') {
        int eneg = *++p == '-';
        if (*p == '+' || *p == '-') p++;
        if (*p < '0' || *p > '9') return NULL;
        for (; *p >= '0' && *p <= '9'; p++)
            if (exp < 1000) exp = exp * 10 + (*p - '0');
        if (eneg) exp = -exp;
    }
    int shift = exp - point; /* value = digits * 10^shift */
    for (; shift < 0 && nd > 0; shift++, nd--)
        if (digits[nd - 1] != '0') return NULL; /* a fraction */
    uint64_t mag = 0;
    const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (int i = 0; i < nd + (nd ? shift : 0); i++) {
        unsigned d = i < nd ? (unsigned)(digits[i] - '0') : 0;
        if (mag > (limit - d) / 10) return NULL;
        mag = mag * 10 + d;
    }
    *v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return p;
}

#define PARSE_FAIL(...) return snprintf(err, err_cap, __VA_ARGS__), 0

int tn_plan_desc_parse(const char *json, tn_plan_desc *out, char *err, size_t err_cap) {
    tn_plan_desc p;
    memset(&p, 0, sizeof p);
    unsigned seen = 0;
    int have_kind = 0, have_why = 0;
    const char *s = skip_ws(json ? json : "");
    if (*s++ != '{') PARSE_FAIL("plan JSON: expected '{'");
    s = skip_ws(s);
    if (*s == '}') PARSE_FAIL("plan JSON: empty object");
    for (;;) {
        char key[64], text[sizeof p.why];
        s = parse_string(skip_ws(s), key, sizeof key);
        if (!s) PARSE_FAIL("plan JSON: expected a member name (a string of at most 63 characters)");
        s = skip_ws(s);
        if (*s++ != ':') PARSE_FAIL("plan JSON: expected ':' after \"%s\"", key);
        s = skip_ws(s);
        if (!strcmp(key, "kind") || !strcmp(key, "why")) {
            int is_kind = key[0] == 'k';
            if ((is_kind && have_kind) || (!is_kind && have_why)) PARSE_FAIL("plan JSON: \"%s\" given twice", key);
            s = parse_string(s, text, sizeof text);
            if (!s)
                PARSE_FAIL("plan JSON: \"%s\" needs a string (closed, no raw control characters, escapes among "
                           "\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) of at most %zu characters", key, sizeof text - 1);
            if (is_kind) {
                int k = tn_plan_kind_from_name(text);
                if (k < 0) PARSE_FAIL("plan JSON: unknown kind \"%s\"", text);
                p.kind = (tn_plan_kind)k;
                have_kind = 1;
            } else {
                snprintf(p.why, sizeof p.why, "%s", text);
                have_why = 1;
            }
        } else {
            size_t i = 0;
            while (i < NUM_FIELDS && strcmp(k_fields[i].name, key) != 0) i++;
            if (i == NUM_FIELDS) PARSE_FAIL("plan JSON: unknown member \"%s\"", key);
            if (seen & (1u << i)) PARSE_FAIL("plan JSON: \"%s\" given twice", key);
            int64_t v;
            s = parse_int(s, &v);
            if (!s)
                PARSE_FAIL("plan JSON: \"%s\" needs an integer within 64 bits (4096, or a number such as 4096.0 "
                           "or 4.096e3 whose value is one)", key);
            if (!k_fields[i].is64 && (v < INT32_MIN || v > INT32_MAX))
                PARSE_FAIL("plan JSON: \"%s\" is %lld, outside the 32-bit range", key, (long long)v);
            set(&p, &k_fields[i], v);
            seen |= 1u << i;
        }
        s = skip_ws(s);
        if (*s == '}') break;
        if (*s++ != ',') PARSE_FAIL("plan JSON: expected ',' or '}' after \"%s\"", key);
    }
    if (*skip_ws(s + 1) != '\0') PARSE_FAIL("plan JSON: unexpected text after the object");
    if (!have_kind) PARSE_FAIL("plan JSON: no \"kind\"");
    for (size_t i = 0; i < NUM_FIELDS; i++) {
        if (seen & (1u << i)) continue;
        if (!k_fields[i].optional) PARSE_FAIL("plan JSON: missing \"%s\"", k_fields[i].name);
        set(&p, &k_fields[i], k_fields[i].fallback);
    }
    *out = p;
    return 1;
}

int tn_max_cluster(int cc_major) { return cc_major >= 9 ? TN_MAX_CLUSTER_NONPORTABLE : 1; }

int tn_plan_desc_same(const tn_plan_desc *a, const tn_plan_desc *b) {
    if (a->kind != b->kind) return 0;
    for (size_t i = 0; i < NUM_FIELDS; i++)
        if (get(a, &k_fields[i]) != get(b, &k_fields[i])) return 0;
    return 1;
}

int tn_plan_cols_early_kind(const tn_plan_desc *p) {
    return p->kind == TN_PLAN_REGISTER ||
           (p->kind == TN_PLAN_CLUSTER && !p->shared_slice && !p->col_cache && !p->l2_slice);
}

int64_t tn_plan_l2_resident_rows(const tn_analysis *a, const tn_device_props *d, int64_t cols) {
    const int64_t reread = cols * (int64_t)a->buffer_elem_bytes;
    const int64_t rows = reread > 0 ? 2 * (int64_t)d->l2_bytes / 3 / reread : INT64_MAX;
    return rows < 1 ? 1 : rows;
}

/* A peeled row's vectors start at its own first 16-byte boundary, found at run time: the plans that load them
   with plain vector loads (no bulk copy or cache sized by a slice's place in the row; a peeled cluster's L2
   prefetch takes the whole 16-byte units of its slice and a vector past it). */
int tn_plan_peel_kind(const tn_plan_desc *p) {
    return p->kind == TN_PLAN_REGISTER ||
           (p->kind == TN_PLAN_CLUSTER && !p->stages && !p->shared_slice && !p->col_cache && !p->l2_slice);
}

int tn_plan_early_l2_kind(const tn_plan_desc *p) { return p->kind == TN_PLAN_REGISTER || p->kind == TN_PLAN_CLUSTER; }

int tn_plan_early_stores_kind(const tn_plan_desc *p) {
    return p->kind == TN_PLAN_REGISTER || p->kind == TN_PLAN_TMA || (p->kind == TN_PLAN_CLUSTER && !p->l2_slice);
}

int tn_plan_late_trigger_kind(const tn_plan_desc *p) { return p->kind != TN_PLAN_TMA_WS; }

int tn_plan_grid_loops(const tn_plan_desc *p) {
    if (!tn_plan_late_trigger_kind(p) || p->rows_per_cta < 1 || p->cluster < 1) return 0;
    const int64_t groups = p->rows / p->rows_per_cta + (p->rows % p->rows_per_cta != 0);
    return p->grid / p->cluster < groups;
}

int tn_plan_online_kind(const tn_plan_desc *p) {
    return (p->kind == TN_PLAN_REGISTER || p->kind == TN_PLAN_TMA || p->kind == TN_PLAN_CLUSTER) && !p->peel &&
           !p->pipeline;
}

int64_t tn_cluster_slice_vectors(int64_t nv, int cluster) { return cluster > 0 ? (nv + cluster - 1) / cluster : 0; }

int tn_cluster_slices_fit(int64_t nv, int cluster) {
    return cluster >= 2 && nv > (cluster - 1) * tn_cluster_slice_vectors(nv, cluster);
}

int tn_cluster_peeled_slices_fit(int64_t cols, int vec, int cluster) {
    const int64_t nv = cols / vec, fewest = (cols - vec + 1) / vec;
    return tn_cluster_slices_fit(nv, cluster) && fewest > (cluster - 1) * tn_cluster_slice_vectors(nv, cluster);
}

int tn_plan_access_align(const tn_plan_desc *p, int size) {
    /* One element per access, or vectors from each row's first 16-byte boundary: element alignment, which every
       launch checks, is enough (peel's agreement of the tensors' offsets is checked at launch). */
    if (p->vec == 1 || p->peel) return 1;
    int bytes = p->vec * size;
    return bytes > 16 ? 16 : bytes;
}

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

#define REJECT(...) return snprintf(err, err_cap, __VA_ARGS__), 0

int tn_plan_desc_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *props,
                       int align, char *err, size_t err_cap) {
    /* What no plan of any kind can run, whatever its fields. */
    if (!tn_analysis_plannable(a, props, err, err_cap)) return 0;
    /* Every field in its range first; only then any arithmetic on them. */
    const int max_block = props->max_threads_per_block;
    if ((unsigned)p->kind >= TN_PLAN_KIND_COUNT) REJECT("plan: unknown kind %d", (int)p->kind);
    if (p->rows < 1 || p->rows > TN_MAX_ROWS || p->cols < 1 || p->cols > TN_MAX_COLS)
        REJECT("plan: rows %lld and cols %lld must be in [1, 2^48] and [1, 2^31 - 1]", (long long)p->rows,
               (long long)p->cols);
    if (!is_pow2(p->vec) || p->vec > 16 || (p->cols % p->vec && !p->peel))
        REJECT("plan: vec %d must be a power of two up to 16 that divides cols %lld (or peel 1)", p->vec,
               (long long)p->cols);
    if (p->threads_per_row < 1 || p->threads_per_row > max_block ||
        (p->threads_per_row <= 32 ? !is_pow2(p->threads_per_row) : p->threads_per_row % 32))
        REJECT("plan: threads_per_row %d must be a power of two up to 32 or a multiple of 32 up to %d",
               p->threads_per_row, max_block);
    if (p->rows_per_cta < 1 || p->rows_per_cta > max_block)
        REJECT("plan: rows_per_cta %d must be in [1, %d]", p->rows_per_cta, max_block);
    if (p->block_threads < 32 || p->block_threads > max_block || p->block_threads % 32)
        REJECT("plan: block_threads %d must be a multiple of 32 up to %d", p->block_threads, max_block);
    if (p->consumer_groups < 0 || p->consumer_groups > 7)
        REJECT("plan: consumer_groups %d must be in [0, 7]", p->consumer_groups);
    if (p->chunks < 1 || p->chunks > 64) REJECT("plan: chunks %d must be in [1, 64]", p->chunks);
    if (p->producer_regs < 0 || p->producer_regs > 256 || p->consumer_regs < 0 || p->consumer_regs > 256)
        REJECT("plan: producer_regs %d and consumer_regs %d must be in [0, 256]", p->producer_regs, p->consumer_regs);
    if ((int64_t)p->threads_per_row * p->rows_per_cta + tn_plan_producer_threads(p) != p->block_threads)
        REJECT("plan: block_threads %d must be threads_per_row %d * rows_per_cta %d + %d producer threads",
               p->block_threads, p->threads_per_row, p->rows_per_cta, tn_plan_producer_threads(p));
    if (p->cluster < 1 || p->cluster > tn_max_cluster(props->cc_major) || p->grid % p->cluster)
        REJECT("plan: cluster %d must be in [1, %d] and divide grid %lld", p->cluster, tn_max_cluster(props->cc_major),
               (long long)p->grid);
    if (p->batch < 1 || p->batch > 64) REJECT("plan: batch %d must be in [1, 64]", p->batch);
    if (p->ctas_per_sm < 0 || (int64_t)p->ctas_per_sm * p->block_threads > props->max_threads_per_sm)
        REJECT("plan: ctas_per_sm %d must be 0 or CTAs of %d threads that fit an SM's %d threads", p->ctas_per_sm,
               p->block_threads, props->max_threads_per_sm);
    if (p->grid < 1 || p->grid > 0x7fffffff) REJECT("plan: grid %lld must be in [1, 2^31 - 1]", (long long)p->grid);
    if (!is_pow2(p->align_bytes) || p->align_bytes > 16)
        REJECT("plan: align_bytes %d must be a power of two up to 16", p->align_bytes);
    if (p->cc != props->cc_major * 10 + props->cc_minor)
        REJECT("plan: made for sm_%d, the device is sm_%d%d", p->cc, props->cc_major, props->cc_minor);
    if (p->stages < 0 || p->stages > TN_MAX_STAGES) REJECT("plan: stages %d must be in [0, %d]", p->stages, TN_MAX_STAGES);
    if (p->smem_bytes < 0 || p->smem_bytes > props->smem_per_block_optin)
        REJECT("plan: smem_bytes %d must be in [0, %d]", p->smem_bytes, props->smem_per_block_optin);
    if (p->pdl < 0 || p->pdl > 3 || (p->pdl == 2 && !tn_plan_late_trigger_kind(p)))
        REJECT("plan: pdl %d must be 0, 1, 3, or 2 in a plan of any kind but tma-ws", p->pdl);
    if (p->pipeline != 0 && (p->pipeline != 1 || p->kind != TN_PLAN_REGISTER || p->peel))
        REJECT("plan: pipeline %d must be 0, or 1 in a register plan without peel", p->pipeline);
    if (p->online != 0 && (p->online != 1 || !a->online_pairs || !tn_plan_online_kind(p)))
        REJECT("plan: online %d must be 0, or 1 in a register, tma or cluster plan without peel or pipeline of a fusion "
               "that sums exp(t - max(t)) (%d such sums)", p->online, a->online_pairs);
    if (p->prefetch != 0 && (p->prefetch != 1 || p->kind != TN_PLAN_CLUSTER))
        REJECT("plan: prefetch %d must be 0, or 1 in a cluster plan", p->prefetch);
    if (p->shared_slice != 0 && (p->shared_slice != 1 || p->kind != TN_PLAN_CLUSTER || p->carry))
        REJECT("plan: shared_slice %d must be 0, or 1 in a cluster plan without carry (its phases read the slice "
               "again)", p->shared_slice);
    if (p->peel != 0 && (p->peel != 1 || !tn_plan_peel_kind(p) || p->carry || p->vec < 2 ||
                         p->vec * a->min_row_elem_size != 16 || p->threads_per_row < 2 * p->vec - 2 ||
                         p->cols < p->vec))
        REJECT("plan: peel %d must be 0, or 1 in a register plan or a cluster plan whose slice is in registers (no "
               "stages, col_cache or l2_slice), without carry, whose vec %d is one 16-byte access of the "
               "narrowest tensor (%d bytes), at most cols %lld, and whose threads_per_row %d take the 2 vec - 2 "
               "elements outside the vectors", p->peel, p->vec, a->min_row_elem_size, (long long)p->cols,
               p->threads_per_row);
    if (p->col_cache != 0 && (p->col_cache != 1 || p->kind != TN_PLAN_CLUSTER || !a->col_elem_bytes))
        REJECT("plan: col_cache %d must be 0, or 1 in a cluster plan of a fusion with a COL input", p->col_cache);
    if (p->cols_early != 0 && (p->cols_early != 1 || !tn_plan_cols_early_kind(p) || !a->col_elem_bytes))
        REJECT("plan: cols_early %d must be 0, or 1 in a register plan or a cluster plan whose slice is in registers "
               "(no shared_slice, col_cache or l2_slice) of a fusion with a COL input", p->cols_early);
    if (p->carry != 0 && (p->carry != 1 || !tn_plan_carry_floats(p, 1)))
        REJECT("plan: carry %d must be 0, or 1 in a register, cluster or tma plan", p->carry);
    if (p->carry && !a->num_carried)
        REJECT("plan: carry 1, but no special-function value of the fusion is needed in more than one phase");
    if (p->carry && tn_plan_carry_floats(p, a->num_carried) > tn_plan_carry_limit(p, props))
        REJECT("plan: carry keeps %lld values a thread, more than the %lld its registers hold beside the row "
               "(%d threads a CTA)", (long long)tn_plan_carry_floats(p, a->num_carried),
               (long long)tn_plan_carry_limit(p, props), p->block_threads);
    if (p->pdl && p->cc < 90) REJECT("plan: pdl needs sm_90 or newer; the plan is for sm_%d", p->cc);
    if (p->early_l2 != 0 && (p->early_l2 != 1 || !p->pdl || !tn_plan_early_l2_kind(p)))
        REJECT("plan: early_l2 %d must be 0, or 1 in a register or cluster plan with pdl on (pdl %d)", p->early_l2,
               p->pdl);
    if (p->l2_slice != 0 && (p->l2_slice != 1 || p->kind != TN_PLAN_CLUSTER || p->stages || p->shared_slice ||
                             p->carry || p->col_cache || p->cols_early || p->prefetch || p->batch > 16))
        REJECT("plan: l2_slice %d must be 0, or 1 in a cluster plan without stages, shared_slice, carry, col_cache, "
               "cols_early or prefetch, of batch at most 16 (vectors a thread in flight: %d)", p->l2_slice, p->batch);
    if (p->early_stores != 0 && (p->early_stores != 1 || !tn_plan_early_stores_kind(p)))
        REJECT("plan: early_stores %d must be 0, or 1 in a register, tma or cluster plan without l2_slice",
               p->early_stores);
    if (p->early_stores && !a->early_row_outputs)
        REJECT("plan: early_stores 1, but no ROW output of the fusion is computed before its first reduction "
               "without one");
    if (p->vec > 1 && p->vec * a->min_row_elem_size > 16)
        REJECT("plan: vec %d is wider than one 16-byte access of the narrowest tensor", p->vec);
    if (p->align_bytes < tn_plan_access_align(p, a->max_elem_size))
        REJECT("plan: align_bytes %d is below what vec %d needs (%d)", p->align_bytes, p->vec,
               tn_plan_access_align(p, a->max_elem_size));
    if (p->align_bytes > align)
        REJECT("plan: needs %d-byte aligned tensors, they are aligned to %d", p->align_bytes, align);
    return tn_kind_check(p, a, props, err, err_cap);
}

int tn_plan_bound_ctas(const tn_plan_desc *p) {
    if (p->kind == TN_PLAN_TMA_WS || (p->kind == TN_PLAN_CLUSTER && !p->ctas_per_sm)) return 1;
    return p->ctas_per_sm;
}

int64_t tn_plan_carry_floats(const tn_plan_desc *p, int num_carried) {
    switch (p->kind) {
    case TN_PLAN_REGISTER:
    case TN_PLAN_CLUSTER: return (int64_t)p->batch * p->vec * num_carried;
    case TN_PLAN_TMA: {
        const int64_t nv = p->cols / p->vec, t = p->threads_per_row > 0 ? p->threads_per_row : 1;
        return (nv + t - 1) / t * p->vec * num_carried;
    }
    default: return 0;
    }
}

int64_t tn_plan_carry_limit(const tn_plan_desc *p, const tn_device_props *props) {
    int64_t cap = p->block_threads > 0 ? props->regs_per_sm / p->block_threads : 0;
    cap = (cap > 255 ? 255 : cap) - 64;
    return cap < 0 ? 0 : cap < TN_MAX_CARRY_FLOATS ? cap : TN_MAX_CARRY_FLOATS;
}

int tn_plan_producer_threads(const tn_plan_desc *p) {
    if (p->kind != TN_PLAN_TMA_WS) return 0;
    return p->consumer_groups > 1 ? 128 : 32;
}

int tn_plan_desc_launches(const tn_plan_desc *p, tn_launch_desc *out) {
    out[0] = (tn_launch_desc){"tn_kernel", p->grid, p->block_threads, p->smem_bytes, p->cluster, p->pdl != 0};
    return 1;
}
