"""Writes the seed corpora of tests/fuzz: plans printed by the library (tmanorm
explain --json) and hand-made edge cases for fuzz_plan_json, small programs for
fuzz_ir. Seeds are named seed-* and edge-*; crash regressions (crash-*) are the
fuzzers' own finds and are never written here.
Run: python3 tests/fuzz/seeds.py build/tmanorm   (rewrites seed-* and edge-* only)"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ["rmsnorm", "layernorm", "softmax", "add_rmsnorm"]
DTYPES = ["f32", "f16", "bf16"]
TARGETS = ["h200", "h100", "a100"]


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- fuzz_plan_json: byte 0 the fusion, byte 1 alignment and target, then the JSON ----

def plan_header(op, dtype, stats=False, f8=False, w32=False, align=16, target="h200"):
    b0 = OPS.index(op) | DTYPES.index(dtype) << 2 | stats << 4 | f8 << 5 | w32 << 6
    b1 = [1, 2, 4, 8, 16].index(align) + 5 * TARGETS.index(target)
    return bytes([b0, b1])


def explain(cli, op, dtype, rows, cols, stats=False, f8=False, w32=False, align=16, target="h200", kind=None):
    args = [cli, "explain", "--op", op, "--dtype", dtype, "--rows", str(rows), "--cols", str(cols), "--json",
            "--align", str(align), "--target", target]
    if stats:
        args.append("--stats")
    if f8:
        args += ["--out-dtype", "f8e4m3"]
    if w32:
        args += ["--weight-dtype", "f32"]
    if kind:
        args += ["--kind", kind]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["plan"]


def dump(plan):
    return json.dumps(plan, separators=(", ", ": ")).encode()


def plan_seeds(cli):
    cases = [
        ("rmsnorm-bf16-4096x4096", dict(op="rmsnorm", dtype="bf16", rows=4096, cols=4096)),
        ("rmsnorm-bf16-32768x4096", dict(op="rmsnorm", dtype="bf16", rows=32768, cols=4096)),
        ("rmsnorm-f32-1x1", dict(op="rmsnorm", dtype="f32", rows=1, cols=1)),
        ("rmsnorm-f8out-128x4096", dict(op="rmsnorm", dtype="bf16", rows=128, cols=4096, f8=True)),
        ("rmsnorm-a100-4096x4096", dict(op="rmsnorm", dtype="bf16", rows=4096, cols=4096, target="a100")),
        ("layernorm-bf16-3x1048576", dict(op="layernorm", dtype="bf16", rows=3, cols=1048576)),
        ("layernorm-f16-stats-w32-1x65537", dict(op="layernorm", dtype="f16", rows=1, cols=65537, stats=True,
                                                 w32=True)),
        ("softmax-f16-64x4097", dict(op="softmax", dtype="f16", rows=64, cols=4097)),
        ("softmax-f16-align4-64x4096", dict(op="softmax", dtype="f16", rows=64, cols=4096, align=4)),
        ("softmax-f32-looped-1000x7", dict(op="softmax", dtype="f32", rows=1000, cols=7, kind="looped")),
        ("softmax-bf16-2p48x16", dict(op="softmax", dtype="bf16", rows=1 << 48, cols=16)),
        ("softmax-f32-1x2147483647", dict(op="softmax", dtype="f32", rows=1, cols=2147483647)),
        ("add_rmsnorm-bf16-stats-4096x8192", dict(op="add_rmsnorm", dtype="bf16", rows=4096, cols=8192,
                                                  stats=True)),
        ("layernorm-bf16-tma-4096x4096", dict(op="layernorm", dtype="bf16", rows=4096, cols=4096, kind="tma")),
        ("rmsnorm-f16-tma-32768x16384", dict(op="rmsnorm", dtype="f16", rows=32768, cols=16384, kind="tma")),
        ("rmsnorm-bf16-cluster-4096x131072", dict(op="rmsnorm", dtype="bf16", rows=4096, cols=131072)),
        ("softmax-bf16-tma-ws-4096x65536", dict(op="softmax", dtype="bf16", rows=4096, cols=65536, kind="tma-ws")),
        ("rmsnorm-bf16-one-wave-512x4096", dict(op="rmsnorm", dtype="bf16", rows=512, cols=4096)),
    ]
    # A cluster plan whose slices stay in L2 (l2_slice: a tune candidate, never the scheduler's choice), made from
    # the looped plan of the same shape.
    looped = explain(cli, op="rmsnorm", dtype="bf16", rows=64, cols=524288)
    write("plan_json", "seed-rmsnorm-bf16-l2-slice-64x524288",
          plan_header("rmsnorm", "bf16") + dump(dict(looped, kind="cluster", cluster=8, threads_per_row=1024,
                                                     block_threads=1024, batch=4, grid=128, l2_slice=1)))
    base = None
    for name, c in cases:
        kw = {k: v for k, v in c.items() if k in ("stats", "f8", "w32", "align", "target")}
        plan = explain(cli, **c)
        write("plan_json", "seed-" + name, plan_header(c["op"], c["dtype"], **kw) + dump(plan))
        if name == "rmsnorm-bf16-4096x4096":
            base = plan
        if name == "softmax-bf16-tma-ws-4096x65536":
            # the late PDL trigger (pdl 2) in the one kind that refuses it
            write("plan_json", "edge-pdl-2-tma-ws", plan_header(c["op"], c["dtype"], **kw) + dump(dict(plan, pdl=2)))
        if name == "rmsnorm-a100-4096x4096":
            # the same plan replayed for an f8 output, which sm_80 cannot store: the scheduler refuses it
            write("plan_json", "edge-f8-out-replayed-on-a100",
                  plan_header("rmsnorm", "bf16", f8=True, target="a100") + dump(plan))
    return base


def plan_edges(base):
    """Hand-made cases around the rmsnorm bf16 4096 x 4096 plan (header: h200, 16 bytes)."""
    h = plan_header("rmsnorm", "bf16")

    def with_(**kv):
        p = dict(base)
        p.update(kv)
        return dump(p)

    raw = dump(base)
    edges = {
        # integers beyond their field: must be refused, not wrapped or clamped
        "vec-4294967304": with_(vec=4294967304),
        "rows-9223372036854775808": raw.replace(b'"rows": 4096', b'"rows": 9223372036854775808'),
        "rows-int64-max": with_(rows=9223372036854775807),
        "rows-2p48-plus-1": with_(rows=(1 << 48) + 1),
        "grid-2147483648": with_(grid=2147483648),
        "batch-minus-4294967295": with_(batch=-4294967295),
        "tpr32-rpc134217736-block256": with_(threads_per_row=32, rows_per_cta=134217736, batch=16,
                                             block_threads=256),
        "tpr2048": with_(threads_per_row=2048, rows_per_cta=1, batch=1, block_threads=2048),
        "vec16-bf16": with_(vec=16, batch=2),
        "align32": with_(align_bytes=32),
        "cc80-on-h200": with_(cc=80),
        "looped-rpc2": with_(kind="looped", rows_per_cta=2),
        "ctas-per-sm-9": with_(ctas_per_sm=9),
        "ctas-per-sm-minus-1": with_(ctas_per_sm=-1),
        "prefetch-on-register": with_(prefetch=1),
        "early-l2-without-pdl": with_(early_l2=1, pdl=0),
        "early-l2-2": with_(early_l2=2, pdl=1),
        "early-stores-2": with_(early_stores=2),
        "early-stores-without-early-output": with_(early_stores=1),  # rmsnorm: every output needs the reduction
        "pdl-2": with_(pdl=2),
        "pdl-3": with_(pdl=3),
        "pdl-4": with_(pdl=4),
        "l2-slice-on-register": with_(l2_slice=1),
        "l2-slice-2": with_(l2_slice=2),
        "carry": with_(carry=1),
        "carry-2": with_(carry=2),
        "number-forms": raw.replace(b'"vec": 8', b'"vec": 8.0'),
        "number-exponent": raw.replace(b'"vec": 8', b'"vec": 8e0'),
        "number-plus": raw.replace(b'"vec": 8', b'"vec": +8'),
        "number-leading-zero": raw.replace(b'"vec": 8', b'"vec": 008'),
        "number-hex": raw.replace(b'"vec": 8', b'"vec": 0x8'),
        "number-minus-zero": raw.replace(b'"cc": 90', b'"cc": -0'),
        # structure
        "missing-grid": raw.replace(b'"grid": 2048, ', b''),
        "missing-kind": raw.replace(b'"kind": "register", ', b''),
        "duplicate-vec": raw.replace(b'"vec": 8', b'"vec": 4, "vec": 8'),
        "duplicate-kind": raw.replace(b'"kind": "register"', b'"kind": "looped", "kind": "register"'),
        "trailing-garbage": raw + b"garbage",
        "trailing-object": raw + b" " + raw,
        "trailing-comma": raw[:-1] + b", }",
        "unknown-member": raw.replace(b'"cc": 90', b'"cc": 90, "nonesuch": 1'),
        "unknown-kind": raw.replace(b'"register"', b'"nonesuch"'),
        "kind-integer": raw.replace(b'"register"', b'0'),
        "empty-object": b"{}",
        "empty": b"",
        "null": b"null",
        "array": b"[" + raw + b"]",
        "deep-nesting": b'{"kind": ' + b'{"a": ' * 2000 + b'1' + b'}' * 2001,
        "deep-arrays": b"[" * 5000,
        "unterminated-string": b'{"kind": "regis',
        "unterminated-object": raw[:-1],
        "nul-inside": raw[:20] + b"\0" + raw[20:],
        "form-feed-whitespace": raw.replace(b", ", b",\f\v"),
        "crlf-whitespace": raw.replace(b", ", b",\r\n\t"),
        # strings and escapes
        "why-escapes": with_(why='quote " backslash \\ slash / tab \t newline \n unicode \u00e9 \u0001'),
        "why-raw-newline": raw.replace(b'"why": "vec 8', b'"why": "vec\n8'),
        "why-bad-escape": raw.replace(b'"why": "vec 8', b'"why": "\\x41 8'),
        "why-u-escape-short": raw.replace(b'"why": "vec 8', b'"why": "\\u00 8'),
        "why-lone-surrogate": raw.replace(b'"why": "vec 8', b'"why": "\\ud83d 8'),
        "why-u0000": raw.replace(b'"why": "vec 8', b'"why": "\\u0000 8'),
        "why-480-chars": with_(why="w" * 480),
        "why-479-chars": with_(why="w" * 479),
        "why-100k-chars": with_(why="w" * 100000),
        "key-64-chars": raw.replace(b'"cc"', b'"' + b"k" * 64 + b'"'),
        "key-escaped": raw.replace(b'"cc"', b'"c\\u0063"'),
        "why-high-bytes": raw.replace(b'"why": "vec 8', b'"why": "\xff\xfe\xc3\xa9 8'),
    }
    for name, data in edges.items():
        write("plan_json", "edge-" + name, h + data)


# ---- fuzz_ir: 6 header bytes, the name, then instructions (see fuzz_ir.c) ----

class Prog:
    """An assembler for fuzz_ir's instructions; operands name values by creation order."""

    NAMES = ["x", "w", "b", "y", "eps", "residual", "sum", "x", "", "a\"b", "line\nbreak", "back\\slash",
             "%s%n%d", "*/ /*", "tab\t", "\x01\x7f\xff", "in0", "in1", "p0", "o0"]

    def __init__(self, rows=(1, 9), cols=(1, 14), align=16, kind=-1, target="h200", ref=(2, 16), pad=0, name=3):
        self.b = bytearray()
        self.b.append(rows[0] | rows[1] << 2)  # pick_rows: mode | value
        self.b.append(cols[0] | cols[1] << 2)  # pick_cols
        self.b.append([1, 2, 4, 8, 16].index(align))
        self.b.append((kind + 1) + 4 * TARGETS.index(target))  # kind -1: the scheduler's choice
        self.b.append((ref[0] - 1) + 3 * (ref[1] - 1))
        self.b.append(pad)
        self.b.append(name)
        self.n = 0

    def name(self, s):
        return self.NAMES.index(s)

    def opnd(self, v):
        b = self.n - 1 - v
        assert 0 <= b < 0xf0
        return b

    def val(self):
        self.n += 1
        return self.n - 1

    def input(self, nm, dtype, shape):
        self.b += bytes([0, self.name(nm), dtype, shape])
        return self.val()

    def param(self, nm):
        self.b += bytes([1, self.name(nm)])
        return self.val()

    def const(self, idx):
        self.b += bytes([2, idx])
        return self.val()

    def row_length(self):
        self.b += bytes([3])
        return self.val()

    def cast(self, a, dtype):
        self.b += bytes([4, self.opnd(a), dtype])
        return self.val()

    def unary(self, op, a):
        self.b += bytes([5, op, self.opnd(a)])
        return self.val()

    def binary(self, op, a, b):
        self.b += bytes([7, op, self.opnd(a)])
        self.b.append(self.opnd(b))
        return self.val()

    def reduce(self, op, a, outer=False):
        self.b += bytes([9, op, 7 if outer else 0, self.opnd(a)])
        return self.val()

    def output(self, nm, a, dtype):
        self.b += bytes([10, self.name(nm), self.opnd(a), dtype])

    def raw(self, *bs):
        self.b += bytes(bs)


