"""How tokens spread over experts: routing specs and the expert offsets they produce.

Offsets are always multiples of 128 (the ABI's step), so routing works in 128-token blocks.
Every routing is reproducible from the config's seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wgrad_cli.problem.abi import STEP


@dataclass(frozen=True)
class Routing:
    kind: str = "uniform"
    zipf_s: float = 1.2  # zipf: expert i (in a seeded order) gets weight 1 / (i+1)^s
    empty: int = 1  # empty: this many experts (seeded choice) get no tokens, the rest share evenly
    expert: int | None = None  # single: the expert that gets every token (None: seeded choice)
    offsets: tuple[int, ...] = ()  # explicit: the offsets themselves

    def describe(self) -> str:
        return {
            "uniform": "uniform",
            "zipf": f"zipf s={self.zipf_s:g}",
            "empty": f"{self.empty} empty",
            "single": "one expert" + (f" ({self.expert})" if self.expert is not None else ""),
            "explicit": "explicit",
        }[self.kind]

    def empty_experts(self, M: int, E: int) -> int | None:
        """How many of E experts this routing leaves without tokens on M tokens, worked out from what it
        promises rather than from offsets_for (verify holds each problem's offsets to it); None where
        it promises nothing (zipf: the weights and the seed decide)."""
        if self.kind == "explicit":
            return sum(a == b for a, b in zip(self.offsets, self.offsets[1:]))
        # experts that share the tokens evenly: each gets a 128-token block while there are blocks
        sharing = {"uniform": E, "empty": E - min(self.empty, E), "single": 1}.get(self.kind)
        return None if sharing is None else E - min(sharing, M // STEP)

    def offsets_for(self, M: int, E: int, rng: np.random.Generator) -> list[int]:
        """E+1 non-decreasing multiples of 128 from 0 to M (all 0 when every expert is empty);
        explicit offsets are returned as given."""
        if self.kind == "explicit":
            return list(self.offsets)
        blocks = M // STEP
        weights: np.ndarray = np.ones(E)
        if self.kind == "zipf":
            weights = 1.0 / np.arange(1, E + 1) ** self.zipf_s
            rng.shuffle(weights)
        elif self.kind == "empty":
            weights[rng.choice(E, size=min(self.empty, E), replace=False)] = 0.0
        elif self.kind == "single":
            weights[:] = 0.0
            weights[self.expert if self.expert is not None else rng.integers(E)] = 1.0
        counts = _apportion(blocks, weights)
        return [int(v) * STEP for v in np.concatenate([[0], np.cumsum(counts)])]


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Split `total` blocks in proportion to `weights` (largest remainders), summing exactly."""
    if weights.sum() == 0:
        return np.zeros(len(weights), dtype=np.int64)
    share = total * weights / weights.sum()
    counts = np.floor(share).astype(np.int64)
    counts[np.argsort(counts - share, kind="stable")[: total - counts.sum()]] += 1
    return np.asarray(counts, dtype=np.int64)


def edge_routings(E: int) -> list[tuple[str, Routing]]:
    """Routings beyond a config's, for verify --edge-cases: half the experts empty, every token in
    one expert, and a steep skew. (name suffix, routing); an E=1 shape gets its one expert emptied."""
    cases = [("empty", Routing("empty", empty=max(1, E // 2))), ("single", Routing("single")),
             ("skewed", Routing("zipf", zipf_s=3.0))]
    return cases if E > 1 else cases[:1]
