"""Each (kernel, shape) of verify and bench in a process of its own, so that a crash costs one row.

A kernel under development can take its whole process down: HIP's runtime calls abort() on a GPU
memory fault ("Memory access fault by GPU node-N ... Aborted"), never returning
hipErrorIllegalAddress, and a CUDA fault leaves the context unusable for the rest of the process.
So where the runtime is a GPU driver's, each piece of work runs in a fresh child interpreter
(`python -P -m wgrad_cli.device.isolation`, the parent's wgrad) that opens the device itself; a child that
dies by a signal becomes one Crash line, and the parent goes on with the next piece. A forked child would
inherit a driver that the parent has initialized, which neither HIP nor CUDA allows.

The child gets the session's fields (the config, records, builds and seed: everything but the
runtime) and a module-level function, pickled on its stdin; it answers on its stdout. A
WgradError in the child is raised again in the parent, as the same kind (a hang stays a hang); any
other Python exception (a bug in wgrad, MemoryError) comes back as a ToolError carrying the child's
traceback: wgrad failed, not the kernel.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from wgrad_cli.device.session import Session
from wgrad_cli.errors import KernelHang, ToolError, WgradError

A = TypeVar("A")
R = TypeVar("R")


@dataclass(frozen=True)
class Crash:
    what: str  # the kernel and shape, e.g. "reference on two-zipf"
    how: str  # the signal that ended the child (SIGABRT, SIGSEGV, ...), or its exit status

    @property
    def line(self) -> str:
        return (f"{self.what} crashed the process running it ({self.how}): most likely the kernel faulted "
                "(HIP aborts on a GPU memory fault; its message is above); its row is missing, the others "
                "are kept. Run it alone with AMD_LOG_LEVEL=1 (AMD) or under compute-sanitizer (NVIDIA)")


def child_environment() -> dict[str, str]:
    """This process's environment, with the folder this wgrad_cli was imported from first on the
    child's path. With `python -P` (no current folder on the path) the child then runs the same
    wgrad as its parent, also where the parent runs in a source checkout whose wgrad_cli/ is not
    the installed one (the checkout has no wgrad_cli.kernels: setup.py maps it from kernels/)."""
    root = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not rest else os.pathsep.join([root, rest])}


def run(s: Session, what: str, work: Callable[[Session, A], R], arg: A) -> R | Crash:
    """work(s, arg), in a child process of its own where a fault could end this one (the runtime is
    crash_prone: a GPU driver's, which the child opens again through the session's backend); here
    otherwise."""
    if not s.rt.crash_prone:
        return work(s, arg)
    parts = {f.name: getattr(s, f.name) for f in fields(s) if f.name != "rt"}
    request = pickle.dumps((s.rt.device.index, parts, work, arg))
    child = subprocess.run([sys.executable, "-P", "-m", "wgrad_cli.device.isolation"], input=request,
                           stdout=subprocess.PIPE, env=child_environment())
    if child.returncode < 0:
        return Crash(what, signal.Signals(-child.returncode).name)
    try:
        ok, answer = pickle.loads(child.stdout)
    except (pickle.UnpicklingError, EOFError, ValueError):
        return Crash(what, f"exit status {child.returncode} without an answer")
    if ok:
        result: R = answer
        return result
    kind, lines = answer
    raise kind(lines)


def _answer(out: int, ok: bool, answer: Any) -> None:
    with os.fdopen(out, "wb") as f:
        pickle.dump((ok, answer), f)


def main() -> None:
    """The child: open the device, run the work, answer on the original stdout (anything
    printed goes to stderr)."""
    out = os.dup(1)
    os.dup2(2, 1)
    index, parts, work, arg = pickle.load(sys.stdin.buffer)
    try:
        rt = parts["backend"].open_runtime(index)
        try:
            answer = work(Session(rt=rt, **parts), arg)
        # the kernel still runs: answer, then end without the clean-up that would wait
        except KernelHang as exc:
            _answer(out, False, (type(exc), exc.lines))
            os._exit(exc.exit_code)
        finally:
            rt.close()
    except WgradError as exc:
        _answer(out, False, (type(exc), exc.lines))
        return
    except Exception as exc:  # wgrad's own failure (a MemoryError, a bug): the traceback says where
        lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
        _answer(out, False, (ToolError, [f"wgrad failed in the child process running this work: {exc!r}",
                                         *lines]))
        return
    _answer(out, True, answer)


if __name__ == "__main__":
    main()
