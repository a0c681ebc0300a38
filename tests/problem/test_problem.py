"""Random problems: ABI layouts, reproducibility, and the properties the generator promises."""

from __future__ import annotations

import numpy as np
import pytest

from wgrad_cli.problem.abi import ARGS, Dims
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.problem.mxfp8 import unpack_scales
from wgrad_cli.problem.reference import grad_w
from wgrad_cli.problem.routing import Routing

DIMS = [Dims(128, 256, 256, 1), Dims(512, 256, 512, 3), Dims(1024, 512, 256, 8)]


@pytest.mark.parametrize("d", DIMS, ids=str)
def test_layouts_dtypes_shapes(d: Dims) -> None:
    p = generate(d, Routing(), seed=7)
    assert p.dims == d and p.seed == 7 and p.quantization == "ocp"
    arrays = {"A": p.A, "B": p.B, "scale_A": p.scale_A, "scale_B": p.scale_B, "expert_off": p.offsets}
    expected = {
        "A": ((d.N, d.M), np.uint8),
        "B": ((d.K, d.M), np.uint8),
        "scale_A": ((d.M // 128, d.N, 4), np.uint8),
        "scale_B": ((d.M // 128, d.K, 4), np.uint8),
        "expert_off": ((d.E + 1,), np.int32),
    }
    for name, (shape, dtype) in expected.items():
        a = arrays[name]
        assert a.shape == shape, name
        assert a.dtype == dtype, name
        assert a.flags.c_contiguous, name
    for arg in ARGS:  # the ABI's table agrees with what generate() produces
        if arg.name in arrays:
            assert arrays[arg.name].shape == arg.shape(d)
    assert p.offsets[0] == 0 and p.offsets[-1] == d.M
    assert p.tokens == d.M


def test_same_seed_same_bytes_other_seed_different() -> None:
    d, r = Dims(512, 256, 256, 4), Routing("zipf")
    p1, p2, p3 = generate(d, r, 11), generate(d, r, 11), generate(d, r, 12)
    for name in ("A", "B", "scale_A", "scale_B", "offsets"):
        assert getattr(p1, name).tobytes() == getattr(p2, name).tobytes(), name
    for name in ("A", "B", "scale_A", "scale_B"):
        assert getattr(p1, name).tobytes() != getattr(p3, name).tobytes(), name
    # A and B are independent streams, not the same bytes
    assert p1.A.tobytes() != p1.B[: d.N].tobytes()


def test_quantization_rules_differ() -> None:
    d = Dims(256, 256, 256, 1)
    ocp, up = generate(d, Routing(), 3, "ocp"), generate(d, Routing(), 3, "upstream")
    # same values (same seed), so the scale bytes are exactly emax(E4M3) = 8 apart
    diff = unpack_scales(up.scale_A).astype(int) - unpack_scales(ocp.scale_A).astype(int)
    assert (diff == 8).all()
    # block max code: ocp in [256, 448] (exponent 8), upstream in [1, 2]
    top_ocp = (ocp.A & 0x7F).reshape(d.N, d.M // 32, 32).max(axis=2)
    top_up = (up.A & 0x7F).reshape(d.N, d.M // 32, 32).max(axis=2)
    assert top_ocp.min() >= 0x78 and top_ocp.max() <= 0x7E
    assert top_up.min() >= 0x38 and top_up.max() <= 0x40


def test_scales_differ_across_rows_and_blocks() -> None:
    d = Dims(1024, 256, 256, 2)
    p = generate(d, Routing(), 5)
    for packed, rows in ((p.scale_A, d.N), (p.scale_B, d.K)):
        e8 = unpack_scales(packed)
        assert e8.shape == (rows, d.M // 32)
        # within every row the 32 blocks take several different scales, and so does every block over rows
        assert (np.array([len(np.unique(r)) for r in e8]) >= 5).all()
        assert (np.array([len(np.unique(c)) for c in e8.T]) >= 10).all()
        # octaves of +-8 around N(0, 1) under the ocp rule: bytes stay well inside [100, 140]
        assert e8.min() >= 100 and e8.max() <= 140
        assert e8.max() - e8.min() >= 16


def test_reference_outputs_take_both_signs() -> None:
    p = generate(Dims(512, 256, 256, 2), Routing(), 9)
    ref = grad_w(p)
    assert np.isfinite(ref).all()
    pos = (ref > 0).mean()
    assert 0.4 < pos < 0.6
    assert (ref < 0).mean() > 0.4


@pytest.mark.parametrize("rule", ["ocp", "upstream"])
def test_no_nan_codes(rule: str) -> None:
    p = generate(Dims(1024, 512, 256, 4), Routing(), 13, rule)
    for q in (p.A, p.B):
        assert not ((q & 0x7F) == 0x7F).any()
    for s in (p.scale_A, p.scale_B):
        assert not (s == 255).any()


def offsets_via_routing(d: Dims, r: Routing, seed: int) -> list[int]:
    route_seed = np.random.SeedSequence(seed).spawn(3)[0]
    return r.offsets_for(d.M, d.E, np.random.default_rng(route_seed))


@pytest.mark.parametrize(("routing", "expected"), [
    (Routing("uniform"), [0, 256, 512, 768, 1024]),
    (Routing("single", expert=2), [0, 0, 0, 1024, 1024]),
    (Routing("explicit", offsets=(128, 128, 512, 640, 896)), [128, 128, 512, 640, 896]),
])
def test_offsets_match_routing_concrete(routing: Routing, expected: list[int]) -> None:
    d = Dims(1024, 256, 256, 4)
    p = generate(d, routing, 21)
    assert p.offsets.tolist() == expected
    assert p.tokens == expected[-1] - expected[0]


@pytest.mark.parametrize("routing", [Routing("zipf"), Routing("empty", empty=2), Routing("single")])
def test_offsets_match_routing_seeded(routing: Routing) -> None:
    d = Dims(2048, 256, 256, 6)
    for seed in (1, 2, 3):
        p = generate(d, routing, seed)
        assert p.offsets.tolist() == offsets_via_routing(d, routing, seed)
        off = p.offsets
        assert off[0] == 0 and off[-1] == d.M
        assert (np.diff(off) >= 0).all() and (off % 128 == 0).all()
    counts = np.diff(generate(d, routing, 1).offsets)
    if routing.kind == "empty":
        assert (counts == 0).sum() == 2
    if routing.kind == "single":
        assert (counts == 0).sum() == 5 and counts.max() == d.M
    if routing.kind == "zipf":
        assert sorted(counts.tolist(), reverse=True)[0] > 2 * sorted(counts.tolist())[0]


def test_problem_is_frozen() -> None:
    p = generate(Dims(128, 256, 256, 1), Routing(), 0)
    assert isinstance(p, Problem)
    with pytest.raises(AttributeError):
        p.seed = 1  # type: ignore[misc]
