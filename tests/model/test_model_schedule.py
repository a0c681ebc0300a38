"""The grid schedule of the timing model (wgrad_cli/model/schedule.py) on made-up CU timelines:
rounds and tails, and the floors HBM and the last-level cache put on a round."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wgrad_cli.model.cu import CAUSES, CuTime
from wgrad_cli.model.machine import load
from wgrad_cli.model.schedule import Sharing, schedule

M = load("mi355x")
# a set of 1,000 clocks loading and storing 4 KiB: no round of them is bandwidth-bound, even from HBM
ONE = CuTime(1000, {**dict.fromkeys(CAUSES, 0.0), "mfma": 600.0, "memory": 400.0}, 4 * 600, 1 << 12, 1 << 12)


def test_rounds_and_the_tail_of_a_last_partial_round() -> None:
    full = schedule([0] * 512, {0: ONE}, 1, None, M)  # two full rounds of 256 CUs
    assert full.cycles == pytest.approx(2000) and full.rounds == 2 and full.causes["tail"] == pytest.approx(0)
    assert full.causes["mfma"] == pytest.approx(1200) and full.mfma_cycles == 512 * 4 * 600
    tail = schedule([0] * 257, {0: ONE}, 1, None, M)  # one workgroup in the second round
    assert tail.cycles == pytest.approx(2000)
    assert tail.causes["tail"] == pytest.approx(2000 - 257 * 1000 / 256)
    assert sum(tail.causes.values()) == pytest.approx(tail.cycles)


def test_a_longer_class_runs_on_while_the_others_wait() -> None:
    slow = replace(ONE, cycles=3000, causes={**ONE.causes, "memory": 2400.0})
    r = schedule([1] + [0] * 255, {0: ONE, 1: slow}, 1, None, M)
    assert (r.cycles == pytest.approx(3000)
            and r.causes["tail"] == pytest.approx(3000 - (255 * 1000 + 3000) / 256))
    assert r.critical == 1  # the trace shows this class's CU: the grid waits for it
    late = schedule([0] * 256 + [1] * 10 + [2] * 20,
                    {0: ONE, 1: slow, 2: replace(ONE, cycles=1500)}, 1, None, M)
    # dealt in the second round, it ends last
    assert late.critical == 1 and late.cycles == pytest.approx(1000 + 3000)
    assert schedule([0] * 300, {0: ONE}, 1, None, M).critical == 0


def test_experts_inputs_come_from_hbm_once_where_they_fit_the_last_level_cache() -> None:
    owners = [g // 256 for g in range(512)]  # two experts, one round each
    small = schedule([0] * 512, {0: ONE}, 1, Sharing(owners, {0: 1 << 20, 1: 1 << 20}), M)
    assert small.hbm_bytes == 512 * (1 << 12) + 2 * (1 << 20)  # every store, each expert's inputs once
    same = schedule([0] * 512, {0: ONE}, 1, Sharing([0] * 512, {0: 1 << 20}), M)
    assert same.hbm_bytes == 512 * (1 << 12) + (1 << 20)  # the second round finds them in the cache
    big = M.llc_bytes + 1
    again = schedule([0] * 512, {0: ONE}, 1, Sharing([0] * 512, {0: big}), M)
    # read again each round, no more than it loads
    assert again.hbm_bytes == 512 * (1 << 12) + 2 * 256 * (1 << 12)


def test_a_round_waits_for_its_bytes() -> None:
    # 256 GiB of stores a round: far beyond the round's 1,000 clocks
    heavy = replace(ONE, bytes_stored=1 << 30)
    r = schedule([0] * 256, {0: heavy}, 1, None, M)
    floor = (256 << 30) + 256 * (1 << 12)
    assert r.cycles == pytest.approx(floor / M.hbm_bytes_per_second * M.clock_ghz * 1e9)
    assert (r.causes["bandwidth"] == pytest.approx(r.cycles - 1000)
            and sum(r.causes.values()) == pytest.approx(r.cycles))
