"""Builds the stand-in HIP runtime (libamdhip64.c, a test double) and finds a Python with a given hip-python.

The stand-in is compiled with the system C compiler into ROOT/lib/libamdhip64.so, so that ROOT is
what hip-python 10.x takes as $ROCM_PATH and ROOT/lib what 7.x needs on the loader path.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import site
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "libamdhip64.c"


class Unavailable(Exception):
    """What a test needs cannot be had on this machine (no C compiler, no package index)."""


def compile_standin(root: Path, needs: str | None = None) -> Path:
    """ROOT with the stand-in at ROOT/lib/libamdhip64.so; `needs`: also link it against a library of that
    soname, built in ROOT/deps (left off the loader path, so that loading the stand-in fails as an
    incomplete ROCm install does)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise Unavailable("no C compiler (cc) to build the stand-in HIP runtime")
    (root / "lib").mkdir(parents=True, exist_ok=True)
    link: list[str] = []
    if needs:
        deps = root / "deps"
        deps.mkdir(exist_ok=True)
        stub = deps / needs
        subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,{needs}", "-o", str(stub), "-x", "c",
                        "/dev/null"],
                       check=True, capture_output=True)
        link = ["-Wl,--no-as-needed", str(stub)]  # no symbol of it is used: keep the dependency regardless
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o",
                    str(root / "lib" / "libamdhip64.so"), str(SOURCE), *link], check=True,
                   capture_output=True, text=True)
    return root


def installed_hip_python() -> str | None:
    try:
        return importlib.metadata.version("hip-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def python_with_hip_python(series: str, venvs: Path) -> tuple[Path, str]:
    """(a Python whose hip-python is of `series`, e.g. "7.1" or "10", that version): this interpreter
    where it has one, else a venv under `venvs` (kept between runs) over this interpreter's packages.

    Not `venv --system-site-packages`: made from a venv (CI's .venv), that would see the base Python's
    packages, not this one's (wgrad, numpy). A .pth file adds this interpreter's site directories after
    the venv's own, their .pth files included (wgrad's editable install), once hip-python is installed
    (pip would otherwise count the hip-python found there as installed)."""
    have = installed_hip_python()
    if have and have.split(".")[:len(series.split("."))] == series.split("."):
        return Path(sys.executable), have
    venv = venvs / f"hip-python-{series}"
    python = venv / "bin" / "python"
    if not (venv / "ready").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              f"hip-python=={series}.*"], capture_output=True, text=True, timeout=600)
        if pip.returncode != 0:
            raise Unavailable(f"pip install hip-python=={series}.* failed (no package index?): "
                              f"{(pip.stderr.strip().splitlines() or ['no output'])[-1]}")
        purelib = subprocess.run([str(python), "-c",
                                  "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip()
        sites = "; ".join(f"site.addsitedir({d!r})" for d in site.getsitepackages())
        (Path(purelib) / "wgrad-tests-parent.pth").write_text(f"import site; {sites}\n")
        (venv / "ready").touch()
    version = subprocess.run([str(python), "-c",
                              "import importlib.metadata as m; print(m.version('hip-python'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    return python, version
