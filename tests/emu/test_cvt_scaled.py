"""gfx950's scaled conversions, V_CVT_SCALEF32_*: fp32, f16 and bf16 to packed fp8, bf8, fp6, bf6 and
fp4, and back (the stochastic-rounding SR forms stop the run). The scale operand's exponent field e
(bits 30:23) is an E8M0 scale 2^(e - 127), 255 NaN; a small float stands for its value times the
scale, so quantizing divides by it and dequantizing multiplies. Results round to nearest even; fp8
overflows to NaN and bf8 to infinity (MODE.FP16_OVFL clear), fp6, bf6 and fp4 saturate, and a NaN
into them stops the run. op_sel picks the byte or half read and the byte or half written; the
destination's other bits are kept, and so are lanes off in EXEC. Expected values: the formats decoded
and rounded here with exact rational arithmetic from their definitions (OCP MX, CDNA4 ISA 7.3), never
through the emulator's tables or ml_dtypes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.errors import DriverError

LANES = 512  # two workgroups of 256: every byte position of q holds every code twice
COLUMNS = 22
# column, asm, initial destination, source operands (a/b: f32, h: f16 pair, g: bf16 pair; 4: fp4 inputs)
QUANT = [
    (0, "v_cvt_scalef32_pk_fp8_f32 %0, %1, %2, %3 op_sel:[0,0,0,1]", 0xA5A5A5A5, "a b s"),
    (1, "v_cvt_scalef32_pk_bf8_f32 %0, %1, %2, %3", 0x12345678, "a b s"),
    (2, "v_cvt_scalef32_pk_fp8_f16 %0, %1, %2", 0x9ABCDEF0, "h s"),
    (3, "v_cvt_scalef32_pk_bf8_f16 %0, %1, %2 op_sel:[0,0,1]", 0x0F1E2D3C, "h s"),
    (4, "v_cvt_scalef32_pk_fp8_bf16 %0, %1, %2 op_sel:[0,0,1]", 0x4B5A6978, "g s"),
    (5, "v_cvt_scalef32_pk_bf8_bf16 %0, %1, %2", 0x87968574, "g s"),
    (6, "v_cvt_scalef32_pk_fp4_f32 %0, %1, %2, %3 op_sel:[0,0,1,0]", 0xC3D2E1F0, "a4 b4 s4"),
    (7, "v_cvt_scalef32_pk_fp4_f32 %0, %1, %2, %3 op_sel:[0,0,1,1]", 0x13579BDF, "a4 b4 s4"),
    (8, "v_cvt_scalef32_pk_fp4_f16 %0, %1, %2 op_sel:[0,0,0,1]", 0x2468ACE0, "h4 s4"),
    (9, "v_cvt_scalef32_pk_fp4_bf16 %0, %1, %2", 0xFEDCBA98, "g4 s4"),
    (20, "v_cvt_scalef32_pk_fp8_f32 %0, -%1, |%2|, %3", 0x55AA55AA, "a b s"),
]
DEQUANT = [  # column, asm, initial destination (16-bit single results keep the other half)
    (10, "v_cvt_scalef32_pk_f16_fp8 %0, %1, %2 op_sel:[1,0,0]", 0x11111111),
    (11, "v_cvt_scalef32_pk_f16_bf8 %0, %1, %2", 0x22222222),
    (12, "v_cvt_scalef32_pk_bf16_fp8 %0, %1, %2", 0x33333333),
    (13, "v_cvt_scalef32_pk_bf16_bf8 %0, %1, %2 op_sel:[1,0,0]", 0x44444444),
    (14, "v_cvt_scalef32_f16_fp8 %0, %1, %2 op_sel:[1,1,1]", 0x7777CAFE),
    (15, "v_cvt_scalef32_f16_bf8 %0, %1, %2 op_sel:[0,1,0]", 0xBEEF3333),
    (18, "v_cvt_scalef32_pk_f16_fp4 %0, %1, %2 op_sel:[1,0,0]", 0x55555555),
    (19, "v_cvt_scalef32_pk_bf16_fp4 %0, %1, %2", 0x66666666),
]
ARGS = "a b h g a4 b4 h4 g4 q s s4 on".split()


def _quant(col: int, asm: str, init: int, ops: str) -> str:
    names = ops.split()
    return f'    asm volatile("{asm}" : "+v"(w{col}) : ' + ", ".join(f'"v"({n})' for n in names) + ");\n"


SOURCE = ("KERNEL void cvt(unsigned *out, " + ", ".join(f"const unsigned *{n}_" for n in ARGS) + ") {\n"
          "  unsigned i = gid() * 256 + tid();\n  unsigned *o = out + i * " + str(COLUMNS) + ";\n"
          + "".join(f"  unsigned {n} = {n}_[i];\n" for n in ARGS)
          + "".join(f"  unsigned w{col} = {init:#x}u;\n" for col, _, init, *_ in QUANT + DEQUANT)
          + "  if (on) {\n" + "".join(_quant(*q) for q in QUANT)
          + "".join(f'    asm volatile("{asm}" : "+v"(w{col}) : "v"(q), "v"(s));\n'
                    for col, asm, _ in DEQUANT)
          + '    unsigned long long p; asm volatile("v_cvt_scalef32_pk_f32_fp4 %0, %1, %2 op_sel:[1,1,0]" '
            ': "=v"(p) : "v"(q), "v"(s));\n    o[16] = (unsigned)p; o[17] = (unsigned)(p >> 32);\n'
          + '    o[21] = __builtin_bit_cast(unsigned, __builtin_amdgcn_cvt_scalef32_f32_bf8(q, '
            '__builtin_bit_cast(float, s), 3));\n'
          + "  }\n" + "".join(f"  o[{col}] = w{col};\n" for col, *_ in QUANT + DEQUANT) + "}\n")

# (exponent bits, mantissa bits, bias) of each format, and how codes past the top behave
FORMATS = {"fp8": (4, 3, 7), "bf8": (5, 2, 15), "fp6": (2, 3, 1), "bf6": (3, 2, 3), "fp4": (2, 1, 1),
           "f16": (5, 10, 15), "bf16": (8, 7, 127), "f32": (8, 23, 127)}
SATURATING = ("fp6", "bf6", "fp4")  # every code finite; past the top a value saturates


def decode(code: int, fmt: str) -> float:
    """A code's value from the format's definition: OCP E4M3FN (S.1111.111 NaN, no infinity), E5M2
    (IEEE-like), E2M3, E3M2 and E2M1 (every code finite), IEEE f16 and f32, bf16."""
    eb, mb, bias = FORMATS[fmt]
    sign = -1.0 if code >> (eb + mb) & 1 else 1.0
    e, m = (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
    top = (1 << eb) - 1
    if fmt == "fp8" and e == top and m == (1 << mb) - 1:
        return float("nan")
    if fmt not in ("fp8", *SATURATING) and e == top:
        return sign * float("inf") if m == 0 else float("nan")
    return sign * float(Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias) if e == 0
                        else (1 + Fraction(m, 1 << mb)) * Fraction(2) ** (e - bias))


def largest(fmt: str) -> Fraction:
    """The largest finite value: fp8 gives S.1111.111 to NaN, fp6, bf6 and fp4 use their top exponent,
    the others (E5M2 and the IEEE types) keep it for infinity."""
    eb, mb, bias = FORMATS[fmt]
    top = (1 << eb) - (1 if fmt in ("fp8", *SATURATING) else 2)
    return (2 - Fraction(1 << mb) ** -1 * (2 if fmt == "fp8" else 1)) * Fraction(2) ** (top - bias)


def bits_of(value: Fraction | float, fmt: str) -> int:
    """The code of a value the format holds exactly (zeros keep their sign)."""
    if fmt in SMALL_CODES:
        return SMALL_CODES[fmt][(float(value), bool(np.signbit(float(value))))]
    if fmt == "f16":
        return int(np.float16(float(value)).view(np.uint16))
    word = int(np.float32(float(value)).view(np.uint32))
    return word >> 16 if fmt == "bf16" else word


def encode(x: float, fmt: str) -> int:
    """x rounded to nearest, ties to the even code, with unbounded exponent; then past the largest
    finite value: NaN for fp8, the largest value for fp6, bf6, fp4, infinity for the others. NaN: the format's
    positive quiet NaN (results are compared by NaN-ness)."""
    eb, mb, bias = FORMATS[fmt]
    sign = 1 << (eb + mb)
    if np.isnan(x):
        return (sign - 1) if fmt == "fp8" else ((1 << eb) - 1) << mb | 1 << (mb - 1)
    s = sign if np.signbit(x) else 0
    over = (sign - 1 if fmt == "fp8" else bits_of(largest(fmt), fmt) if fmt in SATURATING
            else ((1 << eb) - 1) << mb)
    if np.isinf(x):
        return s | over
    a = Fraction(abs(x))
    if a == 0:
        return s
    exp = a.numerator.bit_length() - a.denominator.bit_length() + 1
    while Fraction(2) ** exp > a:  # floor(log2 a)
        exp -= 1
    quantum = Fraction(2) ** (max(exp, 1 - bias) - mb)  # subnormals: the smallest normal's quantum
    r = round(a / quantum) * quantum  # Fraction rounds half to even
    if r > largest(fmt):
        return s | over
    return s | bits_of(r, fmt) if r else s


SMALL_CODES = {fmt: {(decode(c, fmt), bool(np.signbit(decode(c, fmt)))): c
                     for c in range(1 << (1 + sum(FORMATS[fmt][:2])))}
               for fmt in ("fp8", "bf8", *SATURATING)}


def scale_of(bits: int) -> float:
    e = (bits >> 23) & 0xFF
    return float("nan") if e == 255 else 2.0 ** (e - 127)


def same(got: int, want: int, fmt: str) -> bool:
    """Equal codes, or both NaN."""
    nan = np.isnan(decode(got, fmt))
    return nan and bool(np.isnan(decode(want, fmt))) if nan else got == want


def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per lane: a scale (E8M0 extremes 0, 1, 127, 254, 255 and ordinary ones, with arbitrary sign and
    mantissa bits), values placed on and between the codes that scale reaches (ties included),
    infinities, NaNs and zeros; every code in each byte of q."""
    e = rng.integers(105, 150, LANES)
    e[:16] = [0, 1, 127, 254, 255, 126, 128, 253, 0, 254, 255, 127, 1, 130, 120, 140]
    # every code of bytes 0 and 2 at the smallest scale: results in bf16's and f16's subnormals
    e[256:320] = 0
    s = (rng.integers(0, 2, LANES) << 31 | e << 23 | rng.integers(0, 1 << 23, LANES)).astype(np.uint32)
    e4 = np.where(e == 255, 127, e)  # no NaN scale for fp4: a NaN has no fp4 code
    s4 = (e4 << 23 | rng.integers(0, 1 << 23, LANES)).astype(np.uint32)

    def near(fmt: str, exps: np.ndarray, n: int) -> np.ndarray:
        codes = rng.integers(0, 1 << (8 if fmt != "fp4" else 4), n)
        lo = np.array([decode(int(c), fmt) for c in codes])
        hi = np.array([decode(int(c) + 1, fmt) if (int(c) + 1) % (1 << (7 if fmt != "fp4" else 3))
                       else 2 * decode(int(c), fmt)
                       for c in codes])
        t = np.where(np.isfinite(lo) & np.isfinite(hi),
                     lo + (hi - lo) * rng.choice([0.5, 0.25, 0.75, 0, 1e-3], n), 3.0)
        t = np.where(rng.random(n) < 0.15, rng.standard_normal(n) * 300, t)
        with np.errstate(all="ignore"):
            return np.ldexp(t, exps - 127)

    with np.errstate(all="ignore"):
        a, b = near("fp8", e, LANES).astype(np.float32), near("bf8", e, LANES).astype(np.float32)
        a[16:24] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, 3e38, -464.0]
        b[16:24] = [61440.0, -np.inf, 1.0, np.nan, -57344.0, 2.0**-17, 2.0**-16 * 1.5, -1e30]
        hp = near("fp8", np.repeat(e, 2), 2 * LANES).astype(np.float16)
        hp[32:40] = [np.inf, np.nan, -0.0, 65504, 2.0**-24, -448, 464, 57344]
        gp = near("bf8", np.repeat(e, 2), 2 * LANES).astype(np.float32)
        gp[32:38] = [np.inf, np.nan, -0.0, 3e38, 61440, -1e-40]
        a4, b4 = near("fp4", e4, LANES).astype(np.float32), near("fp4", e4, LANES).astype(np.float32)
        a4[16:24] = [np.inf, -np.inf, 0.25, -0.25, 5.0, 100.0, -0.0, 2.0**-149]
        h4 = near("fp4", np.repeat(e4, 2), 2 * LANES).astype(np.float16)
        h4[32:36] = [np.inf, -65504, 0.75, -5.0]
        g4 = near("fp4", np.repeat(e4, 2), 2 * LANES).astype(np.float32)
        g4[32:36] = [-np.inf, 3e38, 2.5, 1e-38]
    f16_pair = hp.view(np.uint16).astype(np.uint32)
    bf16_pair = gp.view(np.uint32) >> 16
    byte = (np.arange(LANES)[:, None] + 64 * np.arange(4)) & 0xFF
    q = (byte << (8 * np.arange(4))).sum(axis=1).astype(np.uint32)
    on = (np.arange(LANES) < 256) | (np.arange(LANES) % 5 != 2)
    return {"a": a.view(np.uint32), "b": b.view(np.uint32), "h": f16_pair[0::2] | f16_pair[1::2] << 16,
            "g": (bf16_pair[0::2] | bf16_pair[1::2] << 16).astype(np.uint32), "a4": a4.view(np.uint32),
            "b4": b4.view(np.uint32),
            "h4": (h4.view(np.uint16).astype(np.uint32)[0::2] | h4.view(np.uint16).astype(np.uint32)[1::2]
                   << 16),
            "g4": ((g4.view(np.uint32) >> 16)[0::2] | (g4.view(np.uint32) >> 16)[1::2]
                   << 16).astype(np.uint32),
            "q": q, "s": s, "s4": s4, "on": on.astype(np.uint32)}


