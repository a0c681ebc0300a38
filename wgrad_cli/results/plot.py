"""`wgrad plot`: bench results files (read through records.py) as one figure of two views.

Above, per shape, the TFLOP/s of each kernel next to the baselines timed beside it (grouped bars,
the first run of each); below, a roofline: each row at its FLOP per byte (its FLOPs over the
minimum bytes bench records for the shape: both operands and the output, read or written once)
against the roofs of the device's recorded peak (the matrix rate the file's `% peak` divides by,
the dense bf16 rate, and the HBM bandwidth). compiled-dequant is left out of both: its rate is
of values dequantized, not of the GEMM's FLOPs (`wgrad speedup` shows it in G values/s).

matplotlib is the optional extra `wgrad[plot]`; it is imported only when a plot is drawn, with
the Agg backend, and this module imports nothing of the device stack. Modelled rows (wgrad model)
are their own series, named "(modelled)": hatched bars, hollow points.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError
from wgrad_cli.results.baseline_names import DEQUANT, NAMES
from wgrad_cli.results.records import BenchRow, Document, read_each
from wgrad_cli.results.traceplot import draw_traces, read_trace, traces_of, write_figure
from wgrad_cli.results.validation import WITHIN, Point, family

FORMATS = ("png", "svg")
DECADES = 30.0  # bars whose values span more than this ratio get a log axis
CHARS_PER_INCH = 11  # characters of a 10-point title per inch of figure
# modelled rows (wgrad model) are their own series, "KERNEL (modelled[, what])" in the legend
MODELLED = " (modelled"
INSTALL = "pip install 'wgrad[plot]'"


@dataclass(frozen=True)
class Roof:
    """A device's recorded peak, as a roofline draws it."""

    device: str
    matrix_tflops: float
    matrix_label: str
    bf16_tflops: float
    hbm_gbps: float

    @property
    def ridge(self) -> float:
        """FLOP per byte where the bandwidth roof meets the matrix roof."""
        return self.matrix_tflops * 1e3 / self.hbm_gbps


@dataclass(frozen=True)
class Bars:
    """What the figure shows: per shape (in file order), the first run of each kernel."""

    shapes: list[str]  # x labels
    kernels: list[str]  # the kernels first, then the baselines in bench's order
    tflops: dict[tuple[int, str], float]  # (shape index, kernel) -> TFLOP/s
    points: list[tuple[str, float, float]]  # (kernel, FLOP per byte, TFLOP/s) of every plotted row
    roofs: list[Roof]
    title: str


def load(paths: list[Path]) -> list[Document]:
    """The bench files, typed; one error line per file that is not a bench result wgrad wrote."""
    problems: list[str] = []
    docs = [doc for _, doc in read_each(paths, ("bench",), problems)]
    if problems:
        raise WgradError(problems)
    return docs


def _plotted(doc: Document) -> list[BenchRow]:
    return [r for r in doc.bench_rows if r.run == 1 and not r.calibration and r.kernel != DEQUANT
            and r.flops > 0 and r.min_bytes > 0 and r.tflops > 0]


def roof(doc: Document) -> Roof | None:
    """The peak the file recorded (bench's peak table for its device), or None where it had none."""
    peak = doc.provenance.peak
    if peak is None:
        return None
    return Roof(doc.device_name or "an unnamed device", peak.matrix_tflops, peak.matrix_label,
                peak.bf16_tflops, peak.hbm_gbps)


def _series(docs: list[Document]) -> dict[tuple[int, str], str]:
    """Each (file, kernel)'s name in the legend: the kernel's, "(modelled)" for modelled rows, and
    where one kernel is in several files, what tells them apart (the device, else the file)."""
    files: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        for r in _plotted(doc):
            files.setdefault(r.kernel, [])
            if i not in files[r.kernel]:
                files[r.kernel].append(i)
    names: dict[tuple[int, str], str] = {}
    for kernel, held in files.items():
        devices = {docs[i].device_name for i in held}
        for i in held:
            modelled = any(r.modelled for r in _plotted(docs[i]) if r.kernel == kernel)
            device = (docs[i].device_name or "").removeprefix("modelled ").removesuffix(" (wgrad model)")
            apart = "" if len(held) == 1 else (f", {device}" if len(devices) == len(held)
                                               else f", {Path(str(docs[i].path)).stem}")
            names[(i, kernel)] = kernel + (f" (modelled{apart})" if modelled
                                           else f" ({apart[2:]})" if apart else "")
    return names


