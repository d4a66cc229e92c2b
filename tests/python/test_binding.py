"""CPU tier for the Python binding: shape and stride validation on stand-in
tensors, and explain() through the real library (no GPU, no torch needed).
Run: python3 tests/python/test_binding.py (ctest runs it)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tmanorm  # noqa: E402


class FakeTensor:
    """The attributes the binding reads from a torch.Tensor."""

    def __init__(self, shape, strides, is_cuda=True, dtype="torch.bfloat16"):
        self.shape, self._strides, self.is_cuda, self.dtype = tuple(shape), tuple(strides), is_cuda, dtype
        self.device = "cuda:0" if is_cuda else "cpu"

    def dim(self):
        return len(self.shape)

    def stride(self, d):
        return self._strides[d]

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


def expect_error(kind, needle, fn):
    try:
        fn()
    except kind as e:
        assert needle in str(e), f"{needle!r} not in {e}"
        return
    raise AssertionError(f"no {kind.__name__} ({needle})")


def main():
    rv = tmanorm._rows_view
    assert rv(FakeTensor((4, 8), (8, 1)), "x") == (4, 8, 8)
    assert rv(FakeTensor((4, 8), (16, 1)), "x") == (4, 8, 16)           # padded rows
    assert rv(FakeTensor((2, 3, 8), (24, 8, 1)), "x") == (6, 8, 8)      # leading dims collapse
    assert rv(FakeTensor((8,), (1,)), "x") == (1, 8, 8)
    expect_error(ValueError, "on cpu", lambda: rv(FakeTensor((4, 8), (8, 1), is_cuda=False), "x"))
    expect_error(ValueError, "not contiguous", lambda: rv(FakeTensor((4, 8), (1, 4)), "x"))
    expect_error(ValueError, "uniform row stride", lambda: rv(FakeTensor((2, 3, 8), (100, 8, 1)), "x"))
    expect_error(ValueError, "columns", lambda: rv(FakeTensor((4, 8), (8, 1)), "r", cols=16))
    expect_error(TypeError, "supported", lambda: tmanorm._dtype_code(FakeTensor((4,), (1,), dtype="torch.int8"), "x"))
    expect_error(ValueError, "contiguous vector", lambda: tmanorm._check_vector(FakeTensor((8,), (2,)), "w", 8))
    text = tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="h200")
    assert "plan register" in text and "why:" in text, text
    print("python binding: 12 passed, 0 failed")


if __name__ == "__main__":
    main()
