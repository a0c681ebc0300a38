"""Every table the commands print about results, from typed records (records.py): bench's and
verify's, selfbench's, the emulator's counters, per-expert figures, speed-ups and compare's deltas, with the
footers that go under them (build's and info's are build_tables.py's). Nothing here imports the device
stack, so show, compare and speedup print on any machine.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape

from wgrad_cli.config.options import Criterion
from wgrad_cli.output.console import cell
from wgrad_cli.output.grid import Grid
from wgrad_cli.results.build_tables import build_table, toolchain_table
from wgrad_cli.results.compare import Delta
from wgrad_cli.results.records import BenchRow, Document, ModelFigures, Paired, Profile, Ratio, VerifyRow
from wgrad_cli.results.speedup import Speedup, geomeans
from wgrad_cli.results.validation import NONE_BEYOND, WITHIN, Point, band, family, held_out


def _us(ms: float) -> str:
    return f"{ms * 1e3:,.1f}"


def _energy(r: BenchRow) -> str:
    """Board energy per launch in mJ: the median power times the median time (where power was read)."""
    if r.power_w is None:
        return ""
    mj = r.power_w * r.summary.median_ms
    return f"{mj:,.0f}" if mj >= 10 else f"{mj:.2g}"


def bench_table(records: Sequence[BenchRow], title: str) -> Grid:
    """One row per measured run, the calibration row first (from result records, also merged ones).

    A hot row's cache column shows its launches per sample (x24); its times are per launch; a cold
    row's, its flush (zero, pattern or read; blank in files from before the choice) or `rot N`, the
    copies of the inputs rotated per launch; `rounds` marks rows sampled in interleaved rounds; inputs
    (wide) what the operands held (blank in files before schema 6). mJ is the
    board's energy per launch, estimated as the median power times the median time; capped is the
    share of readings during which the power limit held the clock down; overlap the share of
    samples whose sensors were read while the timed launch ran, throttled the share whose clock was
    then held down. On a device held at its power limit, energy per launch (not cycles) sets the time."""
    table = Grid(title)
    essential = ("kernel", "shape", "run", "median us", "rel stdev", "TFLOP/s", "W", "stop")
    for name in ("kernel", "shape", "M x N x K, E", "routing", "run", "cache", "samples", "median us",
                 "min us", "p20-p80 us", "rel stdev", "TFLOP/s", "GB/s", "% peak", "clock MHz", "W", "mJ",
                 "capped", "spin us", "overlap", "throttled", "inputs", "stop"):
        table.add_column(name, "left" if name in ("kernel", "shape", "routing", "cache", "inputs", "stop")
                         else "right", detail=name not in essential)
    for r in records:
        stop = r.stop if r.stop in ("converged", "stable") else f"[yellow]{r.stop}[/]"
        cache = (r.cache + (f" x{r.batch}" if r.batch > 1 else "") + (f" {r.flush}" if r.flush else "")
                 + (f" rot {r.rotating}" if r.rotating else "") + (" rounds" if r.interleaved else ""))
        rates = ["", ""] if r.calibration else [f"{r.tflops:,.2f}", f"{r.gbps:,.1f}"]
        throttled = cell(r.throttled, ".0%") + (f" (-{r.discarded})" if r.discarded else "")
        table.add_row(r.kernel, r.shape.name, r.shape.label(), r.shape.routing, str(r.run), cache,
                      f"{r.summary.samples:,}", _us(r.summary.median_ms), _us(r.summary.min_ms),
                      f"{_us(r.summary.p20_ms)}-{_us(r.summary.p80_ms)}", f"{100 * r.summary.rel_stdev:.2f}%",
                      *rates, cell(r.pct_peak, ".2f"), cell(r.clock_mhz, ""), cell(r.power_w, ".0f"),
                      _energy(r), cell(r.power_capped, ".0%"), "" if r.spin_ms is None else _us(r.spin_ms),
                      cell(r.overlap, ".0%"), throttled, r.inputs.label() if r.inputs else "", stop)
    return table


MODEL_CAUSES = ("mfma", "memory", "barrier", "lds", "issue", "tail", "bandwidth", "launch")


def model_table(records: Sequence[BenchRow], title: str) -> Grid:
    """Modelled rows (wgrad model): the time, the rate, the cause that took the most time and the
    time by cause, which sums to the time (docs/model.md)."""
    table = Grid(title)
    for name in ("kernel", "shape", "M x N x K, E", "modelled us", "band", "TFLOP/s", "% peak",
                 "GHz held", "limiter", *(f"{c} us" for c in MODEL_CAUSES), "MFMA floor us", "clock GHz",
                 "classes", "emulated"):
        table.add_column(name, "left" if name in ("kernel", "shape", "limiter", "emulated", "band")
                         else "right", detail=name in ("M x N x K, E", "% peak", "MFMA floor us", "clock GHz",
                                                       "classes", "emulated"))
    for r in records:
        m = r.model
        if m is None:
            continue
        table.add_row(r.kernel, r.shape.name, r.shape.label(), _us(r.summary.median_ms), _band(m.band),
                      f"{r.tflops:,.2f}", cell(r.pct_peak, ".2f"), _held(m), m.limiter,
                      *(f"{m.causes_us.get(c, 0.0):,.1f}" for c in MODEL_CAUSES),
                      f"{m.mfma_floor_us:,.1f}", f"{m.clock_ghz:g}", str(m.classes),
                      ", ".join(map(str, m.emulated)))
    return table


def _band(band: str | None) -> str:
    """A modelled time's held-out error band, short ("-" where the file has none or figures were changed)."""
    return (band.removeprefix("held-out ").replace(" ... ", "..").replace(", validation ", " v")
            if band else "-")


