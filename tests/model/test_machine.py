"""What the timing model charges each instruction, from the machine file: every figure read with its
field's type, every MFMA variant's cost in passes, each LDS and vector memory form's bytes, accesses
and addresses, and an instruction class the model does not know refused."""

from __future__ import annotations

import dataclasses
import types
import typing

import pytest

from wgrad_cli.emu.program import Decoded
from wgrad_cli.errors import ToolError
from wgrad_cli.model.machine import FIGURES, Machine, load
from wgrad_cli.model.ops import Kind, Static, classify
from wgrad_cli.model.trace import _lds_offsets

M = load("mi355x")


def test_every_number_of_the_machine_is_a_figure_read_with_its_type() -> None:
    hints = typing.get_type_hints(Machine)
    numbers = [f.name for f in dataclasses.fields(Machine) if hints[f.name] in (int, float)]
    # the validation's peak clock and version are numbers of the machine, not figures of its file
    figures = [n for n in numbers if n not in ("peak_ghz", "validation")]
    assert list(FIGURES) == figures and FIGURES["clock_ghz"] is float
    for name in figures:
        assert type(getattr(M, name)) is hints[name], name
        if name != "clock_ghz":
            set_to = getattr(M.with_figures((f"{name}=2.5",)), name)
            assert set_to == (2.5 if hints[name] is float else 2), name  # a float figure keeps its half


# (mnemonic, passes, passes with an fp8 operand), as LLVM's gfx950 scheduling model gives them
# (SISchedule.td: SIDPGFX950FullSpeedModel's InstRW and WriteMFMAScale_*_F8F6F4); one row per
# pattern of the machine file
MFMAS = [
    ("v_mfma_scale_f32_16x16x128_f8f6f4", 4, 8),
    ("v_mfma_f32_16x16x128_f8f6f4", 4, 8),
    ("v_mfma_scale_f32_32x32x64_f8f6f4", 8, 16),  # the one cdna4's kernel issues
    ("v_mfma_f32_32x32x64_f8f6f4", 8, 16),
    ("v_mfma_f32_4x4x4_16b_f16", 2, 2),
    ("v_mfma_f32_16x16x32_bf16", 4, 4),
    ("v_mfma_f32_16x16x4_f32", 8, 8),
    ("v_mfma_f32_32x32x16_f16", 8, 8),
    ("v_mfma_f32_32x32x2_f32", 16, 16),
    ("v_mfma_f64_4x4x4_4b_f64", 4, 4),
    ("v_mfma_f64_16x16x4_f64", 16, 16),
    ("v_smfmac_f32_16x16x64_f16", 4, 4),
    ("v_smfmac_f32_32x32x32_f16", 8, 8),
]


@pytest.mark.parametrize("mnemonic, passes, fp8", MFMAS)
def test_each_mfma_variant_costs_its_passes(mnemonic: str, passes: int, fp8: int) -> None:
    assert M.mfma_cycles(mnemonic, False) == passes * M.mfma_pass_cycles
    assert M.mfma_cycles(mnemonic, True) == fp8 * M.mfma_pass_cycles


def test_every_pattern_of_the_machine_file_has_a_row() -> None:
    first = [next(i for i, c in enumerate(M.mfma) if c.pattern.match(m)) for m, _, _ in MFMAS]
    assert sorted(set(first)) == list(range(len(M.mfma)))


def test_an_instruction_class_the_model_does_not_know_is_an_error() -> None:
    d = Decoded(0, 4, "SOP1", "s_mov_b32", None)
    assert classify(d, "salu", M).kind is Kind.SALU
    with pytest.raises(ToolError, match="s_mov_b32: the emulator's instruction class 'vector_alu'"):
        classify(d, "vector_alu", M)


# LDS forms as the model sees them: (emulator op name, LLVM mnemonic, bytes per access, accesses per lane)
LDS_FORMS = [
    ("DS_READ_B32", "ds_read_b32", 4, 1), ("DS_READ_B128", "ds_read_b128", 16, 1),
    ("DS_READ_U8", "ds_read_u8", 1, 1), ("DS_READ_I16", "ds_read_i16", 2, 1),
    ("DS_WRITE_B64", "ds_write_b64", 8, 1), ("DS_WRITE_B96", "ds_write_b96", 12, 1),
    ("DS_READ2_B32", "ds_read2_b32", 4, 2), ("DS_READ2_B64", "ds_read2_b64", 8, 2),
    ("DS_READ2ST64_B64", "ds_read2st64_b64", 8, 2), ("DS_WRITE2_B32", "ds_write2_b32", 4, 2),
    ("DS_WRITE2ST64_B64", "ds_write2st64_b64", 8, 2), ("DS_READ_B64_TR_B8", "ds_read_b64_tr_b8", 8, 1),
    ("DS_BPERMUTE_B32", "ds_bpermute_b32", 0, 1),  # through the crossbar, not the banks
    ("DS_ADD_U32", "ds_add_u32", 4, 1), ("DS_ADD_RTN_U64", "ds_add_rtn_u64", 8, 1),  # atomics: by their type
]


@pytest.mark.parametrize("op, mnemonic, size, accesses", LDS_FORMS)
def test_each_lds_form_costs_its_bytes_and_accesses(op: str, mnemonic: str, size: int, accesses: int) -> None:
    d = Decoded(0, 8, "DS", mnemonic, types.SimpleNamespace(op=types.SimpleNamespace(name=op)))
    s = classify(d, "lds", M)
    assert (s.kind, s.cycles, s.lane_bytes, s.accesses) == (Kind.LDS, M.issue_cycles, size, accesses)


@pytest.mark.parametrize("mnemonic, size, kind", [
    ("global_load_dwordx4", 16, Kind.LOAD), ("buffer_load_ubyte", 1, Kind.LOAD),
    ("global_store_short", 2, Kind.STORE), ("global_atomic_add_f32", 4, Kind.LOAD),
    ("buffer_atomic_add_f64", 8, Kind.LOAD), ("global_atomic_swap_x2", 8, Kind.LOAD),
    ("global_store_dwordx3", 12, Kind.STORE),
])
def test_each_vector_memory_form_moves_its_bytes(mnemonic: str, size: int, kind: Kind) -> None:
    s = classify(Decoded(0, 8, "GLOBAL", mnemonic, None), "vmem", M)
    assert (s.kind, s.lane_bytes) == (kind, size)


@pytest.mark.parametrize("op, size, accesses, offsets", [
    ("DS_READ2_B32", 4, 2, [4, 12]), ("DS_READ2_B64", 8, 2, [8, 24]), ("DS_READ2ST64_B32", 4, 2, [256, 768]),
    ("DS_WRITE2ST64_B64", 8, 2, [512, 1536]), ("DS_WRITE2_B64", 8, 2, [8, 24]),
    ("DS_READ_B128", 16, 1, [1 + 3 * 256]),  # one 16-bit offset, offset1:offset0
])
def test_the_bank_model_places_each_lds_form_where_it_reads(op: str, size: int, accesses: int,
                                                            offsets: list[int]) -> None:
    assert _lds_offsets(op, 1, 3, Static(Kind.LDS, M.issue_cycles, size, accesses)) == offsets
