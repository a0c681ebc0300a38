"""Config validation: every bad input is reported as `file:line: field: what is wrong; what is allowed`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import Config, Shape, load_config
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.routing import Routing

SPECS = load_specs()
CONFIGS = sorted(CONFIGS_DIR.glob("*.yaml"))


def write(tmp_path: Path, text: str) -> Path:
    """Write `text` (dedented) as tmp_path/c.yaml, next to an existing kernel.cpp and no other files."""
    (tmp_path / "kernel.cpp").write_text("// a kernel\n")
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_config(path, SPECS)
    return exc.value.lines


def check(message: str, file: Path, line: int, field: str, why: str, allowed: str) -> None:
    """`message` is `file:line: field: <...why...>; <...allowed...>`."""
    prefix = f"{file}:{line}: {field}: "
    assert message.startswith(prefix), f"{message!r} does not start with {prefix!r}"
    got_why, sep, got_allowed = message[len(prefix):].partition("; ")
    assert sep, f"{message!r} has no '; ' between why and allowed"
    assert why in got_why, f"{why!r} not in why part {got_why!r}"
    assert allowed in got_allowed, f"{allowed!r} not in allowed part {got_allowed!r}"


# (config text, line, field, phrase of the why, phrase of the allowed part);
# each config has exactly one problem.
ONE_PROBLEM = {
    # YAML syntax
    "yaml-indent": ("""\
        seed: 1
         kernels: [reference]
        shapes: []
        """, 2, "(YAML)", "mapping values are not allowed", "valid YAML"),
    "yaml-tab": ("""\
        seed: 1
        \tshapes: []
        """, 2, "(YAML)", "'\\t' that cannot start any token", "valid YAML"),
    "yaml-reserved": ("""\
        seed: 1
        shapes: @x
        """, 2, "(YAML)", "'@' that cannot start any token", "valid YAML"),
    # not a mapping / empty
    "top-list": ("""\
        - name: a
        """, 1, "(top level)", "is a list", "a config is a mapping"),
    "empty-file": ("", 1, "shapes", "is missing", "non-empty list"),
    # unknown keys
    "unknown-top": ("""\
        seed: 1
        shape: []
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "shape", "unknown key", "allowed keys: description, kernels, limits"),
    "unknown-shape": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
          - {name: b, M: 128, N: 256, K: 256, E: 1, experts: 2}
        """, 3, "shapes[1].experts", "unknown key", "shape keys: E, K, M, N, name, note, offsets, routing"),
    "unknown-limit": ("""\
        limits:
          spills: 0
          vgprs: 128
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 3, "limits.vgprs", "unknown limit", "limits are agprs, registers"),
    "unknown-routing-key": ("""\
        routing: {kind: zipf, s: 1.2, expert: 1}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "routing.expert", "unknown key for zipf routing", "zipf takes ['s']"),
    "unknown-kernel-entry-key": ("""\
        kernels:
          - {name: reference, flags: [-O2]}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0].flags", "unknown key", "a kernel entry has name (or spec), source and include"),
    # missing keys
    "missing-shapes": ("""\
        seed: 1
        kernels: [reference]
        """, 1, "shapes", "is missing", "shapes is a non-empty list"),
    "missing-name": ("""\
        shapes:
          - {M: 128, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].name", "is missing", "a name of letters, digits"),
    "missing-M": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
          - name: b
            N: 256
            K: 256
            E: 1
        """, 3, "shapes[1].M", "is missing", "every shape needs M, N, K and E"),
    "missing-N": ("""\
        shapes:
          - {name: a, M: 128, K: 256, E: 1}
        """, 2, "shapes[0].N", "is missing", "every shape needs M, N, K and E"),
    "missing-K": ("""\
        shapes:
          - {name: a, M: 128, N: 256, E: 1}
        """, 2, "shapes[0].K", "is missing", "every shape needs M, N, K and E"),
    "missing-E": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256}
        """, 2, "shapes[0].E", "is missing", "every shape needs M, N, K and E"),
    "kernel-entry-without-name": ("""\
        kernels:
          - {source: kernel.cpp}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0]", "names no kernel", "a kernel name, {spec: FILE}, or {name, source, include}"),
    # wrong types
    "M-string": ("""\
        shapes:
          - {name: a, M: "128", N: 256, K: 256, E: 1}
        """, 2, "shapes[0].M", "'128' is not an integer", "M is an integer"),
    "N-float": ("""\
        shapes:
          - {name: a, M: 128, N: 256.0, K: 256, E: 1}
        """, 2, "shapes[0].N", "256.0 is not an integer", "N is an integer"),
    "K-bool": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: yes, E: 1}
        """, 2, "shapes[0].K", "True is not an integer", "K is an integer"),
    "E-bool": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: true}
        """, 2, "shapes[0].E", "True is not an integer", "E is an integer"),
    "E-list": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: [1]}
        """, 2, "shapes[0].E", "[1] is not an integer", "E is an integer"),
    "M-too-large": ("""\
        shapes:
          - {name: a, M: 4294967296, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].M", "4294967296 is too large", "int32"),
    "name-int": ("""\
        shapes:
          - {name: 7, M: 128, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].name", "7 is not a shape name", "letters, digits"),
    "seed-list": ("""\
        seed: [1]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "seed", "[1] is not a non-negative integer", "seed is an integer >= 0"),
    "seed-bool": ("""\
        seed: true
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "seed", "True is not a non-negative integer", "seed is an integer >= 0"),
    "seed-negative": ("""\
        seed: -1
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "seed", "-1 is not a non-negative integer", "seed is an integer >= 0"),
    "quantization": ("""\
        quantization: mxfp8
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "quantization", "'mxfp8' is unknown", "one of ocp, upstream"),
    "limit-bool": ("""\
        limits: {spills: false}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "limits.spills", "False is not a non-negative integer", "a limit is an integer >= 0"),
    "limits-list": ("""\
        limits: [spills]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "limits", "['spills'] is not a mapping", "limits: {agprs"),
    "kernels-string": ("""\
        kernels: reference
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "kernels", "'reference' is not a non-empty list", "kernels: [name, ...]"),
    "targets-string": ("""\
        targets: gfx950
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "targets", "'gfx950' is not a non-empty list of targets", "a list of gfx950, sm_90a"),
    "shapes-mapping": ("""\
        shapes: {name: a}
        """, 1, "shapes", "{'name': 'a'} is not a list", "non-empty list"),
    "shape-scalar": ("""\
        shapes:
          - a
        """, 2, "shapes[0]", "'a' is not a mapping", "a shape is {name, M, N, K, E"),
    "include-string": ("""\
        kernels:
          - {name: reference, include: inc}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0].include", "'inc' is not a list of paths", "include: [dir, ...]"),
    # the ABI's input rules
    "M-not-128": ("""\
        shapes:
          - {name: a, M: 192, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].M", "192 is not a positive multiple of 128", "M must be a multiple of 128"),
    "M-zero": ("""\
        shapes:
          - {name: a, M: 0, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].M", "0 is not a positive multiple of 128", "M must be a multiple of 128"),
    "N-not-256": ("""\
        shapes:
          - {name: a, M: 128, N: 384, K: 256, E: 1}
        """, 2, "shapes[0].N", "384 is not a positive multiple of 256", "N must be a multiple of 256"),
    "K-not-256": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 128, E: 1}
        """, 2, "shapes[0].K", "128 is not a positive multiple of 256", "K must be a multiple of 256"),
    "E-zero": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 0}
        """, 2, "shapes[0].E", "0 experts", "E must be at least 1"),
    "E-negative": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: -3}
        """, 2, "shapes[0].E", "-3 experts", "E must be at least 1"),
    # explicit offsets (M = 512, E = 2: three offsets in [0, 512])
    "offsets-float": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 256.0, 512]}
        """, 2, "shapes[0].offsets[1]", "256.0 is not an integer", "offsets are int32 token indices"),
    "offsets-string": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, "256", 512]}
        """, 2, "shapes[0].offsets[1]", "'256' is not an integer", "offsets are int32 token indices"),
    "offsets-bool": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [false, 256, 512]}
        """, 2, "shapes[0].offsets[0]", "False is not an integer", "offsets are int32 token indices"),
    "offsets-decreasing": ("""\
        shapes:
          - name: a
            M: 512
            N: 256
            K: 256
            E: 2
            offsets:
              - 0
              - 384
              - 256
        """, 10, "shapes[0].offsets[2]", "256 is less than 384 before it", "offsets must not decrease"),
    "offsets-not-128": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 200, 512]}
        """, 2, "shapes[0].offsets[1]", "200 is not a multiple of 128", "offsets must be multiples of 128"),
    "offsets-beyond-M": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 256, 640]}
        """, 2, "shapes[0].offsets[2]", "640 is outside the tokens", "offsets must lie in [0, M=512]"),
    "offsets-negative": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [-128, 256, 512]}
        """, 2, "shapes[0].offsets[0]", "-128 is outside the tokens", "offsets must lie in [0, M=512]"),
    "offsets-too-short": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 512]}
        """, 2, "shapes[0].offsets", "has 2 entries", "E+1 = 3 entries are needed"),
    "offsets-too-long": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 128, 256, 512]}
        """, 2, "shapes[0].offsets", "has 4 entries", "E+1 = 3 entries are needed"),
    "offsets-not-list": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: 512}
        """, 2, "shapes[0].offsets", "512 is not a list", "E+1 = 3 integers"),
    "offsets-and-routing": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: zipf, offsets: [0, 256, 512]}
        """, 2, "shapes[0].offsets", "is given together with routing", "either routing or explicit offsets"),
    # kernels and targets
    "unknown-kernel": ("""\
        kernels: [reference, cutlass]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "kernels[1].name", "unknown kernel 'cutlass'",
         "known kernels: cdna4, empty, hopper, reference, upstream"),
    "kernel-twice": ("""\
        kernels: [reference, reference]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "kernels", "kernel 'reference' is listed twice", "list each kernel once"),
    "unknown-target": ("""\
        targets: [gfx950, gfx942]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 1, "targets[1]", "unknown target 'gfx942'", "targets are gfx950, sm_90a"),
    "target-no-kernel-builds": ("""\
        kernels:
          - {name: upstream, source: kernel.cpp}
        targets: [sm_90a]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 3, "targets[0]", "no listed kernel builds for sm_90a",
         "list a kernel whose spec has this target"),
    "external-kernel-no-source": ("""\
        seed: 3
        kernels: [upstream]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0].source", "kernel 'upstream' is external and no source was given",
         "pass --kernel-source PATH"),
    "source-does-not-exist": ("""\
        kernels:
          - {name: upstream, source: missing.cpp}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0].source", "missing.cpp does not exist", "source must name an existing file"),
    "source-not-string": ("""\
        kernels:
          - {name: reference, source: 5}
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 2, "kernels[0].source", "5 is not a path", "a file path"),
    "include-does-not-exist": ("""\
        kernels:
          - name: upstream
            source: kernel.cpp
            include: [/nonexistent/HipKittens/include]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """, 4, "kernels[0].include[0]", "/nonexistent/HipKittens/include is not a directory",
         "include dirs must exist"),
    # shapes
    "empty-shapes": ("""\
        seed: 1
        shapes: []
        """, 2, "shapes", "is empty", "shapes is a non-empty list"),
    "duplicate-shape-name": ("""\
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
          - {name: b, M: 128, N: 256, K: 256, E: 1}
          - {name: a, M: 256, N: 256, K: 256, E: 2}
        """, 4, "shapes[2].name", "'a' is also the name of shapes[0]", "shape names must be unique"),
    "bad-shape-name": ("""\
        shapes:
          - {name: "a b", M: 128, N: 256, K: 256, E: 1}
        """, 2, "shapes[0].name", "'a b' is not a shape name", "letters, digits, '.', '_', '-'"),
    # duplicate YAML keys
    "duplicate-top-key": ("""\
        seed: 1
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        seed: 2
        """, 4, "seed", "appears twice", "each key may appear once"),
    "duplicate-shape-key": ("""\
        shapes:
          - name: a
            M: 128
            N: 256
            M: 256
            K: 256
            E: 1
        """, 5, "shapes[0].M", "appears twice", "each key may appear once"),
    # routing
    "routing-unknown-kind": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: random}
        """, 2, "shapes[0].routing", "'random' is not a routing", "uniform, zipf, empty, single"),
    "routing-kind-missing": ("""\
        routing: {s: 1.2}
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2}
        """, 1, "routing", "{'s': 1.2} is not a routing", "uniform, zipf, empty, single"),
    "routing-unknown-key-for-uniform": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: uniform, seed: 3}}
        """, 2, "shapes[0].routing.seed", "unknown key for uniform routing", "uniform takes nothing"),
    "zipf-s-zero": ("""\
        routing:
          kind: zipf
          s: 0
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2}
        """, 3, "routing.s", "0 is not a Zipf exponent", "s is a number in (0, 10]"),
    "zipf-s-too-big": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: zipf, s: 10.5}}
        """, 2, "shapes[0].routing.s", "10.5 is not a Zipf exponent", "s is a number in (0, 10]"),
    "zipf-s-string": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: zipf, s: steep}}
        """, 2, "shapes[0].routing.s", "'steep' is not a Zipf exponent", "s is a number in (0, 10]"),
    "zipf-s-bool": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: zipf, s: true}}
        """, 2, "shapes[0].routing.s", "True is not a Zipf exponent", "s is a number in (0, 10]"),
    "empty-experts-over-E": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: empty, experts: 3}}
        """, 2, "shapes[0].routing.experts", "3 is not a number of experts",
         "experts is an integer in [1, E=2]"),
    "empty-experts-zero": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: empty, experts: 0}}
        """, 2, "shapes[0].routing.experts", "0 is not a number of experts",
         "experts is an integer in [1, E=2]"),
    "default-empty-experts-over-E": ("""\
        routing: {kind: empty, experts: 3}
        shapes:
          - {name: big, M: 512, N: 256, K: 256, E: 4}
          - {name: small, M: 512, N: 256, K: 256, E: 2}
        """, 4, "shapes[1].routing", "3 empty experts but E = 2", "experts must be <= E"),
    "single-expert-equals-E": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: single, expert: 2}}
        """, 2, "shapes[0].routing.expert", "2 is not an expert index", "expert is an integer in [0, E-1=1]"),
    "single-expert-negative": ("""\
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2, routing: {kind: single, expert: -1}}
        """, 2, "shapes[0].routing.expert", "-1 is not an expert index",
         "expert is an integer in [0, E-1=1]"),
    "default-single-expert-over-E": ("""\
        routing: {kind: single, expert: 5}
        shapes:
          - {name: a, M: 512, N: 256, K: 256, E: 2}
        """, 3, "shapes[0].routing", "expert 5 but E = 2", "expert must be < E"),
}


