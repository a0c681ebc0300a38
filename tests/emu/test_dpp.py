"""DPP (gfx9 DPP16 on VOP1/VOP2): every dpp_ctrl family, row_mask, bank_mask and bound_ctrl, through
`__builtin_amdgcn_update_dpp` / `mov_dpp` and the ALU ops LLVM folds them into (with abs/neg), in two
waves with lanes off in EXEC. Expected values: per lane in Python from the CDNA4 ISA's DPP_CTRL table
(the lane each lane reads) and its rules: a source lane past the row or wave, or outside EXEC, is
invalid; then bound_ctrl reads 0, else the lane is not written, as are lanes of masked rows and banks."""

from __future__ import annotations

import re
import subprocess
import tempfile

import numpy as np

from emukernels import OBJDUMP, assert_uses, compile_hip, need, run

# (dpp_ctrl, its LLVM spelling, row_mask, bank_mask, bound_ctrl) of plain moves onto an old value
MOVES = [
    (0x1B, r"quad_perm:\[3,2,1,0\]", 0xF, 0xF, 0), (0x72, r"quad_perm:\[2,0,3,1\]", 0x3, 0x6, 0),
    (0x101, "row_shl:1", 0xF, 0xA, 1), (0x105, "row_shl:5", 0xF, 0xF, 0), (0x10F, "row_shl:15", 0xF, 0xF, 1),
    (0x111, "row_shr:1", 0x5, 0xF, 0), (0x113, "row_shr:3", 0xF, 0xF, 1), (0x118, "row_shr:8", 0xE, 0x7, 0),
    (0x121, "row_ror:1", 0xF, 0xF, 0), (0x127, "row_ror:7", 0x9, 0xF, 1), (0x12F, "row_ror:15", 0xF, 0xF, 0),
    (0x130, "wave_shl:1", 0xF, 0xF, 0), (0x134, "wave_rol:1", 0xF, 0xF, 0),
    (0x138, "wave_shr:1", 0xF, 0xF, 0), (0x13C, "wave_ror:1", 0xF, 0x5, 0),
    (0x140, "row_mirror", 0xF, 0xF, 0), (0x141, "row_half_mirror", 0x6, 0xF, 0),
    (0x142, "row_bcast:15", 0xA, 0xF, 0), (0x142, "row_bcast:15", 0xF, 0xF, 1),
    (0x143, "row_bcast:31", 0xC, 0xF, 1), (0x143, "row_bcast:31", 0xF, 0xF, 0),
    (0x150, "row_newbcast:0", 0xF, 0xF, 0), (0x15A, "row_newbcast:10", 0xB, 0xF, 1),
]
ALU = """
    o[M + 0] = x + DPP(0u, x, 0x111, 0xf, 0xf, true);
    o[M + 1] = U(p + F(DPP(0u, U(p), 0x121, 0xf, 0xf, true)));
    o[M + 2] = U(q - F(DPP(0u, U(p), 0x1B, 0xf, 0xf, true)));
    o[M + 3] = U(q * __builtin_fabsf(F(DPP(0u, U(p), 0x140, 0xf, 0xf, true))));
    int d = (int)DPP(0x80000000u, x, 0x138, 0xf, 0xf, false);
    o[M + 4] = (int)x > d ? x : (unsigned)d;
    o[M + 5] = U(-F(DPP(0u, U(p), 0x143, 0xf, 0xf, true)) - q);
    o[M + 6] = U(__builtin_fminf(F(DPP(0u, U(p), 0x130, 0xf, 0xf, true)), q));
    o[M + 7] = __builtin_amdgcn_mov_dpp(x, 0x104, 0xf, 0xf, true) ^ x;
"""
COLUMNS = len(MOVES) + 8
SOURCE = f"""
#define DPP(old, x, c, rm, bm, bc) __builtin_amdgcn_update_dpp(old, x, c, rm, bm, bc)
#define F(u) __builtin_bit_cast(float, u)
#define U(f) __builtin_bit_cast(unsigned, f)
#define M {len(MOVES)}
KERNEL void dpp(unsigned *out, const unsigned *a, const unsigned *b, const float *f, const float *g,
                const unsigned *on) {{
  unsigned i = tid(), x = a[i], y = b[i];
  float p = f[i], q = g[i];
  unsigned *o = out + i * {COLUMNS};
  asm volatile("" :: "v"(x), "v"(p));  // every lane loads its sources: lanes off in EXEC hold data
  if (on[i]) {{
""" + "".join(f"    o[{k}] = DPP(y, x, {c:#x}, {rm:#x}, {bm:#x}, {'true' if bc else 'false'});\n"
              for k, (c, _, rm, bm, bc) in enumerate(MOVES)) + ALU + "  }\n}\n"
POISON = 0xDEADBEEF


