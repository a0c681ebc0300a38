"""The settings a user chooses on the command line, as small frozen objects the CLI builds once and
the layers below take as values."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EMULATED = "emu"  # --device emu: gfx950's emulated device
# zero: a memset of zeros (as nvbench's and triton's flushes); pattern: a byte that changes every
# sample; read: a reduction over the buffer that writes nothing back (needs torch)
FLUSHES = ("zero", "pattern", "read")
# bench --data: the inputs' values, random from the seed or all one constant (problem.generate.PATTERNS)
DATA_PATTERNS = ("random", "zeros", "ones")


# The stack a kernel with a dynamic stack gets per work-item, as the HIP runtime sizes it (ROCm/clr, f9f995c):
# Device::stack_size_ is 1024 bytes unless hipDeviceSetLimit(hipLimitStackSize) changes it
# (rocclr/device/device.hpp), and a dispatch of such a kernel gets max(that, the kernel's fixed
# private segment) capped at 16 KiB (rocclr/device/rocm/rocvirtual.cpp).
HIP_STACK_BYTES, HIP_STACK_CAP = 1024, 16 * 1024
KERNEL_TIMEOUT_S = 60.0  # launches here take seconds at most: the reference kernel, 2.1 s at 8k on the H200
# The emulator's limit is CPU time per worker and only backs up its watchdog, which stops a spin by
# its state (docs/emulator.md): generous, so that no kernel that finishes is stopped on a slow machine.
EMU_CPU_SECONDS = 3600.0
# the chip wgrad model (and verify --model) times on unless --machine names another
DEFAULT_MACHINE = "mi355x"


@dataclass(frozen=True)
class Emulated:
    """--device emu: gfx950's emulated device (wgrad_cli.emu), how strict its sanitizer is, the
    stack it gives kernels with a dynamic stack and how long a launch may run."""

    # stop at an LDS access beyond the workgroup's allocation (hardware: reads 0, drops writes)
    strict_lds: bool = False
    stack_bytes: int = HIP_STACK_BYTES  # per work-item, as hipDeviceSetLimit(hipLimitStackSize) sets it
    # CPU seconds a worker may spend on a launch before it stops as hung
    kernel_timeout: float = EMU_CPU_SECONDS
    register_fill: int = 0  # the value every VGPR and AGPR a launch leaves undefined starts with
    sanitize: bool = False  # watch launches for missing waits, LDS races, wait states, unwritten reads

    def __str__(self) -> str:
        return EMULATED


Device = int | Emulated  # a device index, or the emulated gfx950


@dataclass(frozen=True)
class EmulatorOptions:
    """verify's options for the emulated device as given (None: not given); registry.emulated_device
    applies them, or refuses them for a GPU."""

    strict_lds: bool = False
    stack_bytes: int | None = None
    register_fill: int | None = None
    sanitize: bool = False
Shard = tuple[int, int]  # slice i of n (1-based)


@dataclass(frozen=True)
class Selection:
    """What to work on: the config, and the kernels, targets and shapes chosen from it (none: all)."""

    config_path: Path
    kernels: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    kernel_source: Path | None = None  # the one --kernel's source, in place of the shipped one
    includes: tuple[Path, ...] = ()  # include folders for it
    spec_files: tuple[Path, ...] = ()  # the user's own kernel specs (--spec), known beside the shipped ones


@dataclass(frozen=True)
class LaunchSelection:
    """--launch FILE, in place of a Selection: one launch of a code object whose arguments are not
    wgrad's ABI (config/launchfile.py reads it)."""

    path: Path


@dataclass(frozen=True)
class CompilerOptions:
    """Where compiled code objects are kept, and the compilers named on the command line."""

    cache_dir: Path | None = None  # None: $WGRAD_CACHE_DIR or ~/.cache/wgrad
    hip_cc: str | None = None
    nvcc: str | None = None
    rocm_path: str | None = None


@dataclass(frozen=True)
class RunOptions:
    """How verify and bench run: on which device, with which seed, which slice, and how long a wait may take
    (these four objects come whole from the command line: cli.py holds their defaults)."""

    device: Device
    seed: int | None  # None: the config's
    kernel_timeout: float | None  # None: KERNEL_TIMEOUT_S on a GPU, EMU_CPU_SECONDS on the emulator
    shard: Shard | None

    @property
    def wait_seconds(self) -> float:
        """How long one wait for a GPU may take."""
        return KERNEL_TIMEOUT_S if self.kernel_timeout is None else self.kernel_timeout


@dataclass(frozen=True)
class Output:
    """Where verify and bench write their results."""

    json_path: Path | None  # None: results/<command>-<config>-<kernels>-<arch>[-shard-i-of-n].json
    csv_path: Path | None
    no_save: bool


@dataclass(frozen=True)
class VerifyOptions:
    """How verify checks each output."""

    reference: str  # auto, numpy or device
    rows: int  # rows per expert numpy checks when the reference is the device's
    per_expert: bool
    edge_cases: bool
    model: bool  # also each verified kernel's time on the timing model (with the emulator)


@dataclass(frozen=True)
class Criterion:
    """When bench stops sampling a kernel (measure/stopping.py decides by it); bench's results record it."""

    min_samples: int = 10
    min_seconds: float = 0.5
    max_noise: float = 0.005
    timeout: float = 15.0
    max_samples: int = 100_000
    # relative spread of the trailing noise estimates that counts as settled (0: never)
    stable_noise: float = 0.05


@dataclass(frozen=True)
class BenchOptions:
    """How bench takes its samples, when it stops, and which torch baselines it times too."""

    hot: bool
    repeat: int
    warmup: int
    min_samples: int
    min_time: float
    max_noise: float
    timeout: float
    baselines: bool
    only_baselines: tuple[str, ...]
    flush: str  # one of FLUSHES
    discard_throttled: bool
    # each shape's kernels and baselines sampled in alternating rounds; None: so where baselines are timed
    interleave: bool | None = None
    rotating: int | None = None  # cold: rotate at least this many copies of the inputs, no flush
    data: str = "random"  # one of DATA_PATTERNS


@dataclass(frozen=True)
class ModelOptions:
    """Which modelled chip wgrad model times on: its machine file, the clock (None: the file's peak)
    and figures set for this run (NAME=VALUE)."""

    machine: str
    clock: float | None
    figures: tuple[str, ...]


@dataclass(frozen=True)
class ModelViews:
    """What wgrad model shows of each launch beyond its time: the time per instruction (saved with
    the row) and a trace of one CU (a JSON trace-event file; several records add their names to it)."""

    profile: bool = False
    trace: Path | None = None
