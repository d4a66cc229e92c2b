"""CPU test of bench/regret.py's parser against the line `tmanorm tune` prints
(tools/tune.c): a change to either shows here. Run: python3 tests/python/test_regret.py"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import regret  # noqa: E402


def main():
    # The format tune prints, taken from its source so the two cannot drift.
    src = open(os.path.join(HERE, "..", "..", "tools", "tune.c")).read()
    fmt = re.search(r'printf\("(regret [^"]+)\\n"', src)
    assert fmt, "tune.c no longer prints a regret line"
    line = fmt[1].replace("%s", "{}", 1).replace("%lldx%lld", "{}x{}").replace("%s %.2f", "{} {:.2f}").replace(
        "%.3f", "{:.3f}")
    text = line.format("rmsnorm", 64, 20480, "register", 5.08, "tma", 4.05, 1.254)
    rows = regret.parse("noise\n" + text + "\n")
    assert len(rows) == 1, (text, rows)
    r = rows[0]
    assert (r["op"], r["rows"], r["cols"], r["scheduler_kind"], r["best_kind"]) == ("rmsnorm", 64, 20480, "register",
                                                                                   "tma"), r
    assert abs(r["regret"] - 1.254) < 1e-9 and abs(r["best_us"] - 4.05) < 1e-9, r
    md = regret.table(rows + [dict(r, regret=1.0, cols=4096)])
    assert "median regret 1.127, worst 1.254" in md, md
    passed = 4
    # --rescore: the scheduler's plan now (explain --json, no GPU), looked up in a tune table.
    if len(sys.argv) > 1:
        plan = json.loads(subprocess.run([sys.argv[1], "explain", "--op", "rmsnorm", "--rows", "32768", "--cols", "4096",
                                          "--json"], capture_output=True, text=True, check=True).stdout)["plan"]
        head = re.search(r'printf\("%-9s (.*?)\\n", (.*?)\);', src, re.S)
        names = [a.strip().strip('"') for a in head[2].split(",")]
        assert names[:2] == ["kind", "vec"] and "us" in names, names
        cols = dict(regret.PLAN_COLUMNS, smem="smem_bytes", grid="grid")  # tune's columns

        def row(p, us):
            return " ".join([p["kind"]] + [str(p[cols[n]]) for n in names[1:-1]] + [f"{us:.2f}"])
        other = dict(plan, kind="looped", threads_per_row=1024, rows_per_cta=1, block_threads=1024)
        log = "\n".join([f"tune rmsnorm [32768 x 4096]: 2 candidates (vec 8), the scheduler's: {plan['kind']}",
                         " ".join(names), row(other, 100.0), row(plan, 125.0), "regret ..."])
        got = regret.rescore(log, sys.argv[1], "bf16")
        assert len(got) == 1 and abs(got[0]["regret"] - 1.25) < 1e-9 and got[0]["best_kind"] == "looped", got
        passed += 1
    print(f"regret parser: {passed} passed, 0 failed")


if __name__ == "__main__":
    main()
