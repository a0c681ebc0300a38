"""results.py: result documents written atomically (JSON, CSV) and read back with one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from wgrad_cli.errors import WgradError
from wgrad_cli.results import default_path, load, save

RECORDS: list[dict[str, Any]] = [
    {"index": 0, "kernel": "reference", "shape": {"name": "a", "M": 128, "E": 1}, "ok": True,
     "experts": [{"mismatches": 0}], "sampled": None},
    {"index": 1, "kernel": "reference", "shape": {"name": "b", "M": 256, "E": 2}, "ok": False,
     "experts": [{"mismatches": 0}, {"mismatches": 3}], "sampled": None, "note": "only here"},
]


def one_line_error(exc: pytest.ExceptionInfo[WgradError], *phrases: str) -> str:
    assert exc.value.exit_code == 2
    [line] = exc.value.lines
    assert all(phrase in line for phrase in phrases), line
    return line


def test_save_json(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "verify.json"
    save(path, None, "verify", RECORDS, config="c.yaml", shard=[1, 2])
    doc = json.loads(path.read_text())
    assert (doc["tool"], doc["command"], doc["records"]) == ("wgrad", "verify", RECORDS)
    assert (doc["config"], doc["shard"]) == ("c.yaml", [1, 2])
    assert {"version", "commit", "argv", "host", "date"} <= doc.keys()
    assert load(path) == doc


def test_save_csv_flattens(tmp_path: Path) -> None:
    path = tmp_path / "verify.csv"
    save(None, path, "verify", RECORDS)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == ["index", "kernel", "shape.name", "shape.M", "shape.E", "ok", "experts", "sampled",
                                 "note"]
    assert rows[1] == {"index": "1", "kernel": "reference", "shape.name": "b", "shape.M": "256", "shape.E": "2",
                       "ok": "False", "experts": '[{"mismatches": 0}, {"mismatches": 3}]', "sampled": "",
                       "note": "only here"}
    assert rows[0]["note"] == ""
    assert json.loads(rows[0]["experts"]) == [{"mismatches": 0}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verify.csv"]  # nothing but the file itself


def test_save_replaces_whole_files(tmp_path: Path) -> None:
    json_path, csv_path = tmp_path / "r.json", tmp_path / "r.csv"
    save(json_path, csv_path, "verify", RECORDS)
    save(json_path, csv_path, "verify", RECORDS[:1])
    assert json.loads(json_path.read_text())["records"] == RECORDS[:1]
    assert len(csv_path.read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]


def test_unwritable_csv_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file, not a folder\n")
    csv_path = tmp_path / "file" / "r.csv"
    with pytest.raises(WgradError) as exc:
        save(None, csv_path, "verify", RECORDS)
    assert one_line_error(exc) == (f"--csv {csv_path}: cannot write it (File exists); "
                                   "give a path in a writable folder")


def test_csv_path_that_is_a_folder_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "r.csv").mkdir()
    with pytest.raises(WgradError) as exc:
        save(None, tmp_path / "r.csv", "verify", RECORDS)
    one_line_error(exc, f"--csv {tmp_path / 'r.csv'}: cannot write it (Is a directory)")
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]


@pytest.mark.parametrize("content, phrase", [
    (None, "cannot read it (No such file or directory); give a results file wgrad wrote"),
    ("{not json", "not JSON (Expecting property name"),
    (b"\xff\xfe\x00", "not JSON ("),
    ('[{"tool": "wgrad"}]', "not a wgrad results document"),
    ('{"tool": "other", "command": "verify", "records": []}', "not a wgrad results document"),
    ('{"tool": "wgrad", "command": "verify", "records": {}}', "not a wgrad results document"),
    ('{"tool": "wgrad", "command": "build", "records": []}',
     "a 'build' document; this needs one of verify, bench"),
], ids=["missing", "not-json", "not-utf8", "a-list", "other-tool", "records-not-a-list", "build-doc"])
def test_load_rejects(tmp_path: Path, content: str | bytes | None, phrase: str) -> None:
    path = tmp_path / "r.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(WgradError) as exc:
        load(path)
    assert one_line_error(exc, phrase).startswith(f"{path}: ")


def test_load_wrong_command(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    save(path, None, "bench", [])
    assert load(path)["command"] == "bench"
    with pytest.raises(WgradError) as exc:
        load(path, ("verify",))
    assert one_line_error(exc) == f"{path}: a 'bench' document; this needs one of verify"


@pytest.mark.parametrize("shard, name", [
    (None, "verify-smoke-gfx950.json"),
    ((2, 4), "verify-smoke-gfx950-shard-2-of-4.json"),
])
def test_default_path(shard: tuple[int, int] | None, name: str) -> None:
    assert default_path("verify", Path("configs/smoke.yaml"), "gfx950", shard) == Path("results") / name
    assert default_path("bench", Path("/x/ci.yaml"), "sm_90", shard) == Path("results") / name.replace(
        "verify-smoke-gfx950", "bench-ci-sm_90")
