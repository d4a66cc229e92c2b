/* tmanorm: the command-line tool.
 *   tmanorm demo                       every built-in at a default shape: plan, compile, run, check
 *   tmanorm explain --op OP --rows M --cols N [--dtype DT] [--json] [--source]
 *   tmanorm run --op OP --rows M --cols N [--dtype DT]
 *   tmanorm tune --op OP --rows M --cols N [--dtype DT]   every candidate plan, timed
 *   tmanorm version | --version
 * `tmanorm help` lists every option, `tmanorm COMMAND --help` the options of one command.
 *
 * Arguments are parsed strictly: every number is checked in full and against its
 * range, every name against its list, every option against the commands that use
 * it; anything else is one line on stderr and exit status 2. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/runtime.h"
#include "gpu_check.h"
#include "rt/cache.h"
#include "sched/plan.h"
#include "tmanorm.h"
#include "tune.h"

#define MAX_ROWS ((int64_t)TN_MAX_ROWS) /* 2^48 = 281474976710656 */
#define MAX_COLS ((int64_t)TN_MAX_COLS) /* 2^31 - 1 */
#define MAX_CHECK_ROWS 1000000
#define MAX_PLAN_FILE_BYTES ((size_t)1 << 20) /* 1 MiB */

typedef struct cli {
    const char *command;
    const char *op;
    int64_t rows, cols;
    int64_t bound;   /* 0: not given (a plan for M alone) */
    tn_dtype dtype, weight_dtype, out_dtype;
    int have_weight_dtype, have_out_dtype;
    int json, source, stats, overhead;
    const char *kind, *plan_file, *target;
    char *plan_json; /* the contents of plan_file */
    int align;       /* 0: not given (the library's default, 16) */
    int pdl;         /* 0: the default (on from sm_90), 1: on, -1: off */
    float eps;
    int sample_rows;
    unsigned given;  /* bit per option (1u << O_...) */
} cli;

/* ---- commands and options ------------------------------------------------ */

enum { C_DEMO = 1, C_EXPLAIN = 2, C_RUN = 4, C_TUNE = 8 };

typedef struct command_info {
    const char *name;
    unsigned bit;
    const char *synopsis;
    const char *what;
} command_info;

static const command_info k_commands[] = {
    {"demo", C_DEMO, "tmanorm demo [options]",
     "build every built-in fusion at a default shape (4096 x 4096), print its plan, compile it\n"
     "and, on a GPU, run it, check it against the reference and time it"},
    {"explain", C_EXPLAIN, "tmanorm explain --op OP --rows M --cols N [options]",
     "print the plan for a fusion and shape, why it was chosen, and the compiler's resource\n"
     "report (works without a GPU)"},
    {"run", C_RUN, "tmanorm run --op OP --rows M --cols N [options]",
     "run on the GPU, check against the reference, print time and GB/s"},
    {"tune", C_TUNE, "tmanorm tune --op OP --rows M --cols N [options]",
     "check and time every candidate plan on the GPU, fastest first; print the best as JSON"},
};
#define NUM_COMMANDS (int)(sizeof k_commands / sizeof k_commands[0])

enum {
    O_OP, O_ROWS, O_COLS, O_DTYPE, O_WEIGHT_DTYPE, O_OUT_DTYPE, O_STATS, O_EPS, O_KIND, O_PLAN,
    O_ALIGN, O_PDL, O_BOUND, O_TARGET, O_JSON, O_SOURCE, O_CHECK_ROWS, O_OVERHEAD, O_HELP, O_COUNT
};

typedef struct option_info {
    const char *name;
    const char *arg; /* NULL: takes no value */
    unsigned commands;
    const char *help;
} option_info;

