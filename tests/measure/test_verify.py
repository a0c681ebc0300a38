"""per_expert(): compare() per expert, in blocks of whole rows on every core, gives the numbers
compare() gives on each whole expert."""

from __future__ import annotations

import numpy as np
import pytest

from wgrad_cli.measure import verify
from wgrad_cli.measure.check import compare
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import generate
from wgrad_cli.problem.reference import grad_w, row_norms
from wgrad_cli.problem.routing import Routing


# one element (one row per block), rows split unevenly, one block
@pytest.mark.parametrize("block", [1, 3 * 256 + 5, 2**20])
def test_blocks_join_to_the_whole_expert(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    p = generate(Dims(512, 256, 256, 3), Routing("explicit", offsets=(0, 128, 128, 512)), 5)
    ref = grad_w(p)
    out = (ref.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # truncated: within tolerance
    out[0, 7, 9] = 0x7FC0  # a NaN the reference does not have
    out[2, 255, 0] = 0xFFFF  # an unwritten output
    out[2, 100, 3] ^= 0x0040  # a mismatch
    na, nb = row_norms(p)
    tokens = np.diff(p.offsets)
    monkeypatch.setattr(verify, "COMPARE_BLOCK_ELEMENTS", block)
    got = verify.per_expert(out, ref, (na, nb), tokens, "float64")
    want = [compare(out[e:e + 1], ref[e:e + 1], na[e:e + 1], nb[e:e + 1], tokens[e:e + 1]) for e in range(3)]
    for g, w in zip(got, want, strict=True):
        assert (g.elements, g.mismatches, g.nans, g.unwritten, g.ok) == (w.elements, w.mismatches, w.nans,
                                                                         w.unwritten, w.ok)
        assert (g.max_abs_error, g.max_rel_row_error) == (w.max_abs_error, w.max_rel_row_error)
        assert g.diff_norm == pytest.approx(w.diff_norm, rel=1e-12) \
            and g.ref_norm == pytest.approx(w.ref_norm, rel=1e-12)
    assert [g.ok for g in got] == [False, True, False] and got[1].elements == 256 * 256
