"""The runtime shims' failure paths that need no GPU: status checks, missing binding packages.

These call the real bindings (hip-python, cuda-bindings) with real status codes; only the
device itself is absent.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from wgrad_cli.backends.registry import open_runtime
from wgrad_cli.device.runtime import c_text
from wgrad_cli.errors import DriverError


def _shim(vendor: str) -> tuple[Any, Any, Any]:
    """(the shim's _ok, a failure status, the success status) from the real binding."""
    if vendor == "amd":
        from hip import hip

        from wgrad_cli.device.hip import _ok as hip_ok
        return hip_ok, hip.hipError_t.hipErrorOutOfMemory, hip.hipError_t.hipSuccess
    from cuda.bindings import driver as cu

    from wgrad_cli.device.cuda import _ok as cuda_ok
    return cuda_ok, cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, cu.CUresult.CUDA_SUCCESS


# without libamdhip64.so, hip-python's hipGetErrorString reports its failed load as an unraisable exception
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("vendor, code",
                         [("amd", "hipErrorOutOfMemory"), ("nvidia", "CUDA_ERROR_OUT_OF_MEMORY")])
def test_failed_call_names_call_code_and_remedy(vendor: str, code: str) -> None:
    ok, failure, success = _shim(vendor)
    with pytest.raises(DriverError) as exc:
        ok("alloc call", (failure, 0))
    (line,) = exc.value.lines
    assert line.startswith(f"alloc call failed: {code} (") and line.endswith("choose a smaller shape")
    assert exc.value.exit_code == 2
    assert ok("count call", (success, 3)) == 3 and ok("two values", (success, 1, 2)) == (1, 2)


@pytest.mark.parametrize("vendor, binding, package", [("nvidia", "cuda.bindings", "cuda-bindings"),
                                                      ("amd", "hip", "hip-python")])
def test_missing_binding_package(vendor: str, binding: str, package: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without the binding package: the import fails for real (sys.modules entry None)."""
    monkeypatch.setitem(sys.modules, binding, None)
    for shim in ("wgrad_cli.device.cuda", "wgrad_cli.device.hip"):
        monkeypatch.delitem(sys.modules, shim, raising=False)
    with pytest.raises(DriverError) as exc:
        open_runtime(vendor, 0)  # type: ignore[arg-type]
    (line,) = exc.value.lines
    assert line.startswith(f"no {vendor} runtime: ") and package in line and "pip install" in line
    importlib.invalidate_caches()


def test_c_text_reads_every_binding_string_form() -> None:
    """cuda-bindings returns NUL-padded bytes; hip-python returns str fields and CStr objects (by version)."""
    from hip import hip

    CStr = pytest.importorskip("rocm.bindings.util.types", reason="hip-python < 10 has no CStr").CStr
    props = hip.hipDeviceProp_t()
    assert c_text(props.gcnArchName) == ""
    assert c_text(CStr(b"0000:03:00.0")) == "0000:03:00.0"
    assert c_text(b"NVIDIA H200\0\0\0") == "NVIDIA H200"
    assert c_text("gfx950:sramecc+:xnack-") == "gfx950:sramecc+:xnack-"
    assert c_text(None) == ""