#define ALL (C_DEMO | C_EXPLAIN | C_RUN | C_TUNE)
static const option_info k_options[O_COUNT] = {
    [O_OP] = {"op", "OP", C_EXPLAIN | C_RUN | C_TUNE,
              "rmsnorm | layernorm | softmax | add_rmsnorm (or rms_norm, layer_norm, add_rms_norm)"},
    [O_ROWS] = {"rows", "M", ALL, "rows: 1 to 2^48 (demo: 4096)"},
    [O_COLS] = {"cols", "N", ALL, "row length: 1 to 2^31 - 1 (demo: 4096)"},
    [O_DTYPE] = {"dtype", "DT", ALL, "f32 | f16 | bf16: input, weight and output dtype (default bf16)"},
    [O_WEIGHT_DTYPE] = {"weight-dtype", "DT", ALL, "f32 | f16 | bf16: weight (and bias) dtype, if different"},
    [O_OUT_DTYPE] = {"out-dtype", "DT", ALL, "f32 | f16 | bf16 | f8e4m3: output dtype, if different"},
    [O_STATS] = {"stats", NULL, ALL, "also output rstd (and mean for layernorm); not for softmax"},
    [O_EPS] = {"eps", "E", C_DEMO | C_RUN | C_TUNE,
               "epsilon: a finite float from 1.2e-38 to 3.4e38 (default 1e-6); not for softmax"},
    [O_KIND] = {"kind", "K", C_DEMO | C_EXPLAIN | C_RUN, "force a plan kind: register | looped | tma | tma-ws | cluster"},
    [O_PLAN] = {"plan", "FILE", C_EXPLAIN | C_RUN,
                "replay a plan saved as JSON, at most 1 MiB (the \"plan\" member of explain --json,\n"
                "                       or what tune prints after \"best:\")"},
    [O_ALIGN] = {"align", "B", C_DEMO | C_EXPLAIN | C_RUN,
                 "alignment in bytes promised for every pointer and row stride:\n"
                 "                       1, 2, 4, 8 or 16 (default 16)"},
    [O_PDL] = {"pdl", "on|off", C_DEMO | C_EXPLAIN | C_RUN,
               "programmatic dependent launch (default: on from sm_90)"},
    [O_BOUND] = {"bound", "B", C_EXPLAIN | C_RUN,
                 "a plan with row tiers for any row count up to B (>= M): explain lists its tiers,\n"
                 "                       run checks and times its launches of M rows"},
    [O_TARGET] = {"target", "T", C_DEMO | C_EXPLAIN,
                  "plan for h200 | h100 | a100 instead of the GPU here (without a GPU: h200)"},
    [O_JSON] = {"json", NULL, C_EXPLAIN, "print one JSON object (with --source, the CUDA C is its \"source\" member)"},
    [O_SOURCE] = {"source", NULL, C_EXPLAIN, "print the generated CUDA C too"},
    [O_CHECK_ROWS] = {"check-rows", "K", C_DEMO | C_RUN, "rows compared with the reference: 1 to 1000000 (default 64)"},
    [O_OVERHEAD] = {"overhead", NULL, C_DEMO | C_RUN, "also measure the host cost per launch"},
    [O_HELP] = {"help", NULL, ALL, "print this command's options and exit"},
};

#define TARGET_LIST "h200, h100, a100" /* tn_device_props_for_target's */
#define OP_LIST "rmsnorm, layernorm, softmax, add_rmsnorm"

static const command_info *find_command(const char *name) {
    for (int i = 0; i < NUM_COMMANDS; i++)
        if (!strcmp(name, k_commands[i].name)) return &k_commands[i];
    return NULL;
}

static void print_option(FILE *to, int o) {
    char left[40];
    snprintf(left, sizeof left, "--%s%s%s", k_options[o].name, k_options[o].arg ? " " : "",
             k_options[o].arg ? k_options[o].arg : "");
    if (o == O_HELP) snprintf(left, sizeof left, "-h, --help");
    fprintf(to, "  %-20s %s\n", left, k_options[o].help);
}

static void usage(FILE *to) {
    fprintf(to, "usage: tmanorm COMMAND [options]\n"
                "       tmanorm COMMAND --help     the options of one command\n"
                "       tmanorm --version          tmanorm's and NVRTC's versions\n"
                "commands:\n");
    for (int i = 0; i < NUM_COMMANDS; i++) {
        fprintf(to, "  %-9s ", k_commands[i].name);
        for (const char *s = k_commands[i].what; *s; s++) {
            fputc(*s, to);
            if (*s == '\n') fputs("            ", to);
        }
        fputc('\n', to);
    }
    fprintf(to, "  help      this text (help COMMAND: that command's options)\n"
                "  version   same as --version\n"
                "options (each command takes those that apply to it; see COMMAND --help):\n");
    for (int o = 0; o < O_COUNT; o++) print_option(to, o);
    fprintf(to, "an option's value may follow it (--rows 4096) or be joined with '=' (--rows=4096).\n"
                "A bad argument is reported on one line and the exit status is 2.\n");
}

static void command_usage(FILE *to, const command_info *ci) {
    fprintf(to, "usage: %s\n%s\noptions:\n", ci->synopsis, ci->what);
    for (int o = 0; o < O_COUNT; o++)
        if (k_options[o].commands & ci->bit) print_option(to, o);
}

