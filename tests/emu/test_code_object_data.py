"""A code object's data and calls as compilers emit them: `__device__` and `__constant__` globals,
constant tables and relocated pointers (the loader's segments and R_AMDGPU_RELATIVE64), and
recursive non-inlined calls (a dynamic stack), each the same C run on the host and on the emulator."""

from __future__ import annotations

import numpy as np
import pytest

from emukernels import assert_same_as_host, assert_uses
from wgrad_cli.emu.loader import load_image

OPT = ["-O0", "-O3"]

# Per-lane slots only (the lanes of one wave run at once, the host's one after another): a .bss
# array, an initialised struct and scalars in .data, a pointer to a global (relocated), a
# __constant__ table the host fills before the launch, and a constant table indexed at run time.
GLOBALS = """
struct Record { unsigned a; unsigned short b; unsigned char c[5]; };
DEVICE unsigned hits[64];
DEVICE unsigned long long total = 5;
DEVICE struct Record rec = {7, 9, {1, 2, 3, 4, 5}};
DEVICE unsigned *slot = hits;
DEVICE unsigned long long *sum = &total;
CONSTANT unsigned scale[4];
static const unsigned char lut[32] = {17, 4, 200, 93, 61, 8, 255, 0, 33, 71, 129, 64, 12, 190, 3, 45,
                                      99, 250, 11, 6, 77, 128, 5, 230, 41, 19, 88, 160, 2, 57, 213, 36};
DEVICE unsigned compute(unsigned lane) {
  unsigned x = lut[(lane * 7u) & 31] * scale[lane & 3] + rec.c[lane % 5];
  hits[lane] = x ^ rec.a;
  slot[lane] += lane * rec.b;
  if (lane == 0) *sum += x;
  return hits[lane] + (unsigned)total;
}
"""


@pytest.mark.parametrize("opt", OPT)
def test_globals_and_constant_tables_match_the_host(opt: str) -> None:
    scale = np.array([3, 5, 7, 11], dtype=np.uint32).tobytes()
    image = assert_same_as_host(GLOBALS, (opt,), {"scale": scale}, ("hits", "total", "rec"))
    assert_uses(image, "s_getpc_b64")
    assert load_image(image).relative, "the code object has no relocated pointer"

# Recursion LLVM cannot bound (so a dynamic stack, whose size the HIP runtime picks), two calls
# deep in each frame and a local array live across them, to a depth that differs by lane.
RECURSIVE = """
NOINLINE DEVICE unsigned walk(unsigned depth, unsigned x) {
  if (depth == 0) return x * 2654435761u;
  unsigned arr[4] = {x, x + depth, x ^ 0x5a5au, depth * 77u};
  unsigned left = walk(depth - 1, x + arr[x & 3]);
  unsigned right = depth > 2 ? walk(depth - 3, left ^ arr[(x >> 2) & 3]) : left;
  return left * 3u + right + arr[(left >> 3) & 3];
}
DEVICE unsigned compute(unsigned lane) { return walk(lane % 9, lane); }
"""


@pytest.mark.parametrize("opt", OPT)
def test_recursive_calls_run_with_a_dynamic_stack_as_on_the_host(opt: str) -> None:
    image = assert_same_as_host(RECURSIVE, (opt,))
    assert load_image(image).kernels["entry"].uses_dynamic_stack
    assert_uses(image, "s_swappc_b64|s_call_b64")
