"""The machine file as the timing model reads it: every figure with its field's type, every MFMA
variant's cost in passes, and an instruction class the model does not know refused."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from wgrad_cli.emu.program import Decoded
from wgrad_cli.errors import ToolError
from wgrad_cli.model.machine import FIGURES, Machine, load
from wgrad_cli.model.ops import Kind, classify

M = load("mi355x")


def test_every_number_of_the_machine_is_a_figure_read_with_its_type() -> None:
    hints = typing.get_type_hints(Machine)
    numbers = [f.name for f in dataclasses.fields(Machine) if hints[f.name] in (int, float)]
    assert list(FIGURES) == numbers and FIGURES["clock_ghz"] is float
    for name in numbers:
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
