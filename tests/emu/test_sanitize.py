"""The sanitizer (wgrad_cli/emu/sanitize.py): planted bugs in small kernels of the project's own,
each caught with the right instruction named, their correct twins clean; cdna4 and the reference
kernel clean; and the mutation test over cdna4's own s_waitcnt instructions, weakened one at a time
in its code object (docs/emulator.md gives the count)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from elftools.elf.elffile import ELFFile

from emukernels import CLANG, compile_hip, disassemble, need, run
from wgrad_cli.cli import cli
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.config.launchfile import load_launch
from wgrad_cli.config.options import CompilerOptions
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.program import decode
from wgrad_cli.emu.sanitize_plan import waitcnt
from wgrad_cli.commands.launchsetup import code_object, place

LAUNCH = Path(__file__).parent.parent / "data" / "launch"
NO_VM, NO_LGKM = 63, 15  # s_waitcnt counts that wait for nothing

# Two loads in flight, then a wait that must let both land before the second one's register is read.
WAITS = """
KERNEL void waits(unsigned *out, const unsigned *in) {
    unsigned x, y;
    asm volatile("global_load_dword %0, %2, off\\n\\tglobal_load_dword %1, %2, off offset:256\\n\\t"
                 "s_waitcnt vmcnt(" WAIT ")\\n\\tv_add_u32 %1, %1, %0"
                 : "=&v"(x), "=&v"(y) : "v"(in + tid()) : "memory");
    out[tid()] = y;
}
"""
# A scalar load, then a wait that must be lgkmcnt(0): scalar memory returns out of order.
SCALAR = """
KERNEL void scalar(unsigned *out, const unsigned *in) {
    unsigned s;
    asm volatile("s_load_dword %0, %1, 0x0\\n\\ts_waitcnt lgkmcnt(" WAIT ")\\n\\ts_add_u32 %0, %0, 1"
                 : "=&s"(s) : "s"(in) : "memory");
    out[tid()] = s;
}
"""
# Each wave writes its half of the array, then reads the other wave's half.
BARRIER = """
KERNEL void swap(unsigned *out) {
    __attribute__((shared)) unsigned s[128];
    s[tid()] = tid() * 3u;
#ifndef NO_BARRIER
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
#endif
    out[tid()] = s[(tid() + 64) % 128];
}
"""
# A hand-written MFMA whose result a VALU reads: 8 passes, so 11 wait states between (XDL: passes + 3).
# The accumulator v[32:47] is zeroed first (or not), 2 wait states before the MFMA reads it.
ZEROS = "".join(f"v_mov_b32 v{r}, 0\\n\\t" for r in range(32, 48))
MFMA = """
typedef _Float16 v8h __attribute__((ext_vector_type(8)));
KERNEL void mfma(float *out, const v8h *in) {
    v8h x = in[tid()];
    float r;
    asm volatile(ZERO "s_nop 1\\n\\t"
                 "v_mfma_f32_32x32x16_f16 v[32:47], %1, %1, v[32:47]\\n\\t" NOPS "v_mov_b32 %0, v35"
                 : "=v"(r) : "v"(x) : "v32", "v33", "v34", "v35", "v36", "v37", "v38", "v39", "v40", "v41",
                   "v42", "v43", "v44", "v45", "v46", "v47");
    out[tid()] = r;
}
"""


def sanitized(image: bytes, args: list[np.ndarray | int], block: int = 64) -> list[str]:
    rt = EmuRuntime(workers=1, sanitize=True)
    run(image, args, block=block, rt=rt)
    return rt.findings()


def offset_of(image: bytes, mnemonic: str, nth: int = 0) -> int:
    return [pc for pc, name, _ in disassemble(image) if name == mnemonic][nth]


def one_wait_short(source: str, args: list[np.ndarray | int]) -> tuple[bytes, list[str]]:
    """`source` with its planted wait (WAIT) as the program needs it has no finding; the image with
    the wait one short, and what the sanitizer finds in it."""
    assert sanitized(compile_hip(source.replace("WAIT", '"0"')), args) == []
    image = compile_hip(source.replace("WAIT", '"1"'))
    return image, sanitized(image, args)


def test_a_weakened_wait_is_caught(amd_compiler: Compiler) -> None:
    need(CLANG)
    args: list[np.ndarray | int] = [np.zeros(64, np.uint32), np.arange(256, dtype=np.uint32)]
    image, found = one_wait_short(WAITS, args)
    add = offset_of(image, "v_add_u32_e32")
    load = offset_of(image, "global_load_dword", 1)
    # the add reads the second load's register, and so does the store of its result after it
    assert found[0].startswith("waits: workgroup 0, wave 0: v_add_u32") and f"at {add:#x}: v" in found[0], \
        found
    assert all("global_load_dword" in f and f"at {load:#x} that writes it" in f
               and "vmcnt was 1, needed <= 0" in f
               for f in found), found


def test_a_scalar_load_needs_lgkmcnt_0(amd_compiler: Compiler) -> None:
    need(CLANG)
    args: list[np.ndarray | int] = [np.zeros(64, np.uint32), np.arange(64, dtype=np.uint32)]
    image, found = one_wait_short(SCALAR, args)
    add, load = offset_of(image, "s_add_u32"), offset_of(image, "s_load_dword")
    assert found[0].startswith("waits: workgroup 0, wave 0: s_add_u32") and f"at {add:#x}: s" in found[0], \
        found
    assert "s_load_dword" in found[0] and f"at {load:#x} that writes it" in found[0], found
    assert "lgkmcnt was 1, needed 0 (scalar memory returns out of order)" in found[0], found


def test_a_missing_barrier_is_caught(amd_compiler: Compiler) -> None:
    need(CLANG)
    assert sanitized(compile_hip(BARRIER), [np.zeros(128, np.uint32)], block=128) == []
    image = compile_hip(BARRIER, ("-O3", "-DNO_BARRIER"))
    found = sanitized(image, [np.zeros(128, np.uint32)], block=128)
    read, write = offset_of(image, "ds_read_b32"), offset_of(image, "ds_write_b32")
    assert found and all(f.startswith("race: ") for f in found), found
    assert any("ds_read_b32" in f and f"at {read:#x}:" in f and "ds_write_b32" in f
               and f"at {write:#x} of wave" in f
               for f in found), found


def test_a_removed_wait_state_is_caught(amd_compiler: Compiler) -> None:
    need(CLANG)
    args: list[np.ndarray | int] = [np.zeros(64, np.float32), np.ones(512, np.float16)]
    clean = MFMA.replace("ZERO", f'"{ZEROS}"').replace("NOPS", '"s_nop 7\\n\\ts_nop 2\\n\\t"')
    assert sanitized(compile_hip(clean), args) == []
    image = compile_hip(clean.replace("s_nop 2", "s_nop 1"))
    found = sanitized(image, args)
    mov = [pc for pc, name, _ in disassemble(image) if name == "v_mov_b32_e32"][-1]
    mfma = offset_of(image, "v_mfma_f32_32x32x16_f16")
    assert len(found) == 1 and found[0].startswith("hazard: workgroup 0, wave 0: v_mov_b32"), found
    assert f"at {mov:#x}: v35 read by it after it was written by the v_mfma_f32_32x32x16_f16" in found[0]
    assert f"at {mfma:#x} 10 wait states before; the ISA requires 11" in found[0]


def test_a_valu_write_read_by_an_mfma_too_soon_is_caught(amd_compiler: Compiler) -> None:
    """The accumulator zeroed right before the MFMA reads it: 2 wait states required, the last two
    moves have 0 and 1."""
    need(CLANG)
    args: list[np.ndarray | int] = [np.zeros(64, np.float32), np.ones(512, np.float16)]
    image = compile_hip(MFMA.replace("ZERO", f'"{ZEROS}"').replace('"s_nop 1\\n\\t"', '""')
                        .replace("NOPS", '"s_nop 7\\n\\ts_nop 2\\n\\t"'))
    found = sanitized(image, args)
    mfma = offset_of(image, "v_mfma_f32_32x32x16_f16")
    assert len(found) == 1 and "v_mfma_f32_32x32x16_f16 v[32:47]" in found[0] \
        and f"at {mfma:#x}: v46 " in found[0]
    assert "read by it (an MFMA operand) after it was written by the v_mov_b32_e32 v46" in found[0], found
    assert "1 wait states before; the ISA requires 2" in found[0], found


def test_an_unzeroed_accumulator_is_caught(amd_compiler: Compiler) -> None:
    need(CLANG)
    args: list[np.ndarray | int] = [np.zeros(64, np.float32), np.ones(512, np.float16)]
    image = compile_hip(MFMA.replace("ZERO", '""').replace("NOPS", '"s_nop 7\\n\\ts_nop 2\\n\\t"'))
    found = sanitized(image, args)
    mfma = offset_of(image, "v_mfma_f32_32x32x16_f16")
    assert len(found) == 1 and found[0].startswith("initcheck: workgroup 0, wave 0: "
                                                   "v_mfma_f32_32x32x16_f16"), found
    assert f"at {mfma:#x}: v32 read by it in lane 0 before anything in this launch wrote it" in found[0]


def test_the_shipped_kernels_are_clean(amd_compiler: Compiler, tmp_path: Path) -> None:
    """cdna4 over the emu config's shapes, and as a launch file long enough to run its main loop;
    the reference kernel as a launch file (smoke and emu over both: docs/emulator.md)."""
    out = tmp_path / "verify.json"
    result = CliRunner().invoke(cli, ["verify", "--config", "emu", "--kernel", "cdna4", "--device", "emu",
                                      "--sanitize", "--json", str(out), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0 and "SANITIZER" not in result.output, result.output
    for name in ("cdna4", "reference"):
        result = CliRunner().invoke(cli, ["verify", "--launch", str(LAUNCH / f"{name}.yaml"), "--device",
                                          "emu", "--sanitize", "--cache-dir", str(tmp_path / "c")])
        assert result.exit_code == 0 and "SANITIZER" not in result.output, result.output


def weakened(image: bytes) -> list[tuple[int, str, bytes]]:
    """Each s_waitcnt of the code object's text in turn, weakened: made to wait for nothing, and each
    count it waits for raised by one (a miscount): (offset, the change, the patched code object)."""
    text = ELFFile(io.BytesIO(image)).get_section_by_name(".text")
    assert text is not None
    loaded = load_image(image)
    out = []
    for d in decode(loaded.code, loaded.text_start, loaded.text_end):
        if d.mnemonic != "s_waitcnt":
            continue
        at = d.pc - text["sh_addr"] + text["sh_offset"]
        simm = int.from_bytes(image[at: at + 2], "little")
        assert simm == int(d.inst.simm16)
        vm, lgkm = waitcnt(simm)
        was = f"vmcnt({vm}) lgkmcnt({lgkm})"
        changes = [(f"{was} to none", simm | 0xC00F | 0x0F00)]
        if vm < NO_VM:
            changes.append((f"{was} to vmcnt({vm + 1})",
                            (simm & ~0xC00F) | ((vm + 1) & 0xF) | ((vm + 1) >> 4 << 14)))
        if lgkm < NO_LGKM:
            changes.append((f"{was} to lgkmcnt({lgkm + 1})", (simm & ~0x0F00) | ((lgkm + 1) << 8)))
        for change, value in changes:
            patched = bytearray(image)
            patched[at: at + 2] = value.to_bytes(2, "little")
            out.append((d.pc, change, bytes(patched)))
    return out


# Waits of cdna4 whose weakening changes nothing a register or LDS read can see on any path, with why.
# The lgkmcnt(1) before a stage's first MFMA leaves at most one LDS read in flight, and the three
# issued between it and this one make four: lgkmcnt(5) there waits for nothing, on every path.
REDUNDANT = ("vmcnt(63) lgkmcnt(5)",)


def test_weakening_each_of_cdna4s_waits(amd_compiler: Compiler, tmp_path: Path) -> None:
    """Every s_waitcnt whose weakening lets a read see data still in flight is caught; the rest are
    the REDUNDANT ones (docs/emulator.md: the count)."""
    launch = load_launch(LAUNCH / "cdna4.yaml")
    image = code_object(launch, CompilerOptions(cache_dir=tmp_path / "c")).image
    missed = []
    mutants = weakened(image)
    for pc, wait, patched in mutants:
        rt = EmuRuntime(workers=1, sanitize=True)
        placed = place(rt, launch, patched, 0)
        try:
            placed()
        finally:
            placed.free()
        if not rt.findings():
            missed.append((pc, wait))
    assert len({pc for pc, _, _ in mutants}) > 15
    assert all(w.startswith(REDUNDANT) for _, w in missed), missed


def test_a_gpu_refuses_the_sanitizer(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--sanitize", "--cache-dir",
                                      str(tmp_path / "c")])
    assert result.exit_code == 2 and "--sanitize: only the emulated device" in result.output, result.output