@pytest.mark.parametrize("text, line, field, why, allowed", ONE_PROBLEM.values(), ids=ONE_PROBLEM.keys())
def test_one_problem(tmp_path: Path, text: str, line: int, field: str, why: str, allowed: str) -> None:
    lines = problems(tmp_path, text)
    assert len(lines) == 1, lines
    check(lines[0], tmp_path / "c.yaml", line, field, why, allowed)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path / "nope.yaml", SPECS)
    [line] = exc.value.lines
    check(line, tmp_path / "nope.yaml", 1, "(file)",
          "cannot be read (No such file or directory)", "readable YAML")


def test_every_problem_reported_at_once(tmp_path: Path) -> None:
    lines = problems(tmp_path, """\
        seed: -1
        kernels: [reference, nosuch]
        targets: [gfx950, sm_80]
        limits: {spills: 0, vgprs: 1}
        shapes:
          - {name: a, M: 100, N: 256, K: 256, E: 1}
          - {name: b, M: 256, N: 200, K: 256, E: 0}
          - {name: a, M: 512, N: 256, K: 256, E: 2, offsets: [0, 128]}
          - {name: c, M: 512, N: 256, K: 256, E: 2, routing: {kind: zipf, s: -2}, colour: red}
          - {name: d, M: 512, N: 256, K: 256, E: 2, offsets: [0, 384, 256]}
        """)
    fields = [(int(m.split(":")[1]), m.split(": ")[1]) for m in lines]
    assert sorted(fields) == [
        (1, "seed"), (2, "kernels[1].name"), (3, "targets[1]"), (4, "limits.vgprs"),
        (6, "shapes[0].M"), (7, "shapes[1].E"), (7, "shapes[1].N"),
        (8, "shapes[2].name"), (8, "shapes[2].offsets"),
        (9, "shapes[3].colour"), (9, "shapes[3].routing.s"),
        (10, "shapes[4].offsets[2]"),
    ]
    assert len(set(lines)) == len(lines) == 12


