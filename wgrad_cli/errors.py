"""Every error wgrad reports: each carries one line per problem, printed without a traceback, and
the exit status it ends the run with (1: a check failed, 2: an error the user can fix, 3: a hang,
4: a crash, 5: wgrad itself failed, 6: a kernel faulted, 7: the emulator's sanitizer found something,
130: interrupted by Ctrl-C)."""

from __future__ import annotations

from collections.abc import Sequence


class WgradError(Exception):
    """A problem the user can fix; the CLI prints `lines` and exits with `exit_code`."""

    exit_code = 2

    def __init__(self, lines: Sequence[str] | str = ()) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class ConfigError(WgradError):
    """Invalid YAML config or kernel spec: every problem found, as `file:line: field: why; allowed`."""


class ToolchainError(WgradError):
    """A compiler or tool that a requested build needs is missing or unusable."""


class CompilerUnusable(ToolchainError):
    """A compiler the user named (--hip-cc, --nvcc or their variables) cannot be used."""


class CheckFailed(WgradError):
    """A check the command ran did not pass (a kernel's output, a build, a regression); the command has
    already printed what failed, and `lines` adds anything left to say."""

    exit_code = 1


class DriverError(WgradError):
    """A driver call failed, or no driver or device is there to call."""


class NoDevice(DriverError):
    """No target with work found a driver with a device to run on; `targets` are the ones tried."""

    def __init__(self, lines: Sequence[str], targets: Sequence[str]) -> None:
        super().__init__(lines)
        self.targets = tuple(targets)


class KernelFault(DriverError):
    """A kernel faulted on the device (an access outside every allocation, outside its private
    segment or LDS): its row is missing, and the rows of the rest of the run are printed and saved."""

    exit_code = 6


INTERRUPTED = "interrupted by Ctrl-C"


class Interrupted(WgradError):
    """Ctrl-C: the run stopped; the rows finished before it are printed and saved."""

    exit_code = 130


class Crashed(WgradError):
    """Work on the device killed the process that ran it; the rows of the rest of the run are kept."""

    exit_code = 4


class StoppedLaunches(WgradError):
    """Emulated launches ran past --kernel-timeout and were stopped (LaunchStopped); each was printed,
    and the rows of the rest of the run are kept. The status a hung kernel gets, without KernelHang's
    immediate exit: nothing is left running."""

    exit_code = 3


class SanitizerFindings(WgradError):
    """`verify --device emu --sanitize` found missing waits, LDS races, broken wait states or reads of
    what was never written (emu/sanitize.py); each finding was printed, one line each, and the rows
    of the run are saved."""

    exit_code = 7


class ToolError(WgradError):
    """wgrad itself failed in a child process (a Python exception: a bug, or out of memory); the lines
    are its traceback, so that it is not taken for the kernel's fault."""

    exit_code = 5


class KernelHang(WgradError):
    """Work on the device did not finish in time (waiting.py); the process must exit without clean-up."""

    exit_code = 3


class EmulatorBug(ToolError):
    """An exception inside the emulator that is neither an instruction it lacks nor a fault of the
    kernel: a bug in wgrad, never a verdict on the kernel. Its lines end with the traceback."""

    @classmethod
    def of(cls, what: str, trace: str) -> EmulatorBug:
        """The bug met while doing `what`, with the traceback (traceback.format_exc()) that shows it."""
        return cls([f"{what}: internal error of the emulator (a bug in wgrad, not a verdict on the kernel; "
                    "please report it with this traceback):", *trace.rstrip().splitlines()])


class LaunchStopped(KernelHang):
    """An emulated launch ran past --kernel-timeout and the emulator stopped it: unlike a hung GPU,
    nothing is left running, so verify goes on with its other rows and exits 3 at the end."""
