from wgrad_cli.compile.occupancy import gfx950, sm90


def test_gfx950_upstream_figures() -> None:
    # docs/kernel-contract.md: 217 VGPRs, 0 AGPRs, 67,584 B LDS, 512 threads -> 224 registers: 2 waves per
    # SIMD, one workgroup per CU
    o = gfx950(217, 0, 67584, 512)
    assert (o.groups_per_unit, o.waves_per_simd, o.limited_by) == (1, 2, "registers")


def test_gfx950_agprs_share_the_file() -> None:
    assert gfx950(128, 0, 0, 256).waves_per_simd == 4
    assert gfx950(126, 128, 0, 256).waves_per_simd == 2  # 128 (126 aligned to 4) + 128 = 256 -> 2 waves
    assert gfx950(24, 0, 0, 256).waves_per_simd == 8  # capped at 8 waves per SIMD


def test_gfx950_lds_limit() -> None:
    o = gfx950(32, 0, 64 * 1024, 256)
    assert (o.groups_per_unit, o.limited_by) == (2, "LDS")


def test_sm90_limits() -> None:
    assert (sm90(32, 0, 256).groups_per_unit, sm90(32, 0, 256).limited_by) == (8, "warps")
    assert (sm90(128, 0, 256).groups_per_unit, sm90(128, 0, 256).limited_by) == (2, "registers")
    o = sm90(32, 100 * 1024, 128)
    assert (o.groups_per_unit, o.warps_per_sm, o.limited_by) == (2, 8, "shared memory")
    assert sm90(16, 0, 32).groups_per_unit == 32  # the 32-blocks-per-SM cap
