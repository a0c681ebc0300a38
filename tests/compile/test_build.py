"""Real builds with the real compilers: cache behaviour, failures, limits, ISA output."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.cli import cli
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.hsaco import metadata as amd_metadata
from wgrad_cli.compile.jobs import BuildJob, build_one, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import CONFIGS_DIR, KERNELS_DIR
from wgrad_cli.problem.abi import Dims

SMALL = Dims(256, 256, 256, 2)
HEADER_KERNEL = """#include "scale.h"
#if defined(__HIP__)
#define GLOBAL __attribute__((global))
#else
#define GLOBAL __global__
#endif
GLOBAL void grouped_mxfp8_wgrad_kernel(unsigned short *C, const unsigned char *A, const unsigned char *B,
                                       const unsigned char *sa, const unsigned char *sb, const int *off) {
    C[0] = (unsigned short)(SCALE * WGRAD_M + A[0] + B[0] + sa[0] + sb[0] + off[0]);
}
"""


def own_kernel(tmp_path: Path, specs: dict[str, KernelSpec], body: str = HEADER_KERNEL,
               header: str = "#define SCALE 1\n", **changes: object) -> KernelSpec:
    """A throwaway kernel (in tmp_path) that reads a header, to watch the cache follow includes."""
    (tmp_path / "k.cu").write_text(body)
    (tmp_path / "scale.h").write_text(header)
    return dataclasses.replace(specs["reference"], name="tmp", source=tmp_path / "k.cu", **changes)  # type: ignore[arg-type]


@pytest.fixture(params=["gfx950", "sm_90a"])
def target_compiler(request: pytest.FixtureRequest) -> tuple[str, Compiler]:
    fixture = "amd_compiler" if request.param == "gfx950" else "nvcc"
    return request.param, request.getfixturevalue(fixture)


def test_reference_builds_with_resources(target_compiler: tuple[str, Compiler], specs: dict[str, KernelSpec],
                                         tmp_path: Path) -> None:
    target, compiler = target_compiler
    r = build_one(BuildJob(specs["reference"], target, SMALL), BACKENDS[target], compiler,
                  Cache(tmp_path), {"spills": 0}, None)
    assert r.ok, r.errors
    assert r.code_object and r.code_object.exists() and r.code_object.suffix in (".hsaco", ".cubin")
    res = r.resources
    assert res and res.symbol.startswith("_Z26grouped_mxfp8_wgrad_kernel")
    assert 8 <= res.registers <= 64 and res.spills == 0 and res.scratch_bytes == 0 and res.shared_bytes == 0
    assert res.wave_size == (64 if target == "gfx950" else 32)
    assert res.occupancy.groups_per_unit == 8  # 256-thread blocks, few registers: the wave/warp cap decides


def test_hopper_builds_clean_for_every_shipped_shape(nvcc: Compiler, specs: dict[str, KernelSpec], repo: Path,
                                                    tmp_path: Path) -> None:
    """Its register budget is tight (168 per thread, 128 of them accumulators) and ptxas allocates per
    define set: K = 768 and 1280 once spilled 16 bytes while 8192 did not. Every shape any shipped
    config names must build with no spills, no scratch and one 384-thread CTA per SM."""
    dims = sorted({s.dims for c in CONFIGS_DIR.glob("*.yaml") for s in load_config(c, specs).shapes},
                  key=lambda d: (d.M, d.N, d.K, d.E))
    jobs = [BuildJob(specs["hopper"], "sm_90a", d) for d in dims]
    results = run_builds(jobs, Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "c"),
                         {"spills": 0, "scratch_bytes": 0}, workers=os.cpu_count() or 1)
    assert len(dims) > 20 and all(r.ok for r in results), [(r.job.dims, r.errors)
                                                           for r in results if not r.ok]
    for r in results:
        res = r.resources
        assert res and res.registers == 168 and res.occupancy.groups_per_unit == 1, (r.job.dims, res)


def test_cache_follows_source_and_headers(target_compiler: tuple[str, Compiler], specs: dict[str, KernelSpec],
                                          tmp_path: Path) -> None:
    target, compiler = target_compiler
    kernel = own_kernel(tmp_path, specs)
    cache = Cache(tmp_path / "cache")
    job = BuildJob(kernel, target, SMALL)
    first = build_one(job, BACKENDS[job.target], compiler, cache, {}, None)
    assert first.ok and not first.cache_hit, first.errors
    again = build_one(job, BACKENDS[job.target], compiler, cache, {}, None)
    assert again.cache_hit and again.code_object == first.code_object
    (tmp_path / "scale.h").write_text("#define SCALE 3\n")
    changed = build_one(job, BACKENDS[job.target], compiler, cache, {}, None)
    assert not changed.cache_hit and changed.code_object != first.code_object
    # back to the first content: its entry is still there
    (tmp_path / "scale.h").write_text("#define SCALE 1\n")
    assert build_one(job, BACKENDS[job.target], compiler, cache, {}, None).code_object == first.code_object
    other_dims = build_one(BuildJob(kernel, target, Dims(512, 256, 256, 2)), BACKENDS[target],
                           compiler, cache, {}, None)
    assert not other_dims.cache_hit


def test_truncated_entry_is_rebuilt(amd_compiler: Compiler, specs: dict[str, KernelSpec],
                                    tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    job = BuildJob(specs["reference"], "gfx950", SMALL)
    first = build_one(job, BACKENDS[job.target], amd_compiler, cache, {}, None)
    assert first.code_object
    data = first.code_object.read_bytes()
    first.code_object.write_bytes(data[: len(data) // 2])
    again = build_one(job, BACKENDS[job.target], amd_compiler, cache, {}, None)
    assert again.ok and not again.cache_hit and again.code_object
    # whole again (bytes differ: clang's CUID)
    assert amd_metadata(again.code_object.read_bytes())["amdhsa.kernels"]
    assert build_one(job, BACKENDS[job.target], amd_compiler, cache, {}, None).cache_hit
    (again.code_object.parent / "meta.json").write_text("{not json")
    assert not build_one(job, BACKENDS[job.target], amd_compiler, cache, {}, None).cache_hit


def test_compile_error_reports_first_errors_and_command(target_compiler: tuple[str, Compiler],
                                                        specs: dict[str, KernelSpec], tmp_path: Path) -> None:
    target, compiler = target_compiler
    broken = own_kernel(tmp_path, specs, body=HEADER_KERNEL.replace("C[0] =", "C[0] = undeclared_name +"))
    r = build_one(BuildJob(broken, target, SMALL), BACKENDS[target], compiler,
                  Cache(tmp_path / "c"), {}, None)
    assert not r.ok and r.code_object is None
    assert any("undeclared_name" in line for line in r.errors)
    assert r.errors[-1].startswith("command: ") and str(tmp_path / "k.cu") in r.errors[-1]


def test_run_goes_on_after_a_failure(amd_compiler: Compiler, specs: dict[str, KernelSpec],
                                     tmp_path: Path) -> None:
    broken = own_kernel(tmp_path, specs, body="this is not C++")
    jobs = [BuildJob(broken, "gfx950", SMALL), BuildJob(specs["reference"], "gfx950", SMALL)]
    results = run_builds(jobs, Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "c"), {}, 2)
    assert [r.ok for r in results] == [False, True]


def test_limits_fail_the_build(amd_compiler: Compiler, specs: dict[str, KernelSpec], tmp_path: Path) -> None:
    r = build_one(BuildJob(specs["reference"], "gfx950", SMALL), BACKENDS["gfx950"], amd_compiler,
                  Cache(tmp_path), {"registers": 4, "spills": 0}, None)
    assert not r.ok
    assert r.errors == [f"registers = {r.resources.registers} exceeds the limit 4"]  # type: ignore[union-attr]


def test_wrong_symbol_and_abi_are_errors(amd_compiler: Compiler, specs: dict[str, KernelSpec],
                                         tmp_path: Path) -> None:
    renamed = own_kernel(tmp_path, specs, symbol="other_kernel")
    r = build_one(BuildJob(renamed, "gfx950", SMALL), BACKENDS["gfx950"], amd_compiler,
                  Cache(tmp_path / "a"), {}, None)
    assert not r.ok and "expected one kernel named 'other_kernel'" in r.errors[0]
    five = HEADER_KERNEL.replace(", const int *off", "").replace(" + off[0]", "")
    r = build_one(BuildJob(own_kernel(tmp_path, specs, body=five), "gfx950", SMALL), BACKENDS["gfx950"],
                  amd_compiler, Cache(tmp_path / "b"), {}, None)
    assert not r.ok and "5 arguments, the ABI has 6" in r.errors[0]


def test_isa_files(target_compiler: tuple[str, Compiler], specs: dict[str, KernelSpec],
                   tmp_path: Path) -> None:
    target, compiler = target_compiler
    r = build_one(BuildJob(specs["reference"], target, SMALL), BACKENDS[target], compiler,
                  Cache(tmp_path / "c"), {}, tmp_path / "isa")
    assert r.ok, r.errors
    (isa,) = (tmp_path / "isa").iterdir()
    text = isa.read_text()
    if target == "gfx950":
        assert isa.suffix == ".s" and "v_ldexp_f32" in text and "global_store_short" in text
    else:
        assert isa.suffix in (".sass", ".ptx") and "grouped_mxfp8_wgrad_kernel" in text


def test_concurrent_builds_share_one_cache(amd_compiler: Compiler, nvcc: Compiler, tmp_path: Path,
                                           repo: Path) -> None:
    command = [sys.executable, "-m", "wgrad_cli", "build", "--config", str(CONFIGS_DIR / "smoke.yaml"),
               "--cache-dir", str(tmp_path / "cache"), "-j", "2"]
    procs = [subprocess.Popen([*command, "--json", str(tmp_path / f"{i}.json")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for i in range(3)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    objects = [{r["code_object"] for r in json.loads((tmp_path / f"{i}.json").read_text())["records"]}
               for i in range(3)]
    rerun = subprocess.run([*command, "--json", str(tmp_path / "warm.json")], capture_output=True, check=True)
    records = json.loads((tmp_path / "warm.json").read_text())["records"]
    assert all(r["cache_hit"] and r["ok"] for r in records), rerun.stderr
    assert {r["code_object"] for r in records} <= set.union(*objects)


def test_a_compile_error_of_every_shape_is_said_once(amd_compiler: Compiler, tmp_path: Path) -> None:
    """A kernel that does not compile fails alike for each shape: its errors print once, naming the shapes."""
    source = tmp_path / "broken.cu"
    source.write_text((KERNELS_DIR / "reference.cu").read_text().replace("float acc = 0.0f;",
                                                                         "float acc = oops;"))
    result = CliRunner().invoke(cli, ["build", "--config", "smoke", "--target", "gfx950",
                                      "--kernel", "reference", "--kernel-source", str(source),
                                      "--include", str(KERNELS_DIR), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert result.stderr.count("use of undeclared identifier 'oops'") == 1, result.stderr
    assert "reference-gfx950 (4 shapes: M128-N256-K256-E1, " in result.stderr
