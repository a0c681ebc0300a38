"""kernargs.pack: argument bytes at the code object's offsets, and the kernelParams pointer array."""

from __future__ import annotations

import ctypes

import pytest

from wgrad_cli.compile.codeobject import Param
from wgrad_cli.device.kernargs import pack

# The ABI's six arguments (C, A, B, scale_A, scale_B, expert_off): device pointers, 8 bytes each.
SIX = [Param(8 * i, 8, "pointer") for i in range(6)]
SIX_VALUES = [0x7F00_0000_1000, 0x7F00_0000_2000, 0xDEAD_BEEF_0000_0008, 0x7F00_0000_4000, 0x7F00_0000_5000,
              0x1234_5678]


def test_values_little_endian_at_offsets() -> None:
    raw = pack(SIX, SIX_VALUES).raw()
    assert len(raw) == 48
    assert raw[16:24] == bytes([0x08, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE])
    assert raw[40:48] == bytes([0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0])
    assert [int.from_bytes(raw[p.offset:p.offset + p.size], "little") for p in SIX] == SIX_VALUES


def test_pointers_point_into_the_buffer() -> None:
    k = pack(SIX, SIX_VALUES)
    base = ctypes.addressof(k.buffer)
    assert k.address == ctypes.addressof(k.pointers)
    assert [k.pointers[i] for i in range(len(SIX))] == [base + p.offset for p in SIX]
    for i, (p, value) in enumerate(zip(SIX, SIX_VALUES)):
        assert int.from_bytes(ctypes.string_at(k.pointers[i], p.size), "little") == value
    # kernelParams as the driver reads it: a void** at k.address
    params = ctypes.cast(k.address, ctypes.POINTER(ctypes.c_void_p))
    assert params[5] == base + 40


def test_mixed_sizes_with_a_gap() -> None:
    """A 4-byte argument, padding to 8-byte alignment, then an 8-byte one; the gap stays zero."""
    params = [Param(0, 4, "by_value"), Param(8, 8, "pointer"), Param(16, 4, "by_value")]
    k = pack(params, [0xAABBCCDD, 0x0102030405060708, 1])
    assert k.raw() == (bytes([0xDD, 0xCC, 0xBB, 0xAA]) + bytes(4) + bytes([8, 7, 6, 5, 4, 3, 2, 1])
                       + bytes([1, 0, 0, 0]))
    assert ctypes.string_at(k.pointers[1], 8) == bytes([8, 7, 6, 5, 4, 3, 2, 1])
    assert k.pointers[2] - k.pointers[0] == 16


@pytest.mark.parametrize("values", [SIX_VALUES[:5], SIX_VALUES + [0]], ids=["too-few", "too-many"])
def test_mismatched_counts(values: list[int]) -> None:
    with pytest.raises(ValueError, match=f"^{len(values)} values for 6 parameters$"):
        pack(SIX, values)


def test_no_parameters() -> None:
    k = pack([], [])
    assert k.raw() == b""
    assert len(k.pointers) == 0
