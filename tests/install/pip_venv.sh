#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then, from outside the repository, `import
# tmanorm`: its version is the header's, the library it loads is the one the wheel put beside the
# package, and it plans a kernel (for the H200 target, no GPU needed). Needs network access to PyPI
# (the build backend, scikit-build-core, and cmake come from there). Usage: tests/install/pip_venv.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/python" -m pip install -q "$repo"
cd "$work"
"$work/venv/bin/python" - "$repo/include/tmanorm.h" <<'PY'
import os, re, sys
import tmanorm
from tmanorm import _native
text = open(sys.argv[1]).read()
want = ".".join(re.search(rf"^#define TN_VERSION_{p} (\d+)$", text, re.M)[1] for p in ("MAJOR", "MINOR", "PATCH"))
lib = _native.find_library()
pkg = os.path.dirname(tmanorm.__file__)
assert tmanorm.__version__ == want, (tmanorm.__version__, want)
assert os.path.dirname(lib) == pkg and os.path.basename(lib).startswith("libtmanorm.so"), (lib, pkg)
assert "site-packages" in pkg, pkg
plan = tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="h200")
assert "plan register" in plan or "plan " in plan, plan
print(f"pip install: tmanorm {tmanorm.__version__} from {pkg}, library {os.path.basename(lib)}: OK")
PY
