"""gfx950's lane swaps, v_permlane16_swap_b32 and v_permlane32_swap_b32, in their VOP1 and VOP3 forms
(the VOP3 one with fi and bound_ctrl set), with two registers and with one register as both operands,
in two waves. Expected values: the CDNA4 pseudo-code transcribed loop for loop. A wave with lanes off
in EXEC stops the run: the text does not say what EXEC, fi and bound_ctrl do."""

from __future__ import annotations

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.errors import DriverError

SOURCE = """
KERNEL void swaps(unsigned *out, const unsigned *a, const unsigned *b) {
  unsigned i = gid() * 128 + tid(), x = a[i], y = b[i];
  unsigned *o = out + i * 8;
  auto r = __builtin_amdgcn_permlane16_swap(x, y, false, false);
  auto t = __builtin_amdgcn_permlane32_swap(x, y, true, true);
  o[0] = r[0]; o[1] = r[1]; o[2] = t[0]; o[3] = t[1];
  unsigned v = x, w = y;
  asm volatile("v_permlane16_swap_b32_e64 %0, %1 fi:1" : "+v"(v), "+v"(w));
  o[4] = v; o[5] = w;
  unsigned u = x;
  asm volatile("v_permlane32_swap_b32 %0, %0" : "+v"(u));
  o[6] = u;
  unsigned z = y;
  asm volatile("v_permlane16_swap_b32 %0, %0" : "+v"(z));
  o[7] = z;
}
"""


def permlane16_swap(vdst: list[int], src0: list[int]) -> None:
    for p in range(2):
        for lane in range(16):
            tmp = src0[p * 32 + lane]
            src0[p * 32 + lane] = vdst[p * 32 + lane + 16]
            vdst[p * 32 + lane + 16] = tmp


def permlane32_swap(vdst: list[int], src0: list[int]) -> None:
    for lane in range(32):
        tmp = src0[lane]
        src0[lane] = vdst[lane + 32]
        vdst[lane + 32] = tmp


def test_lane_swaps() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "v_permlane16_swap_b32_e32", "v_permlane16_swap_b32_e64", "v_permlane32_swap_b32_e32",
                "v_permlane32_swap_b32_e64")
    rng = np.random.default_rng(8)
    a, b = (rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    out, = run(image, [np.zeros(256 * 8, np.uint32), a, b], grid=2, block=128)[:1]
    got = out.reshape(256, 8)
    for w in range(0, 256, 64):
        x, y = [int(v) for v in a[w:w + 64]], [int(v) for v in b[w:w + 64]]
        cases = []
        for swap in (permlane16_swap, permlane32_swap):
            vdst, src0 = x.copy(), y.copy()
            swap(vdst, src0)
            cases.append((vdst, src0))
        one32, one16 = x.copy(), y.copy()
        permlane32_swap(one32, one32)
        permlane16_swap(one16, one16)
        want = [cases[0][0], cases[0][1], cases[1][0], cases[1][1], cases[0][0], cases[0][1], one32, one16]
        for col, column in enumerate(want):
            assert got[w:w + 64, col].tolist() == column, f"wave {w // 64} column {col}"


PARTIAL = """
KERNEL void partial(unsigned *out, const unsigned *a) {
  unsigned i = tid(), x = a[i], y = ~x;
  if (x & 1) asm volatile("v_permlane32_swap_b32 %0, %1" : "+v"(x), "+v"(y));
  out[i] = x ^ y;
}
"""


def test_partial_exec_stops_the_run() -> None:
    image = compile_hip(PARTIAL)
    a = np.arange(64, dtype=np.uint32)
    with pytest.raises(DriverError, match="v_permlane32_swap_b32_e32 with lanes off in EXEC is not "
                                          "implemented"):
        run(image, [np.zeros(64, np.uint32), a])