/* "demo, explain, run" for a set of command bits. */
static void command_list(unsigned bits, char *out, size_t cap) {
    out[0] = '\0';
    for (int i = 0; i < NUM_COMMANDS; i++)
        if (bits & k_commands[i].bit) {
            size_t n = strlen(out);
            snprintf(out + n, cap - n, "%s%s", n ? ", " : "", k_commands[i].name);
        }
}

/* ---- strict value parsing -------------------------------------------------- */

#define BAD_ARG(...) return fprintf(stderr, "tmanorm: " __VA_ARGS__), fputc('\n', stderr), 0

/* A decimal integer in [lo, hi]: digits only, the whole string, no overflow. */
static int int_in_range(const char *v, int64_t lo, int64_t hi, int64_t *out) {
    if (v[0] == '\0') return 0;
    for (const char *s = v; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

static int parse_int(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    if (!int_in_range(v, lo, hi, out))
        BAD_ARG("--%s needs an integer from %lld to %lld, got '%s'", opt, (long long)lo, (long long)hi, v);
    return 1;
}

/* 1, 2, 4, 8 or 16. */
static int parse_align(const char *opt, const char *v, int *out) {
    int64_t x = 0;
    if (!int_in_range(v, 1, 16, &x) || (x & (x - 1)) != 0)
        BAD_ARG("--%s needs a power of two from 1 to 16 (1, 2, 4, 8, 16), got '%s'", opt, v);
    *out = (int)x;
    return 1;
}

/* A finite float from FLT_MIN (the smallest normal) to FLT_MAX, the whole string. */
static int parse_positive_float(const char *opt, const char *v, float *out) {
    int ok = v[0] != '\0' && !isspace((unsigned char)v[0]);
    double x = 0;
    if (ok) {
        char *end;
        errno = 0;
        x = strtod(v, &end);
        ok = *end == '\0' && errno != ERANGE && isfinite(x) && x >= FLT_MIN && x <= FLT_MAX;
    }
    if (!ok) BAD_ARG("--%s needs a finite number from %.2g to %.2g (a positive normal float), got '%s'", opt,
                     (double)FLT_MIN, (double)FLT_MAX, v);
    *out = (float)x;
    return 1;
}

static int parse_dtype(const char *opt, const char *v, int allow_f8, tn_dtype *out) {
    tn_dtype d;
    if (tn_dtype_from_name(v, &d) != TN_STATUS_OK)
        BAD_ARG("unknown dtype '%s' for --%s (%s)", v, opt, allow_f8 ? "f32, f16, bf16, f8e4m3" : "f32, f16, bf16");
    if (d == TN_DTYPE_F8E4M3 && !allow_f8)
        BAD_ARG("--%s %s: f8e4m3 is an output dtype only (--out-dtype); --%s takes f32, f16, bf16", opt, v, opt);
    *out = d;
    return 1;
}

/* The op's name, or one of the Python binding's spellings. */
static int parse_op(const char *v, tn_builtin *out) {
    static const struct { const char *alias, *name; } aliases[] = {
        {"rms_norm", "rmsnorm"}, {"layer_norm", "layernorm"}, {"add_rms_norm", "add_rmsnorm"}};
    const char *name = v;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(v, aliases[i].alias)) name = aliases[i].name;
    if (tn_builtin_from_name(name, out) != TN_STATUS_OK) BAD_ARG("unknown op '%s' (%s)", v, OP_LIST);
    return 1;
}

static int parse_kind(const char *v) {
    if (tn_plan_kind_from_name(v) >= 0) return 1;
    char list[128] = "";
    for (int k = 0; k < TN_PLAN_KIND_COUNT; k++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "", tn_plan_kind_name((tn_plan_kind)k));
    }
    BAD_ARG("unknown kind '%s' for --kind (%s)", v, list);
}

static int parse_target(const char *v) {
    tn_device_props p;
    if (tn_device_props_for_target(v, &p) == TN_STATUS_OK) return 1;
    BAD_ARG("unknown target '%s' (%s)", v, TARGET_LIST);
}

