"""NVIDIA through cuda-bindings' driver API (cuInit, cuModuleLoadData, cuLaunchKernel, ...).

Mirrors hip.py call for call. cuda-bindings returns (status, values...) from every call;
`_ok` checks the status where the call is made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cuda.bindings
import pynvml
from cuda.bindings import driver as cu

from wgrad_cli.device.runtime import UNREPORTED, DeviceInfo, DriverRuntime, Reading, c_text, checked, ready
from wgrad_cli.errors import DriverError

HINTS = {
    "CUDA_ERROR_OUT_OF_MEMORY": "the problem does not fit in device memory: choose a smaller shape",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "the code object was built for another architecture: check --target",
    "CUDA_ERROR_INVALID_IMAGE": "the code object is not a cubin for this device: rebuild it",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "the kernel read or wrote out of bounds: run it under compute-sanitizer",
    "CUDA_ERROR_LAUNCH_FAILED": "the kernel faulted: run it under compute-sanitizer",
    "CUDA_ERROR_INVALID_DEVICE": "no such device: see nvidia-smi for the devices there are",
}


def _ok(call: str, result: tuple[Any, ...]) -> Any:
    return checked(call, result, cu.CUresult.CUDA_SUCCESS, cu.cuGetErrorString, HINTS, "CUDA driver API")


POWER_CAPS = pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown


def _nvml_sensors(bus_id: str) -> Callable[[], Reading]:
    """Read the device's SM clock (MHz), instantaneous board power (W) and whether a power limit holds
    the clock down (NVML's clock event reasons: the software power cap or the power brake) through
    NVML (nvidia-ml-py); None where NVML cannot be used. The power is NVML's instant field, not
    nvmlDeviceGetPowerUsage, which Hopper averages over a second, longer than most launches."""
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    except pynvml.NVMLError:
        return lambda: UNREPORTED

    def power() -> float | None:
        try:
            field = pynvml.nvmlDeviceGetFieldValues(handle, [pynvml.NVML_FI_DEV_POWER_INSTANT])[0]
        except pynvml.NVMLError:  # a driver without field queries
            return None
        return field.value.uiVal / 1e3 if field.nvmlReturn == pynvml.NVML_SUCCESS else None  # mW

    def capped() -> bool | None:
        try:
            return bool(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle) & POWER_CAPS)
        except pynvml.NVMLError:  # a device or driver that does not report the reasons
            return None

    def clock() -> int:
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))

    return lambda: Reading(clock(), power(), capped())


def open_device(index: int) -> CudaRuntime:
    try:
        _ok("cuInit", cu.cuInit(0))
    except RuntimeError:  # the driver library itself is missing (cuda-pathfinder's error)
        raise DriverError("no NVIDIA driver: cuda-bindings found no libcuda.so; install the NVIDIA driver "
                          "(nvidia-smi must list a GPU) or run on a machine with one") from None
    count = _ok("cuDeviceGetCount", cu.cuDeviceGetCount())
    if not 0 <= index < count:
        raise DriverError(f"--device {index}: the NVIDIA driver sees {count} device(s); choose 0..{count - 1}"
                          if count else "the NVIDIA driver sees no device; check nvidia-smi")
    return CudaRuntime(index)


class CudaRuntime(DriverRuntime):
    def __init__(self, index: int) -> None:
        A = cu.CUdevice_attribute
        self._dev = _ok("cuDeviceGet", cu.cuDeviceGet(index))
        self._ctx = _ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self._dev))
        _ok("cuCtxSetCurrent", cu.cuCtxSetCurrent(self._ctx))

        def attr(a: Any) -> int:
            return int(_ok("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(a, self._dev)))

        major, minor = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), \
            attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        driver = int(_ok("cuDriverGetVersion", cu.cuDriverGetVersion()))
        name = _ok("cuDeviceGetName", cu.cuDeviceGetName(256, self._dev))
        super().__init__(_nvml_sensors(c_text(_ok("cuDeviceGetPCIBusId",
                                                  cu.cuDeviceGetPCIBusId(64, self._dev)))))
        self.device = DeviceInfo(
            vendor="nvidia", index=index, name=c_text(name), arch=f"sm_{major}{minor}",
            units=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_clock_mhz=attr(A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE) // 1000,
            memory_bytes=int(_ok("cuDeviceTotalMem", cu.cuDeviceTotalMem(self._dev))),
            l2_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            driver=f"CUDA driver API {driver // 1000}.{driver % 1000 // 10}",
            runtime=f"cuda-bindings {cuda.bindings.__version__}")

    def alloc(self, nbytes: int) -> int:
        return int(_ok("cuMemAlloc", cu.cuMemAlloc(nbytes)))

    def _free(self, ptr: int) -> None:
        _ok("cuMemFree", cu.cuMemFree(ptr))

    def copy_in(self, ptr: int, address: int, nbytes: int) -> None:
        _ok("cuMemcpyHtoD", cu.cuMemcpyHtoD(ptr, address, nbytes))

    def copy_out(self, address: int, ptr: int, nbytes: int) -> None:
        _ok("cuMemcpyDtoH", cu.cuMemcpyDtoH(address, ptr, nbytes))

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        _ok("cuMemsetD8Async", cu.cuMemsetD8Async(ptr, byte, nbytes, 0))

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        module = _ok("cuModuleLoadData", cu.cuModuleLoadData(image))
        self._modules.append(module)
        function = _ok("cuModuleGetFunction", cu.cuModuleGetFunction(module, symbol.encode()))
        # beyond 48 KiB: opt in
        attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _ok("cuFuncSetAttribute", cu.cuFuncSetAttribute(function, attribute, dynamic_shared))
        return function

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int,
               kernel_params: int) -> None:
        _ok("cuLaunchKernel",
            cu.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, dynamic_shared, 0, kernel_params, 0))

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        if cluster == 1:
            per_unit = _ok("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                           cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block, dynamic_shared))
            return int(per_unit) * self.device.units
        # the cluster size is compiled in (__cluster_dims__); the grid a multiple of it
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = max(self.device.units // cluster, 1) * cluster, \
            1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
        config.sharedMemBytes, config.numAttrs = dynamic_shared, 0
        return int(_ok("cuOccupancyMaxActiveClusters",
                       cu.cuOccupancyMaxActiveClusters(function, config))) * cluster

    def event(self) -> object:
        return _ok("cuEventCreate", cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT))

    def record(self, event: object) -> None:
        _ok("cuEventRecord", cu.cuEventRecord(event, 0))

    def done(self, event: object) -> bool:
        return ready("cuEventQuery", cu.cuEventQuery(event), cu.CUresult.CUDA_ERROR_NOT_READY, _ok)

    def elapsed_ms(self, start: object, stop: object) -> float:
        return float(_ok("cuEventElapsedTime", cu.cuEventElapsedTime(start, stop)))

    def _unload(self, module: object) -> None:
        _ok("cuModuleUnload", cu.cuModuleUnload(module))

    def _release(self) -> None:
        _ok("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(self._dev))
