"""AMD through hip-python (hipInit, hipModuleLoadData, hipModuleLaunchKernel, ...).

Mirrors cuda.py call for call. Supported: hip-python 7.0.x to 7.2.x (ROCm 7.0 to 7.2: match the
first three numbers to the ROCm installed) and 10.x, a compatibility package over
rocm-bindings-hip. They differ where this file touches them: 7.x takes a caller-allocated
hipDeviceProp_t and returns C strings as bytes, and opens `libamdhip64.so` by its bare name (the
loader path); 10.x returns the properties, gives str, and looks in $ROCM_PATH, $ROCM_HOME and
/opt/rocm first. tests/device/test_hip_standin.py runs this file under both against a stand-in
libamdhip64.so, which can hand launches to wgrad's emulator; no launch of it has run on an AMD GPU.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from collections.abc import Callable
from typing import Any

from hip import hip

from wgrad_cli.device.runtime import UNREPORTED, DeviceInfo, DriverRuntime, Reading, c_text, checked, ready
from wgrad_cli.errors import DriverError

HIP_PYTHON = importlib.metadata.version("hip-python")
RETURNS_PROPS = int(HIP_PYTHON.split(".")[0]) >= 10  # hipGetDeviceProperties(deviceId) -> (status, props)

HINTS = {
    "hipErrorOutOfMemory": "the problem does not fit in device memory: choose a smaller shape",
    "hipErrorNoBinaryForGpu": "the code object was built for another architecture: check --target",
    "hipErrorInvalidImage": "the code object is not an HSA code object for this device: rebuild it",
    "hipErrorIllegalAddress": "the kernel read or wrote out of bounds: run it with AMD_LOG_LEVEL=1",
    "hipErrorInvalidDevice": "no such device: see amd-smi list for the devices there are",
}
# HIP refuses a launch this way before it runs, not only after a fault: a block above the kernel's
# .max_flat_workgroup_size gives hipErrorLaunchFailure, dynamic LDS above the CU's gives
# hipErrorInvalidValue (launch.prepare checks both first, from the code object's metadata).
LAUNCH_HINTS = {
    **HINTS,
    "hipErrorLaunchFailure": "the block may exceed the kernel's launch bounds (.max_flat_workgroup_size), "
                             "or the kernel faulted: run it with AMD_LOG_LEVEL=1",
    "hipErrorInvalidValue": "the runtime refused the launch's geometry: dynamic LDS beyond the CU's 160 "
                            "KiB, or a grid or block it cannot run",
}


def _ok(call: str, result: tuple[Any, ...], hints: dict[str, str] = HINTS) -> Any:
    return checked(call, result, hip.hipError_t.hipSuccess, hip.hipGetErrorString, hints, "HIP runtime API")


def no_device_hint() -> str:
    """Why the HIP runtime sees no GPU, from what this process can see: the usual first-run causes."""
    for variable in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        if variable in os.environ:
            return (f"${variable}={os.environ[variable]!r} may hide every GPU: unset it, or list the devices "
                    "(amd-smi list shows them)")
    if not os.path.exists("/dev/kfd"):
        return ("/dev/kfd does not exist: the amdgpu driver is not loaded (modprobe amdgpu), or this "
                "container was started without --device=/dev/kfd --device=/dev/dri")
    if not os.access("/dev/kfd", os.R_OK | os.W_OK):
        return ("this user may not open /dev/kfd: add it to the render and video groups (sudo usermod -aG "
                "render,video $USER, then log in again)")
    return "check amd-smi list, and that /dev/dri/renderD* are readable by this user (render group)"


def library_hint(message: str) -> str:
    """Why hip-python could not load libamdhip64.so and what to do, from its "failed to dlopen 'b'NAME'':
    b'REASON'" (the loader's reason names the file it did not find)."""
    found = re.fullmatch(r"failed to dlopen '(?:b')?(.*?)'?': (?:b')?(.*?)'?", message)
    reason = found.group(2) if found else message
    where = ("put ROCm's lib directory on the loader path (LD_LIBRARY_PATH=/opt/rocm/lib: hip-python "
             f"{HIP_PYTHON} opens the bare name only)" if not RETURNS_PROPS else
             f"set ROCM_PATH to the ROCm install (hip-python {HIP_PYTHON} looks in $ROCM_PATH/lib, "
             "$ROCM_HOME/lib and /opt/rocm/lib, then the loader path)")
    missing = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", reason)
    if missing and missing.group(1).startswith("libamdhip64"):
        return (f"hip-python found no libamdhip64.so; install ROCm 7 (7.0 or later for gfx950), or {where} "
                f"({reason})")
    if missing:
        return (f"hip-python could not load libamdhip64.so: {missing.group(1)}, which it needs, is not "
                "found; the ROCm install is incomplete, or its lib directory is not on LD_LIBRARY_PATH "
                f"({reason})")
    return f"hip-python could not load libamdhip64.so ({reason}); repair the ROCm install, or {where}"