/* Reads a plan file: at most 1 MiB, text without NUL bytes. */
static int read_plan_file(const char *path, char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) BAD_ARG("--plan: cannot open '%s': %s", path, strerror(errno));
    char *text = malloc(MAX_PLAN_FILE_BYTES + 2);
    if (!text) {
        fclose(f);
        BAD_ARG("--plan: out of memory reading '%s'", path);
    }
    size_t n = fread(text, 1, MAX_PLAN_FILE_BYTES + 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    const char *why = err ? strerror(err) : n > MAX_PLAN_FILE_BYTES ? "it is over 1 MiB, too big for a plan"
                                        : n == 0                    ? "it is empty"
                                        : memchr(text, '\0', n)     ? "it holds a NUL byte, it is not JSON text"
                                                                    : NULL;
    if (why) {
        free(text);
        BAD_ARG("--plan: cannot read '%s': %s", path, why);
    }
    text[n] = '\0';
    *out = text;
    return 1;
}

/* ---- the command line ------------------------------------------------------ */

enum { PARSED = 0, PARSED_HELP = 1, PARSE_ERROR = 2 };
#define OPT_VAL 256 /* getopt_long's value for option o is OPT_VAL + o: no letter, not 0 */

/* Reports an unknown long option, or the options an abbreviation could mean. */
static void unknown_long_option(const char *given, const command_info *ci) {
    const char *name = given && !strncmp(given, "--", 2) ? given + 2 : NULL;
    size_t len = name ? strcspn(name, "=") : 0;
    char matches[256] = "";
    int count = 0;
    for (int o = 0; name && o < O_COUNT; o++)
        if (!strncmp(name, k_options[o].name, len)) {
            size_t m = strlen(matches);
            snprintf(matches + m, sizeof matches - m, "%s--%s", count++ ? ", " : "", k_options[o].name);
        }
    if (count > 1)
        fprintf(stderr, "tmanorm: ambiguous option '%s' (%s)\n", given, matches);
    else
        fprintf(stderr, "tmanorm: unknown option '%s' (tmanorm %s --help lists the options)\n", given ? given : "?",
                ci->name);
}

/* Parses argv[2..] for the command ci into c. Returns PARSED, PARSED_HELP (the
   command's usage was printed) or PARSE_ERROR (a line was printed). */
static int parse_options(int argc, char **argv, const command_info *ci, cli *c) {
    struct option longs[O_COUNT + 1];
    for (int o = 0; o < O_COUNT; o++)
        longs[o] = (struct option){k_options[o].name, k_options[o].arg ? required_argument : no_argument, NULL,
                                   OPT_VAL + o};
    longs[O_COUNT] = (struct option){NULL, 0, NULL, 0};
    /* getopt_long sees the command as the program name. */
    int n = argc - 1;
    char **args = argv + 1;
    opterr = 0;
    optind = 1;
    for (;;) {
        int o = getopt_long(n, args, ":h", longs, NULL);
        if (o == -1) break;
        const char *given = args[optind - 1]; /* the element that held the option */
        if (o == ':' || o == '?') {
            /* optopt: OPT_VAL + the option for one that lacks or does not take a value,
               the letter for an unknown short option, 0 for an unknown or ambiguous long one. */
            if (optopt >= OPT_VAL && optopt < OPT_VAL + O_COUNT)
                fprintf(stderr, o == ':' ? "tmanorm: --%s needs a value\n" : "tmanorm: --%s takes no value, got '%s'\n",
                        k_options[optopt - OPT_VAL].name, given);
            else if (optopt)
                fprintf(stderr, "tmanorm: unknown option '-%c' (tmanorm %s --help lists the options)\n", optopt,
                        ci->name);
            else
                unknown_long_option(given, ci);
            return PARSE_ERROR;
        }
        o = o == 'h' ? O_HELP : o - OPT_VAL;
        const char *name = k_options[o].name;
        if (o == O_HELP) {
            command_usage(stdout, ci);
            return PARSED_HELP;
        }
        if (!(k_options[o].commands & ci->bit)) {
            char list[64];
            command_list(k_options[o].commands, list, sizeof list);
            fprintf(stderr, "tmanorm: %s does not take --%s (%s: %s)\n", ci->name, name,
                    strchr(list, ',') ? "commands that do" : "only", list);
            return PARSE_ERROR;
        }
        if (c->given & (1u << o)) {
            fprintf(stderr, "tmanorm: --%s given twice\n", name);
            return PARSE_ERROR;
        }
        c->given |= 1u << o;
        const char *v = optarg;
        if (v && v[0] == '-' && v[1] == '-' && v[2] != '\0') {
            fprintf(stderr, "tmanorm: --%s needs a value, got the option '%s'\n", name, v);
            return PARSE_ERROR;
        }
        int64_t x = 0;
        int ok = 1;
        switch (o) {
        case O_OP: c->op = v; break;
        case O_ROWS: ok = parse_int(name, v, 1, MAX_ROWS, &c->rows); break;
        case O_COLS: ok = parse_int(name, v, 1, MAX_COLS, &c->cols); break;
        case O_BOUND: ok = parse_int(name, v, 1, MAX_ROWS, &c->bound); break;
        case O_DTYPE: ok = parse_dtype(name, v, 0, &c->dtype); break;
        case O_WEIGHT_DTYPE: ok = parse_dtype(name, v, 0, &c->weight_dtype); c->have_weight_dtype = 1; break;
        case O_OUT_DTYPE: ok = parse_dtype(name, v, 1, &c->out_dtype); c->have_out_dtype = 1; break;
        case O_STATS: c->stats = 1; break;
        case O_EPS: ok = parse_positive_float(name, v, &c->eps); break;
        case O_KIND: ok = parse_kind(v); c->kind = v; break;
        case O_PLAN: c->plan_file = v; break;
        case O_ALIGN: ok = parse_align(name, v, &c->align); break;
        case O_PDL:
            ok = !strcmp(v, "on") || !strcmp(v, "off");
            if (!ok) fprintf(stderr, "tmanorm: --pdl takes on or off, got '%s'\n", v);
            c->pdl = !strcmp(v, "on") ? 1 : -1;
            break;
        case O_TARGET: ok = parse_target(v); c->target = v; break;
        case O_JSON: c->json = 1; break;
        case O_SOURCE: c->source = 1; break;
        case O_CHECK_ROWS: ok = parse_int(name, v, 1, MAX_CHECK_ROWS, &x); c->sample_rows = (int)x; break;
        case O_OVERHEAD: c->overhead = 1; break;
        default: ok = 0; fprintf(stderr, "tmanorm: internal error parsing option %d\n", o); break;
        }
        if (!ok) return PARSE_ERROR;
    }
    if (optind < n) {
        fprintf(stderr, "tmanorm: unexpected argument '%s' (%s takes options only; tmanorm %s --help)\n", args[optind],
                ci->name, ci->name);
        return PARSE_ERROR;
    }
    return PARSED;
}