def test_kernel_override(tmp_path: Path) -> None:
    """--kernel replaces the config's list; an external kernel then needs its source from the override."""
    path = write(tmp_path, """\
        kernels: [reference]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """)
    config = load_config(path, SPECS, {"upstream": (tmp_path / "kernel.cpp", None)},
                         kernel_names=("upstream",))
    assert [k.name for k in config.kernels] == ["upstream"]
    assert config.kernels[0].source == tmp_path / "kernel.cpp"
    assert config.targets == ("gfx950",)
    with pytest.raises(ConfigError) as exc:
        load_config(path, SPECS, kernel_names=("upstream",))
    [line] = exc.value.lines
    check(line, path, 1, "kernels[0].source", "is external and no source was given", "--kernel-source")


# --- YAML corner cases --------------------------------------------------------------------


def test_duplicate_key_keeps_first_value_line(tmp_path: Path) -> None:
    lines = problems(tmp_path, """\
        seed: abc
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        seed: 2
        """)
    path = tmp_path / "c.yaml"
    assert len(lines) == 2
    check(lines[0], path, 4, "seed", "appears twice", "each key may appear once")
    check(lines[1], path, 1, "seed", "'abc' is not a non-negative integer", "seed is an integer >= 0")


@pytest.mark.parametrize("text, line", [
    ("shapes:\n  - {name: a, M: !!int abc, N: 256, K: 256, E: 1}\n", 2),
    ("shapes:\n  - {name: a, M: !!python/object:os.getcwd x, N: 256, K: 256, E: 1}\n", 2),
    ("seed: 1\nshapes:\n  - {[1]: 2}\n", 3),
], ids=["bad-int-tag", "python-tag", "list-key"])
def test_yaml_construction_errors_are_config_errors(tmp_path: Path, text: str, line: int) -> None:
    lines = problems(tmp_path, text)
    assert lines[0].startswith(f"{tmp_path / 'c.yaml'}:{line}: ")


