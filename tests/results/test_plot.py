"""`wgrad plot`: PNG and SVG from the committed H200 bench files; bad input is one line and exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli

FILES = ["results/h200/bench-large.json", "results/h200/bench-deepseek-v3.json"]


def _plot(repo: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["plot", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def matplotlib() -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'wgrad[plot]')")


@pytest.mark.usefixtures("matplotlib")
def test_png_and_svg_from_committed_results(repo: Path, tmp_path: Path) -> None:
    png, svg = tmp_path / "speed.png", tmp_path / "speed.svg"
    for out in (png, svg):
        code, stdout, stderr = _plot(repo, *(str(repo / f) for f in FILES), "-o", str(out))
        assert code == 0, stderr
        assert stdout.strip() == f"wrote {out}"
        assert out.stat().st_size > 1000
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = svg.read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    assert "dsv3-gate_up" in text and "autotuned-grouped" in text and "FP8 1,979 TFLOP/s" in text
    assert "compiled-dequant" not in text  # values per second, not the GEMM's FLOPs


@pytest.mark.usefixtures("matplotlib")
@pytest.mark.parametrize("bad, says", [("results/h200/verify-smoke-reference.json", "a 'verify' document"),
                                       ("results/h200/no-such-file.json", "cannot read it")])
def test_bad_input_is_one_line_and_exit_2(repo: Path, tmp_path: Path, bad: str, says: str) -> None:
    out = tmp_path / "p.svg"
    code, _, stderr = _plot(repo, str(repo / FILES[0]), str(repo / bad), "-o", str(out))
    assert code == 2 and len(stderr.splitlines()) == 1 and says in stderr, stderr
    assert not out.exists()


def test_other_suffix_is_one_line_and_exit_2(repo: Path, tmp_path: Path) -> None:
    code, _, stderr = _plot(repo, str(repo / FILES[0]), "-o", str(tmp_path / "p.pdf"))
    assert code == 2 and len(stderr.splitlines()) == 1 and ".png or .svg" in stderr, stderr


def test_without_matplotlib_it_says_how_to_install(repo: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    code, _, stderr = _plot(repo, str(repo / FILES[0]), "-o", str(tmp_path / "p.svg"))
    assert code == 2 and len(stderr.splitlines()) == 1 and "pip install 'wgrad[plot]'" in stderr, stderr


@pytest.mark.usefixtures("matplotlib")
def test_shapes_group_across_files_with_named_peaks_a_log_axis_and_a_whole_title(repo: Path,
                                                                                 tmp_path: Path) -> None:
    """The H200's bench of square-8k beside the modelled MI355X's kernels on it at two clocks: one group of
    bars for the shape, each series named apart by its device, the peaks named with their device, and
    a log axis, since the rates span more than DECADES."""
    files = ["results/h200/bench-large-reference.json", "results/model/model-large-cdna4-2.0GHz.json",
             "results/model/model-large-cdna4-2.4GHz.json"]
    out = tmp_path / "mixed.svg"
    code, _, stderr = _plot(repo, *(str(repo / f) for f in files), "-o", str(out))
    assert code == 0, stderr
    svg = out.read_text()
    assert svg.count(">square-8k<") == 1  # one group, not one per file
    assert "cdna4 (modelled, MI355X at 2 GHz)" in svg and "cdna4 (modelled, MI355X at 2.4 GHz)" in svg
    assert ("NVIDIA H200 FP8 peak, 1,979" in svg
            and "modelled MI355X at 2.4 GHz (wgrad model) MXFP8 peak" in svg)
    assert "TFLOP/s (log scale)" in svg
    title = "wgrad bench and model on NVIDIA H200, modelled MI355X at 2 GHz (wgrad model)"
    assert all(word in svg for word in title.split())  # wrapped onto lines, not cut at the edges