def source_lane(ctrl: int, lane: int) -> int | None:
    """The lane whose src0 `lane` reads, None where the ISA's table gives none."""
    row, pos, n = lane // 16, lane % 16, ctrl % 16
    if ctrl < 0x100:  # quad_perm: lane k of a quad reads quad lane ctrl[2k+1:2k]
        return lane - lane % 4 + (ctrl >> 2 * (lane % 4)) % 4
    if ctrl // 16 == 0x10:  # row_shl:n: data moves n lanes down the row, so lane reads lane + n
        return lane + n if pos + n < 16 else None
    if ctrl // 16 == 0x11:  # row_shr:n
        return lane - n if pos >= n else None
    if ctrl // 16 == 0x12:  # row_ror:n
        return 16 * row + (pos - n) % 16
    if ctrl // 16 == 0x15:  # row_newbcast:n: the row's lane n
        return 16 * row + n
    return {0x130: lane + 1 if lane < 63 else None, 0x134: (lane + 1) % 64,
            0x138: lane - 1 if lane > 0 else None, 0x13C: (lane - 1) % 64,
            0x140: 16 * row + 15 - pos, 0x141: 8 * (lane // 8) + 7 - lane % 8,
            0x142: 16 * row - 1 if row else None, 0x143: 31 if lane >= 32 else None}[ctrl]


def update_dpp(old: np.ndarray, x: np.ndarray, on: np.ndarray, ctrl: int, row_mask: int, bank_mask: int,
               bound_ctrl: int) -> np.ndarray:
    """The value each lane of 64-lane waves holds after v_mov_b32_dpp onto `old`."""
    out = old.copy()
    for lane in range(len(x)):
        base, within = lane - lane % 64, lane % 64
        if not (row_mask >> within // 16 & 1 and bank_mask >> within % 16 // 4 & 1):
            continue
        src = source_lane(ctrl, within)
        if src is not None and on[base + src]:
            out[lane] = x[base + src]
        elif bound_ctrl:
            out[lane] = 0
    return out


def f32(u: np.ndarray) -> np.ndarray:
    return u.view(np.float32)


def expected(x: np.ndarray, y: np.ndarray, p: np.ndarray, q: np.ndarray, on: np.ndarray) -> np.ndarray:
    moves = [update_dpp(y, x, on, c, rm, bm, bc) for c, _, rm, bm, bc in MOVES]
    zero, pu = np.zeros_like(x), p.view(np.uint32)

    def moved(ctrl: int, v: np.ndarray = pu) -> np.ndarray:
        return update_dpp(zero, v, on, ctrl, 0xF, 0xF, 1)
    with np.errstate(all="ignore"):
        d = update_dpp(np.full_like(x, 0x80000000), x, on, 0x138, 0xF, 0xF, 0).view(np.int32)
        alu = [x + moved(0x111, x), p + f32(moved(0x121)), q - f32(moved(0x1B)),
               q * np.abs(f32(moved(0x140))),
               np.maximum(x.view(np.int32), d), -f32(moved(0x143)) - q, np.fmin(f32(moved(0x130)), q),
               moved(0x104, x) ^ x]
    cols = np.stack([*moves, *(np.asarray(c).view(np.uint32) for c in alu)], axis=1)
    return np.where(on[:, None] != 0, cols, np.uint32(POISON))


def dpp_controls(image: bytes) -> str:
    """The disassembly's text, to check the DPP controls the kernel was compiled with."""
    need(OBJDUMP)
    with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
        f.write(image)
        f.flush()
        return subprocess.run([OBJDUMP, "-d", "--mcpu=gfx950", f.name], check=True, capture_output=True,
                              text=True).stdout


def test_dpp_controls_masks_and_bound_ctrl() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "v_mov_b32_dpp", "v_add_u32_dpp", "v_add_f32_dpp", "v_subrev_f32_dpp", "v_mul_f32_dpp",
                "v_max_i32_dpp", "v_sub_f32_dpp", "v_xor_b32_dpp")
    text = dpp_controls(image)
    for _, spelling, rm, bm, bc in MOVES:
        form = (rf"v_mov_b32_dpp .*{spelling} row_mask:{rm:#x} "
                rf"bank_mask:{bm:#x}{' bound_ctrl:1' if bc else ''}\s*//")
        assert re.search(form, text), f"no {form}"
    assert re.search(r"v_mul_f32_dpp v\d+, \|v\d+\|", text) and re.search(r"v_sub_f32_dpp v\d+, -v\d+", text)
    rng = np.random.default_rng(11)
    lanes = 128
    x, y = (rng.integers(0, 2**32, lanes, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    p, q = ((rng.standard_normal(lanes) * 100).astype(np.float32) for _ in range(2))
    on = np.ones(lanes, dtype=np.uint32)
    on[[0, 5, 15, 17, 31, 47, 62]] = 0  # wave 0: a few lanes off, at row edges among them
    on[64:] = rng.random(64) < 0.7  # wave 1: about a third off
    out = np.full(lanes * COLUMNS, POISON, dtype=np.uint32)
    got = run(image, [out, x, y, p, q, on], block=lanes)[0].reshape(lanes, COLUMNS)
    want = expected(x, y, p, q, on)
    names = [f"{s} row_mask:{rm:#x} bank_mask:{bm:#x} bound_ctrl:{bc}" for _, s, rm, bm, bc in MOVES] + \
        [f"alu {k}" for k in range(8)]
    for col, name in enumerate(names):
        bad = np.flatnonzero(got[:, col] != want[:, col])
        assert not len(bad), f"{name}: lane {bad[0]}: {got[bad[0], col]:#x} != {want[bad[0], col]:#x}"