/* Checks what the options say together, once each is valid on its own. */
static int check_options(const command_info *ci, cli *c, tn_builtin *op) {
    if (ci->bit != C_DEMO) {
        if (!c->op) BAD_ARG("%s needs --op (%s)", ci->name, OP_LIST);
        if (!parse_op(c->op, op)) return 0;
        if (!(c->given & (1u << O_ROWS))) BAD_ARG("%s needs --rows M (1 to %lld)", ci->name, (long long)MAX_ROWS);
        if (!(c->given & (1u << O_COLS))) BAD_ARG("%s needs --cols N (1 to %lld)", ci->name, (long long)MAX_COLS);
        if (*op == TN_BUILTIN_SOFTMAX) {
            static const int no_softmax[] = {O_WEIGHT_DTYPE, O_STATS, O_EPS};
            for (size_t i = 0; i < sizeof no_softmax / sizeof no_softmax[0]; i++)
                if (c->given & (1u << no_softmax[i]))
                    BAD_ARG("--%s does not apply to softmax (it has no %s)", k_options[no_softmax[i]].name,
                            no_softmax[i] == O_WEIGHT_DTYPE ? "weight" : no_softmax[i] == O_STATS ? "statistics"
                                                                                                 : "epsilon");
        }
    } else {
        if (!c->rows) c->rows = 4096;
        if (!c->cols) c->cols = 4096;
    }
    if (c->bound && c->bound < c->rows)
        BAD_ARG("--bound %lld is below --rows %lld: the plan must serve M rows", (long long)c->bound,
                (long long)c->rows);
    if (c->bound && c->plan_file) BAD_ARG("--bound and --plan: a replayed plan is for its own row count");
    if (!c->have_weight_dtype) c->weight_dtype = c->dtype;
    if (!c->have_out_dtype) c->out_dtype = c->dtype;
    if (c->plan_file && !read_plan_file(c->plan_file, &c->plan_json)) return 0;
    return 1;
}

static int print_version(void) {
    printf("tmanorm %s (NVRTC %s)\n", tn_version(), tn_nvrtc_version());
    return 0;
}

/* ---- output ------------------------------------------------------------------ */

