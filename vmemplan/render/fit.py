"""Tables that fit the width they are printed at, without ever cutting a number or an id.

rich shrinks a table that is too wide by wrapping, and when it cannot wrap it cuts cells with
``…``.  That is fine for prose and wrong for a figure or an id a user must type.  Here every
cell is either *whole* (a number, an id: never wrapped, never cut) or *wrappable* at spaces
(prose); a table that still does not fit first uses short headers, then drops the columns
marked droppable, most droppable first, and says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from vmemplan.core.frozen import frozen

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["Col", "fit_table", "fits"]

#: rich's default table: one border on the left, then per column one space, the cell, one space
#: and a border.
_EDGE = 1
_PER_COLUMN = 3


@frozen
class Col:
    header: str
    justify: Literal["left", "right"] = "left"
    wrap: bool = False  # prose: may wrap at spaces.  Otherwise the cell is never wrapped nor cut.
    drop: int = 0  # 0: always shown; otherwise dropped when space runs short, highest first
    short: str | None = None  # a shorter header for narrow widths


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _need(col: Col, header: str, cells: Sequence[str], *, narrow: bool) -> int:
    """Columns this column needs: its widest cell (whole cells) or longest word (prose);
    headers wrap at spaces when ``narrow``."""
    head = _longest_word(header) if narrow else len(header)
    if col.wrap and narrow:
        body = max((_longest_word(c) for c in cells), default=0)
    else:
        body = max((max((len(line) for line in c.splitlines()), default=0) for c in cells), default=0)
    return max(head, body, 1)


def _width(needs: Sequence[int]) -> int:
    return _EDGE + sum(n + _PER_COLUMN for n in needs)


def fits(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> tuple[list[int], list[str], bool]:
    """The indices of the columns to keep, their headers, and whether the cells may need wrapping."""
    keep = list(range(len(cols)))

    def needs(idx: list[int], *, narrow: bool, short: bool) -> list[int]:
        out = []
        for i in idx:
            header = (cols[i].short or cols[i].header) if short else cols[i].header
            out.append(_need(cols[i], header, [r[i] for r in rows], narrow=narrow))
        return out

    if _width(needs(keep, narrow=False, short=False)) <= width:
        return keep, [c.header for c in cols], False
    for short in (False, True):
        if _width(needs(keep, narrow=True, short=short)) <= width:
            return keep, [(cols[i].short or cols[i].header) if short else cols[i].header for i in keep], True
    order = sorted((i for i in keep if cols[i].drop), key=lambda i: -cols[i].drop)
    for i in order:
        keep.remove(i)
        if _width(needs(keep, narrow=True, short=True)) <= width:
            break
    return keep, [cols[i].short or cols[i].header for i in keep], True


def fit_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int, *,
              row_styles: Sequence[str | None] | None = None) -> tuple[Table, list[str]]:
    """A rich Table of ``rows`` that fits ``width`` columns (see the module docstring), and the
    headers of the columns it had to leave out."""
    from rich.table import Table
    from rich.text import Text

    keep, headers, narrow = fits(cols, rows, width)
    table = Table()
    natural = [_need(cols[i], h, [r[i] for r in rows], narrow=False) for i, h in zip(keep, headers)]
    least = [_need(cols[i], h, [r[i] for r in rows], narrow=True) for i, h in zip(keep, headers)]
    sizes = list(natural)
    if narrow:
        # whole columns at their widest cell; prose columns share what is left, each at least its
        # longest word (rich's own shrinking does not respect that, so the widths are set here)
        sizes = list(least)
        spare = width - _width(sizes)
        wants = [natural[k] - sizes[k] for k in range(len(keep))]
        total_want = sum(wants)
        if spare > 0 and total_want > 0:
            for k in range(len(keep)):
                sizes[k] += min(wants[k], spare * wants[k] // total_want)
    for k, (i, header) in enumerate(zip(keep, headers)):
        col = cols[i]
        # headers may wrap at spaces; whole cells never wrap (their Text says so)
        table.add_column(Text(header, no_wrap=False), justify=col.justify, no_wrap=False, width=sizes[k],
                         overflow="fold")
    for n, r in enumerate(rows):
        style = row_styles[n] if row_styles else None
        table.add_row(*(Text(r[i], no_wrap=not cols[i].wrap) for i in keep), style=style)
    dropped = [cols[i].header for i in range(len(cols)) if i not in keep]
    return table, dropped
