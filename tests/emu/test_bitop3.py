"""gfx950's three-input bitwise op (V_BITOP3_B32/_B16, which HipKittens' address swizzles compile to) and
v_readfirstlane_b32 in its VOP1 form, whose SGPR destination sits in the field that names VGPRs elsewhere.
Expected values: numpy, from the CDNA4 ISA pseudo-code: bit k of the result is bit (4*S0[k] + 2*S1[k] +
S2[k]) of the 8-bit table {OMOD[1:0], ABS[2:0], NEG[2:0]}. The compiler's own lowering of plain C
expressions to v_bitop3 checks that the table is read the way LLVM writes it."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
KERNEL void bits(unsigned *out, const unsigned *a, const unsigned *b, const unsigned *c) {
  unsigned i = tid();
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned *o = out + i * 8;
  o[0] = __builtin_amdgcn_bitop3_b32(x, y, z, 0x36);
  o[1] = __builtin_amdgcn_bitop3_b32(x, y, z, 0xDE);
  o[2] = __builtin_amdgcn_bitop3_b32(x, y, z, 0x1B);
  o[3] = __builtin_amdgcn_bitop3_b32(x, y, z, 0x80);
  o[4] = (unsigned short)__builtin_amdgcn_bitop3_b16((unsigned short)x, (unsigned short)(y >> 16),
                                                     (unsigned short)z, 0xE8);
  o[5] = (x & ~y) | (y & ~z & x) | (~x & z);
  o[6] = __builtin_amdgcn_readfirstlane(x) + i;
  o[7] = x ^ y ^ (z & x);
}
"""


def table_op(a: np.ndarray, b: np.ndarray, c: np.ndarray, table: int, bits: int) -> np.ndarray:
    """The ISA's minterm sum, bit by bit."""
    out = np.zeros_like(a)
    for k in range(bits):
        row = ((a >> k) & 1) * 4 + ((b >> k) & 1) * 2 + ((c >> k) & 1)
        out |= ((np.uint32(table) >> row) & 1) << np.uint32(k)
    return out


def test_bitop3_and_readfirstlane() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, r"v_bitop3_b32", r"v_bitop3_b16", r"v_readfirstlane_b32")
    rng = np.random.default_rng(3)
    x, y, z = (rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    out, = run(image, [np.zeros(64 * 8, np.uint32), x, y, z])[:1]
    got = out.reshape(64, 8)
    lane = np.arange(64, dtype=np.uint32)
    want = [table_op(x, y, z, 0x36, 32), table_op(x, y, z, 0xDE, 32), table_op(x, y, z, 0x1B, 32),
            table_op(x, y, z, 0x80, 32), table_op(x & 0xFFFF, y >> 16, z & 0xFFFF, 0xE8, 16),
            (x & ~y) | (y & ~z & x) | (~x & z), x[0] + lane, x ^ y ^ (z & x)]
    for col, w in enumerate(want):
        bad = np.flatnonzero(got[:, col] != w.astype(np.uint32))
        assert not len(bad), f"o[{col}] lane {bad[0]}: {got[bad[0], col]:#x} != {int(w[bad[0]]):#x}"


def test_a_wrong_table_order_would_fail() -> None:
    """The rule is not symmetric in its sources: reading the table with S0 as the low index bit gives
    other values for these inputs, so the test above pins the order."""
    rng = np.random.default_rng(4)
    x, y, z = (rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    assert (table_op(x, y, z, 0x1B, 32) != table_op(z, y, x, 0x1B, 32)).any()