/* Writes s as a JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *to, const char *s) {
    fputc('"', to);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", to); break;
        case '\\': fputs("\\\\", to); break;
        case '\n': fputs("\\n", to); break;
        case '\t': fputs("\\t", to); break;
        case '\r': fputs("\\r", to); break;
        case '\b': fputs("\\b", to); break;
        case '\f': fputs("\\f", to); break;
        default:
            if (*p < 0x20 || *p == 0x7f) fprintf(to, "\\u%04x", *p);
            else fputc(*p, to);
        }
    }
    fputc('"', to);
}

static int fail(tn_context *ctx, tn_status st, const char *what) {
    fprintf(stderr, "tmanorm: %s: %s: %s\n", what, tn_status_string(st), ctx ? tn_context_last_error(ctx) : "");
    return 2;
}

/* A describe() text, malloc'd; NULL if it could not be made. */
static char *described(const tn_plan *plan, tn_describe_what what) {
    size_t n = 0;
    if (tn_plan_describe(plan, what, NULL, 0, &n) != TN_STATUS_OK || n == 0) return NULL;
    char *text = malloc(n);
    if (text && tn_plan_describe(plan, what, text, n, NULL) != TN_STATUS_OK) {
        free(text);
        text = NULL;
    }
    return text;
}

/* Prints a describe() text to stdout. */
static void print_described(const tn_plan *plan, tn_describe_what what) {
    char *text = described(plan, what);
    if (text) fputs(text, stdout);
    else fprintf(stderr, "tmanorm: could not describe the plan\n");
    free(text);
}

static void print_fusion(const tn_fusion *f) {
    size_t n = 0;
    tn_fusion_print(f, NULL, 0, &n);
    char *text = malloc(n);
    if (text && tn_fusion_print(f, text, n, NULL) == TN_STATUS_OK) fputs(text, stdout);
    free(text);
}

static tn_status make_plan(tn_context *ctx, const cli *c, tn_builtin op, tn_fusion **f, tn_plan **plan) {
    tn_builtin_options bo = {c->dtype, c->weight_dtype, c->out_dtype, c->stats};
    tn_status st = tn_fusion_builtin(ctx, op, &bo, f);
    if (st != TN_STATUS_OK) return st;
    tn_plan_options po = {c->align, c->plan_json, c->kind, c->pdl, c->bound > 0}; /* the alignment as given */
    return tn_plan_create(ctx, *f, c->bound ? c->bound : c->rows, c->cols, &po, plan);
}

static int cmd_explain(tn_context *ctx, const cli *c, tn_builtin op) {
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_status st = make_plan(ctx, c, op, &f, &plan);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return fail(ctx, st, "explain");
    }
    tn_resources r;
    int64_t bytes = 0;
    char *plan_json = c->json ? described(plan, TN_DESCRIBE_JSON) : NULL;
    char *source = c->source ? described(plan, TN_DESCRIBE_SOURCE) : NULL;
    if (tn_plan_resources(plan, &r) != TN_STATUS_OK || tn_plan_bytes(plan, &bytes) != TN_STATUS_OK || bytes < 0 ||
        (c->json && !plan_json) || (c->source && !source)) {
        fprintf(stderr, "tmanorm: explain: could not describe the plan\n");
        free(plan_json);
        free(source);
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
        return 2;
    }
    if (c->json) {
        printf("{\"op\": ");
        json_string(stdout, tn_builtin_name(op));
        printf(", \"rows\": %lld, \"cols\": %lld, \"dtype\": ", (long long)c->rows, (long long)c->cols);
        json_string(stdout, tn_dtype_name(c->dtype));
        if (op != TN_BUILTIN_SOFTMAX) {
            printf(", \"weight_dtype\": ");
            json_string(stdout, tn_dtype_name(c->weight_dtype));
        }
        printf(", \"out_dtype\": ");
        json_string(stdout, tn_dtype_name(c->out_dtype));
        printf(", \"target\": ");
        json_string(stdout, ctx->props.name);
        printf(", \"arch\": ");
        json_string(stdout, ctx->arch);
        printf(", \"bytes\": %lld,\n \"plan\": %s", (long long)bytes, plan_json);
        if (c->bound) { /* the plan, bytes and resources above are the top tier's: the plan made for the bound */
            char *tiers = described(plan, TN_DESCRIBE_TIERS);
            printf(",\n \"bound\": %lld, \"tiers\": ", (long long)c->bound);
            json_string(stdout, tiers ? tiers : "");
            free(tiers);
        }
        printf(",\n \"resources\": {\"registers\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
               "\"stack_bytes\": %d, \"static_smem_bytes\": %d, \"block_threads\": %d, \"grid_blocks\": %lld, "
               "\"compile_ms\": %.1f}", r.registers, r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes,
               r.static_smem_bytes, r.block_threads, (long long)r.grid_blocks, r.compile_ms);
        if (source) {
            printf(",\n \"source\": ");
            json_string(stdout, source);
        }
        printf("}\n");
    } else {
        printf("target: %s (%s, %d SMs)%s\n", ctx->props.name, ctx->arch, ctx->props.sm_count,
               ctx->has_gpu ? "" : " -- no GPU here, planned for the target");
        print_fusion(f);
        print_described(plan, TN_DESCRIBE_TEXT);
        print_described(plan, TN_DESCRIBE_RESOURCES);
        if (c->bound) print_described(plan, TN_DESCRIBE_TIERS);
        if (source) fputs(source, stdout);
    }
    free(plan_json);
    free(source);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    return 0;
}

