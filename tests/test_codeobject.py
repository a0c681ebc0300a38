from __future__ import annotations

from typing import Any

import pytest

from wgrad_cli.codeobject import CodeObjectError, amd_metadata, check_amd_args, match_symbol, nvidia_resources


def test_match_symbol() -> None:
    names = ["_Z26grouped_mxfp8_wgrad_kernelPtPKhS1_S1_S1_PKi", "_Z6helperv"]
    assert match_symbol(names, "grouped_mxfp8_wgrad_kernel") == names[0]
    assert match_symbol(["grouped_mxfp8_wgrad_kernel"], "grouped_mxfp8_wgrad_kernel") == "grouped_mxfp8_wgrad_kernel"
    with pytest.raises(CodeObjectError, match="expected one kernel named 'grouped'"):
        match_symbol(names, "grouped")  # a prefix of the name is not the name
    with pytest.raises(CodeObjectError):
        match_symbol(names + ["_Z26grouped_mxfp8_wgrad_kernelPfPKhS1_S1_S1_PKi"], "grouped_mxfp8_wgrad_kernel")


def arg(kind: str = "global_buffer", size: int = 8, offset: int = 0) -> dict[str, Any]:
    return {".value_kind": kind, ".size": size, ".offset": offset}


def test_amd_args_match_the_abi() -> None:
    good = [arg(offset=8 * i) for i in range(6)] + [arg("hidden_block_count_x", 4, 48)]
    check_amd_args({".name": "k", ".args": good})
    with pytest.raises(CodeObjectError, match="argument 5 \\(expert_off\\) is by_value of 4 bytes at offset 40"):
        check_amd_args({".name": "k", ".args": good[:5] + [arg("by_value", 4, 40)]})
    with pytest.raises(CodeObjectError, match="7 arguments, the ABI has 6"):
        check_amd_args({".name": "k", ".args": good[:6] + [arg(offset=48)]})


def test_not_an_amd_code_object() -> None:
    elf = bytearray(64)
    elf[:4] = b"\x7fELF"
    elf[4:7] = bytes([2, 1, 1])  # 64-bit, little-endian, version 1
    elf[18:20] = (62).to_bytes(2, "little")  # EM_X86_64
    with pytest.raises(CodeObjectError, match="not an AMDGPU code object"):
        amd_metadata(bytes(elf))
    with pytest.raises(CodeObjectError, match="not a cubin"):
        nvidia_resources(bytes(elf), "", "k", 256)