def _held(m: ModelFigures) -> str:
    """The clock a modelled row held (the clock given, in files from before the power limit)."""
    return f"{m.clock_ghz if m.held_ghz is None else m.held_ghz:.2f}"


PROFILE_CAUSES = ("mfma", "memory", "barrier", "lds", "issue")  # the causes an instruction takes time for
TOP = 12  # instructions in the profile's first table


def profile_tables(records: Sequence[BenchRow], prefix: str = "") -> list[Grid]:
    """Per modelled row with a profile (wgrad model --profile): the instructions that take the most
    time, with their disassembly and time by cause, then the time by loop and straight code, which
    with the idle and bandwidth time sums to the row's; titles start with `prefix`."""
    tables: list[Grid] = []
    for r in records:
        if r.model is None or r.model.profile is None:
            continue
        total = r.summary.median_ms * 1e3
        label = f"{prefix}{r.kernel} on {r.shape.name}"
        tables.append(_top_instructions(r.model.profile, total,
                                        f"{label}: the {TOP} instructions that take the most of its "
                                        f"{total:,.1f} us (modelled)"))
        tables.append(_regions(r.model.profile, total, f"{label}: time by loop and straight code (modelled)"))
    return tables


def _share(us: float, total: float) -> str:
    return f"{100 * us / total:.1f}%" if total else ""


