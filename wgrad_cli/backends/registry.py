"""Every target's backend, by target and by vendor, and what is asked of them all together."""

from __future__ import annotations

from collections.abc import Sequence

from wgrad_cli.backends.base import Backend
from wgrad_cli.backends.gfx950 import Gfx950
from wgrad_cli.backends.sm90a import Sm90a
from wgrad_cli.config.options import (EMU_CPU_SECONDS, EMULATED, HIP_STACK_BYTES, Device, Emulated,
                                      EmulatorOptions)
from wgrad_cli.config.targets import Target, Vendor
from wgrad_cli.device.runtime import DeviceInfo, Runtime
from wgrad_cli.errors import WgradError
from wgrad_cli.results.records import Peak

BACKENDS: dict[str, Backend] = {"gfx950": Gfx950(), "sm_90a": Sm90a()}
BY_VENDOR: dict[Vendor, Backend] = {b.vendor: b for b in BACKENDS.values()}
EMULATED_TARGET = next(name for name, b in BACKENDS.items() if b.emulated)  # what --device emu runs


def backend(target: Target | str) -> Backend:
    """The backend of a target (or target name)."""
    return BACKENDS[target if isinstance(target, str) else target.name]


def open_runtime(vendor: Vendor, index: Device) -> Runtime:
    """A Runtime on device `index` of `vendor` (or its emulated device); DriverError (one line, exit 2)
    if there is none."""
    return BY_VENDOR[vendor].open_runtime(index)


def peak(device: DeviceInfo) -> Peak | None:
    """The device's peaks, or None for a device its backend does not know (bench then omits % of peak)."""
    return BY_VENDOR[device.vendor].peak(device)


def emulated_device(device: Device, options: EmulatorOptions, kernel_timeout: float | None) -> Device:
    """The device with verify's emulator options (--strict-lds, --emu-stack-bytes, --emu-register-fill)
    applied; WgradError for any of them on a GPU. The emulator runs a launch itself, so it keeps
    --kernel-timeout itself (None: EMU_CPU_SECONDS of CPU time)."""
    if not isinstance(device, Emulated):
        given = [why for chosen, why in (
            (options.strict_lds, "--strict-lds: only the emulated device checks LDS accesses"),
            (options.stack_bytes is not None,
             "--emu-stack-bytes: only the emulated device takes its stack size from wgrad"),
            (options.register_fill is not None,
             "--emu-register-fill: only the emulated device's registers start with a value wgrad chooses"),
            (options.sanitize, "--sanitize: only the emulated device watches each wave's waits and LDS "
                               "accesses"))
            if chosen]
        if given:
            raise WgradError(f"{given[0]}; add --device emu")
        return device
    return Emulated(options.strict_lds,
                    # rounded up as hipDeviceSetLimit does
                    -(-(options.stack_bytes or HIP_STACK_BYTES) // 16) * 16,
                    kernel_timeout or EMU_CPU_SECONDS, options.register_fill or 0, options.sanitize)


def emulated_only(device: Device, what: str) -> Emulated:
    """The device, which must be the emulated one for `what`; WgradError otherwise."""
    if not isinstance(device, Emulated):
        raise WgradError(f"{what} run on the emulated {EMULATED_TARGET}; add --device emu (not --device "
                         f"{device})")
    return device


def without_gpu(device: Device, targets: Sequence[str], config: str) -> str | None:
    """Where a run on a GPU found none: the line saying what runs here instead, for the config as the
    user gave it; None where the emulator runs none of `targets`."""
    if isinstance(device, Emulated) or EMULATED_TARGET not in targets:
        return None
    return (f"without a GPU: wgrad verify --config {config} --device {EMULATED} checks the "
            f"{EMULATED_TARGET} kernels on the emulated MI355X; wgrad model --config {config} models their "
            "time")


def check_timed(device: Device) -> None:
    """bench: the device must have a clock to time kernels by (the emulator has none)."""
    if isinstance(device, Emulated):
        raise WgradError(f"bench: --device {EMULATED} runs kernels functionally, with no clock to time them; "
                         f"wgrad verify --device {EMULATED} records what each kernel executed, and wgrad "
                         "model models its time on an MI355X (docs/model.md)")
