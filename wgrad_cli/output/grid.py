"""Tables that fit where they are printed.

A Grid is a title, columns and rows of strings (rich markup allowed). Printed on a terminal it is a
boxed table as wide as the terminal, cells wrapped (never cut), with only the essential columns
unless the layout is wide; printed anywhere else (a pipe, a file, a CI log) it is an aligned
Markdown table whose lines are never wrapped or cut, under its title wrapped to the table's width
(80 columns at least). `wgrad show --format` also gives CSV and
JSON, which always carry every column.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

Format = Literal["auto", "table", "markdown", "csv", "json"]
FORMATS: tuple[Format, ...] = ("table", "markdown", "csv", "json")
Justify = Literal["left", "right"]
TITLE_WIDTH = 80  # a Markdown title wraps at its table's width, or at this for a narrower table


@dataclass
class Layout:
    """How the commands of this process print tables (set once from the command line)."""

    format: Format = "auto"  # auto: a boxed table on a terminal, Markdown elsewhere
    wide: bool = False  # every column, not only the essential ones


LAYOUT = Layout()


def set_layout(format: Format = "auto", wide: bool = False) -> None:
    LAYOUT.format, LAYOUT.wide = format, wide


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 file', '2 files'; `many` for irregular plurals."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


@dataclass(frozen=True)
class Column:
    name: str
    justify: Justify = "left"
    detail: bool = False  # shown only in the wide layout, CSV and JSON


@dataclass
class Grid:
    title: str
    columns: list[Column] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def add_column(self, name: str, justify: Justify = "left", detail: bool = False) -> None:
        self.columns.append(Column(name, justify, detail))

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def shown(self, wide: bool) -> list[int]:
        """Indices of the columns to print."""
        return [i for i, c in enumerate(self.columns) if wide or not c.detail]

    def plain_rows(self) -> list[list[str]]:
        """The cells without their markup."""
        return [[Text.from_markup(c).plain for c in row] for row in self.rows]

    def markdown(self, wide: bool) -> str:
        """An aligned Markdown table under the title; no line has trailing spaces."""
        keep = self.shown(wide)
        head = [self.columns[i].name for i in keep]
        body = [[row[i].replace("|", "\\|") for i in keep] for row in self.plain_rows()]
        widths = [max(len(c) for c in column) for column in zip(head, *body)]
        right = [self.columns[i].justify == "right" for i in keep]

        def line(cells: list[str]) -> str:
            return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

        rule = "|" + "|".join("-" * (w + 1) + ":" if r else "-" * (w + 2) for w, r in zip(widths, right)) + "|"
        lines = [line(head), rule, *map(line, body)]
        return "\n".join([*self.title_lines(max(TITLE_WIDTH, len(rule))), "", *lines]) + "\n"

    def title_lines(self, width: int) -> list[str]:
        """The title wrapped at spaces to `width`; a word longer than that (a path) stays whole."""
        return textwrap.wrap(self.title, width, break_long_words=False, break_on_hyphens=False) or [""]

    def csv(self) -> str:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow([c.name for c in self.columns])
        writer.writerows(self.plain_rows())
        return text.getvalue()

    def to_json(self) -> dict[str, object]:
        names = [c.name for c in self.columns]
        return {"title": self.title, "columns": names, "rows": [dict(zip(names, row)) for row in self.plain_rows()]}

    def rich_table(self, wide: bool) -> Table:
        table = Table()  # its title is printed above it, wrapped at spaces (rich would cut a long one)
        keep = self.shown(wide)
        for i in keep:
            table.add_column(self.columns[i].name, justify=self.columns[i].justify, overflow="fold")
        for row in self.rows:
            table.add_row(*(row[i] for i in keep))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        form = LAYOUT.format if LAYOUT.format != "auto" else ("table" if console.is_terminal else "markdown")
        if form == "table":
            for title in self.title_lines(options.max_width):
                yield Segment(title)  # a title is text, never markup
                yield Segment.line()
            for line in console.render_lines(self.rich_table(LAYOUT.wide), options, pad=False):
                yield from line
                yield Segment.line()
            return
        if form == "csv":
            yield Segment(self.csv())
        elif form == "json":
            yield Segment(json.dumps(self.to_json(), indent=1) + "\n")
        else:
            yield Segment(self.markdown(LAYOUT.wide))

