"""A gfx950 code object as the emulator runs it: its loadable segments, dynamic relocations, global
symbols, machine code and each kernel's descriptor.

The ROCm loader places every PT_LOAD segment at one load base in device memory (the image's
address 0 becomes the base, so `s_getpc_b64`-relative addresses work unchanged), zeroes what lies
past each segment's file bytes (.bss), and applies the dynamic relocations. A pointer to a symbol
of the code object itself that cannot be preempted (HIP gives `__device__` and `__constant__`
variables protected visibility) is an R_AMDGPU_RELATIVE64 record, base + addend (LLVM's
AMDGPUUsage, "Relocation Records"); any other type stops the load here, naming it. Global
variables are the dynamic symbol table's objects, found by name as hipModuleGetGlobal does.

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

from elftools.elf.dynamic import DynamicSegment
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationTable
from elftools.elf.sections import SymbolTableSection

from wgrad_cli.compile import hsaco
from wgrad_cli.compile.codeobject import CodeObjectError

EF_AMDGPU_MACH_MASK, EF_AMDGPU_MACH_GFX950 = 0xFF, 0x4F
R_AMDGPU_NONE, R_AMDGPU_RELATIVE64 = 0, 13
RELOCATION_NAMES = {1: "R_AMDGPU_ABS32_LO", 2: "R_AMDGPU_ABS32_HI", 3: "R_AMDGPU_ABS64", 4: "R_AMDGPU_REL32",
                    5: "R_AMDGPU_REL64", 6: "R_AMDGPU_ABS32", 7: "R_AMDGPU_GOTPCREL",
                    8: "R_AMDGPU_GOTPCREL32_LO", 9: "R_AMDGPU_GOTPCREL32_HI", 10: "R_AMDGPU_REL32_LO",
                    11: "R_AMDGPU_REL32_HI", 14: "R_AMDGPU_REL16"}
PF_X, PF_W, PF_R = 1, 2, 4


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
class Section:
    name: str
    offset: int  # its address in the image
    size: int


@dataclass(frozen=True)
class Segment:
    """A PT_LOAD segment: `data` goes at `offset` from the load base, zeros after it up to `size`."""

    offset: int
    size: int
    data: bytes
    flags: int  # PF_R | PF_W | PF_X
    sections: tuple[Section, ...]

    @property
    def writable(self) -> bool:
        return bool(self.flags & PF_W)

    @property
    def permissions(self) -> str:
        return "".join(c if self.flags & bit else "-" for c, bit in (("R", PF_R), ("W", PF_W), ("X", PF_X)))


@dataclass(frozen=True)
class Symbol:
    """A global variable (or the kernel descriptor) of the image: its address in the image and size."""

    name: str
    offset: int
    size: int


@dataclass(frozen=True)
class Image:
    """A parsed code object: what the loader places, its kernels' descriptors and its globals."""

    code: bytes  # the image from address 0 (sections at their virtual addresses), for decoding
    kernels: dict[str, Descriptor]
    text_start: int
    text_end: int
    segments: tuple[Segment, ...]
    align: int  # the load base's alignment: the largest PT_LOAD p_align
    # R_AMDGPU_RELATIVE64 (offset, addend): the base + addend goes there
    relative: tuple[tuple[int, int], ...]
    symbols: dict[str, Symbol]  # the dynamic symbol table's objects
    objects: tuple[Symbol, ...]  # every object symbol, file-local ones too (.symtab), for fault lines

    @property
    def span(self) -> int:
        return max((s.offset + s.size for s in self.segments), default=0)


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
        # the HIP runtime sizes the segment from the metadata; hand-written code objects leave the
        # descriptor's field 0
        kernarg_size=max(kernarg, int(meta.get(".kernarg_segment_size", 0))),
        vgprs=min(accum_offset, unified), agprs=max(unified - accum_offset, 0), accum_offset=accum_offset,
        sgprs=(_bits(rsrc1, 6, 4) + 1) * 8, user_sgprs=_bits(rsrc2, 1, 5),
        private_segment_buffer=bool(props & 1), dispatch_ptr=bool(props & 2), queue_ptr=bool(props & 4),
        kernarg_segment_ptr=bool(props & 8), dispatch_id=bool(props & 16), flat_scratch_init=bool(props & 32),
        private_segment_size_sgpr=bool(props & 64), kernarg_preload_dwords=_bits(preload, 0, 7),
        kernarg_preload_offset=_bits(preload, 7, 9),
        workgroup_id=(bool(_bits(rsrc2, 7, 1)), bool(_bits(rsrc2, 8, 1)), bool(_bits(rsrc2, 9, 1))),
        workgroup_info=bool(_bits(rsrc2, 10, 1)), enable_private_segment=bool(_bits(rsrc2, 0, 1)),
        workitem_id_dims=_bits(rsrc2, 11, 2) + 1, wave64=int(meta.get(".wavefront_size", 64)) == 64,
        max_flat_workgroup_size=int(meta.get(".max_flat_workgroup_size", 1024)),
        args=tuple(Arg(str(a[".value_kind"]), int(a[".offset"]), int(a[".size"]))
                   for a in meta.get(".args", [])),
        uses_dynamic_stack=bool(props & (1 << 11)) or bool(meta.get(".uses_dynamic_stack", False)))