def f32(bits: int) -> float:
    return float(np.uint32(bits).view(np.float32))


def halves(word: int, fmt: str) -> list[float]:
    return [decode(word & 0xFFFF, fmt), decode(word >> 16, fmt)]


def test_scaled_conversions() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, *{asm.split()[0] for _, asm, *_ in QUANT + DEQUANT}, "v_cvt_scalef32_pk_f32_fp4",
                "v_cvt_scalef32_f32_bf8")
    data = inputs(np.random.default_rng(5))
    out, = run(image, [np.full(LANES * COLUMNS, 0xD1D1D1D1, np.uint32), *(data[n] for n in ARGS)], grid=2,
               block=256)[:1]
    got = out.reshape(LANES, COLUMNS)
    for i in range(LANES):
        if not data["on"][i]:  # registers of lanes off in EXEC keep their values
            for col, _, init, *_ in QUANT + DEQUANT:
                assert got[i, col] == init, f"lane {i} (off in EXEC) col {col}: {got[i, col]:#x}"
            assert (got[i, [16, 17, 21]] == 0xD1D1D1D1).all()
            continue
        row = {n: int(data[n][i]) for n in ARGS}
        sc, sc4 = scale_of(row["s"]), scale_of(row["s4"])
        srcs = {"a": f32(row["a"]), "b": f32(row["b"]), "a4": f32(row["a4"]), "b4": f32(row["b4"])}
        pairs = {"h": halves(row["h"], "f16"), "g": halves(row["g"], "bf16"),
                 "h4": halves(row["h4"], "f16"), "g4": halves(row["g4"], "bf16")}
        for col, asm, init, ops in QUANT:
            names = ops.split()
            fmt = asm.split()[0].split("_")[-2]
            div = sc4 if fmt == "fp4" else sc
            values = pairs[names[0]] if len(names) == 2 else [srcs[names[0]], srcs[names[1]]]
            if col == 20:
                values = [-values[0], abs(values[1])]
            codes = [encode(v / div, fmt) for v in values]
            sel = [int(c)
                   for c in asm.split("op_sel:[")[1].rstrip("]").split(",")] if "op_sel" in asm else [0] * 4
            width = 4 if fmt == "fp4" else 8
            if fmt == "fp4":  # op_sel:[.., c, d]: OPSEL[3:2] is the byte written
                shift = 8 * (sel[-2] + 2 * sel[-1])
            else:  # the last op_sel bit is OPSEL[3], the half written
                shift = 16 * sel[-1]
            mask = ((1 << 2 * width) - 1) << shift
            word = int(got[i, col])
            assert word & ~mask & 0xFFFFFFFF == init & ~mask & 0xFFFFFFFF, \
                f"lane {i} col {col}: other bits {word:#x}"
            for k in range(2):
                code = (word >> (shift + width * k)) & ((1 << width) - 1)
                assert same(code, codes[k], fmt), \
                    f"lane {i} col {col} [{k}]: {values[k]} / {div} -> {code:#x}, want {codes[k]:#x}"
        q = row["q"]
        for col, asm, init in DEQUANT:
            mn = asm.split()[0]
            dst, src = mn.split("_")[-2:]
            sel = [int(c)
                   for c in asm.split("op_sel:[")[1].rstrip("]").split(",")] if "op_sel" in asm else [0, 0, 0]
            if src == "fp4":
                byte = (q >> 8 * (sel[0] + 2 * sel[1])) & 0xFF
                vals = [decode(byte & 15, "fp4"), decode(byte >> 4, "fp4")]
            elif "_pk_" in mn:
                word16 = (q >> 16 * sel[0]) & 0xFFFF
                vals = [decode(word16 & 0xFF, src), decode(word16 >> 8, src)]
            else:
                vals = [decode((q >> 8 * (sel[0] + 2 * sel[1])) & 0xFF, src)]
            want = [encode(v * sc, dst) for v in vals]
            word = int(got[i, col])
            if len(want) == 2:
                have = [word & 0xFFFF, word >> 16]
            else:  # op_sel's last bit (OPSEL[3]) picks the half written; the other is kept
                hi = sel[2]
                have = [word >> 16 if hi else word & 0xFFFF]
                kept = (word & 0xFFFF, init & 0xFFFF) if hi else (word >> 16, init >> 16)
                assert kept[0] == kept[1], f"lane {i} col {col}: kept half {word:#x}"
            for k, (h, w_) in enumerate(zip(have, want)):
                assert same(h, w_, dst), f"lane {i} col {col} [{k}]: {vals[k]} * {sc} -> {h:#x}, want {w_:#x}"
        byte3 = q >> 24
        for k, nib in enumerate((byte3 & 15, byte3 >> 4)):
            assert same(int(got[i, 16 + k]), encode(decode(nib, "fp4") * sc, "f32"), "f32"), \
                f"lane {i} pk_f32_fp4 [{k}]"
        assert same(int(got[i, 21]), encode(decode(q >> 24, "bf8") * sc, "f32"), "f32"), f"lane {i} f32_bf8"


