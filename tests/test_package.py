"""The package as a user installs it: the wheel, in a fresh virtual environment, run from a directory
that is not the checkout, finds its shipped kernels and configs and builds a shipped config."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 (Debian's, for gfx950) is not installed")
def test_wheel_works_from_any_directory(tmp_path: Path) -> None:
    pytest.importorskip("build", reason="the build package (in .[test]) makes the wheel")
    dist, venv, elsewhere = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
                           capture_output=True, text=True)
    if built.returncode and "Could not find a version" in built.stdout + built.stderr:
        pytest.skip("no package index reachable for the wheel's build requirements")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [wheel] = dist.glob("wgrad-*.whl")
    # the package only from the wheel; its dependencies from this interpreter's site directories, added
    # after the venv's own (not --system-site-packages: made from CI's .venv, that is the base Python's)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    sites = "; ".join(f"site.addsitedir({d!r})" for d in site.getsitepackages())
    (Path(purelib) / "wgrad-tests-parent.pth").write_text(f"import site; {sites}\n")
    elsewhere.mkdir()
    where = subprocess.run([str(python), "-c", "import wgrad_cli; print(wgrad_cli.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where
    run = subprocess.run([str(venv / "bin" / "wgrad"), "build", "--config", "smoke", "--target", "gfx950",
                          "--cache-dir", str(tmp_path / "cache")], cwd=elsewhere, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4/4 builds ok" in run.stdout + run.stderr
