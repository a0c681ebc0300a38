"""The emulator's rate on the matrix path: one 512-thread workgroup doing a 256 x 256 x 128 scaled
MFMA step (A and B tiles staged through LDS, read back with ds_read_b128 in the scaled MFMA's
operand layout, 32 v_mfma_scale_f32_16x16x128_f8f6f4 per wave). The kernel is this project's own
test code; the gfx950 compiler wgrad finds (`wgrad info`) builds it."""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from wgrad_cli.backends.registry import EMULATED_TARGET, backend
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.emu.device import EmuRuntime

SOURCE = r'''
typedef int v8i __attribute__((ext_vector_type(8)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef float v4f __attribute__((ext_vector_type(4)));
extern "C" __attribute__((global)) __attribute__((launch_bounds(512)))
void mfma_step(const v4i *a, const v4i *b, const int *sa, const int *sb, v4f *d) {
  __attribute__((shared)) v4i lds[4096];
  int t = __builtin_amdgcn_workitem_id_x();
  for (int i = t; i < 2048; i += 512) { lds[i] = a[i]; lds[2048 + i] = b[i]; }
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  int w = t / 64, l = t % 64, r = l % 16, g = l / 16;
  int scale_a = sa[t], scale_b = sb[t];
  v8i fa[2];
  for (int i = 0; i < 2; i++) {
    int row = 16 * (2 * w + i) + r;
    v4i lo = lds[row * 8 + g], hi = lds[row * 8 + 4 + g];
    fa[i] = (v8i){lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  }
#pragma unroll
  for (int j = 0; j < 16; j++) {
    int col = 16 * j + r;
    v4i lo = lds[2048 + col * 8 + g], hi = lds[2048 + col * 8 + 4 + g];
    v8i fb = (v8i){lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int i = 0; i < 2; i++)
      d[((2 * w + i) * 16 + j) * 64 + l] = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(fa[i], fb,
          (v4f){0, 0, 0, 0}, 0, 0, 0, scale_a, 0, scale_b);
  }
}
'''


def build(compiler: Compiler) -> bytes:
    """The step's gfx950 code object, built by `compiler`."""
    with tempfile.TemporaryDirectory(prefix="wgrad-mfma-step-") as tmp:
        source, image = Path(tmp) / "step.hip", Path(tmp) / "step.hsaco"
        source.write_text(SOURCE)
        argv = backend(EMULATED_TARGET).compile_argv(compiler, source, image, Path(tmp) / "step.d", {}, (),
                                                     ("-O3",))
        subprocess.run(argv, check=True, capture_output=True)
        return image.read_bytes()


def step_seconds(image: bytes, repeats: int = 3) -> float:
    """The best wall time of one launch of the step on one worker, decoding excluded."""
    rt = EmuRuntime(workers=1)
    rng = np.random.default_rng(0)
    arrays: list[np.ndarray] = [rng.integers(0, 0x7E, size=256 * 128, dtype=np.uint8),
                                rng.integers(0, 0x7E, size=256 * 128, dtype=np.uint8),
                                rng.integers(120, 134, size=(512, 4), dtype=np.uint8),
                                rng.integers(120, 134, size=(512, 4), dtype=np.uint8),
                                np.zeros(256 * 256, dtype=np.float32)]
    pointers = []
    for a in arrays:
        ptr = rt.alloc(a.nbytes)
        rt.copy_in(ptr, a.ctypes.data, a.nbytes)
        pointers.append(ctypes.c_uint64(ptr))
    params = (ctypes.c_void_p * len(pointers))(*[ctypes.addressof(p) for p in pointers])
    function = rt.load(image, "mfma_step", 0)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        rt.launch(function, 1, 512, 0, ctypes.addressof(params))
        best = min(best, time.perf_counter() - start)
    return best