def collect(docs: list[Document]) -> Bars:
    """The figure's data: shapes across files in order of first appearance, one group per shape
    whichever files hold it, kernels in order of first appearance, baselines after them."""
    keys: list[str] = []
    per_key: dict[str, dict[str, BenchRow]] = {}
    series = _series(docs)
    for i, doc in enumerate(docs):
        for r in _plotted(doc):
            if r.shape.name not in per_key:
                keys.append(r.shape.name)
                per_key[r.shape.name] = {}
            per_key[r.shape.name].setdefault(series[(i, r.kernel)], r)
    if not keys:
        raise WgradError(f"{', '.join(str(d.path) for d in docs)}: no bench row with FLOPs and a "
                         "rate to plot (only calibration or empty shapes); give bench results of kernels")
    seen = [name for key in keys for name in per_key[key]]
    ours = list(dict.fromkeys(n for n in seen if n not in NAMES))
    kernels = ours + [n for n in NAMES if n in seen]
    shapes = keys
    tflops = {(j, k): r.tflops for j, key in enumerate(keys) for k, r in per_key[key].items()}
    points = [(k, r.flops / r.min_bytes, r.tflops) for key in keys for k, r in per_key[key].items()]
    roofs = list(dict.fromkeys(r for r in map(roof, docs) if r is not None))
    devices = list(dict.fromkeys(d.device_name or "an unnamed device" for d in docs))
    files = f"{len(docs)} results file{'s' * (len(docs) != 1)}"
    modelled = any(MODELLED in k for k in kernels)
    what = "wgrad bench and model" if modelled else "wgrad bench"
    cache = "modelled" if all(MODELLED in k for k in kernels) else "cold cache"
    bands = list(dict.fromkeys(r.model.band for rows in per_key.values() for r in rows.values()
                               if r.model is not None and r.model.band))
    return Bars(shapes, kernels, tflops, points, roofs, f"{what} on {', '.join(devices)}: {files}, "
                                                         f"first run of each shape, {cache}"
                + (f"; modelled times {', '.join(bands)}" if bands else ""))


def _matplotlib() -> Any:
    """matplotlib on the Agg backend, or a one-line WgradError saying how to install it."""
    try:
        import matplotlib
    except ImportError as exc:
        raise WgradError(f"wgrad plot needs matplotlib ({exc}); {INSTALL}") from None
    matplotlib.use("Agg")
    return matplotlib


def output_format(out: Path) -> str:
    """png or svg, from the output's suffix; a one-line WgradError for any other."""
    form = out.suffix.lower().lstrip(".")
    if form not in FORMATS:
        raise WgradError(f"{out}: a plot is written as .png or .svg, not "
                         f"{out.suffix or 'a file without a suffix'}")
    return form


def whole(title: str, fig: Any) -> str:
    """`title` wrapped to the figure's width, so that no word of it falls off an edge."""
    return "\n".join(textwrap.wrap(title, int(fig.get_figwidth() * CHARS_PER_INCH), break_on_hyphens=False))


