"""A modelled launch's time per instruction (wgrad model --profile): the clocks cu.py gave each
instruction, by cause, summed over the grid as the causes are (schedule.py), with each
instruction's disassembly and the code's loops, so that tables can say which wait, which barrier
and which loop the time went to."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from wgrad_cli.emu.program import Decoded, Program
from wgrad_cli.model.cu import CAUSES
from wgrad_cli.model.launch import Modelled
from wgrad_cli.results.records import CodeRegion, InstructionTime, Profile

OBJDUMPS = (*(f"llvm-objdump-{v}" for v in range(30, 19, -1)), "llvm-objdump")
LISTING = re.compile(r"^\s+(\S.*?)\s*// ([0-9A-Fa-f]{8,16}):")  # llvm-objdump -d: text, then its address
BRANCH = re.compile(r"s_(c?branch)")


def disassembly(code_object: Path, arch: str) -> dict[int, str]:
    """Each instruction's text by offset, as llvm-objdump writes it; empty where none is installed."""
    tool = next((found for name in OBJDUMPS if (found := shutil.which(name))), None)
    if tool is None:
        return {}
    done = subprocess.run([tool, "-d", f"--mcpu={arch}", str(code_object)], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        return {}
    return {int(m[2], 16): " ".join(m[1].split()) for m in map(LISTING.match, done.stdout.splitlines()) if m}


def _target(d: Decoded) -> int:
    imm = int(d.inst.simm16) & 0xFFFF
    return d.pc + 4 + (imm - 0x10000 if imm & 0x8000 else imm) * 4


def regions(decoded: list[Decoded]) -> list[CodeRegion]:
    """The loops (a backward branch's target to the branch; nested ones with their depth) and the
    straight code before, between and after the outermost ones, in program order."""
    if not decoded:
        return []
    loops = sorted({(t, d.pc) for d in decoded if BRANCH.match(d.mnemonic) and (t := _target(d)) <= d.pc},
                   key=lambda span: (span[0], -span[1]))
    outer: list[list[int]] = []
    for first, last in loops:  # loops that overlap without nesting are taken as one
        if outer and first <= outer[-1][1]:
            outer[-1][1] = max(outer[-1][1], last)
        else:
            outer.append([first, last])
    before = {d.pc: p.pc for p, d in zip(decoded, decoded[1:])}
    after = {p.pc: d.pc for p, d in zip(decoded, decoded[1:])}
    out: list[CodeRegion] = []
    start = decoded[0].pc
    for i, (first, last) in enumerate(outer, 1):
        if first > start:
            out.append(CodeRegion("before loop 1" if i == 1 else f"between loops {i - 1} and {i}", start,
                                  before[first], 0))
        out.append(CodeRegion(f"loop {i}", first, last, 0))
        inner = [(f, la) for f, la in loops if first <= f and la <= last and (f, la) != (first, last)]
        for j, (f, la) in enumerate(inner, 1):
            depth = sum(1 for g, lb in loops if g <= f and la <= lb and (g, lb) != (f, la))
            out.append(CodeRegion(f"loop {i}.{j}", f, la, depth))
        start = after.get(last, last + 1)
    if start <= decoded[-1].pc:
        out.append(CodeRegion(f"after loop {len(outer)}" if outer else "straight code", start, decoded[-1].pc, 0))
    return out


def instruction_profile(m: Modelled, program: Program, text: dict[int, str]) -> Profile:
    """Every instruction of the program with its executions and time by cause; with the idle and
    bandwidth time and the launch's fixed time they sum to the launch's time."""
    per: dict[int, dict[str, float]] = {}
    for (pc, cause), seconds in m.clocks.items():
        per.setdefault(pc, {})[CAUSES[cause]] = seconds * 1e6
    rows = [InstructionTime(d.pc, text.get(d.pc, d.mnemonic), m.executions.get(d.pc, 0), per.get(d.pc, {}))
            for d in program.decoded]
    return Profile(rows, regions(program.decoded), m.causes["tail"] * 1e6, m.causes["bandwidth"] * 1e6,
                   m.causes["launch"] * 1e6)
