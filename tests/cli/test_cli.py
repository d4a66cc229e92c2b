#!/usr/bin/env python3
"""CPU test of the `tmanorm` command line: strict argument parsing, help, version,
JSON output and the plan round trip. Standard library only; no GPU needed.

    python3 tests/cli/test_cli.py [PATH_TO_TMANORM]

The binary is the first argument, else $TMANORM_CLI, else build/tmanorm.
Prints "cli: K passed, F failed" and exits non-zero on any failure."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXE = (sys.argv[1] if len(sys.argv) > 1 else
       os.environ.get("TMANORM_CLI") or os.path.join(ROOT, "build", "tmanorm"))

passed = 0
failed = 0


def run(*args):
    p = subprocess.run([EXE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))


def bad(args, *needles):
    """args must exit 2 with one line on stderr holding every needle, nothing on stdout."""
    rc, out, err = run(*args)
    name = "bad: " + " ".join(args)
    lines = err.strip("\n").split("\n")
    missing = [n for n in needles if n not in err]
    check(name, rc == 2 and not missing and len(lines) == 1 and err.startswith("tmanorm: ") and out == ""
          and "bytes at the floor: -" not in out,
          f"rc={rc}, missing {missing!r}, stderr={err!r}, stdout={out[:200]!r}")


def good(args, *needles):
    """args must exit 0 with every needle in stdout; returns stdout."""
    rc, out, err = run(*args)
    missing = [n for n in needles if n not in out]
    check("good: " + " ".join(args), rc == 0 and not missing and "bytes at the floor: -" not in out,
          f"rc={rc}, missing {missing!r}, stderr={err[-500:]!r}")
    return out


def main():
    if not os.access(EXE, os.X_OK):
        print(f"cli: no tmanorm binary at {EXE} (pass its path or set TMANORM_CLI)")
        return 1
    E = ["explain", "--op", "rmsnorm"]
    R = ["run", "--op", "rmsnorm", "--rows", "4", "--cols", "4"]  # refused before any GPU is needed
    shape = ["--rows", "4096", "--cols", "4096"]

    # ---- integers: the whole string, in range -----------------------------------
    for v in ["1e3", "0", "-5", "4096x", " 4096", "+4096", "0x10", "", "281474976710657",
              "9223372036854775807", "99999999999999999999", "4.0"]:
        bad(E + ["--rows", v, "--cols", "4096"], "--rows", "from 1 to 281474976710656", f"'{v}'")
    bad(E + ["--rows=1e3", "--cols", "4096"], "--rows", "'1e3'")
    for v in ["0", "2147483648", "12abc", "-1"]:
        bad(E + ["--rows", "4", "--cols", v], "--cols", "from 1 to 2147483647", f"'{v}'")
    for v in ["3", "0", "32", "99999999999", "abc", "-16", "16.0"]:
        bad(E + shape + ["--align", v], "--align", "power of two", f"'{v}'")
    for v in ["0", "1000001", "ten"]:
        bad(R + ["--check-rows", v], "--check-rows", "from 1 to 1000000", f"'{v}'")
    # each in range, but the tensors would hold more than 2^63 bytes: the library refuses the shape
    bad(E + ["--rows", "281474976710656", "--cols", "2147483647"], "explain", "281474976710656")

    # ---- floats: the whole string, finite, positive, a normal float ---------------
    for v in ["abc", "0", "-1e-6", "inf", "nan", "1e39", "1e-50", "1e-6x", "", " 1e-6"]:
        bad(R + ["--eps", v], "--eps", f"'{v}'")

    # ---- names ----------------------------------------------------------------------
    rc, out, err = run("explain", "--op", "rmsnrom", *shape)
    check("unknown op message", rc == 2 and err == "tmanorm: unknown op 'rmsnrom' "
          "(rmsnorm, layernorm, softmax, add_rmsnorm)\n", repr(err))
    bad(E + shape + ["--target", "tpu"], "unknown target 'tpu' (h200, h100, a100)")
    bad(E + shape + ["--kind", "foo"], "kind", "'foo'", "register", "looped", "tma")
    bad(E + shape + ["--pdl", "maybe"], "--pdl", "on or off", "'maybe'")
    bad(E + shape + ["--pdl", "on", "--target", "a100"], "programmatic dependent launch", "sm_90")
    good(E + shape + ["--pdl", "off"], "pdl              0")
    good(E + shape + ["--kind", "tma"], "plan tma", "bulk copies")
    good(E + shape + ["--kind", "tma-ws"], "plan tma-ws", "producer warp", "setmaxnreg")
    good(E + shape + ["--kind", "cluster"], "plan cluster", "distributed shared memory", "cluster          ")
    bad(E + shape + ["--kind", "cluster", "--target", "a100"], "cluster", "sm_90")
    bad(E + shape + ["--dtype", "f64"], "--dtype", "'f64'", "f32, f16, bf16")
    bad(E + shape + ["--weight-dtype", "f64"], "--weight-dtype", "'f64'", "f32, f16, bf16")
    bad(E + shape + ["--out-dtype", "f64"], "--out-dtype", "'f64'", "f32, f16, bf16, f8e4m3")
    bad(E + shape + ["--dtype", "f8e4m3"], "--dtype", "f8e4m3", "output")
    bad(["explian", "--op", "rmsnorm"], "unknown command 'explian'")
    bad(["--rows", "5", "explain"], "command comes first")
    bad(["help", "bogus"], "'bogus'")
    bad(["version", "--op", "rmsnorm"], "version")

    # ---- options: known, with values, for this command, once -------------------------
    bad(E + shape + ["--bogus"], "'--bogus'")
    bad(E + shape + ["-x"], "'-x'")
    bad(E + ["--cols", "4096", "--rows"], "--rows", "needs a value")
    bad(E + ["--rows", "--cols", "4096"], "--rows", "'--cols'")
    bad(E + shape + ["--json=1"], "--json", "no value")
    bad(E + shape + ["stray"], "'stray'")
    bad(E + shape + ["--rows", "8"], "--rows", "twice")
    bad(E + shape + ["--eps", "1e-5"], "explain", "--eps")
    bad(["tune", "--op", "rmsnorm", "--plan", "x.json"] + shape, "tune", "--plan")
    bad(["demo", "--op", "rmsnorm"], "demo", "--op")
    bad(R + ["--target", "h100"], "run", "--target")
    bad(["explain", "--op", "softmax", "--stats"] + shape, "--stats", "softmax")
    bad(["run", "--op", "softmax", "--eps", "1e-5"] + shape, "--eps", "softmax")
    bad(["explain"] + shape, "explain", "--op")
    bad(["explain", "--op", "rmsnorm", "--cols", "4096"], "explain", "--rows")
    bad(["explain", "--op", "rmsnorm", "--rows", "4096"], "explain", "--cols")

    # ---- --plan FILE ---------------------------------------------------------------------
    with tempfile.TemporaryDirectory() as tmp:
        missing = os.path.join(tmp, "missing.json")
        bad(E + shape + ["--plan", missing], "--plan", missing)
        bad(E + shape + ["--plan", tmp], "--plan", tmp)
        big = os.path.join(tmp, "big.json")
        with open(big, "w") as f:
            f.write("{" + " " * (1 << 20) + "}")
        bad(E + shape + ["--plan", big], "--plan", "1 MiB")
        empty = os.path.join(tmp, "empty.json")
        open(empty, "w").close()
        bad(E + shape + ["--plan", empty], "--plan", "empty")

        # ---- good cases --------------------------------------------------------------------
        good(["explain", "--op", "rmsnorm", "--rows", "4096", "--cols", "4096", "--dtype", "bf16"],
             "plan ", "bytes at the floor: ")
        good(["explain", "--op=rmsnorm", "--rows=4096", "--cols=4096", "--dtype=bf16"], "plan ")
        good(["explain", "--op", "add_rms_norm", "--rows", "64", "--cols", "1000", "--dtype", "f16",
              "--out-dtype", "f8e4m3", "--stats"], "add_rmsnorm")
        good(["explain", "--op", "rmsnorm", "--rows", "281474976710656", "--cols", "1"], "bytes at the floor: ")
        out = good(E + shape + ["--json"])
        try:
            j = json.loads(out)
            check("json members", j["op"] == "rmsnorm" and j["rows"] == 4096 and isinstance(j["plan"], dict)
                  and j["bytes"] > 0 and j["plan"]["align_bytes"] == 16 and "source" not in j, out[:300])
        except ValueError as e:
            check("json parses", False, f"{e}: {out[:300]!r}")
        out = good(["explain", "--op", "softmax", "--rows", "64", "--cols", "4097", "--dtype", "f16",
                    "--json", "--source", "--target", "a100"])
        try:
            j = json.loads(out)
            check("json source", "tn_kernel" in j["source"] and j["target"] == "a100" and j["arch"] == "sm_80",
                  out[:300])
            plain = good(["explain", "--op", "softmax", "--rows", "64", "--cols", "4097", "--dtype", "f16",
                          "--source", "--target", "a100"])
            check("json source is the source", plain.endswith(j["source"]), "the escaped source differs")
        except (ValueError, KeyError) as e:
            check("json --source parses", False, f"{e}: {out[:300]!r}")
        for args in (["--version"], ["version"]):
            rc, out, err = run(*args)
            check(" ".join(args), rc == 0 and out.startswith("tmanorm 0.3") and out.count("\n") == 1, repr(out))
        for args in (["explain", "--help"], ["explain", "-h"], ["help", "explain"],
                     ["explain", "--op", "rmsnorm", "--help"]):
            out = good(args, "usage: tmanorm explain", "--op", "--json")
            check(" ".join(args) + ": explain's options only", "--check-rows" not in out, out)
        good(["run", "--help"], "usage: tmanorm run", "--check-rows", "--eps")
        good(["help"], "usage: tmanorm", "--version", "--help")
        rc, out, err = run()
        check("no command: usage, exit 2", rc == 2 and "usage: tmanorm" in err, repr(err[:200]))

        # ---- the plan round trip, at each alignment -------------------------------------
        # (--align 1 and 2 need the scheduler to record the alignment it planned for.)
        for align in ["16", "4", "2", "1"]:
            args = ["explain", "--op", "rmsnorm", "--rows", "4096", "--cols", "4096", "--dtype", "bf16",
                    "--align", align]
            rc, out, err = run(*args, "--json")
            try:
                plan = json.loads(out)["plan"]
            except (ValueError, KeyError):
                check(f"round trip --align {align}: explain --json", False, f"rc={rc} {err!r}")
                continue
            saved = os.path.join(tmp, f"plan{align}.json")
            with open(saved, "w") as f:
                json.dump(plan, f)
            rc, out, err = run(*args, "--plan", saved, "--json")
            try:
                replayed = json.loads(out)["plan"] if rc == 0 else None
            except (ValueError, KeyError):
                replayed = None
            check(f"round trip --align {align}", rc == 0 and replayed is not None
                  and {k: v for k, v in replayed.items() if k != "why"} == {k: v for k, v in plan.items() if k != "why"},
                  f"rc={rc} {err.strip()!r}")

        # ---- every kind's plan replays as explain --json prints it; a hand-written one may leave out the
        # fields its kind does not use and write numbers as 4096.0 --------------------------------
        for kind, op, rows, cols in (("register", "layernorm", 4096, 4096), ("looped", "rmsnorm", 64, 4096),
                                     ("tma", "layernorm", 4096, 8192), ("tma-ws", "add_rmsnorm", 16384, 4096),
                                     ("tma-ws", "softmax", 4096, 65536), ("cluster", "softmax", 4096, 65536),
                                     ("cluster", "layernorm", 1, 131072)):
            args = ["explain", "--op", op, "--rows", str(rows), "--cols", str(cols), "--kind", kind]
            rc, out, err = run(*args, "--json")
            try:
                plan = json.loads(out)["plan"]
            except (ValueError, KeyError):
                check(f"{kind} explain --json", False, f"rc={rc} {err!r}")
                continue
            saved = os.path.join(tmp, f"plan_{kind}.json")
            with open(saved, "w") as f:
                json.dump(plan, f)
            rc, out2, err = run(*args[:-2], "--plan", saved, "--json")
            ok = rc == 0 and json.loads(out2)["plan"] == dict(plan, why=json.loads(out2)["plan"]["why"])
            check(f"{kind} {op} plan replays as printed", ok, f"rc={rc} {err.strip()!r}")
        plan = json.loads(run("explain", "--op", "rmsnorm", "--rows", "4096", "--cols", "4096", "--kind", "register",
                              "--json")[1])["plan"]
        terse = {k: (float(v) if isinstance(v, int) else v) for k, v in plan.items()
                 if k not in ("stages", "smem_bytes", "consumer_groups", "chunks", "producer_regs", "consumer_regs",
                              "why")}
        saved = os.path.join(tmp, "terse.json")
        with open(saved, "w") as f:
            json.dump(terse, f)
        good(["explain", "--op", "rmsnorm", "--rows", "4096", "--cols", "4096", "--plan", saved], "plan register",
             "rows             4096")

    print(f"cli: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
