"""Cross-lane moves outside DPP: ds_swizzle_b32 (bit-mask and quad-permute offsets), ds_permute_b32
(push) and ds_bpermute_b32 (pull), v_readlane_b32, v_writelane_b32 and v_readfirstlane_b32, in two
waves with lanes off in EXEC. Expected values: per lane in Python from the ISA's pseudo-code: a
lane reads 0 from a source lane outside EXEC, permute's highest sender wins, the lane of the
permutes is (address + offset) / 4 mod 64, readlane and writelane ignore EXEC."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.program import Program
from wgrad_cli.errors import DriverError

# swizzle offsets: and/or/xor masks of 32-lane halves (xor 1, xor 16, a mix, a broadcast of lane 16
# of each half), then quad permutes [1,0,3,2] and [0,0,3,1]
SWIZZLES = [0x041F, 0x401F, 0x1478, 0x0010, 0x80B1, 0x8070]
COLUMNS = len(SWIZZLES) + 9
PICK = 9  # a lane on in both waves, the uniform lane of v_readlane_b32
SOURCE = f"""
KERNEL void lanes(unsigned *out, const unsigned *a, const unsigned *addr, const unsigned *on, \
unsigned pick) {{
  unsigned i = tid(), x = a[i], ad = addr[i];
  unsigned *o = out + i * {COLUMNS};
  asm volatile("" :: "v"(x));  // every lane loads x: lanes off in EXEC hold data
  if (on[i]) {{
""" + "".join(f"    o[{k}] = __builtin_amdgcn_ds_swizzle(x, {s:#x});\n"
              for k, s in enumerate(SWIZZLES)) + f"""
    unsigned *p = o + {len(SWIZZLES)};
    p[0] = __builtin_amdgcn_ds_permute(ad, x);
    p[1] = __builtin_amdgcn_ds_permute(ad + 12, x);
    p[2] = __builtin_amdgcn_ds_bpermute(ad, x);
    p[3] = __builtin_amdgcn_ds_bpermute(ad + 8, x);
    p[4] = __builtin_amdgcn_readlane(x, pick);
    p[5] = __builtin_amdgcn_readlane(x, 37);
    unsigned w = x;
    asm volatile("v_writelane_b32 %0, %1, 5" : "+v"(w) : "s"(pick * 0x01010101u));
    p[6] = w;
    p[7] = __builtin_amdgcn_readlane(w, 5);
    p[8] = __builtin_amdgcn_readfirstlane(x);
  }}
}}
"""
POISON = 0xDEADBEEF


Column = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # (x, on, addr) of one wave -> its lanes


def per_wave(column: Column, x: np.ndarray, on: np.ndarray, addr: np.ndarray) -> np.ndarray:
    return np.concatenate([column(x[w:w + 64], on[w:w + 64], addr[w:w + 64]) for w in range(0, len(x), 64)])


def swizzle(offset: int) -> Column:
    def column(x: np.ndarray, on: np.ndarray, _: np.ndarray) -> np.ndarray:
        out = np.zeros(64, dtype=np.uint32)
        for lane in range(64):
            if offset & 0x8000:
                src = lane - lane % 4 + (offset >> 2 * (lane % 4)) % 4
            else:
                src = (lane & 32) | ((((lane & 31) & (offset & 31)) | (offset >> 5 & 31))
                                     ^ (offset >> 10 & 31))
            out[lane] = x[src] if on[src] else 0
        return out
    return column


def lane_of(address: int, offset: int) -> int:
    return ((address + offset) & 0xFFFFFFFF) // 4 % 64


def bpermute(offset: int) -> Column:
    def column(x: np.ndarray, on: np.ndarray, addr: np.ndarray) -> np.ndarray:
        return np.array([x[s] if on[s] else 0
                         for s in (lane_of(int(a), offset) for a in addr)], dtype=np.uint32)
    return column


def permute(offset: int) -> Column:
    def column(x: np.ndarray, on: np.ndarray, addr: np.ndarray) -> np.ndarray:
        out = np.zeros(64, dtype=np.uint32)
        for lane in range(64):  # in lane order: the highest-numbered sender is written last
            if on[lane]:
                out[lane_of(int(addr[lane]), offset)] = x[lane]
        return out
    return column


def expected(x: np.ndarray, addr: np.ndarray, on: np.ndarray) -> np.ndarray:
    wave_of = np.arange(len(x)) // 64
    w = x.copy()
    w[np.arange(0, len(x), 64) + 5] = PICK * 0x01010101  # writelane writes lane 5 whatever EXEC holds
    first = np.array([np.flatnonzero(on[k:k + 64])[0] for k in range(0, len(x), 64)])
    moves = [swizzle(s) for s in SWIZZLES] + [permute(0), permute(12), bpermute(0), bpermute(8)]
    cols = [per_wave(m, x, on, addr) for m in moves] + [
        x[wave_of * 64 + PICK], x[wave_of * 64 + 37], w, w[wave_of * 64 + 5],
        x[wave_of * 64 + first[wave_of]]]
    return np.where(on[:, None] != 0, np.stack(cols, axis=1), np.uint32(POISON))


def test_cross_lane_moves() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "ds_swizzle_b32", "ds_permute_b32", "ds_bpermute_b32", "v_readlane_b32",
                "v_writelane_b32", "v_readfirstlane_b32")
    rng = np.random.default_rng(3)
    lanes = 128
    x = rng.integers(0, 2**32, lanes, dtype=np.uint64).astype(np.uint32)
    # byte addresses: the low two bits and the bits above lane 63 are dropped; collisions pick a winner
    addr = (rng.integers(0, 48, lanes) * 4 + rng.integers(0, 4, lanes)
            + rng.integers(0, 4, lanes) * 256).astype(np.uint32)
    addr[:4] = 0xFFFFFFFC  # + offset wraps around 2^32
    on = np.ones(lanes, dtype=np.uint32)
    on[[0, 1, 16, 33, 50]] = 0  # wave 0: readfirstlane's first lane is 2
    on[64:] = rng.random(64) < 0.6
    on[[64 + PICK, 64 + 37]] = 1
    on[64 + 5] = 0  # writelane to a lane outside EXEC
    out = np.full(lanes * COLUMNS, POISON, dtype=np.uint32)
    got = run(image, [out, x, addr, on, PICK], block=lanes)[0].reshape(lanes, COLUMNS)
    want = expected(x, addr, on)
    names = [f"ds_swizzle offset {s:#x}" for s in SWIZZLES] + \
        ["ds_permute", "ds_permute offset 12", "ds_bpermute", "ds_bpermute offset 8", "readlane pick",
         "readlane 37", "writelane", "readlane of writelane", "readfirstlane"]
    for col, name in enumerate(names):
        bad = np.flatnonzero(got[:, col] != want[:, col])
        assert not len(bad), f"{name}: lane {bad[0]}: {got[bad[0], col]:#x} != {want[bad[0], col]:#x}"


def test_forms_not_modelled_are_listed_and_stop_the_run() -> None:
    """The rotate mode of ds_swizzle_b32 is not implemented: listed before the run and stopping it,
    never run wrong (row_newbcast, which was, runs: tests/emu/test_dpp.py)."""
    image = compile_hip("KERNEL void rare(unsigned *out, const unsigned *a) {\n"
                        "  unsigned i = tid(), x = a[i];\n"
                        "  out[2 * i] = __builtin_amdgcn_update_dpp(0u, x, 0x153, 0xf, 0xf, true);\n"
                        "  out[2 * i + 1] = __builtin_amdgcn_ds_swizzle(x, 0xC021);\n}")
    assert_uses(image, "v_mov_b32_dpp", "ds_swizzle_b32")
    assert {op.name for op in Program(load_image(image)).unsupported()} == {"ds_swizzle_b32"}
    with pytest.raises(DriverError, match="is not implemented"):
        run(image, [np.zeros(128, np.uint32), np.ones(64, np.uint32)])
