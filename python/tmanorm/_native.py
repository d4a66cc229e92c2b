"""The C library through ctypes: finding and loading it, its structs, contexts
(one per device ordinal and target) and each context's bounded plan cache.
Imports neither torch nor anything of the package."""
import collections
import ctypes
import glob
import os
import threading

# Kept equal to include/tmanorm.h's TN_VERSION_MAJOR.MINOR.PATCH (a CPU test compares them);
# __version__ when the library cannot be loaded.
VERSION = "0.3.0"

# tn_builtin codes, by the binding's op names.
BUILTINS = {"rms_norm": 0, "layer_norm": 1, "softmax": 2, "add_rms_norm": 3}
DESCRIBE_TEXT, DESCRIBE_JSON, DESCRIBE_SOURCE, DESCRIBE_RESOURCES, DESCRIBE_TIERS = 0, 1, 2, 3, 4
MAX_ROWS = 1 << 48  # TN_MAX_ROWS
PLAN_CACHE_SIZE = 256  # plans kept per context, least recently used evicted first


class TmanormError(RuntimeError):
    """A tmanorm call failed; the message is the library's."""


class _BuiltinOptions(ctypes.Structure):
    _fields_ = [("input_dtype", ctypes.c_int), ("weight_dtype", ctypes.c_int),
                ("output_dtype", ctypes.c_int), ("save_stats", ctypes.c_int)]


class _ContextOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("allocator", ctypes.c_void_p),
                ("target", ctypes.c_char_p), ("force_target", ctypes.c_int)]


class _PlanOptions(ctypes.Structure):
    _fields_ = [("align_bytes", ctypes.c_int), ("plan_json", ctypes.c_char_p), ("kind", ctypes.c_char_p),
                ("pdl", ctypes.c_int), ("row_tiers", ctypes.c_int)]


class Tensor(ctypes.Structure):
    """tn_tensor."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("row_stride", ctypes.c_int64)]


class _LaunchArgs(ctypes.Structure):
    _fields_ = [("inputs", ctypes.POINTER(Tensor)), ("num_inputs", ctypes.c_int),
                ("outputs", ctypes.POINTER(Tensor)), ("num_outputs", ctypes.c_int),
                ("params", ctypes.POINTER(ctypes.c_float)), ("num_params", ctypes.c_int),
                ("stream", ctypes.c_void_p), ("rows", ctypes.c_int64)]  # rows 0: the plan's M


def library_candidates():
    """Where the library is looked for, in order: a libtmanorm.so* beside this package (where a
    wheel puts it), $TMANORM_LIB, the repository's build folders, then the loader's search path."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    exact = os.path.join(here, "libtmanorm.so")
    if os.path.exists(exact):
        found.append(exact)
    found += sorted(glob.glob(os.path.join(here, "libtmanorm.so.*")), reverse=True)  # newest soname first
    env = os.environ.get("TMANORM_LIB")
    if env:
        found.append(env)
    for build in ("build", "build-gpu"):
        path = os.path.normpath(os.path.join(here, "..", "..", build, "libtmanorm.so"))
        if os.path.exists(path):
            found.append(path)
    found.append("libtmanorm.so")
    return found


def find_library():
    return library_candidates()[0]


_lib = None
_lib_lock = threading.Lock()


def library():
    """The loaded library, its functions typed (loaded on first use; raises OSError if it cannot be)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(find_library())
            vp, i64, st = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
            signatures = {  # name: (restype, argtypes), for every function the binding calls
                "tn_status_string": (ctypes.c_char_p, [st]),
                "tn_context_create": (st, [ctypes.POINTER(_ContextOptions), ctypes.POINTER(vp)]),
                "tn_context_destroy": (None, [vp]),
                "tn_context_last_error": (ctypes.c_char_p, [vp]),
                "tn_context_has_gpu": (ctypes.c_int, [vp]),
                "tn_fusion_builtin": (st, [vp, ctypes.c_int, ctypes.POINTER(_BuiltinOptions), ctypes.POINTER(vp)]),
                "tn_fusion_destroy": (None, [vp]),
                "tn_plan_create": (st, [vp, vp, i64, i64, vp, ctypes.POINTER(vp)]),
                "tn_plan_destroy": (None, [vp]),
                "tn_plan_describe": (st, [vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.c_size_t)]),
                "tn_plan_launch": (st, [vp, ctypes.POINTER(_LaunchArgs)]),
            }
            for name, (restype, argtypes) in signatures.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
            if hasattr(lib, "tn_version"):  # libraries before 0.1.0 lack it
                lib.tn_version.restype, lib.tn_version.argtypes = ctypes.c_char_p, []
            _lib = lib
        return _lib


def version():
    """The loaded library's tn_version(); VERSION when it cannot be loaded or predates tn_version."""
    try:
        lib = library()
    except (OSError, AttributeError):  # not found, or too old to have every function the binding calls
        return VERSION
    return lib.tn_version().decode() if hasattr(lib, "tn_version") else VERSION


