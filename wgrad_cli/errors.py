"""User-facing errors: each carries one line per problem, printed without a traceback."""

from __future__ import annotations


class WgradError(Exception):
    """A problem the user can fix; the CLI prints `lines` and exits with `exit_code`."""

    exit_code = 2

    def __init__(self, lines: list[str] | str) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class ConfigError(WgradError):
    """Invalid YAML config or kernel spec: every problem found, as `file:line: field: why; allowed`."""


class ToolchainError(WgradError):
    """A compiler or tool that a requested build needs is missing or unusable."""


class CompilerUnusable(ToolchainError):
    """A compiler the user named (--hip-cc, --nvcc or their variables) cannot be used."""


class KernelHang(WgradError):
    """Work on the device did not finish in time (waiting.py); the process must exit without clean-up."""

    exit_code = 3


class EmulatorBug(WgradError):
    """An exception inside the emulator that is neither an instruction it lacks nor a fault of the
    kernel: a bug in wgrad, never a verdict on the kernel. Its lines end with the traceback."""

    exit_code = 5

    @classmethod
    def of(cls, what: str, trace: str) -> EmulatorBug:
        """The bug met while doing `what`, with the traceback (traceback.format_exc()) that shows it."""
        return cls([f"{what}: internal error of the emulator (a bug in wgrad, not a verdict on the kernel; "
                    "please report it with this traceback):", *trace.rstrip().splitlines()])


class LaunchStopped(KernelHang):
    """An emulated launch ran past --kernel-timeout and the emulator stopped it: unlike a hung GPU,
    nothing is left running, so verify goes on with its other rows and exits 3 at the end."""