NAN_TO_FP4 = """
KERNEL void nan4(unsigned *out, const float *x, const unsigned *on) {
  unsigned i = tid(), w = 0;
  float v = x[i];
  asm volatile("" :: "v"(v));  // every lane loads its value: lane 7 holds the NaN while off in EXEC
  if (on[i]) asm volatile("v_cvt_scalef32_pk_fp4_f32 %0, %1, %2, %3" : "+v"(w) : "v"(v), "v"(v), "v"(1.0f));
  out[i] = w;
}
"""


def test_nan_to_fp4_stops_the_run() -> None:
    """FP4 has no NaN and the ISA does not say what a NaN converts to: the run stops rather than guess,
    but only for a NaN in a lane on in EXEC."""
    image = compile_hip(NAN_TO_FP4)
    x = np.ones(64, np.float32)
    x[7] = np.nan
    on = np.ones(64, np.uint32)
    on[7] = 0
    out, = run(image, [np.zeros(64, np.uint32), x, on])[:1]
    assert (out[on == 1] == 0x22).all() and out[7] == 0  # 1.0 is fp4 code 2; lane 7 never converts
    on[7] = 1
    with pytest.raises(DriverError, match="a NaN converted to FP4 is not implemented"):
        run(image, [np.zeros(64, np.uint32), x, on])


