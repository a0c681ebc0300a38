"""A launch file's kernel on the emulated device (gfx950): its code object (read, or built from its source),
its buffers allocated and filled, its arguments packed where the code object's metadata says the
kernel reads them, and one launch of its grid (config/launchfile.py says what a launch file holds)."""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wgrad_cli.backends.registry import BACKENDS, EMULATED_TARGET, backend
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.codeobject import CodeObjectError, Param, match_symbol
from wgrad_cli.compile.hsaco import arguments, metadata
from wgrad_cli.compile.jobs import build_source
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.launchfile import Buffer, LaunchFile
from wgrad_cli.config.options import CompilerOptions
from wgrad_cli.device.kernargs import Kernargs
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.errors import WgradError

TARGET = EMULATED_TARGET  # launch files run where the emulator does


@dataclass(frozen=True)
class Built:
    """The code object a launch file runs and how it came about."""

    path: Path  # the code object's file (given, or in the cache)
    image: bytes
    compiler: str | None  # None: given built
    flags: list[str] | None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.image).hexdigest()


def code_object(launch: LaunchFile, compilers: CompilerOptions) -> Built:
    """The launch file's code object: read, or built from its source with its flags (cached)."""
    if launch.code_object is not None:
        return Built(launch.code_object, launch.code_object.read_bytes(), None, None)
    assert launch.source is not None
    cache = Cache.writable(compilers.cache_dir)
    compiler = Toolchains.chosen(compilers, cache.root, BACKENDS).select(TARGET, False)
    entry = build_source(TARGET, backend(TARGET), compiler, launch.source, launch.include, launch.flags,
                         cache)
    if isinstance(entry, list):
        raise WgradError([f"{launch.path}: source {launch.source} does not build:", *entry])
    return Built(entry.code_object, entry.code_object.read_bytes(), f"{compiler.kind} {compiler.version}",
                 list(launch.flags))


@dataclass
class Placed:
    """The kernel loaded, its buffers on the device (None for scalars) and its packed arguments."""

    rt: EmuRuntime
    launch: LaunchFile
    function: object
    pointers: list[int | None]
    kernargs: Kernargs

    def __call__(self) -> None:
        self.rt.dispatch(self.function, self.launch.grid, self.launch.block, self.launch.dynamic_lds,
                         self.kernargs.address)

    def contents(self, i: int) -> bytes:
        """Argument i's buffer as it is now."""
        arg, ptr = self.launch.args[i], self.pointers[i]
        assert isinstance(arg, Buffer) and ptr is not None
        host = np.empty(arg.size, dtype=np.uint8)
        self.rt.copy_out(host.ctypes.data, ptr, arg.size)
        return host.tobytes()

    def free(self) -> None:
        for ptr in self.pointers:
            if ptr is not None:
                self.rt.free(ptr)
        self.pointers = []


def kernel_of(launch: LaunchFile, image: bytes) -> tuple[str, dict[str, object]]:
    """(symbol, metadata) of the launch file's kernel; WgradError naming the kernels there otherwise."""
    try:
        kernels = {k[".name"]: k for k in metadata(image)["amdhsa.kernels"]}
        symbol = launch.symbol if launch.symbol in kernels else match_symbol(list(kernels), launch.symbol)
    except CodeObjectError as exc:
        raise WgradError(f"{launch.path}: symbol: {exc}; give the kernel's symbol as the code object names "
                         "it") from None
    return symbol, kernels[symbol]


def _layout_problems(launch: LaunchFile, params: list[Param], lds: int) -> list[str]:
    """The launch file's arguments against where the kernel reads its arguments, and its LDS."""
    problems = []
    for i, (arg, at) in enumerate(zip(launch.args, launch.layout())):
        if not _covered(params, at, at + arg.width):
            problems.append(f"{launch.path}: args[{i}]: bytes {at} to {at + arg.width} of the argument "
                            f"segment are not within one of the kernel's arguments or adjacent ones "
                            f"({_spans(params)}); give offset: or fewer arguments")
    held = [(at, at + a.width) for a, at in zip(launch.args, launch.layout())]
    for p in params:
        if p.kind == "pointer" and not any(s <= p.offset and p.offset + p.size <= e for s, e in held):
            problems.append(f"{launch.path}: args: the kernel's pointer argument at bytes {p.offset} to "
                            f"{p.offset + p.size} has no buffer or scalar; add one (a u64 scalar 0 for a "
                            "null pointer)")
    limit = backend(TARGET).shared_limit
    if lds + launch.dynamic_lds > limit:
        problems.append(f"{launch.path}: dynamic_lds: {lds} bytes of static LDS plus {launch.dynamic_lds} "
                        f"dynamic is above the {limit} a {TARGET} workgroup can have; lower dynamic_lds")
    return problems


def _covered(params: list[Param], start: int, end: int) -> bool:
    """Whether bytes [start, end) lie within one kernel argument or adjacent ones with no gap between
    (hand-written kernels may declare a 64-bit pointer as two 32-bit words)."""
    at = start
    for p in sorted(params, key=lambda p: p.offset):
        if p.offset <= at < p.offset + p.size:
            at = p.offset + p.size
            if at >= end:
                return True
    return False


def _spans(params: list[Param]) -> str:
    return ", ".join(f"{p.offset}-{p.offset + p.size} {p.kind}" for p in params)


def place(rt: EmuRuntime, launch: LaunchFile, image: bytes, seed: int) -> Placed:
    """Load the kernel, allocate and fill its buffers (random ones from `seed`) and pack its
    arguments; WgradError, one line per problem, before anything is allocated if they do not fit."""
    symbol, kernel = kernel_of(launch, image)
    params = arguments(kernel)
    problems = _layout_problems(launch, params, int(str(kernel[".group_segment_fixed_size"])))
    if problems:
        raise WgradError(problems)
    function = rt.load(image, symbol, launch.dynamic_lds)
    rng = np.random.default_rng(seed)
    pointers: list[int | None] = []
    segment = bytearray(max([p.offset + p.size for p in params] + [0]))
    try:
        for arg, at in zip(launch.args, launch.layout()):
            if isinstance(arg, Buffer):
                pointers.append(rt.alloc(arg.size))
                data = np.frombuffer(arg.initial(rng.bytes(arg.size) if arg.fill == "random" else b""),
                                     dtype=np.uint8)
                rt.copy_in(pointers[-1] or 0, data.ctypes.data, arg.size)
                segment[at: at + arg.width] = (pointers[-1] or 0).to_bytes(arg.width, "little")
            else:
                pointers.append(None)
                segment[at: at + arg.width] = arg.encode()
    except WgradError:
        for ptr in filter(None, pointers):
            rt.free(ptr)
        raise
    # the emulator copies each of the kernel's arguments from its pointer, as kernelParams holds them
    buffer = ctypes.create_string_buffer(bytes(segment), len(segment))
    base = ctypes.addressof(buffer)
    return Placed(rt, launch, function, pointers,
                  Kernargs(buffer, (ctypes.c_void_p * len(params))(*(base + p.offset for p in params))))