def amdsmi_version() -> str | None:
    """The installed amdsmi package's version; None where it is not installed."""
    try:
        return importlib.metadata.version("amdsmi")
    except importlib.metadata.PackageNotFoundError:
        return None


# bits 0-15 of gpu_metrics' ASIC-independent throttle status (amdgpu's SMU_THROTTLER_*)
POWER_THROTTLERS = 0xFFFF


def _amdsmi_sensors(bus_id: str) -> Callable[[], Reading]:
    """Read the device's GFX clock (MHz), socket power (W: amdsmi's current_socket_power, the instant
    reading of MI300 and later) and whether the package power limit holds the clock down through amdsmi
    (installed with ROCm); None for any reading it cannot give. The limit: amdsmi's violation status
    (active_ppt_pwr, MI300 and later), else gpu_metrics' indep_throttle_status, which only metrics
    tables up to v1.3 carry (MI350 fills v1.8)."""
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handle_from_bdf(bus_id)
    except Exception:  # amdsmi missing, or its own AmdSmiException: none is then reported
        return lambda: UNREPORTED

    def read(get: Callable[[], object]) -> object:
        try:
            return get()
        # AmdSmiException where the driver cannot read a sensor, KeyError where a field is absent
        except Exception:
            return None

    def power() -> float | None:
        watts = read(lambda: amdsmi.amdsmi_get_power_info(handle)["current_socket_power"])
        # "N/A" where the card has no such sensor
        return float(watts) if isinstance(watts, int | float) else None

    def capped() -> bool | None:
        violation = read(lambda: amdsmi.amdsmi_get_violation_status(handle)["active_ppt_pwr"])
        if isinstance(violation, bool | int):
            return bool(violation)
        status = read(lambda: amdsmi.amdsmi_get_gpu_metrics_info(handle)["indep_throttle_status"])
        return bool(status & POWER_THROTTLERS) if isinstance(status, int) else None  # "N/A": not reported

    def clock() -> int | None:
        mhz = read(lambda: amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)["clk"])
        return mhz if isinstance(mhz, int) else None

    return lambda: Reading(clock(), power(), capped())


def open_device(index: int) -> HipRuntime:
    try:
        _ok("hipInit", hip.hipInit(0), {"hipErrorNoDevice": no_device_hint()})
    except RuntimeError as exc:  # hip-python could not dlopen libamdhip64.so (or a library it needs)
        raise DriverError(f"no HIP runtime: {library_hint(str(exc))}") from None
    count = _ok("hipGetDeviceCount", hip.hipGetDeviceCount(), {"hipErrorNoDevice": no_device_hint()})
    if not 0 <= index < count:
        raise DriverError(f"--device {index}: the HIP runtime sees {count} device(s); choose 0..{count - 1}"
                          if count else f"the HIP runtime sees no device; {no_device_hint()}")
    return HipRuntime(index)


