"""The package as a user installs it: the wheel ships every kernel and config from the top-level
kernels/ and configs/ folders and, in a fresh virtual environment, run from a directory that is not
the checkout, finds them and builds a shipped config."""

from __future__ import annotations

import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from checkout import REPO, tracked

from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.results.document import source_files


def test_source_hash_covers_every_kernel_file() -> None:
    hashed = {name for name, _ in source_files()}
    assert {f"kernels/{Path(p).name}" for p in tracked("kernels")} - {"kernels/__init__.py"} <= hashed
    assert "cli.py" in hashed and "kernels/reference.cu" in hashed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the build package (in .[test]) makes the wheel")
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
                           capture_output=True, text=True)
    if built.returncode and "Could not find a version" in built.stdout + built.stderr:
        pytest.skip("no package index reachable for the wheel's build requirements")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [found] = dist.glob("wgrad-*.whl")
    return found


def test_wheel_ships_every_kernel_and_config(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("kernels", "configs"):
        shipped = {Path(n).name for n in names if n.startswith(f"wgrad_cli/{folder}/")}
        assert shipped == {Path(p).name for p in tracked(folder)}, folder
    assert not any(n.startswith(("kernels/", "configs/")) for n in names)


def test_wheel_works_from_any_directory(wheel: Path, amd_compiler: Compiler, tmp_path: Path) -> None:
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    # the package only from the wheel; its dependencies from this interpreter's site directories, added
    # after the venv's own (not --system-site-packages: made from CI's .venv, that is the base Python's)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    sites = "; ".join(f"site.addsitedir({d!r})" for d in site.getsitepackages())
    (Path(purelib) / "wgrad-tests-parent.pth").write_text(f"import site; {sites}\n")
    elsewhere.mkdir()
    where = subprocess.run([str(python), "-c", "import wgrad_cli.kernels as k; print(k.__file__)"],
                           cwd=elsewhere, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where
    run = subprocess.run([str(venv / "bin" / "wgrad"), "build", "--config", "smoke", "--target", "gfx950",
                          "--cache-dir", str(tmp_path / "cache")], cwd=elsewhere, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4/4 builds ok" in run.stdout + run.stderr
