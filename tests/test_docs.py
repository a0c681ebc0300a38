"""The documentation matches the code: its generated tables are what the tool prints, its links and
the files it and the source cite exist, and its claims about peaks, power and configs hold."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
from pathlib import Path

import pytest
import yaml
from checkout import tracked
from click.testing import CliRunner

from wgrad_cli.backends.sm90a import DATASHEET
from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import shipped_configs
from wgrad_cli.results.records import read_document

BLOCK = re.compile(r"<!-- (wgrad [^\n]*?) -->\n(.*?)<!-- end -->", re.S)
PAGES = ["README.md", "docs/nvidia-results.md", "docs/timing.md", "docs/model.md", "docs/cdna4-design.md"]


def printed(repo: Path, command: str) -> str:
    """What `command` prints to a pipe, run from the repository root."""
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        result = CliRunner().invoke(cli, shlex.split(command)[1:], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, (command, result.output)
    return result.stdout


def generated(repo: Path, page: str) -> str:
    text = (repo / page).read_text()
    return BLOCK.sub(lambda m: f"<!-- {m.group(1)} -->\n{printed(repo, m.group(1))}<!-- end -->", text)


@pytest.mark.parametrize("page", PAGES)
def test_generated_tables_match_the_tool(repo: Path, page: str) -> None:
    text, fresh = (repo / page).read_text(), generated(repo, page)
    if os.environ.get("WGRAD_WRITE_DOCS"):
        (repo / page).write_text(fresh)
    assert text == fresh, f"{page} differs from what wgrad prints; rewrite it with WGRAD_WRITE_DOCS=1"


def test_committed_results_are_all_cited(repo: Path) -> None:
    """Every results file the checkout tracks is cited by a page; a user's own runs, which land in
    results/ too by default, are theirs and not checked."""
    cited = " ".join(p.read_text() for p in [repo / "README.md", *(repo / "docs").glob("*.md")])
    files = tracked("results")
    assert files and [f for f in files if f not in cited] == []


def test_local_links_resolve(repo: Path) -> None:
    for page in [repo / "README.md", *(repo / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}, which does not exist"


# A repository path as docs and comments cite one: a file name with one of the repository's
# extensions, with or without folders; not part of a URL, a glob or a longer word.
CITED = re.compile(r"(?<![\w./~$*<-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*"
                   r"\.(?:md|py|yaml|cu|h|cpp|json|svg|toml))(?![\w/*-])")
FOLDERS = ("docs/", "wgrad_cli/", "tests/", "results/", "kernels/", "configs/", "emu/", "runtime/",
           "shared/", "../")
NOT_OURS = {
    "extra/thunder/amd/grouped_mxfp8_wgrad.cpp": "the upstream kernel's path in tinygrad's repository",
    "extra/thunder/amd/gemm_mxfp8.cpp": "HipKittens' MXFP8 GEMM in tinygrad's "
                                        "repository (docs/model.md's calibration)",
    "extra/thunder/amd/gemm_fp8.cpp": "HipKittens' FP8 GEMM in tinygrad's "
                                      "repository (docs/model.md's calibration)",
    "rocclr/device/rocm/rocvirtual.cpp": "a file of ROCm/clr's repository",
    "csrc/py_itfs_cu/asm_gemm_a4w4.cu": "AITER's argument packing for its MXFP4 "
                                        "GEMM (docs/model.md's calibration)",
    "csrc/py_itfs_cu/asm_moe_2stage.cu": "AITER's argument packing for its fused-MoE "
                                         "stages (docs/model.md's validation)",
    "csrc/py_itfs_cu/asm_fmoe.cu": "AITER's argument packing for its one-stage fused "
                                   "MoE (docs/model.md's validation)",
    "kernels/gemm/mxfp8/MXFP8_8wave/8_wave_TN.cu": "HipKittens' 8-wave MXFP8 "
                                                   "kernel (docs/model.md's calibration)",
    "hip/hip_fp4.h": "a ROCm 7 HIP header (docs/model.md's calibration)",
    "hip_fp4.h": "a ROCm 7 HIP header (docs/model.md's calibration)",
    "amd_hip_ocp_types.h": "a ROCm 7 HIP header (docs/model.md's calibration)",
    "results/h200/no-such-file.json": "a test's file that must not exist",
    "llvm/lib/Target/AMDGPU/GCNHazardRecognizer.cpp": "LLVM's hazard recognizer "
                                                      "(docs/emulator.md's sanitizer)",
    "llvm/lib/Target/AMDGPU/GCNSubtarget.h": "LLVM's AMDGPU subtargets (docs/emulator.md's sanitizer)",
}
SKIP = {".git", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__", "build", "dist"}


def repository_files(repo: Path) -> list[Path]:
    def walk(folder: Path) -> list[Path]:
        found = []
        for p in sorted(folder.iterdir()):
            if p.is_dir():
                if p.name not in SKIP and not p.name.endswith(".egg-info"):
                    found += walk(p)
            else:
                found.append(p)
        return found

    return walk(repo)


def cited_paths(text: str, page: Path) -> list[tuple[int, str]]:
    """(line, path) of every repository file `text` cites: in a Markdown page any file name, in
    source a page of docs (*.md) or a path under one of the repository's folders."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in CITED.finditer(text)
            if page.suffix == ".md" or m.group(1).endswith(".md") or m.group(1).startswith(FOLDERS)]