def draw(data: Bars, out: Path) -> None:
    """The figure, written to `out` (.png or .svg: the suffix picks the format)."""
    form = output_format(out)
    mpl = _matplotlib()
    from matplotlib.figure import Figure

    mpl.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "wgrad", "font.size": 9})
    n = len(data.shapes)
    fig = Figure(figsize=(max(8.0, 0.75 * n + 2) + 3.0, 10.0), layout="constrained")  # legends beside
    bars, roofline = fig.subplots(2, 1, height_ratios=(1.1, 1.0))
    cmap = mpl.colormaps["tab20" if len(data.kernels) > 10 else "tab10"]
    color = {k: cmap(i % cmap.N) for i, k in enumerate(data.kernels)}

    width = 0.84 / len(data.kernels)
    for i, k in enumerate(data.kernels):
        at = [j for j in range(n) if (j, k) in data.tflops]
        bars.bar([x - 0.42 + (i + 0.5) * width for x in at], [data.tflops[(x, k)] for x in at], width,
                 label=k, color=color[k], edgecolor="black" if k not in NAMES else "none", linewidth=0.6,
                 hatch="//" if MODELLED in k else None)
    for r in data.roofs:  # each peak named with its device, in the legend
        bars.axhline(r.matrix_tflops, color="grey", linestyle=":", linewidth=1,
                     label=f"{r.device} {r.matrix_label} peak, {r.matrix_tflops:,.0f}")
        bars.axhline(r.bf16_tflops, color="grey", linestyle="--", linewidth=1,
                     label=f"{r.device} bf16 peak, {r.bf16_tflops:,.0f}")
    values = [*data.tflops.values(), *(t for r in data.roofs for t in (r.matrix_tflops, r.bf16_tflops))]
    if max(values) > DECADES * min(values):  # a slow kernel beside fast ones stays visible
        bars.set_yscale("log")
    bars.set_xticks(range(n), data.shapes, rotation=40, ha="right", rotation_mode="anchor")
    bars.set_xlim(-0.6, n - 0.4)
    bars.set_ylabel("TFLOP/s" + (" (log scale)" if bars.get_yscale() == "log" else ""))
    fig.suptitle(whole(data.title, fig), fontsize=10)
    bars.grid(axis="y", alpha=0.3)
    bars.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside the axes

    markers = "o^sDvP*Xh<>p"
    for i, k in enumerate(data.kernels):
        pts = [(x, y) for name, x, y in data.points if name == k]
        hollow = MODELLED in k  # modelled points are drawn hollow
        roofline.scatter([x for x, _ in pts], [y for _, y in pts], s=28, color="none" if hollow else color[k],
                         marker=markers[i % len(markers)], label=k,
                         edgecolors=color[k] if hollow else "black",
                         linewidths=1.2 if hollow else 0.4, zorder=3)
    intensity = [x for _, x, _ in data.points]
    lo = min([*intensity, *(r.ridge / 20 for r in data.roofs)]) / 2
    hi = max([*intensity, *(r.ridge * 2 for r in data.roofs)]) * 2
    for r in data.roofs:
        for rate, style, label in ((r.matrix_tflops, "-", r.matrix_label), (r.bf16_tflops, "--", "bf16")):
            knee = rate * 1e3 / r.hbm_gbps
            roofline.plot([lo, knee, hi], [lo * r.hbm_gbps / 1e3, rate, rate], style, color="black",
                          linewidth=1, zorder=2)
            roofline.annotate(f"{r.device} {label} {rate:,.0f} TFLOP/s", (hi, rate), xytext=(-4, 3),
                              textcoords="offset points", ha="right", fontsize=8)
        roofline.annotate(f"HBM {r.hbm_gbps / 1e3:g} TB/s", (lo * 1.3, lo * 1.3 * r.hbm_gbps / 1e3),
                          xytext=(6, -4), textcoords="offset points", fontsize=8)
    roofline.set_xscale("log")
    roofline.set_yscale("log")
    roofline.set_xlim(lo, hi)
    ys = [y for _, _, y in data.points]
    roofline.set_ylim(min([*ys, *(lo * r.hbm_gbps / 1e3 for r in data.roofs)]) / 1.5,
                      max([*ys, *(r.matrix_tflops for r in data.roofs)]) * 1.6)
    roofline.set_xlabel("FLOP per byte (the row's FLOPs over the shape's minimum bytes)")
    roofline.set_ylabel("TFLOP/s")
    roofline.set_title("roofline" + ("" if data.roofs else " (no peak recorded in these files: no roofs)"))
    roofline.grid(which="both", alpha=0.2)
    roofline.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    write_figure(fig, out, form)


def render(paths: list[Path], out: Path) -> None:
    """The figure of these bench files, or of one CU trace wgrad model wrote, written to `out` (its
    suffix picks PNG or SVG)."""
    form = output_format(out)
    mpl = _matplotlib()
    paths = [found for path in paths for found in traces_of(path)]
    traces = [read_trace(path) for path in paths]
    if all(t is not None for t in traces):
        mpl.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "wgrad", "font.size": 9})
        draw_traces([t for t in traces if t is not None], out, form)
        return
    draw(collect(load(paths)), out)


def draw_calibration(points: list[Point], out: Path, title: str) -> None:
    """Modelled against published time, log axes, one point per row and clock (held-out rows filled,
    training rows hollow), with the line of no miss and the 15% band around it."""
    form = output_format(out)
    _matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 6.5))
    ax = fig.add_subplot()
    times = [t for p in points for t in (p.published_us, p.modelled_us)]
    lo, hi = min(times) / 1.3, max(times) * 1.3
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, label="modelled = published")
    for k, style in ((1 + WITHIN, ":"), (1 - WITHIN, ":")):
        ax.plot([lo, hi], [lo * k, hi * k], color="grey", linestyle=style, linewidth=0.8)
    families = sorted({family(p.kernel) for p in points})
    for i, name in enumerate(families):
        color = f"C{i}"
        for held, face, what in ((True, color, "held out"), (False, "none", "training")):
            mine = [p for p in points if p.held_out == held and family(p.kernel) == name]
            if mine:
                ax.scatter([p.published_us for p in mine], [p.modelled_us for p in mine], s=22, marker="o",
                           facecolors=face, edgecolors=color, label=f"{name}, {what} ({len(mine)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("published us (measured on an MI355X)")
    ax.set_ylabel("modelled us")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.text(0.99, 0.01, f"dotted: within {100 * WITHIN:.0f}%", ha="right", fontsize=7)
    write_figure(fig, out, form, dpi=120, tight=True)