def _device_props(index: int) -> Any:
    """The device's hipDeviceProp_t: hip-python 10 returns it, 7.x fills one the caller allocates."""
    if RETURNS_PROPS:
        return _ok("hipGetDeviceProperties", hip.hipGetDeviceProperties(index))
    props = hip.hipDeviceProp_t()
    _ok("hipGetDeviceProperties",
        hip.hipGetDeviceProperties(props, index))  # type: ignore[call-arg]  # 7.x form
    return props


def _hip_version(encoded: int) -> str:
    """HIP_VERSION's encoding, major * 10^7 + minor * 10^5 + patch, as major.minor.patch."""
    return f"{encoded // 10_000_000}.{encoded // 100_000 % 100}.{encoded % 100_000}"


class HipRuntime(DriverRuntime):
    def __init__(self, index: int) -> None:
        _ok("hipSetDevice", hip.hipSetDevice(index))
        props = _device_props(index)
        driver = int(_ok("hipDriverGetVersion", hip.hipDriverGetVersion()))
        runtime = int(_ok("hipRuntimeGetVersion", hip.hipRuntimeGetVersion()))
        smi = amdsmi_version()
        super().__init__(_amdsmi_sensors(c_text(_ok("hipDeviceGetPCIBusId",
                                                    hip.hipDeviceGetPCIBusId(64, index)))))
        self.device = DeviceInfo(
            vendor="amd", index=index, name=c_text(props.name), arch=c_text(props.gcnArchName).split(":")[0],
            units=int(props.multiProcessorCount), max_clock_mhz=int(props.clockRate) // 1000,
            memory_bytes=int(props.totalGlobalMem), l2_bytes=int(props.l2CacheSize),
            driver=f"HIP driver {_hip_version(driver)}",
            runtime=f"HIP runtime {_hip_version(runtime)}, hip-python {HIP_PYTHON}, " + (
                f"amdsmi {smi}" if smi else "no amdsmi (no clock or power readings: pip install "
                                            "/opt/rocm/share/amd_smi)"))

    def alloc(self, nbytes: int) -> int:
        return int(_ok("hipMalloc", hip.hipMalloc(nbytes)))

    def _free(self, ptr: int) -> None:
        _ok("hipFree", hip.hipFree(ptr))

    def copy_in(self, ptr: int, address: int, nbytes: int) -> None:
        _ok("hipMemcpyHtoD", hip.hipMemcpyHtoD(ptr, address, nbytes))

    def copy_out(self, address: int, ptr: int, nbytes: int) -> None:
        _ok("hipMemcpyDtoH", hip.hipMemcpyDtoH(address, ptr, nbytes))

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        _ok("hipMemsetD8Async", hip.hipMemsetD8Async(ptr, byte, nbytes, None))

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        """HIP needs no opt-in for large dynamic LDS (CUDA's cuFuncSetAttribute): the
        launch's size is checked."""
        module = _ok("hipModuleLoadData", hip.hipModuleLoadData(image))
        self._modules.append(module)
        return _ok("hipModuleGetFunction", hip.hipModuleGetFunction(module, symbol.encode()))

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int,
               kernel_params: int) -> None:
        _ok("hipModuleLaunchKernel",
            hip.hipModuleLaunchKernel(function, grid, 1, 1, block, 1, 1, dynamic_shared, None, kernel_params,
                                      None),
            LAUNCH_HINTS)

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        per_unit = _ok("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
                       hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(function, block,
                                                                              dynamic_shared))
        # AMD GPUs have no clusters: any `cluster` workgroups run apart
        return int(per_unit) * self.device.units

    def event(self) -> object:
        return _ok("hipEventCreate", hip.hipEventCreate())

    def record(self, event: object) -> None:
        _ok("hipEventRecord", hip.hipEventRecord(event, None))

    def done(self, event: object) -> bool:
        return ready("hipEventQuery", hip.hipEventQuery(event), hip.hipError_t.hipErrorNotReady, _ok)

    def elapsed_ms(self, start: object, stop: object) -> float:
        return float(_ok("hipEventElapsedTime", hip.hipEventElapsedTime(start, stop)))

    def _unload(self, module: object) -> None:
        _ok("hipModuleUnload", hip.hipModuleUnload(module))