/* Check, time and report one plan on the GPU; 1 if the check failed. */
static int check_and_time(tn_context *ctx, tn_plan *plan, const cli *c, double ceiling, const char *label) {
    float params[1] = {c->eps};
    tn_check_options co = {42, c->sample_rows, 0, 0, c->rows};
    tn_check_result cr;
    tn_status st = tn_gpu_check(plan, params, &co, &cr);
    if (st != TN_STATUS_OK) return fail(ctx, st, "check");
    printf("%s check: %s (%d rows sampled, max rel err %.2e, norm err %.2e, %lld unwritten)%s%s\n", label,
           cr.passed ? "passed" : "FAILED", (int)(c->rows < c->sample_rows ? c->rows : c->sample_rows),
           cr.max_rel_err, cr.norm_err, (long long)cr.unwritten, cr.detail[0] ? ": " : "", cr.detail);
    tn_timing t;
    st = tn_gpu_time_rows(plan, params, 15, c->rows, &t);
    if (st != TN_STATUS_OK) return fail(ctx, st, "time");
    printf("%s time: %.2f us (spread %.2f us over replays, %d buffer sets), %.0f GB/s", label, t.us, t.us_spread,
           t.buffer_sets, t.gbs);
    if (ceiling > 0) printf(", %.1f%% of the copy ceiling (%.0f GB/s)", 100.0 * t.gbs / ceiling, ceiling);
    printf("\n");
    if (c->overhead) {
        double tn_us = 0, raw_us = 0;
        st = tn_gpu_launch_overhead(plan, params, 2000, &tn_us, &raw_us);
        if (st != TN_STATUS_OK) return fail(ctx, st, "overhead");
        printf("%s host: tn_plan_launch %.2f us/call, bare cuLaunchKernelEx %.2f us/call: tmanorm adds %.2f us\n", label,
               tn_us, raw_us, tn_us - raw_us);
    }
    return cr.passed ? 0 : 1;
}

static double measure_ceiling(tn_context *ctx) {
    double gbs = 0;
    if (tn_gpu_copy_ceiling(ctx, (size_t)1 << 30, &gbs) != TN_STATUS_OK) return 0;
    printf("copy ceiling: %.0f GB/s (1 GiB device-to-device copy, read + write)\n", gbs);
    return gbs;
}

static int cmd_run(tn_context *ctx, const cli *c, tn_builtin op) {
    if (!tn_context_has_gpu(ctx)) {
        fprintf(stderr, "tmanorm: run needs a GPU: %s\n", ctx->no_gpu_reason);
        return 2;
    }
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_status st = make_plan(ctx, c, op, &f, &plan);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return fail(ctx, st, "run");
    }
    printf("device: %s (%s)\n", ctx->props.name, ctx->arch);
    double ceiling = measure_ceiling(ctx);
    print_described(plan, TN_DESCRIBE_TEXT);
    print_described(plan, TN_DESCRIBE_RESOURCES);
    if (c->bound) print_described(plan, TN_DESCRIBE_TIERS);
    char label[128];
    snprintf(label, sizeof label, "%s %s [%lld x %lld]", tn_builtin_name(op), tn_dtype_name(c->dtype),
             (long long)c->rows, (long long)c->cols);
    int rc = check_and_time(ctx, plan, c, ceiling, label);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    return rc;
}

static int cmd_tune(tn_context *ctx, const cli *c, tn_builtin op) {
    if (!tn_context_has_gpu(ctx)) {
        fprintf(stderr, "tmanorm: tune needs a GPU: %s\n", ctx->no_gpu_reason);
        return 2;
    }
    tn_builtin_options bo = {c->dtype, c->weight_dtype, c->out_dtype, c->stats};
    tn_fusion *f = NULL;
    tn_status st = tn_fusion_builtin(ctx, op, &bo, &f);
    if (st != TN_STATUS_OK) return fail(ctx, st, "tune");
    float params[1] = {c->eps};
    int rc = tn_tune(ctx, f, c->rows, c->cols, params);
    tn_fusion_destroy(f);
    return rc;
}

