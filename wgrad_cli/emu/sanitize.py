"""The sanitizer (`verify --device emu --sanitize`): what the hardware leaves to software, checked
on the waves the emulator runs, from outside the emulator.

The emulator executes memory synchronously, so a kernel that forgets a wait, races on LDS or
breaks a required wait state gets right answers here. The sanitizer watches each wave's executed
stream beside the emulator, without changing what it computes, through two hooks in the style of
llvm-mca's views: it wraps each op of the kernel (`Sanitizer.wrap`, as the timing model's recorder
does; without --sanitize no op is wrapped and the emulator runs as before) and it hears every LDS
access (`Batch.lds_watch`). Four checks, each finding one line:

- **waits**: per wave, the vector-memory, LDS and scalar-memory operations issued and the ones an
  `s_waitcnt` has made sure of (CDNA4 ISA, "Data Dependency Resolution": vector memory returns in
  order, LDS in order, scalar memory out of order, so only lgkmcnt(0) makes sure of an SMEM result;
  stores count on vmcnt). A read or overwrite of a register a load has not been made sure of, an
  LDS read of bytes an LDS-DMA load has not been made sure of by its own wave, or, for another
  wave, by the writer before the `s_barrier` between them.
- **races**: per LDS byte, the last writing wave and barrier epoch and the waves that read it in
  the current epoch: a write by one wave and a read or write of the same byte by another in the
  same epoch (no `s_barrier` between) is a race; atomics are excepted.
- **hazards**: the wait states the ISA requires between dependent instructions that the hardware
  does not interlock (the gfx940/gfx950 rows of LLVM's GCNHazardRecognizer.cpp: MFMA results read
  or overwritten, MFMA SrcC overwritten, a VALU's SGPR or EXEC write read by VMEM, v_readlane,
  v_writelane, DPP or an MFMA, a transcendental's result, wide store data, M0 for LDS DMA), counted
  per wave on its executed stream (`s_nop N` counts N + 1).
- **initcheck**: VGPR and AGPR lanes, and LDS bytes, read before anything in this launch wrote them.

Each finding is reported once per (check, instruction, other instruction), with the first
workgroup and wave that met it and how many times it was met.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from wgrad_cli.emu.findings import Finding
from wgrad_cli.emu.machine import EXEC, M0, VCC, Batch, Op
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.sanitize_plan import LGKM, SMEM, VM, Plan, plan

NEVER = -(1 << 40)  # the clock of a write that never happened: any wait state count covers it
ALL_LANES = np.uint64(0xFFFFFFFFFFFFFFFF)
SHADOW_BYTES_PER_LDS_BYTE = 25  # the race and initcheck state per LDS byte (sized for batches)


def _row_name(row: int, vgprs: int) -> str:
    return f"v{row}" if row < vgprs else f"a{row - vgprs}"


def _sgpr_name(reg: int) -> str:
    return {VCC: "vcc_lo", VCC + 1: "vcc_hi", EXEC: "exec_lo", EXEC + 1: "exec_hi", M0: "m0"}.get(reg, f"s{reg}")


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
        self.mfma_clk = np.full((rows, w), NEVER, np.int64)
        self.mfma_pass = np.zeros((rows, w), np.int64)
        self.mfma_first = np.full((rows, w), -1, np.int64)
        self.mfma_pc = np.zeros((rows, w), np.int64)
        self.valu_clk = np.full((rows, w), NEVER, np.int64)
        self.valu_pc = np.zeros((rows, w), np.int64)
        self.trans_clk = np.full((rows, w), NEVER, np.int64)
        self.trans_pc = np.zeros((rows, w), np.int64)
        self.srcc_clk = np.full((rows, w), NEVER, np.int64)
        self.srcc_pass = np.zeros((rows, w), np.int64)
        self.srcc_pc = np.zeros((rows, w), np.int64)
        self.store_clk = np.full((rows, w), NEVER, np.int64)
        self.store_pc = np.zeros((rows, w), np.int64)
        self.s_valu_clk = np.full((128, w), NEVER, np.int64)
        self.s_valu_pc = np.zeros((128, w), np.int64)
        self.m0_clk = np.full(w, NEVER, np.int64)
        self.m0_pc = np.zeros(w, np.int64)
        self.epoch = np.zeros(w, np.int64)
        self.fence_ep = np.zeros(w, np.int64)
        self.fence_vm = np.zeros(w, np.int64)
        self.fence_lds = np.zeros(w, np.int64)
        self.prev_vm = np.zeros(w, np.int64)
        self.prev_lds = np.zeros(w, np.int64)
        n = b.lds.size
        self.w_ep = np.full(n, -1, np.int32)  # -1: never written
        self.w_wave = np.full(n, -1, np.int32)  # -1: no plain write to race with (an atomic)
        self.w_pc = np.zeros(n, np.int32)
        self.w_seq = np.zeros(n, np.int64)
        self.w_dma = np.zeros(n, bool)
        self.r_ep = np.full(n, -1, np.int32)
        self.r_mask = np.zeros(n, np.uint32)
        self.r_pc = np.zeros(n, np.int32)
        self.current: Plan | None = None


class Sanitizer:
    """The checks for one launch of `kernel`; `wrap` gives the ops to run, `findings` what they met."""

    def __init__(self, program: Program, ops: dict[int, Op], vgprs: int, agprs: int) -> None:
        self.vgprs = max(vgprs, 1)
        self.rows = self.vgprs + max(agprs, 1)
        decoded = {d.pc: d for d in program.decoded}
        self.plans = {pc: plan(decoded[pc], op.klass, self.vgprs) for pc, op in ops.items() if pc in decoded}
        self.ops = {pc: self._wrap(op, self.plans[pc]) if pc in self.plans else op for pc, op in ops.items()}
        self._found: dict[tuple[str, int, int], Finding] = {}
        self._states: weakref.WeakKeyDictionary[Batch, State] = weakref.WeakKeyDictionary()

    def findings(self) -> list[Finding]:
        return sorted(self._found.values(), key=lambda f: (f.pc, f.check, f.other))

    # --- state ---------------------------------------------------------------------------
    def state(self, b: Batch) -> State:
        st = self._states.get(b)
        if st is None:
            st = self._states[b] = State(b, self.rows)
            b.lds_watch = lambda idx, inside, waves, write: self._lds(b, st, idx, inside, waves, write)
        return st

    def _report(self, b: Batch, check: str, p: Plan, other: int, wave: int, where: str, what: str, times: int) -> None:
        key = (check, p.pc, other)
        known = self._found.get(key)
        if known is not None:
            self._found[key] = replace(known, times=known.times + times)
            return
        group = int(b.group_ids[b.group[wave], 0])
        self._found[key] = Finding(check, p.pc, p.text, other, group, wave % b.waves_per_group, where, what, times)

    def _text(self, pc: int) -> str:
        p = self.plans.get(pc)
        return f"{p.text if p else '?'} at {pc:#x}"

    # --- the wrapped op ------------------------------------------------------------------
    def _wrap(self, op: Op, p: Plan) -> Op:
        inner = op.run

        def run(b: Batch) -> None:
            st = self.state(b)
            m = b.wm
            self._before(b, st, p, m)
            st.current = p
            inner(b)
            self._after(b, st, p, m)
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
        if p.mfma or p.dpp or p.lane_select >= 0:
            self._exec_hazard(b, st, p, m)
        if p.counter == VM:  # counted from here: an LDS-DMA load's bytes take its number
            st.vm_issued[m] += 1
        elif p.counter == LGKM:
            st.lds_issued[m] += 1
        elif p.counter == SMEM:
            st.smem_issued[m] += 1

    def _pending(self, b: Batch, st: State, p: Plan, m: np.ndarray, rows: np.ndarray, how: str, vm: bool = True,
                 lds: bool = True) -> None:
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
                             f"{how} it before the {self._text(other)} that writes it was waited for: {name} was "
                             f"{int(issued[w] - done[w])}, needed <= {int(issued[w] - s)}", n)

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
                         f"{why} by the {self._text(other)} {int(gap[i, w])} wait states before; the ISA requires "
                         f"{required}", n)

    def _hazards_read(self, b: Batch, st: State, p: Plan, m: np.ndarray, r: np.ndarray) -> None:
        clk = st.mfma_clk[r]
        if (clk > NEVER).any():
            passes = st.mfma_pass[r]
            if p.mfma:
                srcc = np.isin(r, p.srcc_rows)[:, None]
                full = st.mfma_first[r] == p.srcc[0]
                need = np.where(srcc, np.where(full, np.where(passes == 2, 2, 0), passes + 1), passes + 3)
                self._need(b, st, p, m, r, clk, need, st.mfma_pc[r], "read by it (an MFMA operand) after it was written")
            elif p.valu or p.mem:
                self._need(b, st, p, m, r, clk, passes + 3, st.mfma_pc[r], "read by it after it was written")
        if p.mfma:
            self._need(b, st, p, m, r, st.valu_clk[r], 2, st.valu_pc[r], "read by the MFMA after a VALU wrote it")
        if p.dpp:
            self._need(b, st, p, m, r, np.maximum(st.valu_clk[r], st.mfma_clk[r]), 2, st.valu_pc[r],
                       "read through DPP after it was written")
        if p.valu and not p.trans:
            self._need(b, st, p, m, r, st.trans_clk[r], 1, st.trans_pc[r], "read after a transcendental wrote it")

    def _hazards_write(self, b: Batch, st: State, p: Plan, m: np.ndarray, w: np.ndarray) -> None:
        clk = st.mfma_clk[w]
        if (clk > NEVER).any():
            self._need(b, st, p, m, w, clk, st.mfma_pass[w] + 3, st.mfma_pc[w], "overwritten by it after it was written")
        clk = st.srcc_clk[w]
        if (clk > NEVER).any():
            passes = st.srcc_pass[w]
            self._need(b, st, p, m, w, clk, np.where(passes == 2, 1, passes - 1), st.srcc_pc[w],
                       "overwritten by it after being read as SrcC")
        if p.valu:
            self._need(b, st, p, m, w, st.store_clk[w], 2, st.store_pc[w],
                       "overwritten by it after being read as data")

    def _scalar_reads(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        s = p.sreads
        seq = st.spend[s]
        bad = (seq > st.smem_done) & m
        if bad.any():
            i, w, n = self._first(bad)
            other = int(st.spend_pc[s[i], w])
            self._report(b, "waits", p, other, w, f"s{int(s[i])}",
                         f"read by it before the {self._text(other)} that writes it was waited for: lgkmcnt was "
                         f"{int(st.smem_issued[w] - st.smem_done[w] + st.lds_issued[w] - st.lds_done[w])}, needed 0 "
                         "(scalar memory returns out of order)", n)
        if p.vmem or p.valu:
            need = 5 if p.vmem else 2
            what = "read by the VMEM instruction" if p.vmem else "read by the VALU"
            self._need(b, st, p, m, s, st.s_valu_clk[s], need, st.s_valu_pc[s], f"{what} after a VALU wrote it", True)
        if p.lane_select >= 0:
            sel = np.asarray([p.lane_select])
            self._need(b, st, p, m, sel, st.s_valu_clk[sel], 4, st.s_valu_pc[sel],
                       "selecting the lane after a VALU wrote it", True)
        if p.reads_m0:
            gap = st.clk - st.m0_clk - 1
            bad1 = (gap < 1) & m
            if bad1.any():
                w = int(np.flatnonzero(bad1)[0])
                self._report(b, "hazard", p, int(st.m0_pc[w]), w, "m0",
                             f"read by it after the {self._text(int(st.m0_pc[w]))} wrote it {int(gap[w])} wait states "
                             "before; the ISA requires 1", int(np.count_nonzero(bad1)))

    def _exec_hazard(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        need = 5 if p.dpp else 4
        e = np.asarray([EXEC])
        self._need(b, st, p, m, e, st.s_valu_clk[e], need, st.s_valu_pc[e], "read after a VALU wrote it", True)

    def _after(self, b: Batch, st: State, p: Plan, m: np.ndarray) -> None:
        w = p.writes
        if p.wait is not None:
            vm, lgkm = p.wait
            st.vm_done[m] = np.maximum(st.vm_done[m], st.vm_issued[m] - vm)
            st.lds_done[m] = np.maximum(st.lds_done[m], st.lds_issued[m] - lgkm)
            if lgkm == 0:
                st.smem_done[m] = st.smem_issued[m]
        if p.barrier:
            st.prev_vm[m], st.prev_lds[m] = st.fence_vm[m], st.fence_lds[m]
            st.epoch[m] += 1
            st.fence_ep[m], st.fence_vm[m], st.fence_lds[m] = st.epoch[m], st.vm_done[m], st.lds_done[m]
        if w.size:
            cols = np.flatnonzero(m)
            sel = np.ix_(w, cols)
            if p.counter == VM:
                st.pend_vm[sel] = st.vm_issued[cols][None, :]
                st.pend_pc[sel] = p.pc
            elif p.counter == LGKM:
                st.pend_lds[sel] = st.lds_issued[cols][None, :]
                st.pend_pc[sel] = p.pc
            lanes = ALL_LANES if p.mfma else self._exec_bits(b)[cols][None, :]
            st.init[sel] |= lanes
            if p.mfma:
                st.mfma_clk[sel] = st.clk[cols][None, :]
                st.mfma_pass[sel] = p.passes
                st.mfma_first[sel] = p.dst[0]
                st.mfma_pc[sel] = p.pc
            elif p.valu:
                st.valu_clk[sel] = st.clk[cols][None, :]
                st.valu_pc[sel] = p.pc
                if p.trans:
                    st.trans_clk[sel] = st.clk[cols][None, :]
                    st.trans_pc[sel] = p.pc
        if p.mfma and p.srcc_rows.size:
            cols = np.flatnonzero(m)
            sel = np.ix_(p.srcc_rows, cols)
            st.srcc_clk[sel] = st.clk[cols][None, :]
            st.srcc_pass[sel] = p.passes
            st.srcc_pc[sel] = p.pc
        if p.store_data.size:
            cols = np.flatnonzero(m)
            sel = np.ix_(p.store_data, cols)
            st.store_clk[sel] = st.clk[cols][None, :]
            st.store_pc[sel] = p.pc
        if p.swrites.size:
            cols = np.flatnonzero(m)
            sel = np.ix_(p.swrites, cols)
            if p.counter == SMEM:
                st.spend[sel] = st.smem_issued[cols][None, :]
                st.spend_pc[sel] = p.pc
            if p.valu:
                st.s_valu_clk[sel] = st.clk[cols][None, :]
                st.s_valu_pc[sel] = p.pc
            elif M0 in p.swrites:
                st.m0_clk[cols] = st.clk[cols]
                st.m0_pc[cols] = p.pc

    # --- LDS ------------------------------------------------------------------------------
    def _lds(self, b: Batch, st: State, idx: np.ndarray, inside: np.ndarray | None, waves: np.ndarray,
             write: bool) -> None:
        p = st.current
        if p is None or idx.size == 0:
            return
        nb = idx.shape[1]
        flat = idx.ravel()
        wv = np.repeat(waves, nb)
        if inside is not None:
            keep = inside.ravel()
            flat, wv = flat[keep], wv[keep]
        if not flat.size:
            return
        ep = st.epoch[wv]
        bit = (np.uint32(1) << (wv % b.waves_per_group).astype(np.uint32)).astype(np.uint32)
        if write:
            self._lds_write(b, st, p, flat, wv, ep, bit)
        else:
            self._lds_read(b, st, p, flat, wv, ep, bit)

    def _lds_where(self, b: Batch, flat: int) -> str:
        return f"LDS address {flat % max(b.lds_bytes, 1):#x}"

    def _lds_read(self, b: Batch, st: State, p: Plan, flat: np.ndarray, wv: np.ndarray, ep: np.ndarray,
                  bit: np.ndarray) -> None:
        w_ep = st.w_ep[flat]
        never = w_ep < 0
        if never.any():
            i = int(np.flatnonzero(never)[0])
            self._report(b, "initcheck", p, -1, int(wv[i]), self._lds_where(b, int(flat[i])),
                         "read by it before anything in this launch wrote it", 1)
        writer = st.w_wave[flat]
        other = (writer >= 0) & (writer != wv)
        race = other & (w_ep == ep)
        if race.any():
            i = int(np.flatnonzero(race)[0])
            self._report(b, "race", p, int(st.w_pc[flat[i]]), int(wv[i]), self._lds_where(b, int(flat[i])),
                         f"read by it (wave {int(wv[i]) % b.waves_per_group}) with no s_barrier after the "
                         f"{self._text(int(st.w_pc[flat[i]]))} of wave {int(writer[i]) % b.waves_per_group} wrote it",
                         1)
        seq = st.w_seq[flat]
        dma = st.w_dma[flat]
        safe_w = np.maximum(writer, 0)
        fenced = np.where(st.fence_ep[safe_w] == ep, np.where(dma, st.fence_vm[safe_w], st.fence_lds[safe_w]),
                          np.where(dma, st.prev_vm[safe_w], st.prev_lds[safe_w]))
        late = other & (w_ep < ep) & (seq > fenced)
        if late.any():
            i = int(np.flatnonzero(late)[0])
            counter = "vmcnt" if dma[i] else "lgkmcnt"
            self._report(b, "waits", p, int(st.w_pc[flat[i]]), int(wv[i]), self._lds_where(b, int(flat[i])),
                         f"read by it after an s_barrier before which wave {int(writer[i]) % b.waves_per_group} had not "
                         f"waited for the {self._text(int(st.w_pc[flat[i]]))} that writes it ({counter})", 1)
        own = (writer == wv) & dma & (seq > st.vm_done[wv])
        if own.any():
            i = int(np.flatnonzero(own)[0])
            w = int(wv[i])
            self._report(b, "waits", p, int(st.w_pc[flat[i]]), w, self._lds_where(b, int(flat[i])),
                         f"read by it before the {self._text(int(st.w_pc[flat[i]]))} that writes it was waited for: "
                         f"vmcnt was {int(st.vm_issued[w] - st.vm_done[w])}, needed <= "
                         f"{int(st.vm_issued[w] - seq[i])}", 1)
        stale = st.r_ep[flat] != ep
        st.r_mask[flat[stale]] = 0
        st.r_ep[flat] = ep
        np.bitwise_or.at(st.r_mask, flat, bit)
        st.r_pc[flat] = p.pc

    def _lds_write(self, b: Batch, st: State, p: Plan, flat: np.ndarray, wv: np.ndarray, ep: np.ndarray,
                   bit: np.ndarray) -> None:
        if not p.atomic:
            writer = st.w_wave[flat]
            waw = (writer >= 0) & (writer != wv) & (st.w_ep[flat] == ep)
            if waw.any():
                i = int(np.flatnonzero(waw)[0])
                self._report(b, "race", p, int(st.w_pc[flat[i]]), int(wv[i]), self._lds_where(b, int(flat[i])),
                             f"written by it (wave {int(wv[i]) % b.waves_per_group}) with no s_barrier after the "
                             f"{self._text(int(st.w_pc[flat[i]]))} of wave {int(writer[i]) % b.waves_per_group} "
                             "wrote it", 1)
            war = (st.r_ep[flat] == ep) & ((st.r_mask[flat] & ~bit) != 0)
            if war.any():
                i = int(np.flatnonzero(war)[0])
                self._report(b, "race", p, int(st.r_pc[flat[i]]), int(wv[i]), self._lds_where(b, int(flat[i])),
                             f"written by it (wave {int(wv[i]) % b.waves_per_group}) with no s_barrier after another "
                             f"wave's {self._text(int(st.r_pc[flat[i]]))} read it", 1)
            if len(np.unique(wv)) > 1:  # two waves writing one byte with this very instruction
                order = np.argsort(flat, kind="stable")
                f, v = flat[order], wv[order]
                clash = (f[1:] == f[:-1]) & (v[1:] != v[:-1])
                if clash.any():
                    i = int(np.flatnonzero(clash)[0])
                    self._report(b, "race", p, p.pc, int(v[i + 1]), self._lds_where(b, int(f[i])),
                                 f"written by it in waves {int(v[i]) % b.waves_per_group} and "
                                 f"{int(v[i + 1]) % b.waves_per_group} at once", 1)
        st.w_ep[flat] = ep
        st.w_wave[flat] = -1 if p.atomic else wv
        st.w_pc[flat] = p.pc
        st.w_dma[flat] = p.lds_dma
        st.w_seq[flat] = st.vm_issued[wv] if p.lds_dma else st.lds_issued[wv]

