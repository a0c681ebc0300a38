"""The sanitizer (`verify --device emu --sanitize`): what the hardware leaves to software, checked
on the waves the emulator runs, from outside the emulator.

The emulator executes memory synchronously, so a kernel that forgets a wait, races on LDS or
breaks a required wait state gets right answers here. The sanitizer watches each wave's executed
stream beside the emulator, without changing what it computes, through two hooks in the style of
llvm-mca's views: it wraps each op of the kernel (`Sanitizer.ops`, as the timing model's recorder
wraps them; without --sanitize no op is wrapped and the emulator runs as before) and it hears every
LDS access (`Batch.lds_watch`). Four checks, each finding one line:

- **waits**: per wave, the vector-memory, LDS and scalar-memory operations issued and the ones an
  `s_waitcnt` has made sure of (CDNA4 ISA, S_WAITCNT and "Data Dependency Resolution": vector
  memory returns in order, LDS in order, scalar memory out of order, so only lgkmcnt(0) makes sure
  of an SMEM result; stores count on vmcnt). A read or overwrite of a register a load has not been made sure
of, an
  LDS read of bytes an LDS-DMA load has not been made sure of by its own wave, or, for another
  wave, by the writer before the `s_barrier` between them.
- **races**: per LDS byte, the last writing wave and barrier epoch and the waves that read it in
  the current epoch: a write by one wave and a read or write of the same byte by another in the
  same epoch (no `s_barrier` between) is a race; atomics are excepted.
- **hazards**: the wait states the ISA requires between dependent instructions that the hardware
  does not interlock (the gfx940/gfx950 rows of LLVM's llvm/lib/Target/AMDGPU/GCNHazardRecognizer.cpp,
  docs/emulator.md lists them: MFMA results read
  or overwritten, MFMA SrcC overwritten, a VALU's SGPR or EXEC write read by VMEM, v_readlane,
  v_writelane, DPP or an MFMA, a transcendental's result, wide store data, M0 for LDS DMA), counted
  per wave on its executed stream (`s_nop N` counts N + 1).
- **initcheck**: VGPR and AGPR lanes, and LDS bytes, read before anything in this launch wrote them.

Each finding is reported once per (check, instruction, other instruction), with the first
workgroup and wave that met it and how many times it was met.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from wgrad_cli.emu.findings import Finding
from wgrad_cli.emu.machine import EXEC, M0, VCC, Batch, Op
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.sanitize_plan import LGKM, SMEM, VM, Plan, plan

NEVER = -(1 << 40)  # the clock of a write that never happened: any wait state count covers it
ALL_LANES = np.uint64(0xFFFFFFFFFFFFFFFF)
EPOCH_SHIFT = 24  # LDS tags: bit 0 a flag, bits 1-22 a wave + 1, bit 23 WRITTEN, the epoch above
WAVE_MASK = (1 << 22) - 1
WRITTEN = 1 << 23
SHADOW_BYTES_PER_LDS_BYTE = 32  # the race, waits and initcheck state per LDS byte (sizes batches)


def _this_epoch(tag: np.ndarray, ep: np.ndarray) -> np.ndarray:
    """Whether LDS tags were set in epoch `ep` (and set at all)."""
    return np.asarray((tag >> EPOCH_SHIFT == ep) & (tag & WRITTEN != 0))


def _row_name(row: int, vgprs: int) -> str:
    return f"v{row}" if row < vgprs else f"a{row - vgprs}"


def _sgpr_name(reg: int) -> str:
    return {VCC: "vcc_lo", VCC + 1: "vcc_hi", EXEC: "exec_lo", EXEC + 1: "exec_hi",
            M0: "m0"}.get(reg, f"s{reg}")


class Writes:
    """Per register and wave, the clock of the last write by one kind of instruction and its offset;
    `seen`: whether any such write happened at all (the checks that start from it wait until then)."""

    def __init__(self, rows: int, w: int) -> None:
        self.clk = np.full((rows, w), NEVER, np.int64)
        self.pc = np.zeros((rows, w), np.int64)
        self.seen = False

    def mark(self, sel: np.ndarray | tuple[np.ndarray, ...], clk: np.ndarray, pc: int) -> None:
        self.clk[sel] = clk
        self.pc[sel] = pc
        self.seen = True


class State:
    """What the sanitizer keeps for one batch of waves."""

    def __init__(self, b: Batch, rows: int) -> None:
        w = b.W
        self.vm_issued = np.zeros(w, np.int64)
        self.vm_done = np.zeros(w, np.int64)
        self.lds_issued = np.zeros(w, np.int64)
        self.lds_done = np.zeros(w, np.int64)
        self.smem_issued = np.zeros(w, np.int64)
        self.smem_done = np.zeros(w, np.int64)
        self.pend_vm = np.zeros((rows, w), np.int64)
        self.pend_lds = np.zeros((rows, w), np.int64)
        self.pend_pc = np.zeros((rows, w), np.int64)
        self.spend = np.zeros((128, w), np.int64)
        self.spend_pc = np.zeros((128, w), np.int64)
        self.init = np.zeros((rows, w), np.uint64)
        self.init[0] = ALL_LANES  # v0: the work-item ids
        self.clk = np.zeros(w, np.int64)
        self.mfma = Writes(rows, w)
        self.mfma_pass = np.zeros((rows, w), np.int64)
        self.mfma_first = np.full((rows, w), -1, np.int64)
        self.valu = Writes(rows, w)
        self.trans = Writes(rows, w)
        self.srcc = Writes(rows, w)
        self.srcc_pass = np.zeros((rows, w), np.int64)
        self.store = Writes(rows, w)
        self.s_valu = Writes(128, w)
        self.m0_clk = np.full(w, NEVER, np.int64)
        self.m0_pc = np.zeros(w, np.int64)
        self.epoch = np.zeros(w, np.int64)
        # what each wave had made sure of (vm, lds) as it reached the s_barrier that began epoch e, in
        # slot e % 2: a wave is at most one barrier ahead of the others of its workgroup
        self.fence = np.zeros(w * 4, np.int64)  # (wave, epoch % 2, vm or lds)
        n = b.lds.size
        # per byte, packed so that one gather reads it: the last write's epoch, its wave + 1 (0: an
        # atomic, no write to race with) and whether an LDS-DMA load made it; 0: never written
        self.w_tag = np.zeros(n, np.int64)
        self.w_pc = np.zeros(n, np.int32)
        self.w_seq = np.zeros(n, np.int64)
        # per byte: the epoch of its reads, the last wave + 1 to read it then, whether another did too
        self.r_tag = np.zeros(n, np.int64)
        self.r_pc = np.zeros(n, np.int32)
        self.current: Plan | None = None
        self.smem_outstanding = False  # whether a wave may have a scalar load not waited for


_PLANS: weakref.WeakKeyDictionary[Program, dict[int, dict[int, Plan]]] = weakref.WeakKeyDictionary()


def plans(program: Program, ops: dict[int, Op], vgprs: int) -> dict[int, Plan]:
    """Every instruction's plan for a kernel of `vgprs` VGPRs, made once per program (as decoding is:
    a launch of a kernel in a loop pays for it once, and worker processes inherit it)."""
    known = _PLANS.setdefault(program, {})
    if vgprs not in known:
        decoded = {d.pc: d for d in program.decoded}
        known[vgprs] = {pc: plan(decoded[pc], op.klass, vgprs) for pc, op in ops.items() if pc in decoded}
    return known[vgprs]


class Sanitizer:
    """The checks for one launch of `kernel`; `wrap` gives the ops to run, `findings` what they met."""

    def __init__(self, program: Program, ops: dict[int, Op], vgprs: int, agprs: int) -> None:
        self.vgprs = max(vgprs, 1)
        self.rows = self.vgprs + max(agprs, 1)
        self.plans = plans(program, ops, self.vgprs)
        self.ops = {pc: self._wrap(op, self.plans[pc]) if pc in self.plans else op for pc, op in ops.items()}
        self._found: dict[tuple[str, int, int], Finding] = {}
        self._states: weakref.WeakKeyDictionary[Batch, State] = weakref.WeakKeyDictionary()
        self._last: tuple[Batch, State] | None = None

    def findings(self) -> list[Finding]:
        return sorted(self._found.values(), key=lambda f: (f.pc, f.check, f.other))

    # --- state ---------------------------------------------------------------------------
    def state(self, b: Batch) -> State:
        st = self._states.get(b)
        self._last = None  # (a batch's state is found by a dictionary look-up only when the batch changes)
        if st is None:
            st = self._states[b] = State(b, self.rows)
            b.lds_watch = lambda idx, inside, waves, write: self._lds(b, st, idx, inside, waves, write)
        self._last = (b, st)
        return st

    def _report(self, b: Batch, check: str, p: Plan, other: int, wave: int, where: str, what: str,
                times: int) -> None:
        key = (check, p.pc, other)
        known = self._found.get(key)
        if known is not None:
            self._found[key] = replace(known, times=known.times + times)
            return
        group = int(b.group_ids[b.group[wave], 0])
        self._found[key] = Finding(check, p.pc, p.text, other, group, wave % b.waves_per_group, where, what,
                                   times)

    def _text(self, pc: int) -> str:
        p = self.plans.get(pc)
        return f"{p.text if p else '?'} at {pc:#x}"

    # --- the wrapped op ------------------------------------------------------------------
    def _wrap(self, op: Op, p: Plan) -> Op:
        inner = op.run

        def run(b: Batch) -> None:
            st = self._last[1] if self._last is not None and self._last[0] is b else self.state(b)
            m = b.wm
            self._before(b, st, p, m)
            st.current = p
            inner(b)
            self._after(b, st, p, m)
            if b.all:
                st.clk += p.states
            else:
                st.clk[m] += p.states
        return replace(op, run=run)

    def _exec_bits(self, b: Batch) -> np.ndarray:
        return np.asarray(b.s[EXEC].astype(np.uint64) | (b.s[EXEC + 1].astype(np.uint64) << np.uint64(32)))

    def _first(self, bad: np.ndarray) -> tuple[int, int, int]:
        """(row index, wave, count) of the first true element of a (rows, waves) mask."""
        i, w = np.argwhere(bad)[0]
        return int(i), int(w), int(np.count_nonzero(bad.any(axis=0)))

    def _before(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        r = p.reads
        if r.size:
            self._pending(b, st, p, m, r, "read by")
            if not p.cross_lane:
                self._initcheck(b, st, p, m, r)
            self._hazards_read(b, st, p, m, r)
        if p.writes.size:  # memory of one counter returns in order: a load may overwrite that counter's
            self._pending(b, st, p, m, p.writes, "overwritten by", vm=p.counter != VM, lds=p.counter != LGKM)
            if p.valu or p.mem:
                self._hazards_write(b, st, p, m, p.writes)
        if p.sreads.size:
            self._scalar_reads(b, st, p, m)
        if (p.mfma or p.dpp or p.rwlane) and st.s_valu.seen:
            self._exec_hazard(b, st, p, m)
        if p.counter == VM:  # counted from here: an LDS-DMA load's bytes take its number
            st.vm_issued[m] += 1
        elif p.counter == LGKM:
            st.lds_issued[m] += 1
        elif p.counter == SMEM:
            st.smem_issued[m] += 1
            st.smem_outstanding = True

    def _pending(self, b: Batch, st: State, p: Plan, m: np.ndarray, rows: np.ndarray, how: str,
                 vm: bool = True, lds: bool = True) -> None:
        if not ((vm and (st.pend_vm[rows] > st.vm_done).any())
                or (lds and (st.pend_lds[rows] > st.lds_done).any())):
            return  # the usual case, in one test per counter
        for on, pend, issued, done, name in ((vm, st.pend_vm, st.vm_issued, st.vm_done, "vmcnt"),
                                             (lds, st.pend_lds, st.lds_issued, st.lds_done, "lgkmcnt")):
            if not on:
                continue
            seq = pend[rows]
            bad = (seq > done) & m
            if bad.any():
                i, w, n = self._first(bad)
                row, s = int(rows[i]), int(seq[i, w])
                other = int(st.pend_pc[row, w])
                self._report(b, "waits", p, other, w, _row_name(row, self.vgprs),
                             f"{how} it before the {self._text(other)} that writes it was waited for: "
                             f"{name} was {int(issued[w] - done[w])}, needed <= {int(issued[w] - s)}", n)

    def _initcheck(self, b: Batch, st: State, p: Plan, m: np.ndarray, rows: np.ndarray) -> None:
        need = np.where(m, ALL_LANES if p.mfma else self._exec_bits(b), np.uint64(0))
        missing = need[None, :] & ~st.init[rows]
        if missing.any():
            i, w, n = self._first(missing != 0)
            lane = int(np.flatnonzero(np.unpackbits(np.asarray([missing[i, w]], "<u8").view(np.uint8),
                                                    bitorder="little"))[0])
            self._report(b, "initcheck", p, -1, w, _row_name(int(rows[i]), self.vgprs),
                         f"read by it in lane {lane} before anything in this launch wrote it", n)

    def _need(self, b: Batch, st: State, p: Plan, m: np.ndarray, rows: np.ndarray, clk: np.ndarray,
              need: np.ndarray | int, pcs: np.ndarray, why: str, scalar: bool = False) -> None:
        gap = st.clk[None, :] - clk - 1
        bad = (gap < need) & m
        if bad.any():
            i, w, n = self._first(bad)
            required = int(need[i, w]) if isinstance(need, np.ndarray) else need
            other = int(pcs[i, w])
            where = _sgpr_name(int(rows[i])) if scalar else _row_name(int(rows[i]), self.vgprs)
            self._report(b, "hazard", p, other, w, where,
                         f"{why} by the {self._text(other)} {int(gap[i, w])} wait states before; the ISA "
                         f"requires {required}", n)

    def _hazards_read(self, b: Batch, st: State, p: Plan, m: np.ndarray, r: np.ndarray) -> None:
        clk = st.mfma.clk[r]
        if st.mfma.seen and (clk > NEVER).any():
            passes = st.mfma_pass[r]
            if p.mfma:
                srcc = np.isin(r, p.srcc_rows)[:, None]
                full = st.mfma_first[r] == p.srcc[0]
                need = np.where(srcc, np.where(full, np.where(passes == 2, 2, 0), passes + 1), passes + 3)
                self._need(b, st, p, m, r, clk, need, st.mfma.pc[r],
                           "read by it (an MFMA operand) after it was written")
            elif p.valu or p.mem:
                self._need(b, st, p, m, r, clk, passes + 3, st.mfma.pc[r], "read by it after it was written")
        if p.mfma and st.valu.seen:
            self._need(b, st, p, m, r, st.valu.clk[r], 2, st.valu.pc[r],
                       "read by it (an MFMA operand) after it was written")
        if p.dpp and st.valu.seen:
            self._need(b, st, p, m, r, np.maximum(st.valu.clk[r], st.mfma.clk[r]), 2, st.valu.pc[r],
                       "read through DPP after it was written")
        if p.valu and not p.trans and st.trans.seen:
            self._need(b, st, p, m, r, st.trans.clk[r], 1, st.trans.pc[r], "read by it after it was written")
        # v_readlane, v_readfirstlane: their VGPR source (v_writelane reads none)
        if p.rwlane and st.valu.seen:
            self._need(b, st, p, m, r, st.valu.clk[r], 1, st.valu.pc[r], "read by it after it was written")

    def _hazards_write(self, b: Batch, st: State, p: Plan, m: np.ndarray, w: np.ndarray) -> None:
        clk = st.mfma.clk[w]
        if st.mfma.seen and (clk > NEVER).any():
            self._need(b, st, p, m, w, clk, st.mfma_pass[w] + 3, st.mfma.pc[w],
                       "overwritten by it after it was written")
        clk = st.srcc.clk[w]
        if st.srcc.seen and (clk > NEVER).any():
            passes = st.srcc_pass[w]
            self._need(b, st, p, m, w, clk, np.where(passes == 2, 1, passes - 1), st.srcc.pc[w],
                       "overwritten by it after being read as SrcC")
        if p.valu and st.store.seen:
            self._need(b, st, p, m, w, st.store.clk[w], 2, st.store.pc[w],
                       "overwritten by it after being read as data")

    def _scalar_reads(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        s = p.sreads
        seq = st.spend[s]
        bad = (seq > st.smem_done) & m
        if st.smem_outstanding and bad.any():
            i, w, n = self._first(bad)
            other = int(st.spend_pc[s[i], w])
            self._report(b, "waits", p, other, w, f"s{int(s[i])}",
                         f"read by it before the {self._text(other)} that writes it was waited for: "
                         "lgkmcnt was "
                         f"{int(st.smem_issued[w] - st.smem_done[w] + st.lds_issued[w] - st.lds_done[w])}, "
                         "needed 0 (scalar memory returns out of order)", n)
        if (p.vmem or p.valu) and st.s_valu.seen:
            need = 5 if p.vmem else 2
            self._need(b, st, p, m, s, st.s_valu.clk[s], need, st.s_valu.pc[s],
                       "read by it after it was written", True)
        if p.lane_select >= 0:
            sel = np.asarray([p.lane_select])
            self._need(b, st, p, m, sel, st.s_valu.clk[sel], 4, st.s_valu.pc[sel],
                       "read by it as the lane select after it was written", True)
        if p.reads_m0:
            gap = st.clk - st.m0_clk - 1
            bad1 = (gap < 1) & m
            if bad1.any():
                w = int(np.flatnonzero(bad1)[0])
                self._report(b, "hazard", p, int(st.m0_pc[w]), w, "m0",
                             f"read by it after the {self._text(int(st.m0_pc[w]))} wrote it {int(gap[w])} "
                             "wait states before; the ISA requires 1", int(np.count_nonzero(bad1)))

    def _exec_hazard(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        need = 5 if p.dpp else 4
        e = np.asarray([EXEC])
        self._need(b, st, p, m, e, st.s_valu.clk[e], need, st.s_valu.pc[e], "read by it after it was written",
                   True)

    def _after(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        if p.wait is not None:
            vm, lgkm = p.wait
            st.vm_done[m] = np.maximum(st.vm_done[m], st.vm_issued[m] - vm)
            st.lds_done[m] = np.maximum(st.lds_done[m], st.lds_issued[m] - lgkm)
            if lgkm == 0:
                st.smem_done[m] = st.smem_issued[m]
                st.smem_outstanding = bool((st.smem_issued > st.smem_done).any())
        if p.barrier:
            st.epoch[m] += 1
            arrived = np.flatnonzero(m)
            slot = 4 * arrived + 2 * (st.epoch[arrived] & 1)
            st.fence[slot], st.fence[slot + 1] = st.vm_done[arrived], st.lds_done[arrived]
        cols: np.ndarray | None = None if b.all else np.flatnonzero(m)

        def at(rows: np.ndarray) -> tuple[np.ndarray | tuple[np.ndarray, ...],
                                          Callable[[np.ndarray], np.ndarray]]:
            """Where rows of the waves at this PC are, and each wave's value for them."""
            if cols is None:
                return rows, lambda per_wave: per_wave
            return np.ix_(rows, cols), lambda per_wave: per_wave[cols][None, :]

        w = p.writes
        if w.size:
            sel, of = at(w)
            if p.counter == VM:
                st.pend_vm[sel] = of(st.vm_issued)
                st.pend_pc[sel] = p.pc
            elif p.counter == LGKM:
                st.pend_lds[sel] = of(st.lds_issued)
                st.pend_pc[sel] = p.pc
            st.init[sel] |= ALL_LANES if p.mfma else of(self._exec_bits(b))
            if p.mfma:
                st.mfma.mark(sel, of(st.clk), p.pc)
                st.mfma_pass[sel] = p.passes
                st.mfma_first[sel] = p.dst[0]
            elif p.valu:
                st.valu.mark(sel, of(st.clk), p.pc)
                if p.trans:
                    st.trans.mark(sel, of(st.clk), p.pc)
        if p.mfma and p.srcc_rows.size:
            sel, of = at(p.srcc_rows)
            st.srcc.mark(sel, of(st.clk), p.pc)
            st.srcc_pass[sel] = p.passes
        if p.store_data.size:
            sel, of = at(p.store_data)
            st.store.mark(sel, of(st.clk), p.pc)
        if p.swrites.size:
            sel, of = at(p.swrites)
            if p.counter == SMEM:
                st.spend[sel] = of(st.smem_issued)
                st.spend_pc[sel] = p.pc
            if p.valu:
                st.s_valu.mark(sel, of(st.clk), p.pc)
            elif M0 in p.swrites:
                st.m0_clk[m] = st.clk[m]
                st.m0_pc[m] = p.pc

    # --- LDS ------------------------------------------------------------------------------
    def _lds(self, b: Batch, st: State, idx: np.ndarray, inside: np.ndarray | None, waves: np.ndarray,
             write: bool) -> None:
        """An access of `idx` (lanes, bytes) flat LDS indices by the lanes' `waves`: rows of bytes,
        each row one wave's, kept 2-D so that per-wave values broadcast over a row's bytes."""
        p = st.current
        if p is None or idx.size == 0:
            return
        if inside is not None:  # bytes beyond the allocation are not touched: only rows wholly inside
            keep = inside.all(axis=1)  # (LDS atomics do not span; reads and writes past it are counted)
            idx, waves = idx[keep], waves[keep]
            if not idx.size:
                return
        ep = st.epoch[waves][:, None]
        if write:
            self._lds_write(b, st, p, idx, waves[:, None], ep)
        else:
            self._lds_read(b, st, p, idx, waves[:, None], ep)

    def _lds_where(self, b: Batch, flat: int) -> str:
        return f"LDS address {flat % max(b.lds_bytes, 1):#x}"

    def _first_lds(self, bad: np.ndarray, idx: np.ndarray, wv: np.ndarray) -> tuple[int, int]:
        """(flat LDS index, wave) of the first true element of a (lanes, bytes) mask."""
        r, c = np.argwhere(bad)[0]
        return int(idx[r, c]), int(wv[r, 0])

    def _lds_read(self, b: Batch, st: State, p: Plan, idx: np.ndarray, wv: np.ndarray,
                  ep: np.ndarray) -> None:
        tag = st.w_tag[idx]
        never = tag == 0
        if never.any():
            flat, w = self._first_lds(never, idx, wv)
            self._report(b, "initcheck", p, -1, w, self._lds_where(b, flat),
                         "read by it before anything in this launch wrote it", 1)
        w_ep, writer = tag >> EPOCH_SHIFT, ((tag >> 1) & WAVE_MASK) - 1
        other = (writer >= 0) & (writer != wv)
        if other.any():
            race = other & (w_ep == ep)  # (a byte another wave wrote is written)
            if race.any():
                flat, w = self._first_lds(race, idx, wv)
                self._report(b, "race", p, int(st.w_pc[flat]), w, self._lds_where(b, flat),
                             f"read by it (wave {w % b.waves_per_group}) with no s_barrier after the "
                             f"{self._text(int(st.w_pc[flat]))} of wave {self._writer(b, st, flat)} wrote it",
                             1)
            lds = 1 - (tag & 1)  # the counter the write counts on: vm (0) for LDS DMA, else lds (1)
            fenced = st.fence[4 * np.maximum(writer, 0) + 2 * (ep & 1) + lds]
            late = other & (w_ep < ep) & (st.w_seq[idx] > fenced)
            if late.any():
                flat, w = self._first_lds(late, idx, wv)
                counter = "vmcnt" if st.w_tag[flat] & 1 else "lgkmcnt"
                self._report(b, "waits", p, int(st.w_pc[flat]), w, self._lds_where(b, flat),
                             f"read by it after an s_barrier before which wave {self._writer(b, st, flat)} "
                             f"had not waited for the {self._text(int(st.w_pc[flat]))} that writes it "
                             f"({counter})", 1)
        own = (writer == wv) & (tag & 1 == 1)
        if own.any() and (own := own & (st.w_seq[idx] > st.vm_done[wv])).any():
            flat, w = self._first_lds(own, idx, wv)
            seq = int(st.w_seq[flat])
            self._report(b, "waits", p, int(st.w_pc[flat]), w, self._lds_where(b, flat),
                         f"read by it before the {self._text(int(st.w_pc[flat]))} that writes it was waited "
                         f"for: vmcnt was {int(st.vm_issued[w] - st.vm_done[w])}, needed <= "
                         f"{int(st.vm_issued[w] - seq)}", 1)
        old = st.r_tag[idx]
        mine = (ep << EPOCH_SHIFT) | WRITTEN | ((wv + 1) << 1)  # WRITTEN here: read in that epoch
        again = _this_epoch(old, ep) & ((old & 1 == 1) | ((old >> 1) & WAVE_MASK != wv + 1))
        st.r_tag[idx] = mine | again
        # two waves reading one byte with this very instruction
        st.r_tag[idx[st.r_tag[idx] & ~1 != mine]] |= 1
        st.r_pc[idx] = p.pc

    def _writer(self, b: Batch, st: State, flat: int) -> int:
        """The wave within its workgroup that last wrote LDS byte `flat`."""
        return int(((st.w_tag[flat] >> 1) & WAVE_MASK) - 1) % b.waves_per_group

    def _lds_write(self, b: Batch, st: State, p: Plan, idx: np.ndarray, wv: np.ndarray,
                   ep: np.ndarray) -> None:
        mine = (ep << EPOCH_SHIFT) | WRITTEN | (0 if p.atomic else (wv + 1) << 1) | int(p.lds_dma)
        if not p.atomic:
            tag = st.w_tag[idx]
            writer = ((tag >> 1) & WAVE_MASK) - 1
            waw = (writer >= 0) & (writer != wv) & (tag >> EPOCH_SHIFT == ep)
            if waw.any():
                flat, w = self._first_lds(waw, idx, wv)
                self._report(b, "race", p, int(st.w_pc[flat]), w, self._lds_where(b, flat),
                             f"written by it (wave {w % b.waves_per_group}) with no s_barrier after the "
                             f"{self._text(int(st.w_pc[flat]))} of wave {self._writer(b, st, flat)} wrote it",
                             1)
            read = st.r_tag[idx]
            war = _this_epoch(read, ep) & ((read & 1 == 1) | ((read >> 1) & WAVE_MASK != wv + 1))
            if war.any():
                flat, w = self._first_lds(war, idx, wv)
                self._report(b, "race", p, int(st.r_pc[flat]), w, self._lds_where(b, flat),
                             f"written by it (wave {w % b.waves_per_group}) with no s_barrier after another "
                             f"wave's {self._text(int(st.r_pc[flat]))} read it", 1)
        st.w_tag[idx] = mine
        if not p.atomic and wv[0, 0] != wv[-1, 0]:  # two waves writing one byte with this very instruction:
            clash = st.w_tag[idx] != mine  # the assignment kept one of their values
            if clash.any():
                flat, w = self._first_lds(clash, idx, wv)
                self._report(b, "race", p, p.pc, w, self._lds_where(b, flat),
                             f"written by it in waves {w % b.waves_per_group} and "
                             f"{self._writer(b, st, flat)} at once",
                             1)
        st.w_pc[idx] = p.pc
        st.w_seq[idx] = (st.vm_issued if p.lds_dma else st.lds_issued)[wv]
