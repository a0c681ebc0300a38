"""The watchdog's verdicts on their own (emu/watchdog.py): a batch repeats only when its whole state
does, a worker is quiet only with no room to start more workgroups, and a launch of several workers
is stuck only once every other worker has reported again, still quiet, or has finished. The whole
path (compiled spins, the CPU limit, a slow emulator) is in test_hangs.py and test_handshake.py."""

from __future__ import annotations

import numpy as np

from wgrad_cli.emu.machine import Batch
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.watchdog import DONE_GROUPS, FINISHED, QUIET, STATE, Watch, board


def _batch() -> Batch:
    return Batch(waves=2, waves_per_group=1, vgprs=4, agprs=1, lds_bytes=64, heap=Heap(1 << 16),
                 private_bytes=16)


def test_one_worker_is_stuck_once_its_batch_repeats_twice() -> None:
    w, b = Watch(board(1), 0), _batch()
    assert not w.stalled(b, [b], can_start=False)  # first look: nothing to compare with
    assert not w.stalled(b, [b], can_start=False)  # scalar state repeats: the vector state is hashed
    assert not w.stalled(b, [b], can_start=False)  # repeats in full: quiet, and it notes the others' reports
    assert w.stalled(b, [b], can_start=False)


def test_any_part_of_the_state_changing_is_progress() -> None:
    for change in (lambda b: b.v.__setitem__((3, 1, 63), 7), lambda b: b.s.__setitem__((5, 0), 1),
                   lambda b: b.lds.__setitem__(10, 1), lambda b: b.private.__setitem__(0, 1),
                   lambda b: b.a.__setitem__((0, 0, 0), 1), lambda b: b.pc.__setitem__(1, 8)):
        w, b = Watch(board(1), 0), _batch()
        for _ in range(3):
            w.stalled(b, [b], can_start=False)
        change(b)
        assert not w.stalled(b, [b], can_start=False)
        assert w.board[0, STATE] != QUIET


def test_room_to_start_workgroups_or_a_batch_ending_is_not_quiet() -> None:
    w, b, other = Watch(board(1), 0), _batch(), _batch()
    for _ in range(5):
        assert not w.stalled(b, [b], can_start=True)
    for _ in range(3):
        w.stalled(b, [b, other], can_start=False)
        w.stalled(other, [b, other], can_start=False)
    w.finished(other)  # what it wrote may wake b: b must stall again before its repeat counts
    assert w.board[0, DONE_GROUPS] == 2 and w.board[0, STATE] != QUIET
    # the same state, after the change: quiet, noting the others
    assert not w.stalled(b, [b], can_start=False)
    assert w.stalled(b, [b], can_start=False)


def test_a_worker_waits_for_every_other_to_report_again_still_quiet() -> None:
    shared = board(3)
    a, b, c = (Watch(shared, i) for i in range(3))
    ba, bb, bc = _batch(), _batch(), _batch()
    for _ in range(3):  # b and c reach quiet; a is still busy
        b.stalled(bb, [bb], can_start=False)
        c.stalled(bc, [bc], can_start=False)
    for _ in range(3):
        assert not a.stalled(ba, [ba], can_start=False)  # quiet, noting the others' reports
    assert not a.stalled(ba, [ba], can_start=False)  # b and c have not reported since
    b.stalled(bb, [bb], can_start=False)
    assert not a.stalled(ba, [ba], can_start=False)  # c has not
    c.retire()  # c ends: a finished worker counts as quiet for good
    assert shared[2, STATE] == FINISHED
    assert a.stalled(ba, [ba], can_start=False)


def test_a_busy_worker_keeps_the_others_going() -> None:
    shared = board(2)
    a, b = Watch(shared, 0), Watch(shared, 1)
    ba, bb = _batch(), _batch()
    for step in range(20):
        bb.s[0] = step  # b's state changes every time: it is making progress
        b.stalled(bb, [bb], can_start=False)
        assert not a.stalled(ba, [ba], can_start=False)
    assert np.array_equal(shared[:, STATE], [QUIET, 0])
