"""Tables that fit where they are printed.

A Grid is a title, columns and rows of strings (rich markup allowed). Printed on a terminal it is a
boxed table as wide as the terminal, with only the essential columns unless the layout is wide:
text cells wrap at spaces, a number is never split (right-justified cells stay whole), and
columns that still do not fit are left out from the right, in one line that names them and
--wide; where even --wide cannot fit its columns, each row is printed as a record of `column:
value` lines instead of columns of slivers. Printed anywhere else (a pipe, a file, a CI log) it is
an aligned Markdown table whose lines are never wrapped or cut, under its title wrapped to the
table's width (80 columns at least). `wgrad show --format` also gives CSV and JSON, which always
carry every column.
"""

from __future__ import annotations

import csv
import io
import json
import re
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
TEXT_MIN = 12  # the narrowest a wrapping text column gets (a longer word in it folds)
KEEP = 2  # columns never left out to fit: they name the row (kernel and shape, ...)


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


# a number (a count with separators, a decimal): never split over two lines
NUMBER = re.compile(r"\d[\d,.]*(?:e[-+]?\d+)?")


def fold(text: str, width: int) -> str:
    """`text` wrapped at spaces to `width`, a longer word broken where it must, but never inside a
    number (no number is wider than its column: Grid.fit)."""
    lines: list[str] = []
    for line in textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False):
        chunk = ""
        for piece in re.findall(rf"{NUMBER.pattern}|\D|\d", line):
            if chunk and len(chunk) + len(piece) > width:
                lines.append(chunk)
                chunk = ""
            chunk += piece
        lines.append(chunk)
    return "\n".join(lines)


@dataclass(frozen=True)
class Fit:
    """How a grid fits a terminal's width: the columns shown (indices), their widths (None: one
    record per row instead of a table) and the names of those left out to fit."""

    columns: list[int]
    widths: list[int] | None
    left_out: list[str]


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
            return "| " + " | ".join(c.rjust(w) if r else c.ljust(w)
                                     for c, w, r in zip(cells, widths, right)) + " |"

        rule = "|" + "|".join("-" * (w + 1) + ":" if r else "-" * (w + 2)
                              for w, r in zip(widths, right)) + "|"
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
        return {"title": self.title, "columns": names,
                "rows": [dict(zip(names, row)) for row in self.plain_rows()]}

    def fit(self, width: int, wide: bool) -> Fit:
        """The columns a boxed table of `width` characters shows, and their widths: every number
        whole (right-justified columns as wide as their widest cell), text columns wrapped at spaces;
        without `wide`, columns left out from the right until the rest fit; None for the widths
        where they cannot (the record view)."""
        plain = self.plain_rows()
        keep = self.shown(wide)

        def natural(i: int) -> int:
            return (max(len(self.columns[i].name), *(len(r[i]) for r in plain)) if plain
                    else len(self.columns[i].name))

        def least(i: int) -> int:
            words = [w for r in plain for w in r[i].split()] + self.columns[i].name.split()
            longest = max(map(len, words), default=1)
            if self.columns[i].justify == "right":  # a number, whole
                return max([len(r[i]) for r in plain] + [longest])
            numbers = [len(n) for r in plain for n in NUMBER.findall(r[i])]
            # text wraps at spaces, a long word folds (fold())
            return max(min(longest, TEXT_MIN), *numbers, 1)

        dropped: list[int] = []
        while True:
            room = width - 3 * len(keep) - 1  # a border and two spaces of padding per column
            if sum(least(i) for i in keep) <= room:
                break
            if wide or len(keep) <= KEEP:
                return Fit(keep, None, [])
            dropped.insert(0, keep.pop())
        widths = [least(i) for i in keep]
        spare = room - sum(widths)
        cells = [max((len(r[i]) for r in plain), default=0) for i in keep]
        for goal in (cells, [natural(i) for i in keep]):  # cells unwrapped first, then headers
            wants = [max(0, g - w) for g, w in zip(goal, widths)]
            for j in sorted(range(len(keep)), key=lambda j: wants[j]):  # the smallest wants met whole first
                share = min(wants[j], spare // max(1, sum(1 for w in wants if w >= wants[j])))
                widths[j] += share
                spare -= share
        return Fit(keep, widths, [self.columns[i].name for i in dropped])

    def rich_table(self, fit: Fit) -> Table:
        table = Table()  # its title is printed above it, wrapped at spaces (rich would cut a long one)
        assert fit.widths is not None
        for i, w in zip(fit.columns, fit.widths):
            table.add_column(self.columns[i].name, justify=self.columns[i].justify, overflow="fold", width=w)
        for row, plain in zip(self.rows, self.plain_rows()):
            table.add_row(*(fold(plain[i], w) if any(len(word) > w for word in plain[i].split()) else row[i]
                            for i, w in zip(fit.columns, fit.widths)))
        return table

    def records(self, fit: Fit, width: int) -> list[str]:
        """Each row as `column: value` lines (a long value wrapped under itself), a blank line between
        rows: the view of a table whose columns do not fit side by side."""
        names = [self.columns[i].name for i in fit.columns]
        pad = max(map(len, names), default=0)
        room = max(width - pad - 2, TEXT_MIN)
        lines: list[str] = []
        for row in self.plain_rows():
            lines.append("")
            for name, i in zip(names, fit.columns):
                value = fold(row[i], room).splitlines() or [""]
                lines += [f"{name.rjust(pad)}: {value[0]}", *(" " * (pad + 2) + more for more in value[1:])]
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        form = LAYOUT.format if LAYOUT.format != "auto" else ("table" if console.is_terminal else "markdown")
        if form == "table":
            fit = self.fit(options.max_width, LAYOUT.wide)
            for title in self.title_lines(options.max_width):
                yield Segment(title)  # a title is text, never markup
                yield Segment.line()
            lines = (console.render_lines(self.rich_table(fit), options, pad=False) if fit.widths is not None
                     else [[Segment(line)] for line in self.records(fit, options.max_width)])
            for line in lines:
                yield from line
                yield Segment.line()
            note = (f"left out to fit {options.max_width} columns: {', '.join(fit.left_out)} "
                    "(--wide shows them)")
            for text in textwrap.wrap(note, options.max_width,
                                      break_on_hyphens=False) if fit.left_out else []:
                yield Segment(text)
                yield Segment.line()
            return
        if form == "csv":
            yield Segment(self.csv())
        elif form == "json":
            yield Segment(json.dumps(self.to_json(), indent=1) + "\n")
        else:
            yield Segment(self.markdown(LAYOUT.wide))

