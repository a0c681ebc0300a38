"""results.py: result documents written atomically (JSON, CSV) and read back with one-line errors."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rows import bench_row, verify_row, write

from wgrad_cli.cli import cli
from wgrad_cli.config.options import Criterion
from wgrad_cli.config.shipped import CONFIGS_DIR, config_name
from wgrad_cli.errors import WgradError
from wgrad_cli.results.baseline_names import NAMES as BASELINES
from wgrad_cli.results.files import default_path, order, save
from wgrad_cli.results.records import SCHEMA, SHOWN, BenchRow, Peak, Ratio, VerifyRow, read_document, to_json

RECORDS = [verify_row(0, "a", True), verify_row(1, "b", False)]


def one_line_error(exc: pytest.ExceptionInfo[WgradError], *phrases: str) -> str:
    assert exc.value.exit_code == 2
    [line] = exc.value.lines
    assert all(phrase in line for phrase in phrases), line
    return line


def test_save_json(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "verify.json"
    save(path, None, "verify", RECORDS, config="c.yaml", shard=[1, 2])
    doc = json.loads(path.read_text())
    assert (doc["tool"], doc["schema"], doc["command"]) == ("wgrad", SCHEMA, "verify")
    assert doc["records"] == [to_json(r) for r in RECORDS]
    assert (doc["config"], doc["shard"]) == ("c.yaml", [1, 2])
    assert {"version", "commit", "argv", "host", "date"} <= doc.keys()
    read = read_document(path)
    assert read.records == RECORDS and read.provenance.config == "c.yaml"


def test_save_csv_flattens(tmp_path: Path) -> None:
    path = tmp_path / "verify.csv"
    save(None, path, "verify", RECORDS)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert (reader.fieldnames is not None
            and {"shape.name", "overall.mismatches", "experts"} <= set(reader.fieldnames))
    assert (rows[1]["shape.name"], rows[1]["overall.mismatches"], rows[1]["ok"]) == ("b", "17", "False")
    assert len(json.loads(rows[1]["experts"])) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verify.csv"]  # nothing but the file itself


def test_every_committed_results_file_loads_typed(repo: Path) -> None:
    files = sorted((repo / "results").rglob("*.json"))
    assert files
    kinds = {"bench": BenchRow, "verify": VerifyRow, "selfbench": Ratio}
    for path in files:
        doc = read_document(path, SHOWN)
        assert doc.records and all(type(r) is kinds[doc.command] for r in doc.records)



def test_committed_files_of_this_schema_write_back_byte_for_byte(repo: Path, tmp_path: Path) -> None:
    """Read and saved again (as merge saves), a file of the current schema is the same bytes; older
    ones are upgraded as they are read, so they are not."""
    current = [p for p in sorted((repo / "results").rglob("*.json"))
               if json.loads(p.read_text()).get("schema") == SCHEMA]
    assert current  # a schema bump leaves few files of the new one (4: the seed's profile)
    for path in current:
        doc = read_document(path, SHOWN)
        save(tmp_path / "again.json", None, doc.command, doc.records, **doc.environment)
        assert (tmp_path / "again.json").read_bytes() == path.read_bytes(), path

def test_bench_files_record_their_peak_and_stopping_rule_typed(repo: Path) -> None:
    doc = read_document(repo / "results" / "h200" / "bench-large.json")
    assert doc.provenance.peak == Peak(1979.0, "FP8", 989.0, 4800.0, 62914560, "NVIDIA H200 datasheet")
    assert doc.provenance.criterion == Criterion(10, 0.5, 0.005, 2.0, 100_000, 0.05)
    # written before stable_noise
    older = read_document(repo / "results" / "h200" / "bench-large-reference.json")
    assert older.provenance.criterion == Criterion(timeout=15.0)


def test_a_peak_that_lacks_a_rate_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", "bench", [bench_row(0, "a", 1.0)], peak={"matrix_label": "FP8"})
    with pytest.raises(WgradError) as exc:
        read_document(path)
    assert one_line_error(exc) == (f"{path}: environment.peak lacks matrix_tflops; "
                                   "give a results file wgrad wrote")


def test_schema_1_files_upgrade_and_newer_ones_are_refused(tmp_path: Path) -> None:
    """A schema-1 bench row lacks the fields schema 2 added: they read as their defaults."""
    old = {k: v for k, v in to_json(bench_row(0, "a", 1.0)).items()
           if k not in ("flush", "overlap", "spin_ms")}
    path = write(tmp_path / "old.json", "bench", [old])
    doc = json.loads(path.read_text())
    doc["schema"] = 1
    path.write_text(json.dumps(doc))
    (row,) = read_document(path).bench_rows
    assert (row.flush, row.overlap, row.spin_ms, row.discarded) == (None, None, None, 0)
    for schema in (SCHEMA + 1, "2", 0):
        path.write_text(json.dumps({**doc, "schema": schema}))
        with pytest.raises(WgradError) as exc:
            read_document(path)
        one_line_error(exc, f"{path}: results schema {schema!r}; this wgrad reads schemas 1 to {SCHEMA}")


def test_a_field_of_another_kind_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", "bench", [{**to_json(bench_row(0, "a", 1.0)), "median_ms": "fast"}])
    with pytest.raises(WgradError) as exc:
        read_document(path)
    assert one_line_error(exc) == (f"{path}: record 0.median_ms is 'fast', not a float; give a results file "
                                   "wgrad wrote")


def test_an_environment_field_of_another_kind_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", "bench", [bench_row(0, "a", 1.0)], seed="one",
                 device={"name": "H200"})
    with pytest.raises(WgradError) as exc:
        read_document(path)
    assert one_line_error(exc) == (f"{path}: environment.seed is 'one', not a int; "
                                   "give a results file wgrad wrote")
    good = read_document(write(tmp_path / "good.json", "bench", [bench_row(0, "a", 1.0)], seed=7,
                               device={"name": "H200"}, shard=[2, 4]))
    assert ((good.provenance.seed, good.device_name, good.provenance.shard, good.provenance.peak)
            == (7, "H200", [2, 4], None))


def test_save_writes_whole_files(tmp_path: Path) -> None:
    json_path, csv_path = tmp_path / "r.json", tmp_path / "r.csv"
    save(json_path, csv_path, "verify", RECORDS)
    save(json_path, csv_path, "verify", RECORDS[:1])
    assert json.loads(json_path.read_text())["records"] == [to_json(RECORDS[0])]
    assert len(csv_path.read_text().splitlines()) == 2
    # no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.1.csv", "r.1.json", "r.csv", "r.json"]


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
        read_document(path)
    assert one_line_error(exc, phrase).startswith(f"{path}: ")


def test_load_wrong_command(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    save(path, None, "bench", [])
    assert read_document(path).command == "bench"
    with pytest.raises(WgradError) as exc:
        read_document(path, ("verify",))
    assert one_line_error(exc) == f"{path}: a 'bench' document; this needs one of verify"


@pytest.mark.parametrize("shard, name", [
    (None, "verify-smoke-reference+cdna4-gfx950.json"),
    ((2, 4), "verify-smoke-reference+cdna4-gfx950-shard-2-of-4.json"),
])
def test_default_path_names_the_kernels(shard: tuple[int, int] | None, name: str) -> None:
    kernels = ["reference", "cdna4", "reference"]  # one per record
    assert default_path("verify", "smoke", kernels, "gfx950", shard) == Path("results") / name
    assert default_path("bench", "ci", kernels, "sm_90", shard) == Path("results") / name.replace(
        "verify-smoke", "bench-ci").replace("gfx950", "sm_90")
    assert default_path("model", "emu", ["cdna4"], "gfx950", shard, 2.0) == Path("results") / (
        "model-emu-cdna4-gfx950-2GHz" + ("-shard-2-of-4" if shard else "") + ".json")


def test_an_existing_file_is_kept_under_a_new_name_and_said(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, csv_path = tmp_path / "verify.json", tmp_path / "verify.csv"
    save(path, csv_path, "bench", [])
    first = path.read_text()
    save(path, csv_path, "bench", [])
    save(path, None, "bench", [])
    assert (tmp_path / "verify.1.json").read_text() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verify.1.csv", "verify.1.json", "verify.2.json",
                                                         "verify.csv", "verify.json"]
    assert capsys.readouterr().err.splitlines() == [
        f"{path} existed: the old file is now {tmp_path / 'verify.1.json'}",
        f"{csv_path} existed: the old file is now {tmp_path / 'verify.1.csv'}",
        f"{path} existed: the old file is now {tmp_path / 'verify.2.json'}"]


def test_a_shipped_config_is_named_and_a_users_config_keeps_the_path_given(tmp_path: Path) -> None:
    assert config_name(CONFIGS_DIR / "odd.yaml") == "odd"
    assert config_name(Path("my/own.yaml")) == "my/own.yaml"
    assert config_name(tmp_path / "odd.yaml") == str(tmp_path / "odd.yaml")  # a user's file of a shipped name


def test_a_file_that_names_its_config_by_an_absolute_path_reads_as_it_is(repo: Path) -> None:
    """Files written before configs were named record the path the run resolved the config to."""
    path = repo / "tests" / "data" / "bench-config-by-path.json"
    doc = read_document(path)
    assert doc.provenance.config == "/work/main/wgrad_cli/configs/large.yaml" and len(doc.bench_rows) == 3
    shown = CliRunner().invoke(cli, ["show", str(path)])
    assert shown.exit_code == 0 and "bf16-grouped" in shown.output


# /root/out/..., ~/x/...: a path of the machine that ran it
ABSOLUTE = re.compile(r"(?:^|[\s=(\"'])(?:/|~/)[\w.-]+/")


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def test_no_committed_results_file_holds_an_absolute_path(repo: Path) -> None:
    assert (ABSOLUTE.search("--json=/root/out/b.json")
            and not ABSOLUTE.search("generate (M=8) / as many, $OUT/b.json"))
    files = sorted((repo / "results").rglob("*.json"))
    found = [f"{path.relative_to(repo)}: {s}" for path in files for s in strings(json.loads(path.read_text()))
             if ABSOLUTE.search(s)]
    assert files and found == []


def test_a_shapes_kernel_comes_before_its_baselines_and_they_in_their_order() -> None:
    rows = [bench_row(0, "a", 1.0, kernel=BASELINES[1], baseline=True),
            bench_row(0, "a", 1.0, kernel=BASELINES[0], baseline=True),
            bench_row(0, "a", 1.0, kernel="a-later-baseline", baseline=True), bench_row(0, "a", 1.0),
            bench_row(-1, "calibration", 0.004)]
    assert [r.kernel for r in sorted(rows, key=order)] == ["empty", "reference", BASELINES[0], BASELINES[1],
                                                           "a-later-baseline"]
