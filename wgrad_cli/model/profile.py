"""A modelled launch's time per instruction (wgrad model --profile): the clocks cu.py gave each
instruction, by cause, summed over the grid as the causes are (schedule.py), with each
instruction's disassembly and the code's loops, so that tables can say which wait, which barrier
and which loop the time went to."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
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


ENDS = ("s_endpgm", "s_setpc_b64", "s_trap")  # no instruction of the kernel runs after these


@dataclass(frozen=True)
class Loop:
    """A natural loop: its header's pc, the pcs of its body, and the loops directly inside it."""

    header: int
    body: frozenset[int]
    inner: list[Loop]


def blocks(decoded: list[Decoded]) -> tuple[list[list[Decoded]], dict[int, list[int]]]:
    """The code's basic blocks in program order and each block's successors (by block index)."""
    index = {d.pc: i for i, d in enumerate(decoded)}
    leaders = {0}
    for i, d in enumerate(decoded):
        if BRANCH.match(d.mnemonic) and _target(d) in index:
            leaders.add(index[_target(d)])
        if (BRANCH.match(d.mnemonic) or d.mnemonic in ENDS) and i + 1 < len(decoded):
            leaders.add(i + 1)
    starts = sorted(leaders)
    code = [decoded[a:b] for a, b in zip(starts, [*starts[1:], len(decoded)])]
    block_of = {start: n for n, start in enumerate(starts)}
    succ: dict[int, list[int]] = {}
    for n, block in enumerate(code):
        last, falls = block[-1], [n + 1] if n + 1 < len(code) else []
        taken = ([block_of[index[_target(last)]]]
                 if BRANCH.match(last.mnemonic) and _target(last) in index else [])
        succ[n] = (taken if last.mnemonic == "s_branch" else taken + falls if BRANCH.match(last.mnemonic)
                   else [] if last.mnemonic in ENDS else falls)
    return code, succ


def natural_loops(decoded: list[Decoded]) -> list[Loop]:
    """The outermost natural loops of the code, each with the loops inside it: a back edge is a
    branch to a block that dominates it (the entry reaches it only through that block), and its loop
    is the header with every block that reaches the branch without passing the header, as a
    compiler's loop analysis finds them, rotated loops (the test at the bottom) included."""
    code, succ = blocks(decoded)
    # reverse post-order from the entry (a kernel has thousands of blocks: no recursion)
    order: list[int] = []
    seen, stack = {0}, [(0, iter(succ[0]))]
    while stack:
        n, rest = stack[-1]
        m = next((m for m in rest if m not in seen), None)
        if m is None:
            stack.pop()
            order.append(n)
        else:
            seen.add(m)
            stack.append((m, iter(succ[m])))
    order.reverse()
    pred: dict[int, list[int]] = {n: [] for n in order}
    for n in order:
        for m in succ[n]:
            pred[m].append(n)
    dom = {n: set(order) for n in order}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for n in order[1:]:
            new = {n} | set.intersection(*(dom[p] for p in pred[n]))
            if new != dom[n]:
                dom[n], changed = new, True
    bodies: dict[int, set[int]] = {}
    for n in order:
        for h in succ[n]:
            if h in dom[n]:  # a back edge n -> h
                body, todo = bodies.setdefault(h, {h}), [n]
                while todo:
                    m = todo.pop()
                    if m not in body:
                        body.add(m)
                        todo += pred[m]
    pcs = {h: frozenset(d.pc for b in body for d in code[b]) for h, body in bodies.items()}
    loops = {h: Loop(code[h][0].pc, pcs[h], []) for h in bodies}
    outer: list[Loop] = []
    for h in sorted(bodies, key=lambda h: -len(pcs[h])):  # each inside the smallest loop holding its body
        holders = [g for g in bodies if g != h and pcs[h] < pcs[g]]
        (loops[min(holders, key=lambda g: len(pcs[g]))].inner if holders else outer).append(loops[h])
    for loop in loops.values():
        loop.inner.sort(key=lambda inner: min(inner.body))
    return sorted(outer, key=lambda loop: min(loop.body))


def regions(decoded: list[Decoded]) -> list[CodeRegion]:
    """The natural loops (natural_loops; nested ones under their loop, with their depth), each from
    its first to its last instruction, and the straight code before, between and after the
    outermost ones, in program order: the outermost loops and the straight code share no
    instruction, so their times with the idle and bandwidth time add up to the launch's."""
    if not decoded:
        return []
    after = {p.pc: d.pc for p, d in zip(decoded, decoded[1:])}
    before = {d.pc: p.pc for p, d in zip(decoded, decoded[1:])}
    out: list[CodeRegion] = []

    def nest(loop: Loop, name: str, depth: int, within: tuple[int, int]) -> None:
        # a loop lies inside its parent
        span = (max(min(loop.body), within[0]), min(max(loop.body), within[1]))
        out.append(CodeRegion(name, span[0], span[1], depth))
        for j, inner in enumerate(loop.inner, 1):
            nest(inner, f"{name}.{j}", depth + 1, span)

    start, outer = decoded[0].pc, natural_loops(decoded)
    for i, loop in enumerate(outer, 1):
        first, last = max(min(loop.body), start), max(loop.body)
        if first > start:
            out.append(CodeRegion("before loop 1" if i == 1 else f"between loops {i - 1} and {i}", start,
                                  before[first], 0))
        nest(loop, f"loop {i}", 0, (first, last))
        start = after.get(last, last + 1)
    if start <= decoded[-1].pc:
        out.append(CodeRegion(f"after loop {len(outer)}" if outer else "straight code", start,
                              decoded[-1].pc, 0))
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
