"""YAML loading that keeps line numbers, so every config problem can point at its line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wgrad_cli.errors import ConfigError

Key = tuple[str | int, ...]


def field_name(path: Key) -> str:
    """('shapes', 2, 'M') -> 'shapes[2].M'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


@dataclass
class Problems:
    """Collects every problem in one file, then raises them together."""

    file: Path
    lines: dict[Key, int] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)

    def line_of(self, path: Key) -> int:
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path, 1)

    def add(self, path: Key, why: str, allowed: str, line: int | None = None) -> None:
        line = line or self.line_of(path)
        self.found.append(f"{self.file}:{line}: {field_name(path)}: {why}; {allowed}")

    def raise_if_any(self) -> None:
        if self.found:
            raise ConfigError(self.found)


def not_text(data: bytes) -> tuple[int, str] | None:
    """(line, what) of the first byte that is not UTF-8 text (a binary or Latin-1 file), or None."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return 1, "UTF-16 text (it starts with a UTF-16 byte-order mark)"
    if b"\0" in data:
        start = data.index(b"\0")
        return data[:start].count(b"\n") + 1, f"a binary file (a NUL byte at offset {start})"
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        return data[:exc.start].count(b"\n") + 1, \
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    return None


def load(file: Path) -> tuple[Any, Problems]:
    """Parse `file` into plain Python values plus a `Problems` that knows each value's line."""
    problems = Problems(file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{file}:1: (file): cannot be read ({exc.strerror}); give a readable YAML file")
    bad = not_text(data)
    if bad:
        raise ConfigError(f"{file}:{bad[0]}: (file): {bad[1]}; a config is UTF-8 text")
    try:
        node = yaml.compose(data.decode(), Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError(f"{file}:{line}: (YAML): {exc.problem or exc.context}; the file must be valid YAML")
    except yaml.YAMLError as exc:  # the reader's: control characters
        line = data[:getattr(exc, "position", 0)].count(b"\n") + 1
        reason = getattr(exc, "reason", "unreadable characters")
        raise ConfigError(f"{file}:{line}: (YAML): {reason}; the file must be valid YAML text")
    if node is None:
        return {}, problems
    return _convert(node, (), problems), problems


def _convert(node: yaml.Node, path: Key, problems: Problems) -> Any:
    problems.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = _scalar(key_node, path, problems) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str | int):
                problems.add(
                    path,
                    f"key {key_node.value if isinstance(key_node, yaml.ScalarNode) else '(a collection)'}"
                    " is not a name", "keys are plain names", line)
            elif key in out:
                problems.add(path + (key,), "appears twice", "each key may appear once", line)
            else:
                problems.lines[path + (key,)] = line  # a value's problems point at its key's line
                out[key] = _convert(value_node, path + (key,), problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), problems) for i, item in enumerate(node.value)]
    return _scalar(node, path, problems)


def _scalar(node: yaml.Node, path: Key, problems: Problems) -> Any:
    """A scalar's value; one that YAML cannot construct (a bad or unsafe tag) stops
    loading, like a syntax error."""
    try:
        return yaml.SafeLoader("").construct_object(node)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        why = " ".join(f"{node.tag} {node.value!r} cannot be read ({exc})".split())
        problems.add(path, why, "plain YAML scalars only (no tags)", node.start_mark.line + 1)
        raise ConfigError(problems.found)
