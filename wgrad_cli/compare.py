"""`wgrad compare` and `wgrad merge`: result documents side by side, and shards joined into one.

compare matches records by (kernel, shape, dims, cache mode, run) and gates on regressions:
bench, a median time more than --threshold slower; verify, a shape that passed and now fails;
either, a shape missing from NEW. merge checks that the files are the shards 1..n of one run
(same command, config and target) and orders their records as the unsharded run would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


from wgrad_cli.errors import WgradError
from wgrad_cli.grid import Grid
from wgrad_cli.results import BAD_RECORD, load, order, unreadable

Key = tuple[Any, ...]


def _key(r: dict[str, Any]) -> Key:
    d = r["shape"]
    return (r["kernel"], d["name"], d["M"], d["N"], d["K"], d["E"], r.get("cache"), r.get("run", 1))


def _keyed(doc: dict[str, Any], path: Path) -> dict[Key, dict[str, Any]]:
    try:
        return {_key(r): r for r in doc["records"]}
    except BAD_RECORD as exc:
        raise WgradError(f"{path}: a record {unreadable(exc)}; give a results file wgrad wrote") from None


def _pct(base: float, new: float) -> str:
    return f"{100 * (new / base - 1):+.1f}%" if base else ""


def compare_docs(base_path: Path, new_path: Path, threshold: float) -> tuple[Grid, list[str]]:
    """The delta table and one line per regression."""
    base, new = load(base_path), load(new_path)
    if base["command"] != new["command"]:
        raise WgradError(f"{base_path} is a {base['command']} result and {new_path} a {new['command']} one; "
                         "compare two of the same command")
    b, n = _keyed(base, base_path), _keyed(new, new_path)
    bench = base["command"] == "bench"
    table = Grid(f"wgrad compare: {base_path} -> {new_path} (threshold {100 * threshold:g}%)")
    columns = (["median us", "delta", "TFLOP/s", "delta"] if bench else ["rel Frobenius", "mismatches"])
    for name in ("kernel", "shape", "cache/run", *columns, "verdict"):
        table.add_column(name, "left" if name in ("kernel", "shape", "cache/run", "verdict") else "right")
    regressions = []
    try:
        for key in list(b) + [k for k in n if k not in b]:
            old, cur = b.get(key), n.get(key)
            label = f"{key[0]} on {key[1]}" + (f" ({key[6]}, run {key[7]})" if bench else "")
            verdict = "ok"
            if cur is None:
                verdict = "[red]missing in NEW[/]"
                regressions.append(f"{label}: missing in {new_path}")
            elif old is None:
                verdict = "new"
            elif bench and not cur.get("calibration") and cur["median_ms"] > old["median_ms"] * (1 + threshold):
                verdict = "[red]slower[/]"
                regressions.append(f"{label}: median {old['median_ms']:.4g} -> {cur['median_ms']:.4g} ms "
                                   f"({_pct(old['median_ms'], cur['median_ms'])}), beyond {100 * threshold:g}%")
            elif not bench and old["ok"] and not cur["ok"]:
                verdict = "[red]now fails[/]"
                regressions.append(f"{label}: passed in {base_path}, fails in {new_path}")
            if bench:
                cells = [f"{_ms(old, 'median_ms')} -> {_ms(cur, 'median_ms')}",
                         _pct(old["median_ms"], cur["median_ms"]) if old and cur else "",
                         f"{_tf(old)} -> {_tf(cur)}", _pct(old["tflops"], cur["tflops"]) if old and cur else ""]
            else:
                cells = [f"{_frob(old)} -> {_frob(cur)}", f"{_mis(old)} -> {_mis(cur)}"]
            table.add_row(str(key[0]), str(key[1]), f"{key[6]}/{key[7]}" if bench else "", *cells, verdict)
    except BAD_RECORD as exc:
        raise WgradError(f"a record of {base_path} or {new_path} {unreadable(exc)}; give results files wgrad wrote") from None
    return table, regressions


def _ms(r: dict[str, Any] | None, field: str) -> str:
    return "-" if r is None else f"{r[field] * 1e3:,.1f}"


def _tf(r: dict[str, Any] | None) -> str:
    return "-" if r is None or r.get("calibration") else f"{r['tflops']:,.2f}"


def _frob(r: dict[str, Any] | None) -> str:
    return "-" if r is None else f"{r['overall']['rel_frobenius']:.3g}"


def _mis(r: dict[str, Any] | None) -> str:
    return "-" if r is None else str(r["overall"]["mismatches"])


def merge_docs(paths: list[Path]) -> dict[str, Any]:
    """One document from the shard files 1..n of one run; WgradError naming what does not fit."""
    docs = [load(p) for p in paths]
    first = docs[0]
    problems = []
    shards: dict[int, Path] = {}
    total = None
    for path, doc in zip(paths, docs):
        for field in ("command", "config_sha256", "target"):
            if doc.get(field) != first.get(field):
                problems.append(f"{path}: {field} is {doc.get(field)!r}, {paths[0]} has {first.get(field)!r}; "
                                "merge shards of one run only")
        if doc.get("incomplete"):
            problems.append(f"{path}: incomplete ({doc['incomplete']}); run that shard again")
        shard = doc.get("shard")
        if not (isinstance(shard, list) and len(shard) == 2):
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
        problems += [f"shard {i}/{total} is missing; give all {total} shard files" for i in range(1, total + 1)
                     if i not in shards]
    if problems:
        raise WgradError(problems)
    # every record names its shard (speed-ups pair rows of one machine only); every shard measured
    # its own calibration rows: keep each, numbered by its shard
    records = [{**r, "shard": doc["shard"][0], **({"run": doc["shard"][0]} if r.get("calibration") else {})}
               for doc in docs for r in doc["records"]]
    try:
        records.sort(key=order)
    except BAD_RECORD as exc:
        raise WgradError(f"a record {unreadable(exc)}; give results files wgrad wrote") from None
    per_run = ("records", "shard", "tool", "version", "commit", "source_sha256", "command", "argv", "host", "date")
    keep = {k: v for k, v in first.items() if k not in per_run}
    shards_json = [{"file": str(p), **{k: d.get(k) for k in ("shard", "host", "date", "commit", "source_sha256",
                                                              "device")}} for p, d in zip(paths, docs)]
    return {"command": first["command"], "extra": {**keep, "shard": None, "shards": shards_json}, "records": records}
