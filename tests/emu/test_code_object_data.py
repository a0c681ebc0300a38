"""A code object's data and calls as compilers emit them: `__device__` and `__constant__` globals,
constant tables and relocated pointers (the loader's segments and R_AMDGPU_RELATIVE64), and
recursive non-inlined calls (a dynamic stack), each the same C run on the host and on the emulator."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from emukernels import assert_same_as_host, assert_uses, compile_hip, run
from wgrad_cli.emu.device import EmuRuntime, Function
from wgrad_cli.emu.loader import load_image
from wgrad_cli.errors import DriverError

U32 = np.uint32

OPT = ["-O0", "-O3"]

# Per-lane slots only (the lanes of one wave run at once, the host's one after another): a .bss
# array, an initialised struct and scalars in .data, a pointer to a global (relocated), a
# __constant__ table the host fills before the launch, a constant table indexed at run time and a
# local array's initializer.
GLOBALS = """
struct Record { unsigned a; unsigned short b; unsigned char c[5]; };
DEVICE unsigned hits[64];
DEVICE unsigned long long total = 5;
DEVICE struct Record rec = {7, 9, {1, 2, 3, 4, 5}};
DEVICE unsigned *slot = hits;
DEVICE unsigned long long *sum = &total;
CONSTANT unsigned scale[4];
static const unsigned char lut[32] = {17, 4, 200, 93, 61, 8, 255, 0, 33, 71, 129, 64, 12, 190, 3, 45,
                                      99, 250, 11, 6, 77, 128, 5, 230, 41, 19, 88, 160, 2, 57, 213, 36};
DEVICE unsigned compute(unsigned lane) {
  unsigned local[8] = {9, 18, 27, 36, 45, 54, 63, 72};  // at -O0 copied from the image's .rodata
  unsigned x = lut[(lane * 7u) & 31] * scale[lane & 3] + rec.c[lane % 5] + local[lane & 7];
  hits[lane] = x ^ rec.a;
  slot[lane] += lane * rec.b;
  if (lane == 0) *sum += x;
  return hits[lane] + (unsigned)total;
}
"""


@pytest.mark.parametrize("opt", OPT)
def test_globals_and_constant_tables_match_the_host(opt: str) -> None:
    scale = np.array([3, 5, 7, 11], dtype=np.uint32).tobytes()
    image = assert_same_as_host(GLOBALS, (opt,), {"scale": scale}, ("hits", "total", "rec"))
    assert_uses(image, "s_getpc_b64")
    assert load_image(image).relative, "the code object has no relocated pointer"

# Recursion LLVM cannot bound (so a dynamic stack, whose size the HIP runtime picks), two calls
# deep in each frame and a local array live across them, to a depth that differs by lane.
RECURSIVE = """
NOINLINE DEVICE unsigned walk(unsigned depth, unsigned x) {
  if (depth == 0) return x * 2654435761u;
  unsigned arr[4] = {x, x + depth, x ^ 0x5a5au, depth * 77u};
  unsigned left = walk(depth - 1, x + arr[x & 3]);
  unsigned right = depth > 2 ? walk(depth - 3, left ^ arr[(x >> 2) & 3]) : left;
  return left * 3u + right + arr[(left >> 3) & 3];
}
DEVICE unsigned compute(unsigned lane) { return walk(lane % 9, lane); }
"""


@pytest.mark.parametrize("opt", OPT)
def test_recursive_calls_run_with_a_dynamic_stack_as_on_the_host(opt: str) -> None:
    image = assert_same_as_host(RECURSIVE, (opt,))
    assert load_image(image).kernels["entry"].uses_dynamic_stack
    assert_uses(image, "s_swappc_b64|s_call_b64")

COUNTER = """
DEVICE unsigned counter[64];
CONSTANT unsigned step[1] = {%d};
KERNEL void count(unsigned *out) { counter[tid()] += step[0] + tid(); out[tid()] = counter[tid()]; }
"""


def test_code_objects_loaded_side_by_side_each_have_their_own_image() -> None:
    """Two loads of one code object and a load of another: three images at three bases, each kernel
    reaching its own globals through s_getpc_b64; hipModuleGetGlobal's address and size for each."""
    first, second = compile_hip(COUNTER % 1), compile_hip(COUNTER % 1000)
    rt = EmuRuntime(workers=1)
    functions = [rt.load(image, "count", 0) for image in (first, first, second)]
    assert all(isinstance(f, Function) for f in functions)
    modules = [f.module for f in functions if isinstance(f, Function)]
    counters = [rt.get_global(m, "counter") for m in modules]
    assert len({c.address for c in counters}) == 3 and {c.size for c in counters} == {256}
    lane = np.arange(64, dtype=np.uint32)
    for _ in range(2):
        run(first, [np.zeros(64, U32)], rt=rt, function=functions[0])
    (out,) = run(second, [np.zeros(64, U32)], rt=rt, function=functions[2])
    assert (out == 1000 + lane).all()
    for where, runs, step in zip(counters, (2, 0, 1), (1, 1, 1000)):
        host = np.zeros(64, U32)
        rt.copy_out(host.ctypes.data, where.address, where.size)
        assert (host == runs * (step + lane)).all()
    with pytest.raises(DriverError, match=r"^the code object has no global missing; it has \['counter', "
                                          r"'step'\]$"):
        rt.get_global(modules[0], "missing")