def test_every_cited_file_exists(repo: Path) -> None:
    """Docs, README and source comments cite only files the repository has: a bare file name must be
    one of its files' names; a path must exist from the citing file's folder, the repository's root
    or the package's folder."""
    files = repository_files(repo)
    names = {p.name for p in files}
    sources = [p for p in files if p.suffix in (".md", ".py", ".cu", ".h", ".yaml", ".toml")
               # this file's examples are made up
               and "results" not in p.parts and p != Path(__file__).resolve()]
    missing = []
    for page in sources:
        for line, path in cited_paths(page.read_text(), page):
            found = path in names if "/" not in path else any(
                (base / path).exists() for base in (page.parent, repo, repo / "wgrad_cli"))
            if not found and path not in NOT_OURS:
                missing.append(f"{page.relative_to(repo)}:{line}: {path}")
    assert sources and missing == []


def test_the_path_scan_finds_what_it_must() -> None:
    page = Path("wgrad_cli/problem/abi.py")
    text = "a contract (../shared/ABI.md) and kernels/x.yaml; not results/*.json, https://a.b/c.md or k.cu"
    assert [p for _, p in cited_paths(text, page)] == ["../shared/ABI.md", "kernels/x.yaml"]


def test_the_peak_the_results_page_names_is_the_one_the_files_record_and_divide_by(repo: Path) -> None:
    """docs/nvidia-results.md says what `% peak` is of; every bench file under results/h200 and
    results/h100 records that peak and divides its rows' TFLOP/s by it, and it is the datasheet rate
    wgrad knows for both cards (the same dense FP8 rate)."""
    prose = " ".join((repo / "docs" / "nvidia-results.md").read_text().split())
    (label, rate), = re.findall(r"`% peak` \([^)]*\) is against the datasheet's dense (\w+) "
                                r"rate, ([\d,]+) TFLOP/s", prose)
    tflops = float(rate.replace(",", ""))
    assert DATASHEET["H200"][0] == DATASHEET["H100 80GB HBM3"][0] == tflops and label == "FP8"
    files = sorted([*(repo / "results" / "h200").glob("bench-*.json"),
                    *(repo / "results" / "h100").glob("bench-*.json")])
    assert files
    for path in files:
        doc = read_document(path)
        peak = doc.provenance.peak
        assert peak and (peak.matrix_label, peak.matrix_tflops) == (label, tflops), path
        for r in doc.bench_rows:
            assert r.calibration or r.pct_peak == pytest.approx(100 * r.tflops / tflops), (path, r.kernel)


def test_timing_names_the_power_reading_the_code_takes(repo: Path) -> None:
    spec = importlib.util.find_spec("wgrad_cli.device.cuda")
    assert spec is not None and spec.origin is not None
    read = set(re.findall(r"NVML_FI_DEV_POWER_\w+", Path(spec.origin).read_text()))
    timing = (repo / "docs" / "timing.md").read_text()
    assert (read and read <= set(re.findall(r"NVML_FI_DEV_POWER_\w+", timing))
            and "trailing average" not in timing)


NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}


def test_the_readme_counts_the_model_configs(repo: Path) -> None:
    """A model config describes an MoE layer ("... MoE wgrad (hidden ...)"); the README counts them."""
    (word,) = re.findall(r"the MoE layers of (\w+) open models",
                         " ".join((repo / "README.md").read_text().split()))
    models = [name for name, path in shipped_configs().items()
              if "MoE wgrad" in yaml.safe_load(path.read_text())["description"]]
    assert NUMBERS[word] == len(models), models