SIX = """
typedef unsigned v6 __attribute__((ext_vector_type(6)));
typedef unsigned v16 __attribute__((ext_vector_type(16)));
typedef unsigned v32 __attribute__((ext_vector_type(32)));
KERNEL void six(unsigned *out, const v16 *x, const v16 *y, const v16 *h,
                const unsigned *c, const unsigned *s) {
  unsigned i = tid(), sc = s[i];
  v16 a = x[i], b = y[i], p = h[i];
  v6 q, r0, r1, r2, r3;  // a 6-vector takes 8 dwords in memory: its codes are loaded one by one
  for (int k = 0; k < 6; ++k) q[k] = c[i * 6 + k];
  asm volatile("v_cvt_scalef32_2xpk16_fp6_f32 %0, %1, %2, %3" : "=v"(r0) : "v"(a), "v"(b), "v"(sc));
  asm volatile("v_cvt_scalef32_2xpk16_bf6_f32 %0, %1, %2, %3" : "=v"(r1) : "v"(a), "v"(b), "v"(sc));
  asm volatile("v_cvt_scalef32_pk32_fp6_f16 %0, %1, %2" : "=v"(r2) : "v"(p), "v"(sc));
  asm volatile("v_cvt_scalef32_pk32_bf6_bf16 %0, %1, %2" : "=v"(r3) : "v"(p), "v"(sc));
  v32 d0;
  v16 d1, d2;
  asm volatile("v_cvt_scalef32_pk32_f32_fp6 %0, %1, %2" : "=v"(d0) : "v"(q), "v"(sc));
  asm volatile("v_cvt_scalef32_pk32_f16_bf6 %0, %1, %2" : "=v"(d1) : "v"(q), "v"(sc));
  asm volatile("v_cvt_scalef32_pk32_bf16_fp6 %0, %1, %2" : "=v"(d2) : "v"(q), "v"(sc));
  unsigned *o = out + i * 88;
  for (int k = 0; k < 6; ++k) { o[k] = r0[k]; o[6 + k] = r1[k]; o[12 + k] = r2[k]; o[18 + k] = r3[k]; }
  for (int k = 0; k < 32; ++k) o[24 + k] = d0[k];
  for (int k = 0; k < 16; ++k) { o[56 + k] = d1[k]; o[72 + k] = d2[k]; }
}
"""