def test_a_store_into_a_read_only_segment_stops_the_run_naming_it() -> None:
    image = compile_hip("""
static const unsigned table[64] = {1, 2, 3};
KERNEL void scribble(unsigned *out, unsigned lane) {
  if (tid() == lane) *(volatile unsigned *)&table[tid()] = 7u;
  out[tid()] = table[tid() & 3];
}
""", ("-O1",))
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(64, U32), 21])
    line = str(info.value)
    segment = next(i for i, s in enumerate(load_image(image).segments)
                   if any(x.name == ".rodata" for x in s.sections))
    assert "\n" not in line and re.match(r"scribble: (flat|global)_store_dword at offset 0x", line)
    assert f"in read-only segment {segment} (R--) of the code object of scribble, .rodata+0x" in line
    assert ", _ZL5table+0x54 (" in line  # lane 21's word; the symbol as the code object spells it
    assert "lane 21" in line


def test_a_relocation_the_loader_does_not_apply_stops_the_load() -> None:
    """The one R_AMDGPU_RELATIVE64 of a code object turned into R_AMDGPU_ABS64 (type 3)."""
    image = bytearray(compile_hip(COUNTER % 1 + "DEVICE unsigned *where = counter;\n"))
    relocations = load_image(bytes(image)).relative
    assert len(relocations) == 1
    info = struct.pack("<QQ", relocations[0][0], 13)
    at = image.index(info)
    image[at + 8] = 3
    with pytest.raises(DriverError, match=r"^the emulator cannot load the code object: dynamic relocation "
                                          r"R_AMDGPU_ABS64 at offset 0x[0-9a-f]+ \(RELA\): the emulator's "
                                          r"loader applies only R_AMDGPU_RELATIVE64 \(RELA\)$"):
        EmuRuntime(workers=1).load(bytes(image), "count", 0)


def test_a_load_between_an_images_segments_names_the_image() -> None:
    image = compile_hip("""
static const unsigned table[16] = {1, 2, 3};
KERNEL void peek(unsigned *out) { out[tid()] = table[tid() * 1024u]; }
""")
    loaded = load_image(image)
    table = next(s for s in loaded.objects if s.name == "_ZL5table")
    gap = next(s for s in loaded.segments if s.offset <= table.offset < s.offset + s.size)
    lane = -(-(gap.offset + gap.size - table.offset) // 4096)  # the first lane past table's segment
    assert not any(s.offset <= table.offset + 4096 * lane < s.offset + s.size for s in loaded.segments)
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(64, U32)])
    line = str(info.value)
    assert "\n" not in line and re.fullmatch(
        r"peek: (flat|global)_load_dword at offset 0x[0-9a-f]+: \1_load_dword of 4 bytes at 0x[0-9a-f]+ "
        rf"inside the code object of peek at offset {table.offset + 4096 * lane:#x}, between its segments "
        rf"\(workgroup \(0, 0, 0\), wave 0, lane {lane}\)", line), line
