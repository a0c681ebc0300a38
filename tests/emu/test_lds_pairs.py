"""The READ2/WRITE2 LDS forms on the emulator: their two 8-bit offsets count elements of the form's
size (4 or 8 bytes), times 64 for the ST64 forms; each form at offsets 1 and 3 from a base of 16
bytes, on the bytes it reads and the ones it writes."""

from __future__ import annotations

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run

pytestmark = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped

# (form, element bytes, element stride of its offsets)
FORMS = [("ds_read2_b32", 4, 1), ("ds_read2_b64", 8, 1), ("ds_read2st64_b32", 4, 64),
         ("ds_read2st64_b64", 8, 64)]
WORDS = 2048  # of LDS: beyond the farthest element any form reaches here (3 x 8 x 64 + 16 + 8 bytes)
BASE = 16  # bytes


def read_kernel(form: str, size: int) -> str:
    kind = "v2u" if size == 4 else "v4u"
    return rf'''
typedef unsigned v2u __attribute__((ext_vector_type(2)));
typedef unsigned v4u __attribute__((ext_vector_type(4)));
KERNEL void pairs(unsigned *out) {{
  SHARED unsigned lds[{WORDS}];
  for (int i = tid(); i < {WORDS}; i += 64) lds[i] = i;
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  if (tid() == 0) {{
    {kind} v;
    // lds is an input so that its fill is kept (the only LDS variable: it starts at byte 0)
    asm volatile("{form} %0, %1 offset0:1 offset1:3\n s_waitcnt lgkmcnt(0)" : "=v"(v) : "v"({BASE}u), "v"(lds)
                 : "memory");
    for (int i = 0; i < {size // 2}; i++) out[i] = v[i];
  }}
}}
'''


def write_kernel(form: str, size: int) -> str:
    kind = "unsigned" if size == 4 else "unsigned long long"
    return rf'''
KERNEL void pairs(unsigned *out) {{
  SHARED unsigned lds[{WORDS}];
  for (int i = tid(); i < {WORDS}; i += 64) lds[i] = 0;
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  if (tid() == 0) {{
    {kind} a = ({kind})0xA2A2A2A2A1A1A1A1ull, b = ({kind})0xB2B2B2B2B1B1B1B1ull;
    asm volatile("{form} %0, %1, %2 offset0:1 offset1:3\n s_waitcnt lgkmcnt(0)" :: "v"({BASE}u), "v"(a),
                 "v"(b), "v"(lds) : "memory");
  }}
  __builtin_amdgcn_s_barrier();
  for (int i = tid(); i < {WORDS}; i += 64) out[i] = lds[i];
}}
'''


def words_of(size: int, stride: int) -> tuple[list[int], list[int]]:
    """The LDS words the element at offset 1, and the one at offset 3, cover."""
    first = [(BASE + off * size * stride) // 4 for off in (1, 3)]
    return [first[0] + i for i in range(size // 4)], [first[1] + i for i in range(size // 4)]


@pytest.mark.parametrize("form, size, stride", FORMS)
def test_read2_offsets_count_elements_of_its_size(form: str, size: int, stride: int) -> None:
    image = compile_hip(read_kernel(form, size))
    assert_uses(image, form)
    (out,) = run(image, [np.zeros(4, np.uint32)])
    one, three = words_of(size, stride)
    assert out[:size // 2].tolist() == one + three


@pytest.mark.parametrize("form, size, stride", [(f.replace("read", "write"), s, k) for f, s, k in FORMS])
def test_write2_offsets_count_elements_of_its_size(form: str, size: int, stride: int) -> None:
    image = compile_hip(write_kernel(form, size))
    assert_uses(image, form)
    (out,) = run(image, [np.zeros(WORDS, np.uint32)])
    one, three = words_of(size, stride)
    want = np.zeros(WORDS, np.uint32)
    want[one] = [0xA1A1A1A1, 0xA2A2A2A2][:len(one)]
    want[three] = [0xB1B1B1B1, 0xB2B2B2B2][:len(three)]
    assert np.flatnonzero(out).tolist() == np.flatnonzero(want).tolist() and (out == want).all()
