"""Any YAML at all gives a Config or a ConfigError with well-formed lines: never another exception."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import SHAPE_KEYS, TOP_KEYS, load_config
from wgrad_cli.errors import ConfigError

SPECS = load_specs()
LINE = re.compile(r"^.+:\d+: \S.*: .+; .+$")
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                    st.sampled_from([0, 1, 128, 256, 512, 8192]), st.floats(allow_nan=True),
                    st.text(max_size=8), st.sampled_from(["uniform", "zipf", "reference"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(sorted(SHAPE_KEYS | {"kind", "s", "x"})),
                                                 inner, max_size=5)), max_leaves=12)
shapes = st.lists(st.dictionaries(st.sampled_from(sorted(SHAPE_KEYS)), values, max_size=7), max_size=3)
configs = st.dictionaries(st.sampled_from(sorted(TOP_KEYS | {"extra"})), values, max_size=6).flatmap(
    lambda top: st.builds(lambda s: {**top, "shapes": s}, shapes))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(configs)
def test_any_config_is_loaded_or_explained(tmp_path: Path, data: dict[str, object]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        load_config(path, SPECS)
    except ConfigError as exc:
        assert exc.lines and all(LINE.match(line) for line in exc.lines), exc.lines


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}!&*|>'\"#%@,\n 0123456789MNKE")), max_size=80))
def test_any_text_is_loaded_or_explained(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    try:
        load_config(path, SPECS)
    except ConfigError as exc:
        assert exc.lines and all(LINE.match(line) for line in exc.lines), exc.lines
