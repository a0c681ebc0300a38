"""A target's figures for the timing model, read from its YAML file in machines/ (one per target,
a source for every figure), with the clock the user sets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from typing import Any, get_type_hints

import yaml

from wgrad_cli.errors import WgradError
from wgrad_cli.results.validation import Power

MAY_BE_ZERO = ("rest_power_w", "matrix_power_w", "launch_us")  # figures whose 0 means none
FP8_FORMATS = 1  # f8f6f4 format numbers 0 (e4m3) and 1 (e5m2) are fp8 (LLVM's MFMAScaleFormats::FP8_E5M2)


@dataclass(frozen=True)
class MfmaCost:
    pattern: re.Pattern[str]
    passes: int
    fp8: int  # passes when an f8f6f4 operand is fp8/bf8


@dataclass(frozen=True)
class Machine:
    name: str
    arch: str
    clock_ghz: float
    compute_units: int
    xcds: int
    simds_per_cu: int
    issue_cycles: int
    transcendental_cycles: int
    mfma_pass_cycles: int
    lds_bytes_per_cu: int
    lds_banks: int
    lds_bytes_per_cycle: int
    lds_latency_cycles: int
    smem_latency_cycles: int
    vmem_latency_cycles: int
    vmem_bytes_per_cycle_per_cu: int
    l2_bytes_per_xcd: int
    llc_bytes: int
    llc_bytes_per_second: float
    hbm_bytes_per_second: float
    power_budget_w: float  # the part's power limit
    rest_power_w: float  # at peak_ghz: what a kernel draws besides its matrix pipes
    matrix_power_w: float  # at peak_ghz: the matrix pipes of every SIMD busy all the time on random data
    launch_us: float  # a launch's fixed time, beside its grid's
    mfma: tuple[MfmaCost, ...]
    sources: dict[str, str]  # figure -> where it comes from
    # not figures of the file's own: where its power figures stand and what validated them
    # the machine file's clock, whatever --clock
    peak_ghz: float = field(default=0.0, metadata={"figure": False})
    # the validation the fit and band come from
    validation: int = field(default=0, metadata={"figure": False})
    held_out: tuple[float, float] = (0.0, 0.0)  # its held-out rows' lowest and highest miss

    def mfma_cycles(self, mnemonic: str, fp8_operand: bool) -> int:
        """Clocks an MFMA holds its SIMD's matrix pipe; WgradError for a variant the file lacks."""
        for cost in self.mfma:
            if cost.pattern.match(mnemonic):
                return (cost.fp8 if fp8_operand else cost.passes) * self.mfma_pass_cycles
        raise WgradError(f"{mnemonic}: the {self.name} machine file has no MFMA cost for it; add "
                         "a pattern to mfma_passes (with its source)")

    def clock_under_load(self, duty: float, toggle: float) -> float:
        """The clock (GHz) a kernel holds whose matrix pipes are busy `duty` of the time on operands
        whose bits change `toggle` of the time between MFMAs: the clock given, or lower where the
        part's power would pass its budget (validation.Power; the power figures are at the machine
        file's clock, so a lower clock given is not reduced again unless it too passes the budget)."""
        return Power(self.power_budget_w, self.rest_power_w, self.matrix_power_w, self.peak_ghz).held_ghz(
            self.clock_ghz, duty, toggle)

    @property
    def band(self) -> str:
        """The held-out error band of the validation this machine file was fitted in, as printed
        beside every modelled time."""
        if not self.validation:  # figures set with --figure: no validation stands behind them
            return ""
        return (f"held-out {100 * self.held_out[0]:+.0f} ... {100 * self.held_out[1]:+.0f}%, "
                f"validation {self.validation}")

    def at_clock(self, ghz: float) -> Machine:
        return replace(self, clock_ghz=ghz)

    def with_figures(self, settings: tuple[str, ...]) -> Machine:
        """The machine with figures set from NAME=VALUE strings (--figure), each marked as set by
        the user in `sources`; WgradError, one line per bad setting."""
        changes: dict[str, float | int] = {}
        problems = []
        for setting in settings:
            name, _, value = setting.partition("=")
            if name not in FIGURES or name == "clock_ghz":
                problems.append(f"--figure {setting}: no figure {name!r}; one of "
                                f"{', '.join(list(FIGURES)[1:])} (the clock is --clock)")
                continue
            try:
                number = float(value)
            except ValueError:
                problems.append(f"--figure {setting}: {value!r} is not a number")
                continue
            if number < 0 or (number == 0 and name not in MAY_BE_ZERO):
                problems.append(f"--figure {setting}: must be above 0"
                                + (" (0 for none)" if name in MAY_BE_ZERO else ""))
                continue
            changes[name] = number if FIGURES[name] is float else round(number)
        if problems:
            raise WgradError(problems)
        sources = {**self.sources, **{k: f"set with --figure (machine file: {self.sources[k]})"
                                      for k in changes}}
        return replace(self, **changes, sources=sources,  # type: ignore[arg-type]
                       validation=0 if changes else self.validation)

    @property
    def simds(self) -> int:
        return self.compute_units * self.simds_per_cu


# The figures a machine file gives (each with its source): Machine's numbers, clock_ghz first, by type
FIGURES: dict[str, type[int] | type[float]] = {
    f.name: kind for f in fields(Machine)
    if (kind := get_type_hints(Machine)[f.name]) in (int, float) and f.metadata.get("figure", True)}


def names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml")
                  for p in resources.files(__package__).joinpath("machines").iterdir()
                  if p.name.endswith(".yaml"))


def load(name: str) -> Machine:
    """The machine file `name` (e.g. mi355x); WgradError naming the known ones otherwise."""
    if name not in names():
        raise WgradError(f"--machine {name}: no such machine file; known: {', '.join(names())}")
    data: dict[str, Any] = yaml.safe_load(resources.files(__package__).joinpath("machines", f"{name}.yaml")
                                          .read_text())
    values = {k: data[k]["value"] for k in FIGURES}
    sources = {k: str(data[k]["source"]) for k in (*FIGURES, "mfma_passes")}
    mfma = tuple(MfmaCost(re.compile(p["match"]), int(p["passes"]), int(p.get("fp8", p["passes"])))
                 for p in data["mfma_passes"]["patterns"])
    numbers = {k: FIGURES[k](v) for k, v in values.items()}
    low, high = data["validation"]["held_out"]
    return Machine(str(data["name"]), str(data["arch"]), **numbers,  # type: ignore[arg-type]
                   mfma=mfma, sources=sources, peak_ghz=float(numbers["clock_ghz"]),
                   validation=int(data["validation"]["version"]), held_out=(float(low), float(high)))
