"""AMD through hip-python (hipInit, hipModuleLoadData, hipModuleLaunchKernel, ...).

Mirrors cuda.py call for call. No AMD GPU is reachable from the project's machines: this file is
checked by mypy against hip-python's type stubs (names and arities of every call), and its
failure paths without ROCm are tested; its launches have not run on hardware.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hip import hip

from wgrad_cli.runtime import UNREPORTED, DeviceInfo, DriverError, Reading, c_text, checked

HINTS = {
    "hipErrorOutOfMemory": "the problem does not fit in device memory: choose a smaller shape",
    "hipErrorNoBinaryForGpu": "the code object was built for another architecture: check --target",
    "hipErrorInvalidImage": "the code object is not an HSA code object for this device: rebuild it",
    "hipErrorIllegalAddress": "the kernel read or wrote out of bounds: run it with AMD_LOG_LEVEL=1",
    "hipErrorLaunchFailure": "the kernel faulted: run it with AMD_LOG_LEVEL=1",
    "hipErrorInvalidDevice": "no such device: see amd-smi list for the devices there are",
}


def _ok(call: str, result: tuple[Any, ...]) -> Any:
    return checked(call, result, hip.hipError_t.hipSuccess, hip.hipGetErrorString, HINTS, "HIP runtime API")


POWER_THROTTLERS = 0xFFFF  # bits 0-15 of gpu_metrics' ASIC-independent throttle status (amdgpu's SMU_THROTTLER_*)


def _amdsmi_sensors(bus_id: str) -> Callable[[], Reading]:
    """Read the device's GFX clock (MHz), socket power (W: amdsmi's current_socket_power, the instant
    reading of MI300 and later) and whether a power throttler holds the clock down (gpu_metrics'
    indep_throttle_status) through amdsmi (installed with ROCm); None where it cannot be used."""
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handle_from_bdf(bus_id)
    except Exception:  # amdsmi missing, or its own AmdSmiException: none is then reported
        return lambda: UNREPORTED

    def power() -> float | None:
        try:
            watts = amdsmi.amdsmi_get_power_info(handle).get("current_socket_power")
        except Exception:  # AmdSmiException where the driver cannot read the sensor
            return None
        return float(watts) if isinstance(watts, int | float) else None  # "N/A" where the card has no such sensor

    def capped() -> bool | None:
        try:
            status = amdsmi.amdsmi_get_gpu_metrics_info(handle).get("indep_throttle_status")
        except Exception:  # AmdSmiException where the driver has no metrics table
            return None
        return bool(status & POWER_THROTTLERS) if isinstance(status, int) else None  # "N/A": not reported

    def clock() -> int:
        return int(amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)["clk"])

    return lambda: Reading(clock(), power(), capped())


def open_device(index: int) -> HipRuntime:
    try:
        _ok("hipInit", hip.hipInit(0))
    except RuntimeError:  # hip-python could not dlopen libamdhip64.so
        raise DriverError("no HIP runtime: hip-python found no libamdhip64.so; install ROCm 7 "
                          "(amd-smi must list a GPU) or run on a machine with one") from None
    count = _ok("hipGetDeviceCount", hip.hipGetDeviceCount())
    if not 0 <= index < count:
        raise DriverError(f"--device {index}: the HIP runtime sees {count} device(s); choose 0..{count - 1}"
                          if count else "the HIP runtime sees no device; check amd-smi list")
    return HipRuntime(index)


class HipRuntime:
    def __init__(self, index: int) -> None:
        _ok("hipSetDevice", hip.hipSetDevice(index))
        props = _ok("hipGetDeviceProperties", hip.hipGetDeviceProperties(index))
        self._modules: list[Any] = []
        self._abandoned = False
        driver = int(_ok("hipDriverGetVersion", hip.hipDriverGetVersion()))
        runtime = int(_ok("hipRuntimeGetVersion", hip.hipRuntimeGetVersion()))
        self._sensors = _amdsmi_sensors(c_text(_ok("hipDeviceGetPCIBusId", hip.hipDeviceGetPCIBusId(64, index))))
        self.device = DeviceInfo(
            vendor="amd", index=index, name=c_text(props.name), arch=c_text(props.gcnArchName).split(":")[0],
            units=int(props.multiProcessorCount), max_clock_mhz=int(props.clockRate) // 1000,
            memory_bytes=int(props.totalGlobalMem), l2_bytes=int(props.l2CacheSize),
            driver=f"HIP driver {driver}", runtime=f"HIP runtime {runtime}")

    def alloc(self, nbytes: int) -> int:
        return int(_ok("hipMalloc", hip.hipMalloc(nbytes)))

    def free(self, ptr: int) -> None:
        if not self._abandoned:
            _ok("hipFree", hip.hipFree(ptr))

    def copy_in(self, ptr: int, address: int, nbytes: int) -> None:
        _ok("hipMemcpyHtoD", hip.hipMemcpyHtoD(ptr, address, nbytes))

    def copy_out(self, address: int, ptr: int, nbytes: int) -> None:
        _ok("hipMemcpyDtoH", hip.hipMemcpyDtoH(address, ptr, nbytes))

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        _ok("hipMemsetD8Async", hip.hipMemsetD8Async(ptr, byte, nbytes, None))

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        """HIP needs no opt-in for large dynamic LDS (CUDA's cuFuncSetAttribute): the launch's size is checked."""
        module = _ok("hipModuleLoadData", hip.hipModuleLoadData(image))
        self._modules.append(module)
        return _ok("hipModuleGetFunction", hip.hipModuleGetFunction(module, symbol.encode()))

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int, kernel_params: int) -> None:
        _ok("hipModuleLaunchKernel",
            hip.hipModuleLaunchKernel(function, grid, 1, 1, block, 1, 1, dynamic_shared, None, kernel_params, None))

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        per_unit = _ok("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
                       hip.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(function, block, dynamic_shared))
        return int(per_unit) * self.device.units  # AMD GPUs have no clusters: any `cluster` workgroups run apart

    def event(self) -> object:
        return _ok("hipEventCreate", hip.hipEventCreate())

    def record(self, event: object) -> None:
        _ok("hipEventRecord", hip.hipEventRecord(event, None))

    def done(self, event: object) -> bool:
        result = hip.hipEventQuery(event)
        if result[0] == hip.hipError_t.hipErrorNotReady:
            return False
        _ok("hipEventQuery", result)
        return True

    def elapsed_ms(self, start: object, stop: object) -> float:
        return float(_ok("hipEventElapsedTime", hip.hipEventElapsedTime(start, stop)))

    def sensors(self) -> Reading:
        return self._sensors()

    def abandon(self) -> None:
        self._abandoned = True

    def close(self) -> None:
        if self._abandoned:
            return
        for module in self._modules:
            _ok("hipModuleUnload", hip.hipModuleUnload(module))
