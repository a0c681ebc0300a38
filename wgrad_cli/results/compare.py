"""`wgrad compare` and `wgrad merge`: result documents side by side (the CI gate), and shards joined into one.

compare refuses two files that do not describe the same experiment (another device, target,
config or seed) unless told which difference to allow, then matches records by (kernel, shape,
dims, routing, cache mode, run). Each bench row gets a noise-aware verdict, after nvbench's
compare script: the same when the medians differ by at most the smaller of the two rows'
relative standard deviations (the one that better says what the measurement resolves; the
larger would let one noisy run hide a change), else faster or slower. A regression is a row
slower beyond noise and by more than --threshold, a verify shape that passed and now fails, or a
shape missing from NEW. merge checks that the files are the shards 1..n of one run (same
command, config and target) and orders their records as the unsharded run would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError
from wgrad_cli.results.files import order
from wgrad_cli.results.records import BenchRow, Document, Row, VerifyRow, read_document

Key = tuple[Any, ...]

# what must match for two files to be compared, and how each is read from a document
PROVENANCE: dict[str, Callable[[Document], Any]] = {
    "device": lambda d: d.device_name, "target": lambda d: d.provenance.target,
    "config": lambda d: d.provenance.config_sha256, "seed": lambda d: d.provenance.seed}


def row_key(r: Row) -> Key:
    d = r.shape
    run = (r.cache, r.run) if isinstance(r, BenchRow) else ("", 1)
    return (r.kernel, d.name, d.M, d.N, d.K, d.E, d.routing, *run)


@dataclass(frozen=True)
class Delta:
    """One row of the comparison: the record in BASE and in NEW (None where absent), and the verdict."""

    key: Key
    base: Row | None
    new: Row | None
    verdict: str  # faster, slower, same, missing, new, now fails, ok
    regression: str | None  # why this row fails the gate, or None

    @property
    def label(self) -> str:
        bench = isinstance(self.base or self.new, BenchRow)
        return f"{self.key[0]} on {self.key[1]}" + (f" ({self.key[7]}, run {self.key[8]})" if bench else "")


def noise_verdict(base: BenchRow, new: BenchRow) -> str:
    """faster, slower or same (within noise): nvbench's rule on the medians."""
    change = new.summary.median_ms / base.summary.median_ms - 1
    if abs(change) <= min(base.summary.rel_stdev, new.summary.rel_stdev):
        return "same"
    return "slower" if change > 0 else "faster"


def _pct(base: float, new: float) -> str:
    return f"{100 * (new / base - 1):+.1f}%" if base else ""


def _delta(key: Key, old: Row | None, cur: Row | None, threshold: float, new_path: Path) -> Delta:
    if cur is None:
        return Delta(key, old, cur, "missing", f"missing in {new_path}")
    if old is None:
        return Delta(key, old, cur, "new", None)
    if isinstance(old, BenchRow) and isinstance(cur, BenchRow):
        verdict = noise_verdict(old, cur)
        beyond = (verdict == "slower" and not cur.calibration
                  and cur.summary.median_ms > old.summary.median_ms * (1 + threshold))
        why = (f"median {old.summary.median_ms * 1e3:,.1f} -> {cur.summary.median_ms * 1e3:,.1f} us "
               f"({_pct(old.summary.median_ms, cur.summary.median_ms)}), "
               f"beyond the noise ({100 * min(old.summary.rel_stdev, cur.summary.rel_stdev):.2g}%) "
               f"and {100 * threshold:g}%")
        return Delta(key, old, cur, verdict, why if beyond else None)
    assert isinstance(old, VerifyRow) and isinstance(cur, VerifyRow)
    if old.ok and not cur.ok:
        return Delta(key, old, cur, "now fails", "passed in BASE, fails in NEW")
    return Delta(key, old, cur, "ok" if cur.ok else "still fails", None)


def provenance_differences(base: Document, new: Document, allow: tuple[str, ...]) -> list[str]:
    """'name (a and b)' for each PROVENANCE field that differs and is not allowed."""
    return [f"{name} ({read(base)!r} and {read(new)!r})" for name, read in PROVENANCE.items()
            if read(base) != read(new) and name not in allow]