F32, F16, BF16, F8 = 0, 1, 2, 3
ROW, COL, ROWSCALAR, SCALAR = 0, 1, 2, 3
NEG, ABS, EXP, LOG, SQRT, RSQRT, RECIP, TANH, SIGMOID, SILU, GELU = range(11)
ADD, SUB, MUL, DIV, MAX, MIN = range(6)
SUM, RMAX = 0, 1


def rmsnorm(p, dt=BF16, out=BF16):
    x = p.input("x", dt, ROW)
    w = p.input("w", dt, COL)
    xf = p.cast(x, F32)
    sq = p.binary(MUL, xf, xf)
    ss = p.reduce(SUM, sq)
    n = p.row_length()
    ms = p.binary(DIV, ss, n)
    eps = p.param("eps")
    r = p.unary(RSQRT, p.binary(ADD, ms, eps))
    y = p.binary(MUL, p.binary(MUL, xf, r), p.cast(w, F32))
    p.output("y", y, out)
    return r


def softmax(p, dt=F16):
    x = p.input("x", dt, ROW)
    xf = p.cast(x, F32)
    d = p.binary(SUB, xf, p.reduce(RMAX, xf))
    e = p.unary(EXP, d)
    p.output("y", p.binary(DIV, e, p.reduce(SUM, e)), dt)