def _short(text: str, width: int = 32) -> str:
    """An instruction's text cut to `width` for the table (the results file and trace hold it whole)."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _top_instructions(p: Profile, total: float, title: str) -> Grid:
    table = Grid(title)
    for name in ("pc", "instruction", "executions", "us", "share", "mostly",
                 *(f"{c} us" for c in PROFILE_CAUSES)):
        table.add_column(name, "left" if name in ("instruction", "mostly") else "right",
                         detail=name.endswith(" us"))
    ranked = sorted(p.instructions, key=lambda i: -sum(i.causes_us.values()))[:TOP]
    for i in ranked:
        us = sum(i.causes_us.values())
        main = max(i.causes_us, key=lambda c: i.causes_us[c]) if us else ""
        table.add_row(f"{i.pc:#x}", escape(_short(i.text)), f"{i.executions:,}", f"{us:,.1f}",
                      _share(us, total), f"{main} {100 * i.causes_us[main] / us:.0f}%" if main else "",
                      *(f"{i.causes_us.get(c, 0.0):,.1f}" for c in PROFILE_CAUSES))
    return table


def _regions(p: Profile, total: float, title: str) -> Grid:
    table = Grid(title)
    for name in ("code", "pcs", "instructions", "us", "share", *(f"{c} us" for c in PROFILE_CAUSES)):
        table.add_column(name, "left" if name in ("code", "pcs") else "right",
                         detail=name in ("pcs", "instructions"))
    for g in p.regions:
        inside = [i for i in p.instructions if g.first_pc <= i.pc <= g.last_pc]
        by = {c: sum(i.causes_us.get(c, 0.0) for i in inside) for c in PROFILE_CAUSES}
        us = sum(by.values())
        table.add_row("  " * g.depth + g.name, f"{g.first_pc:#x}-{g.last_pc:#x}", f"{len(inside):,}",
                      f"{us:,.1f}", _share(us, total), *(f"{by[c]:,.1f}" for c in PROFILE_CAUSES))
    blank = [""] * len(PROFILE_CAUSES)
    table.add_row("idle", "", "", f"{p.idle_us:,.1f}", _share(p.idle_us, total), *blank)
    table.add_row("bandwidth", "", "", f"{p.bandwidth_us:,.1f}", _share(p.bandwidth_us, total), *blank)
    table.add_row("launch", "", "", f"{p.launch_us:,.1f}", _share(p.launch_us, total), *blank)
    return table


def calibration_table(records: Sequence[BenchRow], title: str) -> Grid:
    """Modelled rows with a published measured time (launch files' `published`), one row per kernel
    and shape: whether it trains the fitted figures or is held out (validation.held_out), its
    matrix duty and operand toggle rate, and at each clock the files hold its modelled time, the
    clock it held and the miss: modelled over published time, less one (negative: the model is
    faster than the measured kernel). Where each kernel's times are published is listed under the
    title."""
    rows = [r for r in records if r.model is not None and r.model.published_us]
    clocks = sorted({r.model.clock_ghz for r in rows if r.model is not None})
    # one line per source: its kernels' family
    sources = dict.fromkeys((family(_family(r)), r.model.published_source or "")
                            for r in rows if r.model is not None)
    notes = "; ".join(f"{escape(kernel)}: {escape(source)}" for kernel, source in sources)
    table = Grid(f"{title}\npublished: {notes}" if notes else title)
    for name in ("kernel", "M x N x K", "set", "measured us", "duty", "toggle",
                 *(f"{c:g} GHz {what}" for c in clocks for what in ("us", "held", "miss"))):
        table.add_column(name, "left" if name in ("kernel", "M x N x K", "set") else "right")
    by_key: dict[tuple[str, int, int, int], dict[float, BenchRow]] = {}
    for r in rows:
        assert r.model is not None
        by_key.setdefault((_family(r), r.shape.M, r.shape.N, r.shape.K), {})[r.model.clock_ghz] = r
    for (kernel, M, N, K), at in sorted(by_key.items(),
                                        key=lambda kv: (kv[0][0], kv[0][1] * kv[0][2] * kv[0][3])):
        first = next(iter(at.values())).model
        assert first is not None and first.published_us is not None
        cells = []
        for c in clocks:
            model = at[c].model if c in at else None
            us = at[c].summary.median_ms * 1e3 if c in at else None
            cells += ([f"{us:,.1f}", _held(model), f"{100 * (us / first.published_us - 1):+.1f}%"]
                      if us and model else ["-", "-", "-"])
        table.add_row(escape(kernel), f"{M}x{N}x{K}", "held out" if held_out(kernel, M, N, K) else "training",
                      f"{first.published_us:,.1f}", cell(first.matrix_duty, ".2f"),
                      cell(first.toggle, ".2f"), *cells)
    return table


def _family(r: BenchRow) -> str:
    """A launch file's kernel name less its shape (validation.points names kernels so)."""
    return r.kernel.removesuffix(f"-{r.shape.M}x{r.shape.N}x{r.shape.K}")


def band_table(points: Sequence[Point], title: str) -> Grid:
    """The validation's verdict per clock: the held-out rows' band and how many meet the targets,
    and the training rows' fit."""
    table = Grid(title)
    for name in ("clock GHz", "set", "rows", "lowest miss", "highest miss", f"within {100 * WITHIN:.0f}%",
                 f"beyond {100 * NONE_BEYOND:.0f}%", "targets"):
        table.add_column(name, "left" if name in ("set", "targets") else "right")
    families = sorted({family(p.kernel) for p in points})
    for c in sorted({p.clock_ghz for p in points}):
        at = [p for p in points if p.clock_ghz == c]
        sets = [("held out", [p for p in at if p.held_out], True),
                ("training", [p for p in at if not p.held_out], False)]
        if len(families) > 1:  # each family's held-out rows: where the band comes from
            sets += [(f"held out, {f}", [p for p in at if p.held_out and family(p.kernel) == f], True)
                     for f in families]
        for name, mine, held in sets:
            if not mine:
                continue
            b = band(mine)
            verdict = ("met" if b.met else "not met") if held else "(fitted on these)"
            table.add_row(f"{c:g}", escape(name), str(b.rows), f"{100 * b.low:+.1f}%",
                          f"{100 * b.high:+.1f}%", f"{b.within:.0%}", str(b.beyond), verdict)
    return table


def bench_footer(doc: Document) -> str:
    """What a bench run's figures are of: the peak `% peak` divides by, and the stopping rule."""
    peak = doc.provenance.peak
    head = (f"% peak: of {peak.matrix_label} {peak.matrix_tflops:,.0f} TFLOP/s ({peak.source}); "
            if peak else "% peak: this device is not in the peak table; ")
    c = doc.provenance.criterion or Criterion()
    return head + (f"stopping: >= {c.min_samples} samples, >= {c.min_seconds} s, rel stdev <= "
                   f"{100 * c.max_noise:g}% or settled within {100 * c.stable_noise:g}%, "
                   f"timeout {c.timeout} s")


def _g(x: float) -> str:
    return f"{x:.3g}"


MODELLED = ("modelled us", "modelled TFLOP/s")  # verify --model's columns: labelled, never a measurement


def verify_table(records: Sequence[VerifyRow], title: str) -> Grid:
    """One row per (kernel, shape) from result records (also merged or loaded ones)."""
    table = Grid(title)
    modelled = any(r.modelled is not None for r in records)
    essential = ("kernel", "shape", "rel Frobenius", "mismatches", "NaNs", "unwritten", "status",
                 *MODELLED, "band")
    for name in ("kernel", "shape", "M x N x K, E", "routing", "seed", "max abs err", "max rel err",
                 "rel Frobenius", "mismatches", "NaNs", "unwritten", "sampled rows", "status",
                 *(("modelled at", MODELLED[0], "band", MODELLED[1], "limiter") if modelled else ())):
        table.add_column(name, "left" if name in ("kernel", "shape", "routing", "status", "modelled at",
                                                  "band", "limiter")
                         else "right", detail=name not in essential)
    for r in records:
        c, m = r.overall, r.modelled
        table.add_row(r.kernel, r.shape.name, r.shape.label(), r.shape.routing, str(r.seed),
                      _g(c.max_abs_error), _g(c.max_rel_row_error), _g(c.rel_frobenius), f"{c.mismatches:,}",
                      f"{c.nans:,}", f"{c.unwritten:,}",
                      "" if r.sampled is None else ("ok" if r.sampled.overall.ok else "[red]FAILED[/]"),
                      "[green]ok[/]" if r.ok else "[red]FAILED[/]",
                      *(() if not modelled else ("", "", "", "", "") if m is None else (
                          f"{m.machine} {m.clock_ghz:g} GHz" + (f" (held {m.held_ghz:.2f})" if m.held_ghz and
                                                                 m.held_ghz < m.clock_ghz else ""),
                          f"{m.microseconds:,.1f}", _band(m.band), f"{m.tflops:,.2f}", m.limiter)))
    return table


COUNTED = ("salu", "valu", "mfma", "lds", "vmem", "smem", "branch", "barrier")


def counters_table(records: Sequence[VerifyRow], title: str) -> Grid:
    """What each kernel executed on an emulated device: wave-instructions by class, lane-instructions
    (64 per wave-instruction) and bytes moved; the counts a timing model of the real chip starts from."""
    table = Grid(title)
    for name in ("kernel", "shape", "waves", *COUNTED, "M lane-instr", "MB loaded", "MB stored"):
        table.add_column(name, "left" if name in ("kernel", "shape") else "right",
                         detail=name in ("smem", "branch", "barrier", "MB stored"))
    for r in records:
        c = r.counters
        if c is None:
            continue
        table.add_row(r.kernel, r.shape.name, f"{c.waves:,}",
                      *(f"{c.instructions.get(k, 0):,}" for k in COUNTED),
                      f"{c.lane_instructions / 1e6:,.1f}", f"{c.bytes_loaded / 1e6:,.2f}",
                      f"{c.bytes_stored / 1e6:,.2f}")
    return table


def expert_table(record: VerifyRow) -> Grid:
    """Per-expert figures of one record (printed for failures, or for all with --per-expert)."""
    table = Grid(f"{record.kernel} on {record.shape.name}: per expert ({record.reference})")
    for name in ("expert", "max abs err", "max rel err", "rel Frobenius", "mismatches", "NaNs",
                 "unwritten", "status"):
        table.add_column(name, "right")
    for e, c in enumerate(record.experts):
        table.add_row(str(e), _g(c.max_abs_error), _g(c.max_rel_row_error), _g(c.rel_frobenius),
                      f"{c.mismatches:,}", f"{c.nans:,}", f"{c.unwritten:,}",
                      "ok" if c.ok else "[red]FAILED[/]")
    return table


def selfbench_table(ratios: Sequence[Ratio], title: str) -> Grid:
    """One row per timing: measured, baseline, their ratio against its target, and what each is."""
    table = Grid(title)
    for col in ("benchmark", "measured", "baseline", "ratio", "target", "verdict", "what"):
        table.add_column(col, detail=col == "what")
    for r in ratios:
        verdict = "[dim]info[/]" if r.informational else ("[green]met[/]" if r.ok else "[red]missed[/]")
        table.add_row(r.name, f"{r.measured:.4g} {r.unit}", f"{r.baseline:.4g} {r.unit}", f"{r.ratio:.4g}",
                      "" if r.informational else f"{'<=' if r.inclusive else '<'} {r.target:g}",
                      verdict, r.what)
    return table


def document_table(doc: Document, title: str) -> Grid:
    """The table the command that wrote `doc` printed for its records (wgrad model's for modelled rows)."""
    if doc.command == "selfbench":
        return selfbench_table(doc.ratios, title)
    if doc.command == "build":
        return build_table(doc.builds, title)
    if doc.command == "info":
        return toolchain_table(doc.compilers, title)
    if doc.command != "bench":
        return verify_table(doc.verify_rows, title)
    return (model_table(doc.bench_rows, f"{title} (modelled)") if doc.modelled
            else bench_table(doc.bench_rows, title))


SPEEDUP_COLUMNS = ("kernel", "shape", "M x N x K, E", "TFLOP/s", "torch path", "TFLOP/s", "x torch path",
                   "rounds p20-p80", "bf16 ceiling", "x ceiling", "bf16 same shape", "x same shape",
                   "dequant Gval/s")
# dims, rates, the rounds' spread and the dequantization's; the ratios stay
SPEEDUP_DETAIL = (2, 5, 7, 8, 10, 12)


def _rounds(p: Paired | None) -> str:
    """An interleaved speed-up's 20-80% range over the rounds (blank where not interleaved)."""
    return "" if p is None else f"{p.p20:.2f}-{p.p80:.2f}"


def _speedup_cells(rows: list[Speedup]) -> list[list[str]]:
    """The table's cells, shared by the terminal and the Markdown form: a row per Speedup, then
    each kernel's geometric means."""
    runs = any(r.run > 1 for r in rows)
    cells = [[r.kernel, f"{r.shape.name} (run {r.run})" if runs else r.shape.name, r.shape.label(),
              f"{r.tflops:,.1f}", r.torch_path,
              f"{r.torch_tflops:,.1f}", f"{r.x_torch:.2f}", _rounds(r.paired), f"{r.ceiling_tflops:,.1f}",
              f"{r.x_ceiling:.2f}",
              cell(r.same_shape_tflops, ",.1f"), cell(r.x_same_shape, ".2f"), cell(r.dequant_gvals, ",.0f")]
             for r in rows]
    for kernel, (x_torch, x_ceiling, x_same) in geomeans(rows).items():
        n = sum(r.kernel == kernel for r in rows)
        cells.append([kernel, f"geometric mean ({n} row{'s' * (n != 1)})", "", "", "", "", f"{x_torch:.2f}",
                      "", "", f"{x_ceiling:.2f}", "", cell(x_same, ".2f"), ""])
    return cells


def speedup_table(rows: list[Speedup], title: str) -> Grid:
    table = Grid(title)
    for i, name in enumerate(SPEEDUP_COLUMNS):
        table.add_column(name, "left" if name in ("kernel", "shape", "torch path") else "right",
                         detail=i in SPEEDUP_DETAIL)
    for cells in _speedup_cells(rows):
        table.add_row(*map(escape, cells))
    return table


def speedup_markdown(rows: list[Speedup]) -> str:
    """The same table in Markdown, every column, for a README."""
    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

    return "\n".join([line(SPEEDUP_COLUMNS), "|" + "---|" * len(SPEEDUP_COLUMNS),
                      *map(line, _speedup_cells(rows))])


def _pct(base: float, new: float) -> str:
    return f"{100 * (new / base - 1):+.1f}%" if base else ""


def _either(a: str, b: str) -> str:
    return f"{a} -> {b}"


def compare_table(command: str, deltas: Sequence[Delta], title: str) -> Grid:
    """compare's rows: BASE -> NEW per key, the change, the noise it is judged against and the verdict."""
    bench = command == "bench"
    table = Grid(title)
    columns = (["median us", "delta", "noise", "TFLOP/s"] if bench else ["rel Frobenius", "mismatches"])
    for name in ("kernel", "shape", "routing", "cache/run", *columns, "verdict"):
        table.add_column(name, "left" if name in ("kernel", "shape", "routing", "cache/run", "verdict")
                         else "right", detail=name in ("routing", "TFLOP/s"))
    for d in deltas:
        verdict = f"[red]{d.verdict}[/]" if d.regression else d.verdict
        if bench:
            old, new = (r if isinstance(r, BenchRow) else None for r in (d.base, d.new))
            cells = [_either(*("-" if r is None else _us(r.summary.median_ms) for r in (old, new))),
                     _pct(old.summary.median_ms, new.summary.median_ms) if old and new else "",
                     f"{100 * min(old.summary.rel_stdev, new.summary.rel_stdev):.2f}%" if old and new else "",
                     _either(*("-" if r is None or r.calibration else f"{r.tflops:,.2f}"
                               for r in (old, new)))]
            run = f"{d.key[7]}/{d.key[8]}"
        else:
            vold, vnew = (r if isinstance(r, VerifyRow) else None for r in (d.base, d.new))
            cells = [_either(*("-" if r is None else _g(r.overall.rel_frobenius) for r in (vold, vnew))),
                     _either(*("-" if r is None else f"{r.overall.mismatches:,}" for r in (vold, vnew)))]
            run = ""
        table.add_row(str(d.key[0]), str(d.key[1]), str(d.key[6]), run, *cells, verdict)
    return table
