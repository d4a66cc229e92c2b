/* Plan printing, JSON round trip and checking (see plan.h). */
#include "sched/plan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_kind_names[TN_PLAN_KIND_COUNT] = {"register", "looped"};

const char *tn_plan_kind_name(tn_plan_kind kind) {
    return (unsigned)kind < TN_PLAN_KIND_COUNT ? k_kind_names[kind] : "invalid";
}

int tn_plan_kind_from_name(const char *name) {
    for (int k = 0; k < TN_PLAN_KIND_COUNT; k++)
        if (name && strcmp(name, k_kind_names[k]) == 0) return k;
    return -1;
}

/* The integer fields, in print order: one table drives text, JSON and parsing. */
typedef struct field {
    const char *name;
    size_t offset;
    int is64;
} field;
#define F32(n) {#n, offsetof(tn_plan_desc, n), 0}
#define F64(n) {#n, offsetof(tn_plan_desc, n), 1}
static const field k_fields[] = {F64(rows), F64(cols), F32(vec), F32(threads_per_row),
                                 F32(rows_per_cta), F32(batch), F32(block_threads), F64(grid),
                                 F32(cc), F32(align_bytes)};
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
        else if ((unsigned char)*c < 0x20) tn_strbuf_append(sb, " ");
        else tn_strbuf_printf(sb, "%c", *c);
    }
    tn_strbuf_append(sb, "\"}");
}

/* A flat JSON object of string and integer members; nothing else is a plan. */
static const char *skip_ws(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    return s;
}

static const char *parse_string(const char *s, char *out, size_t cap) {
    if (*s != '"') return NULL;
    size_t n = 0;
    for (s++; *s && *s != '"'; s++) {
        char c = *s;
        if (c == '\\') {
            s++;
            if (*s != '"' && *s != '\\' && *s != '/') return NULL;
            c = *s;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    if (*s != '"') return NULL;
    out[n] = '\0';
    return s + 1;
}

int tn_plan_desc_parse(const char *json, tn_plan_desc *out, char *err, size_t err_cap) {
    tn_plan_desc p;
    memset(&p, 0, sizeof p);
    p.kind = TN_PLAN_KIND_COUNT;
    unsigned seen = 0;
    const char *s = skip_ws(json ? json : "");
    if (*s++ != '{') return snprintf(err, err_cap, "plan JSON: expected '{'"), 0;
    for (;;) {
        char key[64], text[sizeof p.why];
        s = skip_ws(s);
        if (*s == '}') break;
        s = parse_string(s, key, sizeof key);
        if (!s) return snprintf(err, err_cap, "plan JSON: expected a member name"), 0;
        s = skip_ws(s);
        if (*s++ != ':') return snprintf(err, err_cap, "plan JSON: expected ':' after \"%s\"", key), 0;
        s = skip_ws(s);
        if (*s == '"') {
            s = parse_string(s, text, sizeof text);
            if (!s) return snprintf(err, err_cap, "plan JSON: bad string for \"%s\"", key), 0;
            if (strcmp(key, "kind") == 0) {
                int k = tn_plan_kind_from_name(text);
                if (k < 0) return snprintf(err, err_cap, "plan JSON: unknown kind \"%s\"", text), 0;
                p.kind = (tn_plan_kind)k;
            } else if (strcmp(key, "why") == 0) {
                snprintf(p.why, sizeof p.why, "%s", text);
            } else {
                return snprintf(err, err_cap, "plan JSON: unknown member \"%s\"", key), 0;
            }
        } else {
            char *end;
            long long v = strtoll(s, &end, 10);
            if (end == s) return snprintf(err, err_cap, "plan JSON: \"%s\" needs an integer", key), 0;
            s = end;
            size_t i = 0;
            while (i < NUM_FIELDS && strcmp(k_fields[i].name, key) != 0) i++;
            if (i == NUM_FIELDS) return snprintf(err, err_cap, "plan JSON: unknown member \"%s\"", key), 0;
            set(&p, &k_fields[i], v);
            seen |= 1u << i;
        }
        s = skip_ws(s);
        if (*s == ',') s++;
        else if (*s != '}') return snprintf(err, err_cap, "plan JSON: expected ',' or '}'"), 0;
    }
    if (p.kind == TN_PLAN_KIND_COUNT) return snprintf(err, err_cap, "plan JSON: no \"kind\""), 0;
    for (size_t i = 0; i < NUM_FIELDS; i++)
        if (!(seen & (1u << i)))
            return snprintf(err, err_cap, "plan JSON: missing \"%s\"", k_fields[i].name), 0;
    *out = p;
    return 1;
}

int tn_plan_access_align(const tn_plan_desc *p, int size) {
    int bytes = p->vec * size;
    return bytes > 16 ? 16 : bytes;
}

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

#define REJECT(...) return snprintf(err, err_cap, __VA_ARGS__), 0

int tn_plan_desc_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *props,
                       int align, char *err, size_t err_cap) {
    if ((unsigned)p->kind >= TN_PLAN_KIND_COUNT) REJECT("plan: unknown kind %d", (int)p->kind);
    if (p->rows < 1 || p->cols < 1) REJECT("plan: rows and cols must be at least 1");
    if (!is_pow2(p->vec) || p->vec > 16 || p->cols % p->vec)
        REJECT("plan: vec %d must be a power of two up to 16 that divides cols %lld", p->vec, (long long)p->cols);
    if (p->vec * a->min_row_elem_size > 16 && p->vec > 1)
        REJECT("plan: vec %d is wider than one 16-byte access of the narrowest tensor", p->vec);
    if (p->align_bytes > align)
        REJECT("plan: needs %d-byte aligned tensors, they are aligned to %d", p->align_bytes, align);
    if (!is_pow2(p->threads_per_row) || p->threads_per_row > props->max_threads_per_block)
        REJECT("plan: threads_per_row %d must be a power of two up to %d", p->threads_per_row,
               props->max_threads_per_block);
    if (p->rows_per_cta < 1 || p->block_threads != p->threads_per_row * p->rows_per_cta)
        REJECT("plan: block_threads %d must be threads_per_row * rows_per_cta", p->block_threads);
    if (p->block_threads % 32 || p->block_threads > props->max_threads_per_block)
        REJECT("plan: block_threads %d must be a multiple of 32 up to %d", p->block_threads,
               props->max_threads_per_block);
    if (p->grid < 1 || p->grid > 0x7fffffff) REJECT("plan: grid %lld out of range", (long long)p->grid);
    if (p->batch < 1 || p->batch > 64) REJECT("plan: batch %d must be in [1, 64]", p->batch);
    if (p->cc != props->cc_major * 10 + props->cc_minor)
        REJECT("plan: made for sm_%d, the device is sm_%d%d", p->cc, props->cc_major, props->cc_minor);
    if (p->align_bytes < tn_plan_access_align(p, a->max_elem_size))
        REJECT("plan: align_bytes %d is below what vec %d needs", p->align_bytes, p->vec);
    int64_t nv = p->cols / p->vec;
    if (p->kind == TN_PLAN_REGISTER) {
        if ((int64_t)p->threads_per_row * p->batch < nv)
            REJECT("plan: threads_per_row %d x batch %d vectors do not cover a row of %lld vectors",
                   p->threads_per_row, p->batch, (long long)nv);
    } else if (p->rows_per_cta != 1) {
        REJECT("plan: a looped plan takes one row per CTA");
    }
    return 1;
}
