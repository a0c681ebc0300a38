"""Routing kinds produce offsets that obey the ABI's input rules, reproducibly from the seed."""

from __future__ import annotations

import numpy as np
import pytest

from wgrad_cli.problem.abi import Dims, offsets_problems
from wgrad_cli.problem.routing import Routing

ROUTINGS = {
    "uniform": Routing(),
    "zipf": Routing("zipf", zipf_s=1.2),
    "zipf-steep": Routing("zipf", zipf_s=3.0),
    "empty": Routing("empty", empty=3),
    "single": Routing("single"),
    "single-given": Routing("single", expert=5),
}
SEEDED = ["zipf", "zipf-steep", "empty", "single"]  # kinds whose offsets depend on the seed
# (M, E); some E > M/128
SIZES = [(128, 1), (1024, 8), (8192, 8), (4096, 32), (65536, 16), (256, 8), (1280, 64)]


def offsets(routing: Routing, M: int, E: int, seed: int = 0) -> list[int]:
    return routing.offsets_for(M, E, np.random.default_rng(seed))


def sizes(routing: Routing) -> list[tuple[int, int]]:
    return [(M, E) for M, E in SIZES if E > (routing.expert or 0) and E >= routing.empty]


@pytest.mark.parametrize("kind", ROUTINGS)
def test_offsets_follow_the_abi(kind: str) -> None:
    routing = ROUTINGS[kind]
    for M, E in sizes(routing):
        off = offsets(routing, M, E)
        assert len(off) == E + 1
        assert (off[0], off[-1]) == (0, M)
        assert all(type(v) is int and v % 128 == 0 for v in off)
        assert all(a <= b for a, b in zip(off, off[1:]))
        assert offsets_problems(off, Dims(M, 256, 256, E)) == []


@pytest.mark.parametrize("kind", ROUTINGS)
def test_same_seed_same_offsets(kind: str) -> None:
    assert offsets(ROUTINGS[kind], 8192, 16, seed=3) == offsets(ROUTINGS[kind], 8192, 16, seed=3)


@pytest.mark.parametrize("kind", SEEDED)
def test_other_seed_other_offsets(kind: str) -> None:
    first = offsets(ROUTINGS[kind], 8192, 16, seed=0)
    assert any(offsets(ROUTINGS[kind], 8192, 16, seed=s) != first for s in range(1, 4))


@pytest.mark.parametrize("kind", ["uniform", "single-given"])
def test_unseeded_kinds_ignore_the_seed(kind: str) -> None:
    assert {tuple(offsets(ROUTINGS[kind], 8192, 16, seed=s)) for s in range(5)} == {
        tuple(offsets(ROUTINGS[kind], 8192, 16))}


def counts(off: list[int]) -> list[int]:
    return [b - a for a, b in zip(off, off[1:])]


@pytest.mark.parametrize("M, E, empty", [(1024, 8, 1), (4096, 8, 3), (2048, 16, 15), (128, 2, 1)])
def test_empty_has_exactly_the_requested_empty_experts(M: int, E: int, empty: int) -> None:
    for seed in range(5):
        c = counts(offsets(Routing("empty", empty=empty), M, E, seed))
        assert c.count(0) == empty
        assert max(c) - min(x for x in c if x) <= 128  # the others share evenly


def test_empty_with_every_expert_empty() -> None:
    """experts == E is accepted by the config: nothing is routed, every offset is 0."""
    assert offsets(Routing("empty", empty=4), 1024, 4) == [0, 0, 0, 0, 0]


def test_single_given_expert_gets_everything() -> None:
    assert offsets(Routing("single", expert=2), 1024, 4) == [0, 0, 0, 1024, 1024]
    assert offsets(Routing("single", expert=0), 512, 3) == [0, 512, 512, 512]
    assert offsets(Routing("single", expert=2), 512, 3) == [0, 0, 0, 512]


def test_single_seeded_expert_gets_everything() -> None:
    chosen = set()
    for seed in range(8):
        c = counts(offsets(Routing("single"), 2048, 8, seed))
        assert sorted(c) == [0] * 7 + [2048]
        chosen.add(c.index(2048))
    assert len(chosen) > 1


@pytest.mark.parametrize("M, E, expected", [
    (1024, 8, [128] * 8),
    (1280, 3, [512, 384, 384]),
    (8192, 5, [1664, 1664, 1664, 1664, 1536]),
    (128, 1, [128]),
])
def test_uniform_is_balanced(M: int, E: int, expected: list[int]) -> None:
    c = counts(offsets(Routing(), M, E))
    assert sorted(c, reverse=True) == expected
    assert max(c) - min(c) <= 128


@pytest.mark.parametrize("kind", ROUTINGS)
def test_more_experts_than_blocks(kind: str) -> None:
    """M = 512 has 4 blocks of 128: with E = 16 most experts get no tokens, and offsets still end at M."""
    off = offsets(ROUTINGS[kind], 512, 16)
    c = counts(off)
    assert (len(off), off[0], off[-1], sum(c)) == (17, 0, 512, 512)
    assert all(x % 128 == 0 for x in c)
    assert c.count(0) >= 12


def test_zipf_is_skewed_and_uniform_is_not() -> None:
    c = sorted(counts(offsets(Routing("zipf", zipf_s=2.0), 16384, 8)), reverse=True)
    assert c[0] > 4 * c[-1] and c[0] > c[1] > c[2]
    # weights 1/(i+1)^2 normalised: the largest expert holds 1/H(8,2) = 65.6% of 128 blocks -> 84 blocks
    assert c[0] == 84 * 128


def test_explicit_offsets_are_returned_as_given() -> None:
    assert offsets(Routing("explicit", offsets=(128, 128, 896)), 1024, 2) == [128, 128, 896]


def test_describe() -> None:
    assert [r.describe() for r in ROUTINGS.values()] == [
        "uniform", "zipf s=1.2", "zipf s=3", "3 empty", "one expert", "one expert (5)"]