def compare_docs(base_path: Path, new_path: Path, threshold: float,
                 allow: tuple[str, ...] = ()) -> tuple[str, list[Delta]]:
    """The command both files are of, and one Delta per row key of either (BASE's order, then NEW's
    new keys); WgradError (exit 2) for files that are not of one command or one experiment."""
    base, new = read_document(base_path), read_document(new_path)
    if base.command != new.command:
        raise WgradError(f"{base_path} is a {base.command} result and {new_path} a {new.command} one; "
                         "compare two of the same command")
    if base.modelled != new.modelled:
        modelled, measured = (base_path, new_path) if base.modelled else (new_path, base_path)
        raise WgradError(f"{modelled} holds modelled times (wgrad model) and {measured} measured ones; "
                         "compare modelled with modelled and measured with measured")
    differences = provenance_differences(base, new, allow)
    if differences:
        names = " ".join(f"--allow-different {d.split(' ')[0]}" for d in differences)
        raise WgradError(f"{base_path} and {new_path} are not runs of one experiment: they differ in "
                         f"{', '.join(differences)}; compare like with like, or pass {names}")
    b = {row_key(r): r for r in base.records}
    n = {row_key(r): r for r in new.records}
    return base.command, [_delta(key, b.get(key), n.get(key), threshold, new_path)
                          for key in list(b) + [k for k in n if k not in b]]


def summary(deltas: list[Delta], threshold: float) -> str:
    """One line a CI log can show: how many rows, each verdict's count, and the regressions."""
    counts: dict[str, int] = {}
    for d in deltas:
        counts[d.verdict] = counts.get(d.verdict, 0) + 1
    regressions = sum(d.regression is not None for d in deltas)
    parts = [f"{n} {'same within noise' if v == 'same' else v}" for v, n in counts.items()]
    return (f"compare: {len(deltas)} rows: {', '.join(parts)}; {regressions} regression"
            f"{'s' * (regressions != 1)} (slower beyond noise and {100 * threshold:g}%, failing, or missing)")


def merge_docs(paths: list[Path]) -> Document:
    """One document from the shard files 1..n of one run; WgradError naming what does not fit."""
    docs = [read_document(p) for p in paths]
    first = docs[0]
    problems = []
    shards: dict[int, Path] = {}
    total = None
    for path, doc in zip(paths, docs):
        for field, mine, theirs in (("command", doc.command, first.command),
                                    ("config_sha256", doc.provenance.config_sha256,
                                     first.provenance.config_sha256),
                                    ("target", doc.provenance.target, first.provenance.target)):
            if mine != theirs:
                problems.append(f"{path}: {field} is {mine!r}, {paths[0]} has {theirs!r}; "
                                "merge shards of one run only")
        if doc.provenance.incomplete:
            problems.append(f"{path}: incomplete ({doc.provenance.incomplete}); run that shard again")
        shard = doc.provenance.shard
        if not (shard and len(shard) == 2):
            problems.append(f"{path}: not a shard (written without --shard); merge joins --shard i/n results")
            continue
        i, n = shard
        total = total or n
        if n != total:
            problems.append(f"{path}: shard {i}/{n}, but {paths[0]} is one of {total}")
        elif i in shards:
            problems.append(f"{path}: shard {i}/{n} is also {shards[i]}")
        shards[i] = path
    if total and not problems:
        problems += [f"shard {i}/{total} is missing; give all {total} shard files"
                     for i in range(1, total + 1) if i not in shards]
    if problems:
        raise WgradError(problems)
    # every record names its shard (speed-ups pair rows of one machine only); every shard measured
    # its own calibration rows: keep each, numbered by its shard
    records: list[Row] = []
    for doc in docs:
        i = doc.provenance.shard[0]  # type: ignore[index]  # checked above
        for r in doc.records:
            records.append(replace(r, shard=i, run=i) if isinstance(r, BenchRow) and r.calibration
                           else replace(r, shard=i))
    records.sort(key=order)
    per_run = ("shard", "tool", "schema", "version", "commit", "source_sha256", "argv", "host", "date")
    keep = {k: v for k, v in first.environment.items() if k not in per_run}
    shards_json = [{"file": str(p), **{k: d.environment.get(k) for k in ("shard", "host", "date", "commit",
                                                                         "source_sha256", "device")}}
                   for p, d in zip(paths, docs)]
    return Document(first.command, records, {**keep, "shard": None, "shards": shards_json})
