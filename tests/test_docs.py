"""The documentation's generated tables match what the tool prints, and its links resolve."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli

BLOCK = re.compile(r"<!-- (wgrad [^\n]*?) -->\n(.*?)<!-- end -->", re.S)
PAGES = ["README.md", "docs/h200-results.md", "docs/model.md"]


def printed(repo: Path, command: str) -> str:
    """What `command` prints to a pipe, run from the repository root."""
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        result = CliRunner().invoke(cli, shlex.split(command)[1:], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, (command, result.output)
    return result.stdout


def generated(repo: Path, page: str) -> str:
    text = (repo / page).read_text()
    return BLOCK.sub(lambda m: f"<!-- {m.group(1)} -->\n{printed(repo, m.group(1))}<!-- end -->", text)


@pytest.mark.parametrize("page", PAGES)
def test_generated_tables_match_the_tool(repo: Path, page: str) -> None:
    text, fresh = (repo / page).read_text(), generated(repo, page)
    if os.environ.get("WGRAD_WRITE_DOCS"):
        (repo / page).write_text(fresh)
    assert text == fresh, f"{page} differs from what wgrad prints; rewrite it with WGRAD_WRITE_DOCS=1"


def test_results_holds_only_cited_files(repo: Path) -> None:
    cited = " ".join(p.read_text() for p in [repo / "README.md", *(repo / "docs").glob("*.md")])
    files = [p.relative_to(repo).as_posix() for p in (repo / "results").rglob("*") if p.is_file()]
    assert files and [f for f in files if f not in cited] == []


def test_local_links_resolve(repo: Path) -> None:
    for page in [repo / "README.md", *(repo / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}, which does not exist"