def load_image(data: bytes) -> Image:
    """Parse a gfx950 code object; CodeObjectError if it is not one."""
    elf = ELFFile(io.BytesIO(data))
    if elf["e_machine"] != "EM_AMDGPU":
        raise CodeObjectError(f"not an AMDGPU code object (machine {elf['e_machine']})")
    if elf["e_flags"] & EF_AMDGPU_MACH_MASK != EF_AMDGPU_MACH_GFX950:
        raise CodeObjectError(f"built for another AMDGPU (e_flags {elf['e_flags']:#x}); the emulator runs "
                              "gfx950")
    sections = [Section(sec.name, sec["sh_addr"], sec["sh_size"]) for sec in elf.iter_sections()
                if sec["sh_flags"] & 2 and sec["sh_size"]]  # SHF_ALLOC
    loads = [seg for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
    segments = tuple(Segment(seg["p_vaddr"], seg["p_memsz"], seg.data(), seg["p_flags"],
                             tuple(x for x in sections if seg["p_vaddr"] <= x.offset < seg["p_vaddr"]
                                   + seg["p_memsz"]))
                     for seg in loads)
    image = bytearray(max((s.offset + s.size for s in segments), default=0))
    for segment in segments:
        image[segment.offset: segment.offset + len(segment.data)] = segment.data
    text = elf.get_section_by_name(".text")
    if text is None:
        raise CodeObjectError("the code object has no .text section")
    symbols = elf.get_section_by_name(".symtab")
    kd_address: dict[str, int] = {}
    local: tuple[Symbol, ...] = ()
    if isinstance(symbols, SymbolTableSection):
        kd_address = {sym.name[:-3]: sym["st_value"]
                      for sym in symbols.iter_symbols() if sym.name.endswith(".kd")}
        local = tuple(_objects(symbols).values())
    kernels = {}
    for k in hsaco.metadata(data).get("amdhsa.kernels", []):
        name = k[".name"]
        if name not in kd_address:
            raise CodeObjectError(f"kernel {name} has no {name}.kd descriptor symbol")
        address = kd_address[name]
        kernels[name] = parse_descriptor(name, bytes(image[address: address + 64]), address, k)
    dynsym = elf.get_section_by_name(".dynsym")
    objects = _objects(dynsym) if isinstance(dynsym, SymbolTableSection) else {}
    relative = relative_relocations(elf)
    for offset, _ in relative:
        if not any(s.offset <= offset and offset + 8 <= s.offset + s.size for s in segments):
            raise CodeObjectError(f"dynamic relocation at offset {offset:#x} lies outside every loadable "
                                  "segment")
    return Image(bytes(image), kernels, text["sh_addr"], text["sh_addr"] + text["sh_size"], segments,
                 max((seg["p_align"] for seg in loads), default=1), relative, objects,
                 local or tuple(objects.values()))


def _objects(table: SymbolTableSection) -> dict[str, Symbol]:
    return {sym.name: Symbol(sym.name, sym["st_value"], sym["st_size"]) for sym in table.iter_symbols()
            if sym["st_info"]["type"] == "STT_OBJECT" and sym["st_shndx"] != "SHN_UNDEF"}


def relative_relocations(elf: ELFFile) -> tuple[tuple[int, int], ...]:
    """The dynamic relocations, each R_AMDGPU_RELATIVE64; CodeObjectError naming any other type."""
    found = []
    for seg in elf.iter_segments():
        if not isinstance(seg, DynamicSegment):
            continue
        for kind, table in seg.get_relocation_tables().items():
            assert isinstance(table, RelocationTable)
            for rel in table.iter_relocations():
                rtype = rel["r_info_type"]
                if rtype == R_AMDGPU_NONE:
                    continue
                if rtype != R_AMDGPU_RELATIVE64 or kind != "RELA":
                    name = RELOCATION_NAMES.get(rtype, f"type {rtype}")
                    raise CodeObjectError(f"dynamic relocation {name} at offset {rel['r_offset']:#x} "
                                          f"({kind}): the emulator's loader applies only "
                                          "R_AMDGPU_RELATIVE64 (RELA)")
                found.append((rel["r_offset"], rel["r_addend"]))
    return tuple(found)
