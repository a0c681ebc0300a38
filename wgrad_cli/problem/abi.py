"""The grouped MXFP8 wgrad kernel contract (docs/kernel-contract.md): arguments, layouts and input rules.

Every kernel wgrad builds implements this one ABI, so the contract lives here once and the
kernel specs only name it.
"""

from __future__ import annotations

from dataclasses import dataclass

BLOCK = 32  # elements per e8m0 scale, along M
STEP = 128  # tokens per scale word (4 blocks); expert offsets are multiples of it
ALIGN = {"M": 128, "N": 256, "K": 256}
DEFINES = ("WGRAD_M", "WGRAD_N", "WGRAD_K", "WGRAD_E")


@dataclass(frozen=True)
class Dims:
    """The four compile-time parameters of one kernel build."""

    M: int
    N: int
    K: int
    E: int

    def defines(self) -> dict[str, int]:
        return dict(zip(DEFINES, (self.M, self.N, self.K, self.E)))

    def label(self) -> str:
        """As the tables print it: "M x N x K, E"."""
        return f"{self.M} x {self.N} x {self.K}, {self.E}"


@dataclass(frozen=True)
class Arg:
    """One kernel argument: a device pointer to a row-major buffer."""

    name: str
    dtype: str  # numpy-style name of the element type
    layout: str  # shape, as docs/kernel-contract.md writes it

    def shape(self, d: Dims) -> tuple[int, ...]:
        return {
            "C": (d.E * d.N, d.K),
            "A": (d.N, d.M),
            "B": (d.K, d.M),
            "scale_A": (d.M // STEP, d.N, 4),
            "scale_B": (d.M // STEP, d.K, 4),
            "expert_off": (d.E + 1,),
        }[self.name]


ARGS: tuple[Arg, ...] = (
    Arg("C", "bfloat16", "(E*N, K)"),
    Arg("A", "float8_e4m3fn", "(N, M)"),
    Arg("B", "float8_e4m3fn", "(K, M)"),
    Arg("scale_A", "uint8 (e8m0)", "(M/128, N, 4)"),
    Arg("scale_B", "uint8 (e8m0)", "(M/128, K, 4)"),
    Arg("expert_off", "int32", "(E+1,)"),
)
POINTER_BYTES = 8
KERNARG_BYTES = POINTER_BYTES * len(ARGS)


def dims_problems(d: Dims) -> list[tuple[str, str, str]]:
    """(field, why, allowed) for every input rule the dimensions break."""
    out = []
    for name, align in ALIGN.items():
        value = getattr(d, name)
        if value <= 0 or value % align:
            out.append((name, f"{value} is not a positive multiple of {align}",
                        f"{name} must be a multiple of {align}"))
    if d.E < 1:
        out.append(("E", f"{d.E} experts", "E must be at least 1"))
    return out


def offsets_problems(offsets: list[int], d: Dims) -> list[tuple[int | None, str, str]]:
    """(index or None for the whole list, why, allowed) for every rule the offsets break.

    The kernel checks none of these, so the tool must.
    """
    out: list[tuple[int | None, str, str]] = []
    if len(offsets) != d.E + 1:
        out.append((None, f"has {len(offsets)} entries", f"E+1 = {d.E + 1} entries are needed"))
    for i, off in enumerate(offsets):
        if off % STEP:
            out.append((i, f"{off} is not a multiple of {STEP}", f"offsets must be multiples of {STEP}"))
        if off < 0 or off > d.M:
            out.append((i, f"{off} is outside the tokens", f"offsets must lie in [0, M={d.M}]"))
        if i and off < offsets[i - 1]:
            out.append((i, f"{off} is less than {offsets[i - 1]} before it", "offsets must not decrease"))
    return out


def flops(d: Dims, offsets: list[int]) -> int:
    """2 * N * K * routed tokens."""
    return 2 * d.N * d.K * (offsets[-1] - offsets[0])


def min_bytes(d: Dims) -> int:
    """Fewest bytes the kernel must move: fp8 operands, their scales, the bf16 output, offsets."""
    return (d.N + d.K) * d.M + (d.N + d.K) * d.M // BLOCK + 2 * d.E * d.N * d.K + 4 * (d.E + 1)
