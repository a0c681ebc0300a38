"""The model's validation split (docs/model.md, "The split rule"): whether a published row trains
the model's fitted figures or is held out to judge it, decided by a hash of its kernel and shape."""

from __future__ import annotations

import hashlib

TRAINING_EVERY = 3  # h mod 3 == 0 trains: about a third of the rows; the rest are held out


def held_out(kernel: str, M: int, N: int, K: int) -> bool:
    """True where the row (kernel name without its shape, and the GEMM's M x N x K) is held out."""
    digest = hashlib.sha256(f"{kernel}|{M}x{N}x{K}".encode()).digest()
    return int.from_bytes(digest, "big") % TRAINING_EVERY != 0
