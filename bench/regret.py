"""The scheduler's regret over a set of shapes: `tmanorm tune` times every
candidate plan of every kind for each (op, M, N) and prints one `regret` line;
this runs it over the standard sweep (or --shapes, or the off-sweep hidden
sizes), writes the lines to a CSV and a markdown table with the median and the
worst regret (the scheduler's time over the best candidate's).

    python3 bench/regret.py --tmanorm build-gpu/tmanorm --sweep full --out $OUT
    python3 bench/regret.py --shapes rmsnorm:64x20480,layernorm:10000x6144
    python3 bench/regret.py --parse tune.log        # only turn a tune log into the table
    python3 bench/regret.py --parse tune.log --rescore build/tmanorm
                                  # the current scheduler's regret from a saved log's times

Runs on the GPU machine (tune needs a GPU); --parse runs anywhere, and so does
--rescore: it asks `tmanorm explain --json` (no GPU needed) which plan the
scheduler picks now and looks its time up in the log's table, so a heuristic
change is scored against times already measured (shapes whose plan the log did
not time are listed as not measured).

"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

OPS = ("rmsnorm", "layernorm", "softmax", "add_rmsnorm")
SWEEP_M = (1, 8, 64, 512, 4096, 16384, 65536)
SWEEP_N = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
# Hidden sizes and row counts that are not the sweep's powers of two.
OFF_SWEEP_N = (1536, 2560, 3072, 6144, 9216, 12288, 20480, 24576, 40960, 81920)
OFF_SWEEP_M = (5, 33, 2000, 10000)

REGRET = re.compile(r"^regret (\w+) (\d+)x(\d+): scheduler (\S+) ([\d.]+) us, best (\S+) ([\d.]+) us, regret ([\d.]+)")
FIELDS = ["op", "rows", "cols", "scheduler_kind", "scheduler_us", "best_kind", "best_us", "regret"]


def parse(text):
    """The regret lines of a tune log, as dicts."""
    rows = []
    for line in text.splitlines():
        m = REGRET.match(line.strip())
        if m:
            rows.append(dict(zip(FIELDS, (m[1], int(m[2]), int(m[3]), m[4], float(m[5]), m[6], float(m[7]),
                                          float(m[8])))))
    return rows


TUNE_HEAD = re.compile(r"^tune (\w+) \[(\d+) x (\d+)\]")
PLAN_COLUMNS = {"vec": "vec", "t/row": "threads_per_row", "rows": "rows_per_cta", "batch": "batch",
                "block": "block_threads", "stages": "stages", "groups": "consumer_groups", "chunks": "chunks",
                "cluster": "cluster", "pf": "prefetch", "cta": "ctas_per_sm", "cy": "carry",
                "ss": "shared_slice", "col": "col_cache", "ce": "cols_early", "pe": "peel", "pl": "pipeline", "on": "online",
                "el": "early_l2", "l2": "l2_slice", "es": "early_stores", "pdl": "pdl"}  # not the grid: a cluster plan's is the driver's count at launch
# A log older than a plan field has no column for it: every plan it timed had the field's default. Not early_l2,
# early_stores nor pdl: a log without their columns is matched on the other fields (the L2 prefetch before the PDL
# wait, where the next kernel is triggered and when the outputs that need no reduction are stored leave the shape
# of the plan as it was).
PLAN_DEFAULTS = {"stages": 0, "consumer_groups": 0, "chunks": 1, "cluster": 1, "prefetch": 0, "ctas_per_sm": 0,
                 "carry": 0, "shared_slice": 0, "col_cache": 0, "cols_early": 0, "peel": 0, "pipeline": 0, "online": 0,
                 "l2_slice": 0}


def tune_tables(text):
    """{(op, M, N): [(candidate fields, us)]} from a tune log (its column header names the fields)."""
    tables, key, columns = {}, None, []
    for line in text.splitlines():
        m = TUNE_HEAD.match(line)
        if m:
            key, columns = (m[1], int(m[2]), int(m[3])), []
            tables[key] = []
        elif key and line.startswith("kind "):
            columns = line.split()
        elif key and columns and line.split() and line.split()[0] in ("register", "looped", "tma", "tma-ws", "cluster"):
            cells = line.split()
            if len(cells) < len(columns) or "FAILED" in line:
                continue
            fields = {"kind": cells[0], **PLAN_DEFAULTS}
            fields.update({PLAN_COLUMNS[c]: int(cells[i]) for i, c in enumerate(columns) if c in PLAN_COLUMNS})
            # tune times the fastest few in full after a short screen; "(screen)" marks the rest.
            tables[key].append((fields, float(cells[len(columns) - 1]), "(screen)" not in line))
    return tables


def rescore(text, tmanorm, dtype, target=""):
    """Regret rows for the scheduler as it is now, from the times in a tune log (planned for `target`: the GPU
    the log was timed on, h100 or h200; without it, the GPU here or else the H200)."""
    import json
    rows = []
    for (op, m, n), cands in tune_tables(text).items():
        if not cands:
            continue
        p = subprocess.run([tmanorm, "explain", "--op", op, "--rows", str(m), "--cols", str(n), "--dtype", dtype,
                            "--json"] + (["--target", target] if target else []), capture_output=True, text=True)
        plan = json.loads(p.stdout)["plan"]
        best = min((c for c in cands if c[2]), key=lambda c: c[1])
        mine = sorted(((not full, us) for fields, us, full in cands
                       if all(plan[k] == v for k, v in fields.items())))
        mine = [us for _, us in mine]
        if not mine:
            print(f"{op} {m}x{n}: the scheduler's {plan['kind']} plan was not timed in this log", file=sys.stderr)
            continue
        rows.append(dict(zip(FIELDS, (op, m, n, plan["kind"], mine[0], best[0]["kind"], best[1], mine[0] / best[1]))))
    return rows


def shapes_of(args):
    if args.shapes:
        out = []
        for s in args.shapes.split(","):
            op, mn = s.split(":")
            m, n = mn.split("x")
            out.append((op, int(m), int(n)))
        return out
    if args.sweep == "full":
        pairs = [(m, n) for m in SWEEP_M for n in SWEEP_N]
    elif args.sweep == "off":
        pairs = [(m, n) for m in OFF_SWEEP_M for n in OFF_SWEEP_N]
    else:
        pairs = [(64, 4096), (4096, 4096), (16384, 16384)]
    # The standard sweep skips tensors above 4 GiB (bf16).
    return [(op, m, n) for op in args.ops.split(",") for m, n in pairs if m * n * 2 <= 4 * 2**30]


def table(rows):
    """Markdown: one line per shape, then the median and the worst."""
    lines = ["| op | M × N | scheduler | best candidate | regret |", "| --- | --- | --- | --- | ---: |"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['rows']} × {r['cols']} | {r['scheduler_kind']} {r['scheduler_us']:.2f} µs | "
                     f"{r['best_kind']} {r['best_us']:.2f} | {r['regret']:.3f} |")
    if rows:
        regrets = [r["regret"] for r in rows]
        worst = max(rows, key=lambda r: r["regret"])
        lines.append("")
        lines.append(f"{len(rows)} shapes: median regret {statistics.median(regrets):.3f}, worst {worst['regret']:.3f} "
                     f"({worst['op']} {worst['rows']} × {worst['cols']})")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tmanorm", default="build-gpu/tmanorm", help="the tmanorm command")
    ap.add_argument("--sweep", choices=("quick", "full", "off"), default="quick",
                    help="quick: 3 shapes per op; full: the standard sweep; off: hidden sizes off the sweep")
    ap.add_argument("--shapes", default="", help="OP:MxN,... (overrides --sweep)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--part", default="", help="K/P: every P-th shape starting at K (split a sweep over calls)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds: start no tune after this long (what was tuned is still written)")
    ap.add_argument("--parse", nargs="+", default=[], metavar="LOG",
                    help="tune logs to turn into one table (no GPU needed; several merge the parts of a sweep)")
    ap.add_argument("--rescore", default="", metavar="TMANORM",
                    help="with --parse: score the scheduler this tmanorm picks now against the log's times")
    ap.add_argument("--target", default="", help="with --rescore: plan for this GPU (h100, h200), the log's")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    if args.parse:
        text = ""
        for path in args.parse:
            with open(path) as f:
                text += f.read() + "\n"
        rows = rescore(text, args.rescore, args.dtype, args.target) if args.rescore else parse(text)
    else:
        rows = []
        todo = shapes_of(args)
        if args.part:
            k, p = (int(x) for x in args.part.split("/"))
            if not 1 <= k <= p:
                ap.error(f"--part {args.part}: K must be 1 to P")
            todo = todo[k - 1::p]
        os.makedirs(args.out, exist_ok=True)
        start = time.monotonic()
        with open(os.path.join(args.out, "regret_tune.log"), "w") as log:
            for i, (op, m, n) in enumerate(todo):
                if args.budget and time.monotonic() - start > args.budget:
                    print(f"budget of {args.budget:.0f} s spent: {len(todo) - i} shapes not tuned", flush=True)
                    break
                p = subprocess.run([args.tmanorm, "tune", "--op", op, "--rows", str(m), "--cols", str(n), "--dtype",
                                    args.dtype], capture_output=True, text=True)
                log.write(p.stdout + p.stderr)
                got = parse(p.stdout)
                rows += got
                status = f"regret {got[0]['regret']:.3f}" if got else f"no regret line (exit {p.returncode})"
                print(f"[{i + 1}/{len(todo)}] {op} {m}x{n}: {status}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "regret.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    md = table(rows)
    with open(os.path.join(args.out, "regret.md"), "w") as f:
        f.write(md)
    print(md)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
