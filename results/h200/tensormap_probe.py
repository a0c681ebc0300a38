"""Probe for issue 4: a TMA tensor map built by a kernel from zeros (tensormap.replace) against the
driver's (cuTensorMapEncodeTiled), and one 64 x 128 box of a random uint8 tensor copied through
either. Ran as call W5 of run-log-hopper-v20-2026-12-03.txt (both maps give the right box; they
differ in bytes 65 and 72, which the driver sets and tensormap.replace has no field for). Run from
the repository root on a GPU machine:
    nvcc -arch=sm_90a -O3 -cubin -o /tmp/tmap.cubin results/h200/tensormap-probe.cu
    python3 results/h200/tensormap_probe.py /tmp/tmap.cubin device   # or: host
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from cuda.bindings import driver as d


def ok(result: Any) -> Any:
    """The value of a cuda-bindings call, or an assertion naming its error."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert err == d.CUresult.CUDA_SUCCESS, err
    return rest[0] if len(rest) == 1 else rest


def launch(function: Any, args: list[tuple[int, type]], block: int = 32) -> None:
    """One block of `function` with `args` (value, numpy type) as its kernel parameters, waited for."""
    values = [np.array([value], dtype=kind) for value, kind in args]
    pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
    ok(d.cuLaunchKernel(function, 1, 1, 1, block, 1, 1, 0, 0, pointers.ctypes.data, 0))
    ok(d.cuCtxSynchronize())


if len(sys.argv) != 3 or sys.argv[2] not in ("host", "device"):
    sys.exit("usage: tensormap_probe.py CUBIN host|device (whose tensor map the TMA copy goes through)")
ok(d.cuInit(0))
ok(d.cuCtxSetCurrent(ok(d.cuDevicePrimaryCtxRetain(ok(d.cuDeviceGet(0))))))
module = ok(d.cuModuleLoadData(open(sys.argv[1], "rb").read()))
build, use = ok(d.cuModuleGetFunction(module, b"build_map")), ok(d.cuModuleGetFunction(module, b"use_map"))
rows, cols = 1024, 4096
src = np.random.default_rng(0).integers(0, 256, (rows, cols), dtype=np.uint8)
p_src = ok(d.cuMemAlloc(src.nbytes))
ok(d.cuMemcpyHtoD(p_src, src.ctypes.data, src.nbytes))
p_map, p_host_map, p_dst = ok(d.cuMemAlloc(256)), ok(d.cuMemAlloc(256)), ok(d.cuMemAlloc(128 * 64))

launch(build, [(int(p_map), np.uint64), (int(p_src), np.uint64), (rows, np.uint32), (cols, np.uint32)])
device_bytes = np.empty(128, np.uint8)
ok(d.cuMemcpyDtoH(device_bytes.ctypes.data, p_map, 128))
host_map = ok(d.cuTensorMapEncodeTiled(
    d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8, d.cuuint32_t(2), int(p_src),
    [d.cuuint64_t(cols), d.cuuint64_t(rows)], [d.cuuint64_t(cols)], [d.cuuint32_t(64), d.cuuint32_t(128)],
    [d.cuuint32_t(1), d.cuuint32_t(1)], d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
    d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE, d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
host_bytes = np.array(host_map.opaque, dtype=np.uint64).view(np.uint8)
print("device-built:", device_bytes.view(np.uint64).tolist())
print("driver      :", host_bytes.view(np.uint64).tolist())
print("identical:", bool((device_bytes == host_bytes).all()),
      "differing bytes:", np.nonzero(device_bytes != host_bytes)[0].tolist())
ok(d.cuMemcpyHtoD(p_host_map, host_bytes.ctypes.data, 128))
x, y = 640, 256
launch(use, [(int(p_map if sys.argv[2] == "device" else p_host_map), np.uint64), (int(p_dst), np.uint64),
             (x, np.int32), (y, np.int32)], block=128)
out = np.empty((128, 64), np.uint8)
ok(d.cuMemcpyDtoH(out.ctypes.data, p_dst, out.nbytes))
print(sys.argv[2], "map: TMA box correct:", bool((out == src[y:y + 128, x:x + 64]).all()))