# --- valid configs ------------------------------------------------------------------------


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_configs_load(path: Path) -> None:
    config = load_config(path, SPECS)
    assert config.shapes and config.kernels
    assert all(s.dims.M % 128 == 0 and s.dims.N % 256 == 0 and s.dims.K % 256 == 0 for s in config.shapes)


def test_shipped_configs_exist() -> None:
    assert {p.stem for p in CONFIGS} >= {"ci", "smoke", "deepseek-v3"}


def test_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        shapes:
          - {name: a, M: 256, N: 512, K: 768, E: 2}
        """)
    config = load_config(path, SPECS)
    assert config == Config(path, 0, "ocp", (SPECS["reference"],), ("gfx950", "sm_90a"), {},
                            (Shape("a", Dims(256, 512, 768, 2), Routing()),))
    assert config.pairs() == [(SPECS["reference"], "gfx950"), (SPECS["reference"], "sm_90a")]


def test_full_config(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        description: everything set
        seed: 42
        quantization: upstream
        kernels:
          - reference
          - {name: upstream, source: kernel.cpp, include: [.]}
        targets: [gfx950]
        limits: {registers: 256, spills: 0}
        routing: {kind: zipf, s: 1.5}
        shapes:
          - {name: dflt, M: 1024, N: 256, K: 256, E: 4}
          - {name: uni, M: 1024, N: 256, K: 256, E: 4, routing: uniform}
          - {name: emp, M: 1024, N: 256, K: 256, E: 4, routing: {kind: empty, experts: 3}}
          - {name: one, M: 1024, N: 256, K: 256, E: 4, routing: {kind: single, expert: 3}}
          - {name: any, M: 1024, N: 256, K: 256, E: 4, routing: single}
          - {name: exp, M: 1024, N: 256, K: 512, E: 2, offsets: [128, 128, 896], note: gaps}
        """)
    config = load_config(path, SPECS)
    assert (config.seed, config.quantization, config.targets) == (42, "upstream", ("gfx950",))
    assert config.limits == {"registers": 256, "spills": 0}
    assert [k.name for k in config.kernels] == ["reference", "upstream"]
    hk = config.kernels[1]
    assert (hk.source, hk.include) == (tmp_path / "kernel.cpp", (tmp_path / ".",))
    assert {s.name: s.routing for s in config.shapes} == {
        "dflt": Routing("zipf", 1.5),
        "uni": Routing("uniform"),
        "emp": Routing("empty", empty=3),
        "one": Routing("single", expert=3),
        "any": Routing("single"),
        "exp": Routing("explicit", offsets=(128, 128, 896)),
    }
    assert config.shapes[-1].dims == Dims(1024, 256, 512, 2)
    assert config.pairs() == [(config.kernels[0], "gfx950"), (hk, "gfx950")]


def test_default_targets_follow_kernels(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        kernels: [{name: upstream, source: kernel.cpp}]
        shapes:
          - {name: a, M: 128, N: 256, K: 256, E: 1}
        """)
    assert load_config(path, SPECS).targets == ("gfx950",)
