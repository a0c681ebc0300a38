"""How many workgroups of each named kernel the GPU runs at once, and the persistent grid wgrad
launches for 8192^3, E = 8 (launch.prepare). Run from the repository root on a GPU machine:
python3 results/h200/resident.py hopper [more kernel names]. Written for call V7 of
run-log-hopper-v16-2026-12-03.txt, which could not start; first ran as call W1 of
run-log-hopper-v20-2026-12-03.txt (hopper: 66 clusters of two at once on 132 SMs, grid 132)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from wgrad_cli.abi import Dims
from wgrad_cli.build import BuildJob, run_builds
from wgrad_cli.cache import Cache
from wgrad_cli.kernelspec import load_specs
from wgrad_cli.launch import prepare
from wgrad_cli.runtime import open_runtime
from wgrad_cli.targets import TARGETS
from wgrad_cli.toolchain import Toolchains

DIMS = Dims(8192, 8192, 8192, 8)
rt, target, specs = open_runtime("nvidia", 0), TARGETS["sm_90a"], load_specs()
cache = Cache(Path(tempfile.mkdtemp()))
for name in sys.argv[1:]:
    spec = specs[name]
    (built,) = run_builds([BuildJob(spec, target.name, DIMS)], Toolchains(cache.root / "shim"), cache, {}, 1)
    assert built.ok and built.code_object, built.errors
    kernel = prepare(rt, built.code_object, target, spec, DIMS, [0] * 6)
    resident = rt.resident(kernel.function, spec.block, spec.dynamic_shared, spec.cluster)
    print(f"{name}: cluster {spec.cluster}, {resident} workgroups at once ({resident // spec.cluster} clusters) "
          f"on {rt.device.units} SMs; grid {kernel.grid}")
rt.close()
