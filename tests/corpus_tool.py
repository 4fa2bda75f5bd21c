"""The traceback corpus's two chores, kept in the repository so that every session scores and splits it the same way.

    python tests/corpus_tool.py score [SET ...] [--by family|os|expect] [--misses]
        top-1 per set (dev-N, holdout-N, `held` for every holdout-N, `dev` for every dev-N, `arrival` for cases
        without a set yet); misses are printed only on request, and never for a held-out set: reading them is
        writing signatures against them.
    python tests/corpus_tool.py split N FILE ...
        gives each new case `set: dev-N` or `set: holdout-N` by the hash of its source address (2 in 5 held out).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).parent))
from test_explain import code_of, right  # the test's own verdict, not a copy of it
from tracebacks import SEPARATOR, Case, cases, held_out, load


def chosen(names: List[str], corpus: List[Case]) -> Dict[str, List[Case]]:
    sets: Dict[str, List[Case]] = {}
    for name in names:
        if name == "held":
            sets[name] = [c for c in corpus if c.header.get("set", "").startswith("holdout-")]
        elif name == "dev":
            sets[name] = [c for c in corpus if c.header.get("set", "").startswith("dev-")]
        else:
            sets[name] = [c for c in corpus if c.header.get("set", "arrival") == name]
    return sets


def score(names: List[str], by: str, misses: bool, corpus: List[Case]) -> None:
    for name, group in chosen(names, corpus).items():
        good = [c for c in group if right(c)]
        print("%s: %d/%d = %.1f%%" % (name, len(good), len(group), 100 * len(good) / max(1, len(group))))
        if by:
            total = Counter(c.header.get(by, "?") for c in group)
            hit = Counter(c.header.get(by, "?") for c in good)
            for key, count in sorted(total.items()):
                print("    %-40s %d/%d" % (key, hit[key], count))
        if misses and not name.startswith(("holdout", "held")):
            for case in group:
                if not right(case):
                    print("  miss: %s: expected %s, got %s" % (case.name, case.expect, "/".join(code_of(case.body))))


def split(batch: int, files: List[Path]) -> None:
    for path in files:
        case = load(path)
        if "set" in case.header:
            raise SystemExit("%s already has set: %s" % (path, case.header["set"]))
        which = "holdout" if held_out(case.header["source"]) else "dev"
        head, _, body = path.read_text(encoding="utf-8").partition("\n%s\n" % SEPARATOR)
        path.write_text("%s\nset: %s-%d\n%s\n%s" % (head, which, batch, SEPARATOR, body), encoding="utf-8")
        print("%s-%d %s" % (which, batch, path.name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    scoring = sub.add_parser("score")
    scoring.add_argument("sets", nargs="*", default=["dev", "held"])
    scoring.add_argument("--by", choices=["family", "os", "expect"], default="")
    scoring.add_argument("--misses", action="store_true")
    scoring.add_argument("--dir", type=Path, help="score the cases of this folder instead of the corpus")
    splitting = sub.add_parser("split")
    splitting.add_argument("batch", type=int)
    splitting.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    if args.command == "score":
        corpus = [load(p) for p in sorted(args.dir.glob("*.txt"))] if args.dir else cases()
        score(args.sets, args.by, args.misses, corpus)
    else:
        split(args.batch, args.files)


if __name__ == "__main__":
    main()
