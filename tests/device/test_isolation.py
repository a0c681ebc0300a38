"""isolation.py's child: a Python exception in wgrad's own code comes back as a ToolError with the
child's traceback, not as a crash blamed on the kernel; and the child runs the parent's wgrad, not
a wgrad_cli/ folder in the current one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.config.options import Emulated
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.device import isolation
from wgrad_cli.device.session import Session
from wgrad_cli.errors import ToolError


@dataclass
class Info:
    index: Any


@dataclass
class CrashProne:
    """What run() reads of a GPU runtime; the child opens the emulated gfx950 in its place."""

    device: Info
    crash_prone: bool = True


def session() -> Session:
    return Session(config=None, target=TARGETS["gfx950"],  # type: ignore[arg-type]
                   backend=BACKENDS["gfx950"], rt=CrashProne(Info(Emulated())),  # type: ignore[arg-type]
                   records=[], builds={}, seed=0, specs={}, kernel_timeout=1.0)


def test_a_python_exception_in_the_child_is_a_tool_error() -> None:
    s = session()
    # divmod(session, 0) fails in the child with a TypeError: wgrad's failure, not the kernel's
    with pytest.raises(ToolError) as raised:
        isolation.run(s, "reference on one-expert", divmod, 0)
    assert raised.value.exit_code == 5
    text = "\n".join(raised.value.lines)
    assert text.startswith("wgrad failed in the child process running this work: TypeError(")
    assert "Traceback (most recent call last):" in text and 'isolation.py", line' in text



def test_the_child_runs_the_parents_wgrad_whatever_the_current_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a folder holding another wgrad_cli/ (a source checkout beside an installed wgrad, say):
    the child still imports the parent's, and its answer (here wgrad's own TypeError) comes back."""
    (tmp_path / "wgrad_cli").mkdir()
    (tmp_path / "wgrad_cli" / "__init__.py").write_text("raise ImportError('not the parent wgrad')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ToolError) as raised:
        isolation.run(session(), "reference on one-expert", divmod, 0)
    assert "TypeError" in raised.value.lines[0] \
        and "not the parent wgrad" not in "\n".join(raised.value.lines)