static int cmd_demo(tn_context *ctx, cli *c) {
    if (!c->rows) c->rows = 4096;
    if (!c->cols) c->cols = 4096;
    printf("tmanorm demo: every built-in at [%lld x %lld] %s on %s (%s)\n\n", (long long)c->rows, (long long)c->cols,
           tn_dtype_name(c->dtype), ctx->props.name, ctx->arch);
    double ceiling = ctx->has_gpu ? measure_ceiling(ctx) : 0;
    int rc = 0;
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_fusion *f = NULL;
        tn_plan *plan = NULL;
        tn_status st = make_plan(ctx, c, (tn_builtin)op, &f, &plan);
        printf("== %s ==\n", tn_builtin_name((tn_builtin)op));
        if (st != TN_STATUS_OK) {
            rc = fail(ctx, st, tn_builtin_name((tn_builtin)op));
            tn_fusion_destroy(f);
            continue;
        }
        print_fusion(f);
        print_described(plan, TN_DESCRIBE_TEXT);
        print_described(plan, TN_DESCRIBE_RESOURCES);
        if (ctx->has_gpu) {
            int r = check_and_time(ctx, plan, c, ceiling, tn_builtin_name((tn_builtin)op));
            if (r) rc = r;
        }
        printf("\n");
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
    if (!ctx->has_gpu)
        printf("no GPU here (%s): every plan was made and compiled for %s (%s) but not run.\n"
               "On a machine with an NVIDIA GPU (sm_80 or newer) the demo also runs, checks and times them.\n",
               ctx->no_gpu_reason, ctx->props.name, ctx->arch);
    return rc;
}

#define COMMAND_LIST "demo, explain, run, tune, help, version"

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *command = argv[1];
    if (!strcmp(command, "help") || !strcmp(command, "--help") || !strcmp(command, "-h")) {
        if (argc == 2) {
            usage(stdout);
            return 0;
        }
        const command_info *ci = argc == 3 ? find_command(argv[2]) : NULL;
        if (!ci) {
            fprintf(stderr, "tmanorm: help takes one command (demo, explain, run, tune), got '%s'%s\n", argv[2],
                    argc > 3 ? " and more" : "");
            return 2;
        }
        command_usage(stdout, ci);
        return 0;
    }
    if (!strcmp(command, "version") || !strcmp(command, "--version")) {
        if (argc > 2) {
            fprintf(stderr, "tmanorm: %s takes no arguments, got '%s'\n", command, argv[2]);
            return 2;
        }
        return print_version();
    }
    const command_info *ci = find_command(command);
    if (!ci) {
        if (command[0] == '-')
            fprintf(stderr, "tmanorm: the command comes first: tmanorm COMMAND [options] (%s), got '%s'\n",
                    COMMAND_LIST, command);
        else
            fprintf(stderr, "tmanorm: unknown command '%s' (%s)\n", command, COMMAND_LIST);
        return 2;
    }

    cli c;
    memset(&c, 0, sizeof c);
    c.command = ci->name;
    c.dtype = TN_DTYPE_BF16;
    c.eps = 1e-6f;
    c.sample_rows = 64;
    int parsed = parse_options(argc, argv, ci, &c);
    if (parsed == PARSED_HELP) return 0;
    tn_builtin op = TN_BUILTIN_RMSNORM;
    if (parsed != PARSED || !check_options(ci, &c, &op)) {
        free(c.plan_json);
        return 2;
    }

    int needs_gpu = ci->bit == C_RUN || ci->bit == C_TUNE;
    tn_context_options co = {0, NULL, c.target, c.target != NULL && !needs_gpu};
    tn_context *ctx = NULL;
    tn_status st = tn_context_create(&co, &ctx);
    if (st != TN_STATUS_OK) {
        fprintf(stderr, "tmanorm: cannot create a context: %s\n", tn_status_string(st));
        free(c.plan_json);
        return 2;
    }
    int rc = ci->bit == C_DEMO      ? cmd_demo(ctx, &c)
             : ci->bit == C_EXPLAIN ? cmd_explain(ctx, &c, op)
             : ci->bit == C_TUNE    ? cmd_tune(ctx, &c, op)
                                    : cmd_run(ctx, &c, op);
    tn_context_destroy(ctx);
    free(c.plan_json);
    return rc;
}
