"""The packages' order: docs/architecture.md's section lists wgrad_cli's packages from the top layer
down, and a module imports only from below its own (or from its own package), counting every import
as test_imports.py does; the few imports that run up the order are named here and there, with why."""

from __future__ import annotations

import re

from importgraph import graph

from conftest import REPO

# (importer, imported): why this import runs up the order. None: the backend registry is consulted by the
# commands, and each backend object handed down (compile/builder.py and device/backend.py say what those
# floors ask of it)
UPWARD: dict[tuple[str, str], str] = {}


def layers() -> list[str]:
    """wgrad_cli's packages and top-level modules as docs/architecture.md's listing orders them, top first."""
    text = (REPO / "docs" / "architecture.md").read_text()
    listing = text[text.index("\nwgrad_cli/\n"):]
    listing = listing[:listing.index("\n```")]
    return [m.group(1) for m in re.finditer(r"^  (\w+)(?:/|\.py)\s", listing, re.MULTILINE)]


def owner(module: str) -> str:
    """The listed package or top-level module that a module belongs to ('' for wgrad_cli itself)."""
    return module.split(".")[1] if "." in module else ""


def rank(module: str, order: list[str]) -> int:
    """Higher is further up; wgrad_cli's own __init__.py is the ground under everything."""
    return len(order) - order.index(owner(module)) if owner(module) else 0


def allowed(importer: str, imported: str) -> bool:
    """An upward import named in UPWARD (its target or a package above that target)."""
    return any(importer == a and (b == imported or b.startswith(imported + ".")) for a, b in UPWARD)


def test_the_listing_names_every_package() -> None:
    order = layers()
    assert len(order) == len(set(order)) > 10
    assert {owner(m) for m in graph()} - {""} <= set(order), "docs/architecture.md's listing lacks a package"


def test_imports_run_down_the_listing() -> None:
    order = layers()
    upward = sorted(f"{m} -> {d}" for m, deps in graph().items() for d in deps
                    if owner(d) != owner(m) and rank(d, order) >= rank(m, order) and not allowed(m, d))
    assert upward == [], ("imports up docs/architecture.md's order (move the code, or name the import "
                          "in UPWARD and docs/architecture.md)")


def test_every_named_upward_import_is_real_and_in_the_architecture_page() -> None:
    g, order, readme = graph(), layers(), (REPO / "docs" / "architecture.md").read_text()
    for importer, imported in UPWARD:
        assert imported in g[importer] and rank(imported, order) > rank(importer, order), (importer, imported)
        assert importer.removeprefix("wgrad_cli.").replace(".", "/") + ".py" in readme, importer
