"""Offsets → 1-based line and column, fast for many lookups in one text.

A CRLF counts as one line end; the column counts characters from the line's start. The
line is found by bisection, so a parser can place thousands of nodes in a 200 KB file
(document.line_column is the one-lookup form).
"""

from __future__ import annotations

import bisect
from typing import List, Tuple


class Lines:
    def __init__(self, text: str) -> None:
        starts: List[int] = [0]
        find = text.find
        at = find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = find("\n", at + 1)
        self.starts = starts

    def line_column(self, offset: int) -> Tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def line_start(self, line: int) -> int:
        """Offset of a 1-based line's first character."""
        return self.starts[min(max(line, 1), len(self.starts)) - 1]
