"""CPU test of bench/regret.py's parser against the line `tmanorm tune` prints
(tools/tune.c): a change to either shows here. Run: python3 tests/python/test_regret.py"""
import os
import re
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
    print("regret parser: 4 passed, 0 failed")


if __name__ == "__main__":
    main()
