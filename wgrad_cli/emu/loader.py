"""A gfx950 code object as the emulator runs it: its machine code and each kernel's descriptor.

The kernel descriptor (the 64-byte `<kernel>.kd` object) fixes what the hardware sets up before
the first instruction: the kernarg segment size, the LDS the workgroup gets, the register counts,
which user and system SGPRs are filled, and how work-item ids arrive in VGPRs. Field offsets and
bit positions are LLVM's AMDGPUUsage, "Kernel Descriptor" and "Initial Kernel Execution State".
gfx950 has architected flat scratch (AMDGPUUsage, processor table): COMPUTE_PGM_RSRC2 bit 0 then
enables the hardware's FLAT_SCRATCH setup and adds no system SGPR, and the private segment buffer
and flat scratch init user SGPRs are "not supported and must be 0".
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from wgrad_cli import hsaco
from wgrad_cli.codeobject import CodeObjectError

EF_AMDGPU_MACH_MASK, EF_AMDGPU_MACH_GFX950 = 0xFF, 0x4F


@dataclass(frozen=True)
class Arg:
    """One kernarg of the metadata: explicit (`by_value`, `global_buffer`) or hidden (`hidden_*`)."""

    kind: str
    offset: int
    size: int


@dataclass(frozen=True)
class Descriptor:
    name: str
    entry: int  # address of the first instruction, in the code object's address space
    group_segment_size: int  # static LDS bytes
    private_segment_size: int  # scratch bytes per work-item (PRIVATE_SEGMENT_FIXED_SIZE)
    kernarg_size: int
    vgprs: int  # architected VGPRs the wave gets (granulated)
    agprs: int  # AGPRs (the unified file above accum_offset)
    accum_offset: int
    sgprs: int
    user_sgprs: int
    private_segment_buffer: bool  # 4 user SGPRs; must be 0 on gfx950
    dispatch_ptr: bool  # 2
    queue_ptr: bool  # 2
    kernarg_segment_ptr: bool  # 2
    dispatch_id: bool  # 2
    flat_scratch_init: bool  # 2; must be 0 on gfx950
    private_segment_size_sgpr: bool  # 1
    kernarg_preload_dwords: int  # kernarg dwords preloaded into user SGPRs after the above
    kernarg_preload_offset: int  # in dwords
    workgroup_id: tuple[bool, bool, bool]  # system SGPRs after the user ones
    workgroup_info: bool
    enable_private_segment: bool  # FLAT_SCRATCH set up by the hardware; no wave offset SGPR on gfx950
    workitem_id_dims: int  # 1 (x), 2 (x, y) or 3; gfx950 packs them in v0: x 9:0, y 19:10, z 29:20
    wave64: bool
    max_flat_workgroup_size: int
    args: tuple[Arg, ...]
    uses_dynamic_stack: bool  # the stack grows at run time: private_segment_size is only its fixed part


@dataclass(frozen=True)
class Image:
    """A loaded code object: the bytes of its loadable segments and its kernels' descriptors."""

    code: bytes  # the image from address 0 (sections at their virtual addresses)
    kernels: dict[str, Descriptor]
    text_start: int
    text_end: int


def _bits(word: int, lo: int, width: int) -> int:
    return (word >> lo) & ((1 << width) - 1)


def parse_descriptor(name: str, kd: bytes, address: int, meta: dict[str, Any]) -> Descriptor:
    group, private, kernarg = struct.unpack_from("<III", kd, 0)
    (entry_offset,) = struct.unpack_from("<q", kd, 16)
    rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", kd, 44)
    props, preload = struct.unpack_from("<HH", kd, 56)
    accum_offset = (_bits(rsrc3, 0, 6) + 1) * 4  # gfx90a and later: the AGPRs' start in the unified file
    unified = (_bits(rsrc1, 0, 6) + 1) * 8  # granule of 8 on gfx90a and later
    return Descriptor(
        name=name, entry=address + entry_offset, group_segment_size=group, private_segment_size=private,
        kernarg_size=kernarg, vgprs=min(accum_offset, unified), agprs=max(unified - accum_offset, 0),
        accum_offset=accum_offset, sgprs=(_bits(rsrc1, 6, 4) + 1) * 8, user_sgprs=_bits(rsrc2, 1, 5),
        private_segment_buffer=bool(props & 1), dispatch_ptr=bool(props & 2), queue_ptr=bool(props & 4),
        kernarg_segment_ptr=bool(props & 8), dispatch_id=bool(props & 16), flat_scratch_init=bool(props & 32),
        private_segment_size_sgpr=bool(props & 64), kernarg_preload_dwords=_bits(preload, 0, 7),
        kernarg_preload_offset=_bits(preload, 7, 9),
        workgroup_id=(bool(_bits(rsrc2, 7, 1)), bool(_bits(rsrc2, 8, 1)), bool(_bits(rsrc2, 9, 1))),
        workgroup_info=bool(_bits(rsrc2, 10, 1)), enable_private_segment=bool(_bits(rsrc2, 0, 1)),
        workitem_id_dims=_bits(rsrc2, 11, 2) + 1, wave64=int(meta.get(".wavefront_size", 64)) == 64,
        max_flat_workgroup_size=int(meta.get(".max_flat_workgroup_size", 1024)),
        args=tuple(Arg(str(a[".value_kind"]), int(a[".offset"]), int(a[".size"])) for a in meta.get(".args", [])),
        uses_dynamic_stack=bool(props & (1 << 11)) or bool(meta.get(".uses_dynamic_stack", False)))


def load_image(data: bytes) -> Image:
    """Parse a gfx950 code object; CodeObjectError if it is not one."""
    elf = ELFFile(io.BytesIO(data))
    if elf["e_machine"] != "EM_AMDGPU":
        raise CodeObjectError(f"not an AMDGPU code object (machine {elf['e_machine']})")
    if elf["e_flags"] & EF_AMDGPU_MACH_MASK != EF_AMDGPU_MACH_GFX950:
        raise CodeObjectError(f"built for another AMDGPU (e_flags {elf['e_flags']:#x}); the emulator runs gfx950")
    size = max((s["p_vaddr"] + s["p_memsz"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"), default=0)
    image = bytearray(size)
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD":
            image[seg["p_vaddr"]: seg["p_vaddr"] + seg["p_filesz"]] = seg.data()
    text = elf.get_section_by_name(".text")
    if text is None:
        raise CodeObjectError("the code object has no .text section")
    symbols = elf.get_section_by_name(".symtab")
    kd_address = {}
    if isinstance(symbols, SymbolTableSection):
        kd_address = {sym.name[:-3]: sym["st_value"] for sym in symbols.iter_symbols() if sym.name.endswith(".kd")}
    kernels = {}
    for k in hsaco.metadata(data).get("amdhsa.kernels", []):
        name = k[".name"]
        if name not in kd_address:
            raise CodeObjectError(f"kernel {name} has no {name}.kd descriptor symbol")
        address = kd_address[name]
        kernels[name] = parse_descriptor(name, bytes(image[address: address + 64]), address, k)
    return Image(bytes(image), kernels, text["sh_addr"], text["sh_addr"] + text["sh_size"])
