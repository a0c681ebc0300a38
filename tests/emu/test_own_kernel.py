"""A kernel author's own kernel, end to end: a header-free gfx950 kernel with its spec beside it
(tests/data/ownkernel/, written for this test, no shipped spec or header), named by a config's
`{spec: FILE}` entry, by --spec and by --kernel-source alone, built by the real compiler, checked on
the emulator, modelled with a profile and traces, then plotted, shown and compared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli

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


def test_build_verify_model_profile_trace_plot_show_compare(own: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(own)
    built = wgrad(own, "build", "--config", "tiny.yaml", "--json", "build.json")
    assert "rowquad" in built and "2/2 builds ok" in built
    assert {r["kernel"] for r in json.loads((own / "build.json").read_text())["records"]} == {"rowquad"}

    verified = wgrad(own, "verify", "--config", "tiny.yaml", "--device", "emu", "--json", "verify.json")
    doc = json.loads((own / "verify.json").read_text())
    assert [(r["kernel"], r["shape"]["name"], r["ok"]) for r in doc["records"]] == [
        ("rowquad", "two-experts", True), ("rowquad", "three-one-empty", True)]
    assert "2/2 shapes passed" in verified

    modelled = wgrad(own, "model", "--config", "tiny.yaml", "--profile", "--trace", "trace.json", "--json", "model.json")
    rows = json.loads((own / "model.json").read_text())["records"]
    assert [r["kernel"] for r in rows] == ["rowquad", "rowquad"] and all(r["model"]["profile"] for r in rows)
    traces = sorted(p.name for p in own.glob("trace*.json"))
    assert traces == ["trace-rowquad-three-one-empty.json", "trace-rowquad-two-experts.json"]
    assert "time by loop" in modelled

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
    wgrad(own, "plot", traces[0], "-o", "trace.svg")
    assert "rowquad" in (own / "model.svg").read_text()
