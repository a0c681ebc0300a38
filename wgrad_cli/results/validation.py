"""The model's validation (docs/model.md, "Validation"): the split of published rows into training
and held-out by a hash of kernel and shape, the clock a kernel holds under the part's power budget
(one formula, which the model's machine uses), the fit of the fitted figures on the training rows,
and the held-out error band every modelled time is printed with."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wgrad_cli.results.records import BenchRow

TRAINING_EVERY = 3  # h mod 3 == 0 trains: about a third of the rows; the rest are held out
RANDOM_TOGGLE = 0.5  # the share of operand bits that change between two MFMAs on random data
# the targets: 80% of held-out rows within 15%, none beyond 30%
WITHIN, NONE_BEYOND, SHARE_WITHIN = 0.15, 0.30, 0.80


def held_out(kernel: str, M: int, N: int, K: int) -> bool:
    """True where the row (kernel name without its shape, and the GEMM's M x N x K) is held out."""
    digest = hashlib.sha256(f"{kernel}|{M}x{N}x{K}".encode()).digest()
    return int.from_bytes(digest, "big") % TRAINING_EVERY != 0


def family(kernel: str) -> str:
    """A row's kernel family: its kernel name's first two words (`aiter-f4gemm`, `aiter-fmoe1` for
    the fused-MoE stage 1 with or without routing weights, `aiter-fmoe` for the one-stage kernels)."""
    return "-".join(kernel.split("-")[:2])


@dataclass(frozen=True)
class Power:
    """The part's power figures (machine file): the budget, and at the peak clock what a kernel
    draws besides its matrix pipes and what those pipes draw busy all the time on random data."""

    budget_w: float
    rest_w: float
    matrix_w: float
    peak_ghz: float

    def held_ghz(self, given_ghz: float, duty: float, toggle: float) -> float:
        """The clock held: the clock given, or the highest at which (rest + matrix x duty x toggle
        / RANDOM_TOGGLE) x (f / peak)^3 stays within the budget, if lower."""
        power = self.rest_w + self.matrix_w * duty * toggle / RANDOM_TOGGLE
        if power <= 0:
            return given_ghz
        return min(given_ghz, self.peak_ghz * float((self.budget_w / power) ** (1 / 3)))


@dataclass(frozen=True)
class Point:
    """One modelled row with a published time: what the clock and launch figures act on."""

    kernel: str  # without its shape
    shape: str  # M x N x K
    published_us: float
    modelled_us: float
    held_ghz: float
    clock_ghz: float
    launch_us: float
    bandwidth_us: float  # the grid's wait for HBM or the last-level cache beyond its CUs' time
    duty: float
    toggle: float
    held_out: bool

    @property
    def compute_cycles(self) -> float:
        """The CUs' clocks (the time less the launch's and the bandwidth wait, at the clock held)."""
        return (self.modelled_us - self.launch_us - self.bandwidth_us) * self.held_ghz * 1e3

    @property
    def floor_us(self) -> float:
        """The grid's memory floor where it bound (its grid time then), else 0."""
        return self.modelled_us - self.launch_us if self.bandwidth_us > 0 else 0.0

    @property
    def miss(self) -> float:
        return self.modelled_us / self.published_us - 1


def points(rows: Sequence[BenchRow]) -> list[Point]:
    """The rows with a published time and the schema-6 figures, as points (others are left out)."""
    out = []
    for r in rows:
        m = r.model
        if m is None or not m.published_us or m.matrix_duty is None or m.toggle is None or m.held_ghz is None:
            continue
        shape = f"{r.shape.M}x{r.shape.N}x{r.shape.K}"
        kernel = re.sub(rf"-{shape}$", "", r.kernel)
        out.append(Point(kernel, shape, m.published_us, r.summary.median_ms * 1e3, m.held_ghz, m.clock_ghz,
                         m.causes_us.get("launch", 0.0), m.causes_us.get("bandwidth", 0.0), m.matrix_duty,
                         m.toggle, held_out(kernel, r.shape.M, r.shape.N, r.shape.K)))
    return out


@dataclass(frozen=True)
class Fit:
    rest_w: float
    matrix_w: float
    launch_us: float
    rms_log: float  # the training rows' root-mean-square log(modelled / published)

    def modelled_us(self, p: Point, budget_w: float, peak_ghz: float) -> float:
        """A point's time under these figures: its CUs' clocks at the clock held, or its memory
        floor (seconds) where that is longer, and the launch (the grid's rounds are taken as one:
        an approximation where only some of them wait for memory)."""
        held = Power(budget_w, self.rest_w, self.matrix_w, peak_ghz).held_ghz(p.clock_ghz, p.duty, p.toggle)
        return self.launch_us + max(p.compute_cycles / held / 1e3, p.floor_us)


@dataclass(frozen=True)
class Rule:
    """A clock and launch rule: the ranges its figures are fitted over (one value: fixed)."""

    name: str
    rests: tuple[float, float, float]  # start, stop (inclusive), step, as shares of the budget
    matrices: tuple[float, float, float]
    launches: tuple[float, float, float]  # microseconds

    @property
    def fitted(self) -> int:
        return sum(r[1] > r[0] for r in (self.rests, self.matrices, self.launches))


def _span(r: tuple[float, float, float], scale: float) -> np.ndarray:
    return np.arange(r[0], r[1] + r[2] / 2, r[2]) * scale if r[1] > r[0] else np.array([r[0] * scale])


# The model's rule first: the rest power up to the budget (a loop on constant operands keeps its
# peak clock, as the measured roof says), the matrix power up to 10 budgets, the launch up to 30 us.
RULES = (
    Rule("budget, toggle and launch (the model's)", (0, 1, 0.02), (0, 10, 0.1), (0, 30, 0.25)),
    Rule("budget and toggle, no launch time", (0, 1, 0.02), (0, 10, 0.1), (0, 0, 1)),
    Rule("the peak clock and a launch time", (0, 0, 1), (0, 0, 1), (0, 30, 0.25)),
    Rule("one held clock for all and a launch time", (0, 8, 0.02), (0, 0, 1), (0, 30, 0.25)),
)


def fit(training: Sequence[Point], budget_w: float, peak_ghz: float, rule: Rule = RULES[0]) -> Fit:
    """The rest power, matrix power and launch time, within the rule's ranges, that fit the training
    rows best: least squares of the log of modelled over published time (each point's time as
    Fit.modelled_us gives it), over a grid of the ranges."""
    cycles = np.array([p.compute_cycles for p in training])
    floors = np.array([p.floor_us for p in training])
    load = np.array([p.duty * p.toggle / RANDOM_TOGGLE for p in training])
    given = np.array([p.clock_ghz for p in training])
    published = np.array([p.published_us for p in training])
    best = Fit(0.0, 0.0, 0.0, float("inf"))
    launches = _span(rule.launches, 1.0)
    for rest in _span(rule.rests, budget_w):
        for matrix in _span(rule.matrices, budget_w):
            power = rest + matrix * load
            held = np.minimum(given, np.where(power > 0,
                                              peak_ghz * (budget_w / np.maximum(power, 1e-9)) ** (1 / 3),
                                              given))
            grid_us = np.maximum(cycles / held / 1e3, floors)
            err = np.log((grid_us[None, :] + launches[:, None]) / published[None, :])
            rms = np.sqrt((err ** 2).mean(axis=1))
            i = int(rms.argmin())
            if rms[i] < best.rms_log:
                best = Fit(float(rest), float(matrix), float(launches[i]), float(rms[i]))
    return best


@dataclass(frozen=True)
class Band:
    """The held-out rows' misses (modelled over published, less one)."""

    low: float
    high: float
    rows: int
    within: float  # the share within WITHIN
    beyond: int  # rows beyond NONE_BEYOND

    def label(self) -> str:
        return f"held-out {100 * self.low:+.0f} ... {100 * self.high:+.0f}%"

    @property
    def met(self) -> bool:
        return self.within >= SHARE_WITHIN and self.beyond == 0


def band(held: Sequence[Point]) -> Band:
    misses = [p.miss for p in held]
    return Band(min(misses), max(misses), len(misses), sum(abs(x) <= WITHIN for x in misses) / len(misses),
                sum(abs(x) > NONE_BEYOND for x in misses))