def ir_seeds():
    p = Prog()
    rmsnorm(p)
    write("ir", "seed-rmsnorm-bf16", p.b)

    p = Prog(rows=(1, 9), cols=(1, 15), ref=(3, 17), pad=2)
    r = rmsnorm(p, F32, F32)
    p.output("sum", r, F32)  # the per-row rstd as a second output
    write("ir", "seed-rmsnorm-f32-stats-padded", p.b)

    p = Prog(cols=(1, 8), kind=1)
    softmax(p)
    write("ir", "seed-softmax-f16-looped", p.b)

    p = Prog(rows=(1, 19), cols=(1, 23))  # rows 2^62, cols 2^31 - 1: beyond TN_MAX_ROWS
    softmax(p, F32)
    write("ir", "edge-softmax-rows-2p62-cols-2p31m1", p.b)

    p = Prog(rows=(1, 17), cols=(1, 7), align=1)  # rows 2^48, cols 16
    softmax(p, BF16)
    write("ir", "seed-softmax-rows-2p48-align1", p.b)

    p = Prog(rows=(1, 14), cols=(1, 19), align=2)  # rows 2^31, cols 2^20
    rmsnorm(p, F16, F16)
    write("ir", "seed-rmsnorm-rows-2p31-cols-2p20-align2", p.b)

    p = Prog(rows=(1, 0), cols=(1, 23), kind=0)  # one row of 2^31 - 1, register plan forced
    softmax(p, F32)
    write("ir", "seed-softmax-1x2p31m1-register", p.b)

    p = Prog(rows=(1, 12), cols=(1, 16), kind=2)  # 1000003 x 8192, the tma plan forced
    rmsnorm(p, BF16, BF16)
    write("ir", "seed-rmsnorm-tma", p.b)

    p = Prog(target="a100")
    rmsnorm(p, BF16, F8)
    write("ir", "seed-rmsnorm-f8-out-on-a100", p.b)

    p = Prog(cols=(1, 15))  # layernorm with gelu, tanh, two reductions, mean output
    x = p.input("x", F16, ROW)
    w = p.input("w", F32, COL)
    b = p.input("b", F32, COL)
    rs = p.input("residual", F32, ROWSCALAR)
    xf = p.cast(x, F32)
    n = p.row_length()
    mean = p.binary(DIV, p.reduce(SUM, xf), n)
    d = p.binary(SUB, xf, mean)
    var = p.binary(DIV, p.reduce(SUM, p.binary(MUL, d, d)), n)
    r = p.unary(RSQRT, p.binary(ADD, var, p.const(6)))
    y = p.binary(ADD, p.binary(MUL, p.binary(MUL, d, r), w), b)
    y = p.unary(GELU, p.binary(MUL, y, rs))
    p.output("y", p.unary(TANH, y), BF16)
    p.output("sum", mean, F32)
    write("ir", "seed-layernorm-gelu-rowscalar", p.b)

    p = Prog()
    x = p.input("x", F32, ROW)
    p.output("y", p.reduce(SUM, x, outer=True), F32)
    write("ir", "seed-outer-reduction", p.b)

    # invalid programs: the verifier must say no, and everything after it must cope
    p = Prog()
    x = p.input("x", F32, ROW)
    p.raw(5, 0, 0xf0)  # unary of another fusion's value
    p.output("y", x, F32)
    write("ir", "edge-foreign-operand", p.b)

    p = Prog()
    p.raw(0, 0, 4, 0)  # input of dtype TN_DTYPE_COUNT
    p.raw(0, 1, 0, 4)  # input of an unknown shape class
    p.raw(5, 11, 0)  # unary op TN_UNARY_COUNT
    p.raw(7, 0xf1, 0, 1)  # binary op INT_MIN
    p.raw(9, 2, 6, 0)  # reduction op TN_REDUCE_COUNT, axis 2
    p.raw(10, 3, 0, 0xf2)  # output dtype INT_MAX
    write("ir", "edge-out-of-range-enums", p.b)

    p = Prog()
    p.raw(12, 39, F32, ROW)  # 40 ROW inputs, summed: the builder must stop at 32
    p.raw(13, 39, 0)  # 40 params
    p.raw(13, 39, 1, *([0] * 40))  # 40 outputs
    write("ir", "edge-40-inputs-params-outputs", p.b)

    p = Prog()
    x = p.input("x", F32, ROW)
    p.raw(14, 39, SUM, 0)  # 40 reductions, each needing the one before
    p.raw(10, 3, 0, F32)
    write("ir", "edge-40-reduction-levels", p.b)

    p = Prog()
    x = p.input("x", F32, ROW)
    p.raw(15, 0xfb, 0, EXP, 0)  # 1101 exps in a chain: the builder stops at 1024 values
    p.raw(10, 3, 0, F32)
    write("ir", "edge-1024-values", p.b)

    p = Prog()
    x = p.input("x", F32, ROW)
    p.raw(15, 0xf1, 1, SUM, 0)  # 101 reductions of one value
    p.raw(13, 31, 1, *range(32))
    write("ir", "edge-101-reductions", p.b)

    p = Prog(name=0xd0)  # a null fusion name
    p.raw(0, 0xd9, 255, 80, 0x41, F32, ROW)  # an input named by 17935 'A's
    p.raw(0, 0xe0, 5, 0x22, 0x0a, 0x25, 0x6e, 0x5c, F32, COL)  # '"' '\n' '%n' '\'
    p.raw(0, 0xd1, F32, ROW)  # a null input name
    p.raw(10, 10, 1, F32)  # output "line\nbreak"
    p.raw(10, 10, 1, F32)  # twice
    write("ir", "edge-weird-names", p.b)

    p = Prog()
    x = p.input("x", F32, ROW)
    p.raw(2, 0x80, 2, 0x82, 2, 0x83, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f)  # inf, nan, a double from the bytes
    p.raw(7, ADD, 0, 3, 7, MUL, 0, 2, 10, 3, 0, F16)
    write("ir", "edge-nonfinite-constants", p.b)

    p = Prog()
    x = p.input("x", BF16, ROW)
    y = p.input("y", F16, ROW)
    p.output("y", p.binary(ADD, x, y), BF16)  # dtype mismatch
    write("ir", "edge-dtype-mismatch", p.b)

    write("ir", "edge-empty", b"")
    write("ir", "edge-header-only", bytes(7))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    base = plan_seeds(sys.argv[1])
    plan_edges(base)
    ir_seeds()


if __name__ == "__main__":
    main()