def unpack6(words: list[int]) -> list[int]:
    """Code k at bits 6k+5:6k of the registers' 192 bits (pseudo-code: tmp[dOffset + 5 : dOffset])."""
    bits = sum(w << (32 * j) for j, w in enumerate(words))
    return [(bits >> (6 * k)) & 63 for k in range(32)]


def test_fp6_conversions() -> None:
    """32 fp6/bf6 codes in six registers, to and from f32 (two sources of 16, interleaved), f16, bf16."""
    image = compile_hip(SIX)
    assert_uses(image, "v_cvt_scalef32_2xpk16_fp6_f32", "v_cvt_scalef32_2xpk16_bf6_f32",
                "v_cvt_scalef32_pk32_fp6_f16", "v_cvt_scalef32_pk32_bf6_bf16", "v_cvt_scalef32_pk32_f32_fp6",
                "v_cvt_scalef32_pk32_f16_bf6", "v_cvt_scalef32_pk32_bf16_fp6")
    rng = np.random.default_rng(6)
    e = rng.integers(110, 145, 64)
    e[:6] = [0, 1, 127, 254, 253, 126]
    s = (e << 23 | rng.integers(0, 1 << 23, 64)).astype(np.uint32)
    # on and between codes, past the top
    ties = np.array([0.0625, 0.1875, 7.75, 7.25, 26.0, 30.0, -0.03125, 3.75])
    with np.errstate(all="ignore"):
        t = np.where(rng.random((64, 32)) < 0.5, rng.choice(ties, (64, 32)),
                     rng.standard_normal((64, 32)) * 6)
        x = np.ldexp(t, e[:, None] - 127).astype(np.float32)
        x[0, :4] = [np.inf, -np.inf, -0.0, 1e-45]
        t16 = np.ldexp(rng.choice(ties, (64, 32)) * rng.choice([1, -1, 1.01], (64, 32)), e[:, None] - 127)
        p16 = t16.astype(np.float16).view(np.uint16)
    c = np.zeros((64, 6), np.uint32)
    for i in range(64):  # codes (32i + k) mod 64: every code in two lanes
        bits = sum(((32 * i + k) % 64) << (6 * k) for k in range(32))
        c[i] = [(bits >> (32 * j)) & 0xFFFFFFFF for j in range(6)]
    x32 = x.view(np.uint32)
    h = (p16[:, 0::2].astype(np.uint32) | p16[:, 1::2].astype(np.uint32) << 16)
    out, = run(image, [np.zeros(64 * 88, np.uint32), np.ascontiguousarray(x32[:, :16]),
                       np.ascontiguousarray(x32[:, 16:]), h, c, s])[:1]
    got = out.reshape(64, 88)
    for i in range(64):
        sc = scale_of(int(s[i]))
        a, b = [f32(int(w)) for w in x32[i, :16]], [f32(int(w)) for w in x32[i, 16:]]
        f16s = [decode(int(v), "f16") for v in p16[i]]
        bf16s = [decode(int(v), "bf16") for v in p16[i]]
        interleaved = [v for pair in zip(a, b) for v in pair]
        for col, fmt, values in ((0, "fp6", interleaved), (6, "bf6", interleaved), (12, "fp6", f16s),
                                 (18, "bf6", bf16s)):
            have = unpack6([int(w) for w in got[i, col:col + 6]])
            want = [encode(v / sc, fmt) for v in values]
            assert have == want, f"lane {i} col {col}: {[hex(v) for v in have]} != {[hex(v) for v in want]}"
        codes = unpack6([int(w) for w in c[i]])
        assert all(same(int(got[i, 24 + k]), encode(decode(q, "fp6") * sc, "f32"), "f32")
                   for k, q in enumerate(codes)), i
        for col, dst, src in ((56, "f16", "bf6"), (72, "bf16", "fp6")):
            halves16 = [int(got[i, col + k // 2]) >> (16 * (k % 2)) & 0xFFFF for k in range(32)]
            want = [encode(decode(q, src) * sc, dst) for q in codes]
            assert halves16 == want, (f"lane {i} col {col}: {[hex(v) for v in halves16]} != "
                                      f"{[hex(v) for v in want]}")


STOCHASTIC = """
KERNEL void sr(unsigned *out, const float *x, const unsigned *seed) {
  unsigned i = tid(), w = 0;
  asm volatile("v_cvt_scalef32_sr_fp8_f32 %0, %1, %2, %3" : "+v"(w) : "v"(x[i]), "v"(seed[i]), "v"(1.0f));
  out[i] = w;
}
"""


def test_stochastic_rounding_is_not_implemented() -> None:
    """The text does not define the stochastic rounding of the SR forms to the bit: they stop the run."""
    image = compile_hip(STOCHASTIC)
    with pytest.raises(DriverError, match="v_cvt_scalef32_sr_fp8_f32 is not implemented"):
        run(image, [np.zeros(64, np.uint32), np.ones(64, np.float32), np.arange(64, dtype=np.uint32)])