def pdl_code(pdl):
    """tn_plan_options.pdl: None -> 0 (on where the GPU has it, sm_90+), True -> 1, False -> -1."""
    if pdl is None:
        return 0
    if not isinstance(pdl, bool):
        raise TypeError(f"tmanorm: pdl must be None, True or False, not {pdl!r}")
    return 1 if pdl else -1


def row_bound(rows):
    """The row count a plan is made for, to serve `rows`: the next power of two (row tiers serve
    every count below it), so a row count that changes every call makes a plan per doubling."""
    return min(MAX_ROWS, 1 << max(0, int(rows) - 1).bit_length())


class _PlanCache:
    """Plans by key (what changes the kernels: not the row count), least recently used first, each
    with the rows it serves. Evicted or outgrown plans are destroyed; plans launched during CUDA
    graph capture are pinned (a graph may replay them at any time) and never destroyed."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.plans = collections.OrderedDict()
        self.bounds = {}
        self.pinned = set()
        self.retired = []  # pinned plans a larger one replaced: kept for the graphs that hold them
        self.doomed = []  # plans replaced by calls whose launch raised: destroyed with the next victims
        self.created = self.evicted = self.hits = 0

    def get(self, key):
        plan = self.plans.get(key)
        if plan is not None:
            self.plans.move_to_end(key)
        return plan

    def add(self, key, plan, bound):
        """Caches plan for key; returns the plan it replaces (None, or one that serves fewer rows),
        for the caller to destroy, or None where the old plan is pinned (then it is kept)."""
        old = self.plans.pop(key, None)
        self.plans[key] = plan
        self.bounds[key] = bound
        self.created += 1
        if old is not None and key in self.pinned:
            self.pinned.discard(key)
            self.retired.append(old)
            old = None
        return old

    def over(self):
        return len(self.plans) - len(self.pinned) > self.capacity

    def take_oldest(self):
        """Removes and returns unpinned plans, oldest first, down to 3/4 of the capacity (one
        synchronize before destroying them covers a batch)."""
        keep = self.capacity - self.capacity // 4
        victims = []
        for key in list(self.plans):
            if len(self.plans) - len(self.pinned) <= keep:
                break
            if key not in self.pinned:
                victims.append(self.plans.pop(key))
                del self.bounds[key]
        self.evicted += len(victims)
        return victims


class Context:
    """One tn_context (a device, or a target to plan for without a GPU) and its plan cache."""

    def __init__(self, device=0, target=None):
        lib = library()
        opts = _ContextOptions(device, None, target.encode() if target else None, 1 if target else 0)
        self.handle = ctypes.c_void_p()
        self._check(lib.tn_context_create(ctypes.byref(opts), ctypes.byref(self.handle)), "tn_context_create")
        self.cache = _PlanCache(PLAN_CACHE_SIZE)
        # Guards the cache and every launch: a plan is never destroyed between its lookup and its launch.
        self.lock = threading.RLock()

    def _check(self, status, what):
        if status != 0:
            lib = library()
            detail = lib.tn_context_last_error(self.handle).decode() if self.handle else ""
            raise TmanormError(f"tmanorm: {what}: {lib.tn_status_string(status).decode()}: {detail}")

    def has_gpu(self):
        return bool(library().tn_context_has_gpu(self.handle))

    def make_plan(self, op, dtypes, rows, cols, save_stats=0, pdl=0, row_tiers=0):
        """A new plan (the caller owns it) for the built-in op with (input, weight, output) dtype codes;
        pdl as tn_plan_options.pdl (0 default, 1 on, -1 off); row_tiers 1: it serves 1 to rows rows."""
        lib = library()
        fusion = ctypes.c_void_p()
        opts = _BuiltinOptions(dtypes[0], dtypes[1], dtypes[2], save_stats)
        self._check(lib.tn_fusion_builtin(self.handle, BUILTINS[op], ctypes.byref(opts), ctypes.byref(fusion)),
                    "tn_fusion_builtin")
        plan = ctypes.c_void_p()
        try:
            popts = _PlanOptions(0, None, None, pdl, row_tiers)
            self._check(lib.tn_plan_create(self.handle, fusion, rows, cols, ctypes.byref(popts), ctypes.byref(plan)),
                        "tn_plan_create")
        finally:
            lib.tn_fusion_destroy(fusion)
        return plan

    def run(self, op, dtypes, rows, cols, pdl, launch, capturing=False, before_evict=None):
        """launch(plan) with the cached plan for (op, dtypes, N, PDL setting) that serves `rows` rows:
        a plan with row tiers up to a power of two, made on first use and remade for the next power
        of two of a call's rows when it has more (outside the lock: a compile must not hold up other threads' launches).
        The plan stays cached while launch runs; pinned when capturing. Beyond the cache's size,
        plans are destroyed oldest first after before_evict() (a device synchronize: a kernel of
        theirs may still run), never while capturing; so is a plan a larger one replaced."""
        if rows > MAX_ROWS:
            raise ValueError(f"tmanorm: {op}: {rows} rows: a plan serves at most 2^48")
        key = (op, tuple(dtypes), cols, pdl)
        with self.lock:
            plan = self.cache.get(key)
            if plan is not None and self.cache.bounds[key] >= rows:
                self.cache.hits += 1
                self._use(key, plan, launch, capturing, before_evict, [])
                return
        bound = row_bound(rows)
        made = self.make_plan(op, dtypes, bound, cols, 0, pdl, row_tiers=1)
        with self.lock:
            plan = self.cache.get(key)  # another thread's, made meanwhile
            stale = []
            if plan is None or self.cache.bounds[key] < rows:
                old = self.cache.add(key, made, bound)
                stale = [old] if old is not None else []
                plan, made = made, None
            else:
                self.cache.hits += 1  # another thread's plan, made meanwhile
            self._use(key, plan, launch, capturing, before_evict, stale)
        if made is not None:
            library().tn_plan_destroy(made)

    def _use(self, key, plan, launch, capturing, before_evict, stale):
        try:
            launch(plan)
        except BaseException:
            self.cache.doomed += stale  # a kernel of theirs may still run: destroyed after the next synchronize
            raise
        if capturing:
            self.cache.pinned.add(key)
            self.cache.retired += stale  # a kernel of theirs may still run: no synchronize while capturing
            return
        victims = self.cache.doomed + stale + (self.cache.take_oldest() if self.cache.over() else [])
        self.cache.doomed = []
        if victims and before_evict is not None:
            before_evict()
        for p in victims:
            library().tn_plan_destroy(p)

    def describe(self, plan, what=DESCRIBE_TEXT):
        lib = library()
        need = ctypes.c_size_t()
        self._check(lib.tn_plan_describe(plan, what, None, 0, ctypes.byref(need)), "tn_plan_describe")
        buf = ctypes.create_string_buffer(need.value)
        self._check(lib.tn_plan_describe(plan, what, buf, need.value, None), "tn_plan_describe")
        return buf.value.decode()

    def launch(self, plan, inputs, outputs, params, stream, rows=0):
        """Launches plan on `rows` rows (0: the rows it was made for)."""
        ins = (Tensor * len(inputs))(*inputs)
        outs = (Tensor * len(outputs))(*outputs)
        prm = (ctypes.c_float * max(1, len(params)))(*params)
        args = _LaunchArgs(ins, len(inputs), outs, len(outputs), prm, len(params), stream, rows)
        self._check(library().tn_plan_launch(plan, ctypes.byref(args)), "tn_plan_launch")

    def info(self):
        """The cache's counters, and how many distinct kernels its plans hold (over their row tiers)."""
        with self.lock:
            c = self.cache
            kernels = set()
            for p in list(c.plans.values()) + c.retired:
                kernels.update(line.rsplit("kernel ", 1)[1].split()[0]
                               for line in self.describe(p, DESCRIBE_TIERS).splitlines()[1:])
            return {"plans": len(c.plans), "capacity": c.capacity, "created": c.created, "evicted": c.evicted,
                    "hits": c.hits, "pinned": len(c.pinned), "retired": len(c.retired), "kernels": len(kernels)}


# One context per (device ordinal, target), made on first use and kept for the process.
contexts = {}
_contexts_lock = threading.Lock()


def context(device=0, target=None):
    key = (device, target)
    with _contexts_lock:
        ctx = contexts.get(key)
        if ctx is None:
            ctx = contexts[key] = Context(device, target)
        return ctx


_gpu_present = None


def has_gpu():
    """Whether the library sees a GPU (asked once, of the device-0 context, which is kept)."""
    global _gpu_present
    if _gpu_present is None:
        try:
            _gpu_present = context(0).has_gpu()
        except TmanormError:
            _gpu_present = False
    return _gpu_present
