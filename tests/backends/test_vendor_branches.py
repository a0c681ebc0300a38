"""Every vendor, target or emulator difference is a method or field of its target's backend
(wgrad_cli/backends/): outside it, no code compares a vendor, names a target, tests a compiler's kind
or asks whether a device is the emulated one."""

from __future__ import annotations

import ast
from pathlib import Path

from wgrad_cli.config.targets import TARGETS

PACKAGE = Path(__file__).resolve().parent.parent.parent / "wgrad_cli"
# the backends; the table of targets; the modules that are one vendor's or one target's own
# implementation (its driver binding, its code object format, gfx950's emulator), named by the backend
OWN = ("wgrad_cli.backends", "wgrad_cli.config.targets", "wgrad_cli.device.hip", "wgrad_cli.device.cuda",
       "wgrad_cli.compile.hsaco", "wgrad_cli.compile.cubin", "wgrad_cli.emu")
NAMES = {t.name for t in TARGETS.values()} | {t.device_arch for t in TARGETS.values()}
VENDORS = {t.vendor for t in TARGETS.values()}
COMPILER_KINDS = {"hipcc", "clang", "zig", "nvcc"}


def branches(source: str) -> list[str]:
    """Each place in `source` that tells targets, vendors, compilers or devices apart by name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and node.value in NAMES:
            found.append((line, f"names the target {node.value!r}"))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            values = {s.value for s in sides if isinstance(s, ast.Constant)}
            if values & VENDORS or any(isinstance(s, ast.Attribute) and s.attr == "vendor" for s in sides):
                found.append((line, "compares a vendor"))
            if values & COMPILER_KINDS:
                found.append((line, "compares a compiler's kind"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
              and "Emulated" in ast.unparse(node.args[1])):
            found.append((line, "asks whether the device is the emulated one"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_the_check_sees_each_kind_of_branch() -> None:
    source = ('if t.vendor == "amd": pass\nx = "gfx950"\nif c.kind != "nvcc": pass\n'
              'if isinstance(d, Emulated): pass\ny = "sm_90"\n')
    assert [b.split(": ")[1] for b in branches(source)] == [
        "compares a vendor", "names the target 'gfx950'", "compares a compiler's kind",
        "asks whether the device is the emulated one", "names the target 'sm_90'"]


def module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_no_vendor_target_or_device_branch_outside_the_backends() -> None:
    found = [f"{path.relative_to(PACKAGE)} {b}" for path in sorted(PACKAGE.rglob("*.py"))
             if not any(module(path) == own or module(path).startswith(own + ".") for own in OWN)
             for b in branches(path.read_text())]
    assert found == []
