from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from wgrad_cli.compile.codeobject import CodeObjectError, Param, check_params, mangled_kinds, match_symbol
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.cubin import arguments as cubin_params
from wgrad_cli.compile.cubin import kernel_params as nvidia_kernel_params
from wgrad_cli.compile.cubin import resources as nvidia_resources
from wgrad_cli.compile.hsaco import arguments as amd_params
from wgrad_cli.compile.hsaco import metadata as amd_metadata


def test_match_symbol() -> None:
    names = ["_Z26grouped_mxfp8_wgrad_kernelPtPKhS1_S1_S1_PKi", "_Z6helperv"]
    assert match_symbol(names, "grouped_mxfp8_wgrad_kernel") == names[0]
    assert match_symbol(["grouped_mxfp8_wgrad_kernel"],
                        "grouped_mxfp8_wgrad_kernel") == "grouped_mxfp8_wgrad_kernel"
    with pytest.raises(CodeObjectError, match="expected one kernel named 'grouped'"):
        match_symbol(names, "grouped")  # a prefix of the name is not the name
    with pytest.raises(CodeObjectError):
        match_symbol(names + ["_Z26grouped_mxfp8_wgrad_kernelPfPKhS1_S1_S1_PKi"],
                     "grouped_mxfp8_wgrad_kernel")


def arg(kind: str = "global_buffer", size: int = 8, offset: int = 0) -> dict[str, Any]:
    return {".value_kind": kind, ".size": size, ".offset": offset}


def test_amd_args_match_the_abi() -> None:
    good = [arg(offset=8 * i) for i in range(6)] + [arg("hidden_block_count_x", 4, 48)]
    params = amd_params({".args": good})
    assert params == [Param(8 * i, 8, "pointer") for i in range(6)]  # hidden arguments are the runtime's
    check_params("k", params)
    with pytest.raises(CodeObjectError,
                       match="argument 5 \\(expert_off\\) is by_value of 4 bytes at offset 40"):
        check_params("k", amd_params({".args": good[:5] + [arg("by_value", 4, 40)]}))
    with pytest.raises(CodeObjectError, match="7 arguments, the ABI has 6"):
        check_params("k", amd_params({".args": good[:6] + [arg(offset=48)]}))


MIXED = 'extern "C" __global__ void mixed(float* a, int b, double c, char d, long long* e) {}\n'


def test_cubin_params_read_offsets_and_sizes(nvcc: Compiler, tmp_path: Path) -> None:
    """nvcc's EIATTR_KPARAM_INFO records, read back: natural alignment, sizes, in argument order."""
    src, cubin = tmp_path / "mixed.cu", tmp_path / "mixed.cubin"
    src.write_text(MIXED)
    subprocess.run([*nvcc.argv0, "-arch=sm_90a", "-cubin", "-o", cubin, src], check=True, capture_output=True)
    params = cubin_params(cubin.read_bytes(), "mixed")
    assert [(p.offset, p.size) for p in params] == [(0, 8), (8, 4), (16, 8), (24, 1), (32, 8)]
    with pytest.raises(CodeObjectError, match="argument 1 \\(A\\) is unrecorded of 4 bytes at offset 8"):
        check_params("mixed", params)
    with pytest.raises(CodeObjectError, match="no .nv.info.other section"):
        cubin_params(cubin.read_bytes(), "other")


def test_not_an_amd_code_object() -> None:
    elf = bytearray(64)
    elf[:4] = b"\x7fELF"
    elf[4:7] = bytes([2, 1, 1])  # 64-bit, little-endian, version 1
    elf[18:20] = (62).to_bytes(2, "little")  # EM_X86_64
    with pytest.raises(CodeObjectError, match="not an AMDGPU code object"):
        amd_metadata(bytes(elf))
    with pytest.raises(CodeObjectError, match="not a cubin"):
        nvidia_resources(bytes(elf), "", "k", 256)


@pytest.mark.parametrize("symbol, kinds", [
    ("_Z26grouped_mxfp8_wgrad_kernelPtPKhS1_S1_S1_PKi", ["pointer"] * 6),  # S1_ = PKh (S_ = Pt, S0_ = Kh)
    ("_Z26grouped_mxfp8_wgrad_kernelPtPKhS1_S1_xPKi", ["pointer"] * 4 + ["value", "pointer"]),
    ("_Z1f3FooPS_", ["value", "pointer"]),  # a class by value, then a pointer to it
    ("_Z1fRKiDh", ["pointer", "value"]),  # references are pointers underneath; Dh is half
    ("_Z1fv", []),
    ("mixed", None),  # extern "C": nothing to read
    ("_Z1fN2ns3FooE", None),  # nested names: not read, so not judged
])
def test_mangled_kinds(symbol: str, kinds: list[str] | None) -> None:
    assert mangled_kinds(symbol) == kinds


WRONG = ('__global__ void grouped_mxfp8_wgrad_kernel(unsigned short* C, const unsigned char* A, const '
         'unsigned char* B, const unsigned char* sa, long long sb, const int* off) {}\n')


def test_cubin_value_where_the_abi_wants_a_pointer(nvcc: Compiler, tmp_path: Path) -> None:
    """Same sizes and offsets as the ABI; only the C++ name says argument 4 is a value."""
    src, cubin = tmp_path / "wrong.cu", tmp_path / "wrong.cubin"
    src.write_text(WRONG)
    subprocess.run([*nvcc.argv0, "-arch=sm_90a", "-cubin", "-o", cubin, src], check=True, capture_output=True)
    with pytest.raises(CodeObjectError, match="argument 4 \\(scale_B\\) is value of 8 bytes at offset 32"):
        nvidia_kernel_params(cubin.read_bytes(), "grouped_mxfp8_wgrad_kernel")
