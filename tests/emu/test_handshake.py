"""Workgroups that wait for one another make progress on the emulator: one spins on a global flag
that another sets, in either order of workgroups and of code, within one batch, across batches of
one worker process and across worker processes (up to the workgroups an MI355X holds resident:
machine.py, dispatch.py). Lowest-PC-first scheduling alone never runs a store placed after a spin."""

from __future__ import annotations

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, listing, run
from wgrad_cli.emu.device import EmuRuntime

SPIN = "do { seen = *(volatile int *)flag; } while (seen == 0);"
SET = "*(volatile int *)flag = 7;"
KERNELS = {  # where clang-22 puts the setter's store: at a higher address than the spin loop, or lower
    "store after the spin": f"""
KERNEL void handshake(int *flag, int *out, int waiter, int setter) {{
  int g = gid(), seen = -1;
  if (g == waiter) {{ {SPIN} }}
  if (g == setter && tid() == 0) {SET}
  out[g * 256 + tid()] = seen;
}}""",
    "store before the spin": f"""
KERNEL void handshake(int *flag, int *out, int waiter, int setter) {{
  int g = gid(), seen = -1;
  if (g == waiter) {{ {SPIN} }} else if (g == setter && tid() == 0) {{ {SET} }}
  out[g * 256 + tid()] = seen;
}}""",
}


def store_after_spin(image: bytes) -> bool:
    """Whether the flag's store lies at a higher address than the spin loop's branch back."""
    lines = listing(image).splitlines()
    store = next(i for i, line in enumerate(lines) if "flat_store_dword" in line)
    loop = next(i for i, line in enumerate(lines) if "s_cbranch_execnz" in line)
    return store > loop


# the same with device-scope acquire and release atomics, as a lock is written: clang-22 adds the
# cache writeback and invalidate (buffer_wbl2, buffer_inv) that the hardware needs around them
ATOMICS = """
KERNEL void handshake(int *flag, int *out, int waiter, int setter) {
  int g = gid(), seen = -1;
  if (g == waiter) {
    do { seen = __hip_atomic_load(flag, __ATOMIC_ACQUIRE, 4); } while (seen == 0);  // 4: agent scope
  } else if (g == setter && tid() == 0) {
    __hip_atomic_store(flag, 7, __ATOMIC_RELEASE, 4);
  }
  out[g * 256 + tid()] = seen;
}"""
SHAPES = [(2, 1), (1024, 1), (1024, 2)]  # 1024 workgroups of 4 waves: two batches of 2048 waves; two workers


@pytest.mark.parametrize("layout", sorted(KERNELS))
@pytest.mark.parametrize("groups, workers", SHAPES)
@pytest.mark.parametrize("waiter_first", [True, False])
def test_a_workgroup_spinning_on_a_flag_another_sets_completes(layout: str, groups: int, workers: int,
                                                               waiter_first: bool) -> None:
    image = compile_hip(KERNELS[layout])
    assert store_after_spin(image) == (layout == "store after the spin")
    handshake(image, groups, workers, waiter_first)


@pytest.mark.parametrize("groups, workers", SHAPES)
@pytest.mark.parametrize("waiter_first", [True, False])
def test_a_handshake_through_acquire_and_release_atomics_completes(groups: int, workers: int,
                                                                   waiter_first: bool) -> None:
    image = compile_hip(ATOMICS)
    assert_uses(image, "buffer_wbl2", "buffer_inv")
    handshake(image, groups, workers, waiter_first)


def handshake(image: bytes, groups: int, workers: int, waiter_first: bool) -> None:
    waiter, setter = (0, groups - 1) if waiter_first else (groups - 1, 0)
    _, out = run(image, [np.zeros(1, np.int32), np.zeros(groups * 256, np.int32), waiter, setter],
                 grid=groups, block=256, rt=EmuRuntime(workers=workers, timeout=60))
    want = np.full((groups, 256), -1, np.int32)
    want[waiter] = 7
    assert (out.reshape(groups, 256) == want).all()
