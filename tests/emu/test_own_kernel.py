"""A kernel author's own kernel, end to end: a header-free gfx950 kernel with its spec beside it
(tests/data/ownkernel/, written for this test, no shipped spec or header), named by a config's
`{spec: FILE}` entry, by --spec and by --kernel-source alone, built by the real compiler, checked on
the emulator, modelled with a profile and traces, then plotted, shown and compared; and the same
kernel faulting, or stopped by Ctrl-C, on its second shape keeps the first shape's row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.device import isolation
from wgrad_cli.commands import model as model_command

pytestmark = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped
OWN = Path(__file__).resolve().parents[1] / "data" / "ownkernel"


def wgrad(cwd: Path, *args: str, status: int = 0) -> str:
    """`wgrad ARGS` run from `cwd` with its own code object cache; stdout and stderr."""
    result = CliRunner().invoke(cli, [*args, *(["--cache-dir", str(cwd / "cache")] if args[0] in (
        "build", "verify", "model") else [])], catch_exceptions=False)
    assert result.exit_code == status, result.output
    return result.output


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("own")
    for file in OWN.iterdir():
        shutil.copy(file, folder)
    return folder


def test_build_verify_model_profile_trace_plot_show_compare(own: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(own)
    built = wgrad(own, "build", "--config", "tiny.yaml", "--json", "build.json")
    assert "rowquad" in built and "2/2 builds ok" in built
    assert {r["kernel"] for r in json.loads((own / "build.json").read_text())["records"]} == {"rowquad"}

    verified = wgrad(own, "verify", "--config", "tiny.yaml", "--device", "emu", "--json", "verify.json")
    doc = json.loads((own / "verify.json").read_text())
    assert [(r["kernel"], r["shape"]["name"], r["ok"]) for r in doc["records"]] == [
        ("rowquad", "two-experts", True), ("rowquad", "three-one-empty", True)]
    assert "2/2 shapes passed" in verified

    modelled = wgrad(own, "model", "--config", "tiny.yaml", "--profile", "--trace", "trace.json",
                     "--json", "model.json")
    rows = json.loads((own / "model.json").read_text())["records"]
    assert [r["kernel"] for r in rows] == ["rowquad", "rowquad"] and all(r["model"]["profile"] for r in rows)
    traces = sorted(p.name for p in own.glob("trace*.json"))
    assert traces == ["trace-rowquad-three-one-empty.json", "trace-rowquad-two-experts.json"]
    assert f"traces of one CU each, to come: {traces[1]}, {traces[0]}" in modelled  # named before the run
    assert "time by loop" in modelled
    # tiny grids: the tail is said to be one, with a shape that gives every CU a workgroup
    assert "rowquad on two-experts: 128 workgroups on 256 CUs: " in modelled
    assert "N = K = 512 with E = 2 gives every CU a workgroup (512)" in modelled
    # the trace is of the class the grid waits for: the three-expert shape's critical path is its
    # 256-token expert (workgroups 128 on), not the first class
    assert "three-one-empty: the critical path (the CU that ends last) runs workgroup 128's class" in modelled
    title = (json.loads((own / "trace-rowquad-three-one-empty.json").read_text())
             ["traceEvents"][0]["args"]["name"])
    assert "running the class of workgroup 128, on the critical path" in title

    # the same kernel found from its source alone (the spec beside it), then by --spec: the same times
    wgrad(own, "model", "--config", "tiny.yaml", "--kernel-source", "rowquad.hip", "--json", "again.json")
    compared = wgrad(own, "compare", "model.json", "again.json")
    assert "2 same within noise; 0 regressions" in compared
    by_spec = wgrad(own, "build", "--config", "emu", "--spec", "rowquad.yaml")
    assert "rowquad" in by_spec and "reference" not in by_spec and "cdna4" not in by_spec

    shown = wgrad(own, "show", "verify.json", "model.json")
    assert shown.count("rowquad") >= 4
    pytest.importorskip("matplotlib")
    wgrad(own, "plot", "model.json", "-o", "model.svg")
    wgrad(own, "plot", "trace.json", "-o", "trace.svg")  # the name given to --trace finds the files it wrote
    drawn = (own / "trace.svg").read_text()
    assert ("rowquad on two-experts: one modelled CU" in drawn
            and "rowquad on three-one-empty: one modelled CU" in drawn)
    assert "rowquad" in (own / "model.svg").read_text()


def faulty(own: Path) -> Path:
    """rowquad changed to store far outside C on the config's second shape (E = 3) only, as spec `faulty`."""
    folder = own / "faulty"
    folder.mkdir(exist_ok=True)
    store = "C[(e * N + n) * K + k0 + j] = to_bf16(acc[j]);"
    source = (own / "rowquad.hip").read_text()
    assert source.count(store) == 1, "rowquad.hip changed: update the store"
    (folder / "rowquad.hip").write_text(
        source.replace(store, store.replace("C[", "C[(WGRAD_E == 3 ? 1ll << 40 : 0) + ")))
    (folder / "faulty.yaml").write_text(
        (own / "rowquad.yaml").read_text().replace("name: rowquad", "name: faulty"))
    return folder / "faulty.yaml"


@pytest.mark.parametrize("command", [["verify", "--device", "emu"], ["model"]])
def test_a_fault_in_a_later_shape_keeps_the_rows_before_it_and_exits_6(
        own: Path, command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(own)
    spec = faulty(own)
    output = wgrad(own, *command, "--config", "tiny.yaml", "--spec", str(spec), status=6)
    saved = (own / "results"
             / f"{command[0]}-tiny-faulty-gfx950{'-2.4GHz' if command[0] == 'model' else ''}.json")
    doc = json.loads(saved.read_text())
    assert [r["shape"]["name"] for r in doc["records"]] == ["two-experts"]
    (line,) = doc["faulted"]
    assert line.startswith("faulty on three-one-empty: ") and "store" in line
    assert "| faulty | two-experts" in output and f"FAULTED {line}" in " ".join(output.split())


@pytest.mark.parametrize("command, where, name", [
    (["verify", "--device", "emu"], isolation, "run"),
    (["model"], model_command, "model_record"),
])
def test_ctrl_c_exits_130_with_the_rows_finished_saved(own: Path, command: list[str], where: ModuleType,
                                                       name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C as the second record starts (KeyboardInterrupt, as Python raises it on SIGINT)."""
    monkeypatch.chdir(own)
    real, calls = getattr(where, name), []

    def interrupted_second(*args: object) -> object:
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(where, name, interrupted_second)
    output = wgrad(own, *command, "--config", "tiny.yaml", "--json", "partial.json", status=130)
    doc = json.loads((own / "partial.json").read_text())
    assert ([r["shape"]["name"] for r in doc["records"]] == ["two-experts"]
            and doc["incomplete"] == "interrupted by Ctrl-C")
    assert "| rowquad | two-experts" in output and "interrupted by Ctrl-C: 1 of 2 rows finished" in output
