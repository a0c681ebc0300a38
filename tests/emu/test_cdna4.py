"""The cdna4 kernel (kernels/cdna4.hip), built for gfx950 by the real compiler: clean builds for the
CI shape matrix with the resources its design rests on, and every element checked against numpy on
the emulator (emu.yaml's shapes and smoke.yaml's with their routing edge cases, LDS accesses checked,
undefined registers filled with a NaN pattern)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.cli import cli
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import CONFIGS_DIR

RING_BYTES = 4 * (2 * 256 * 64 + 2 * 256 * 4)  # four stages of 64 tokens: A and B rows, their scale words


def test_builds_clean_for_the_ci_matrix(amd_compiler: Compiler, specs: dict[str, KernelSpec],
                                        tmp_path: Path) -> None:
    """No spills or scratch at any CI shape, one workgroup of two waves per SIMD per CU (the
    accumulators take 128 registers a lane), the four-stage ring in LDS, and the instructions the
    design names: scaled 32x32x64 MFMAs, loads straight into LDS, the RNE bf16 conversion."""
    dims = sorted({s.dims for s in load_config(CONFIGS_DIR / "ci.yaml", specs).shapes},
                  key=lambda d: (d.M, d.N, d.K, d.E))
    jobs = [BuildJob(specs["cdna4"], "gfx950", d) for d in dims]
    results = run_builds(jobs, Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "c"),
                         {"spills": 0, "scratch_bytes": 0}, workers=os.cpu_count() or 1,
                         isa_dir=tmp_path / "isa")
    assert len(results) > 10 and all(r.ok for r in results), \
        [(r.job.dims, r.errors) for r in results if not r.ok]
    for r in results:
        res = r.resources
        assert res and res.shared_bytes == RING_BYTES and res.scratch_bytes == 0, (r.job.dims, res)
        assert res.occupancy.groups_per_unit == 1 and res.occupancy.waves_per_simd == 2, (r.job.dims, res)
    isa = next((tmp_path / "isa").iterdir()).read_text()
    for needed in ("v_mfma_scale_f32_32x32x64_f8f6f4", "buffer_load_dwordx4", " lds", "v_cvt_pk_bf16_f32",
                   "global_store_dwordx2"):
        assert needed in isa, needed


def test_passes_on_the_emulator(amd_compiler: Compiler, specs: dict[str, KernelSpec], tmp_path: Path) -> None:
    out = tmp_path / "verify.json"
    for config, shapes in (("emu", []), ("smoke", ["--shape=one-expert", "--shape=gaps"])):
        result = CliRunner().invoke(cli, [
            "verify", "--config", config, *shapes, "--kernel", "cdna4", "--device", "emu", "--edge-cases",
            "--strict-lds", "--emu-register-fill", "0x7fc00000", "--json", str(out), "--cache-dir",
            str(tmp_path / "c")])
        assert result.exit_code == 0, result.output
        records = json.loads(out.read_text())["records"]
        base = [s.removeprefix("--shape=") for s in shapes] \
            or [s.name for s in load_config(CONFIGS_DIR / "emu.yaml", specs).shapes]
        names = {r["shape"]["name"] for r in records}
        assert set(base) < names and all("+" in n for n in names - set(base))  # each shape and its edge cases
        assert all(r["ok"] and r["kernel"] == "cdna4" for r in records)
