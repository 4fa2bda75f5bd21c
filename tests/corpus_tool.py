"""The traceback corpus's chores, kept in the repository so that every session scores, splits and compares it the same way.

    python tests/corpus_tool.py score [SET ...] [--by family|os|expect] [--misses]
        top-1 per set (dev-N, holdout-N, `held` for every holdout-N, `dev` for every dev-N, `arrival` for cases
        without a set yet); misses are printed only on request, and never for a held-out set: reading them is
        writing signatures against them.
    python tests/corpus_tool.py split N FILE ...
        gives each new case `set: dev-N` or `set: holdout-N` by the hash of its source address (2 in 5 held out).
    python tests/corpus_tool.py check FILE ...
        what is wrong with new cases before they join the corpus: a missing or unknown header, an address the corpus or
        another new case has already, a file name the corpus has; exits 1 when anything is. It also names the corpus
        cases with the same text (held-out ones by their repository alone), to be read for twins.
    python tests/corpus_tool.py dump FILE
        every case's first diagnosis (check and code) as JSON, to compare before and after a change to the rules.
    python tests/corpus_tool.py diff BEFORE AFTER
        the cases whose first diagnosis differs between two dumps: the ones read for rules by name, with what they
        expect; the held-out ones only as counts (how many changed, how many of those are now right and now wrong).

A new batch (tests/data/tracebacks/GATHERING.md): `check` it, `score arrival --dir` it before reading any of it, copy it
into the corpus, `split` it, then write signatures against its dev part only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

sys.path.insert(0, str(Path(__file__).parent))
from test_explain import CHECKS, code_of, names_cause, right  # the test's own verdict, not a copy of it
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


OS_NAMES = ("linux", "windows", "macos", "unknown")


def problems(files: List[Path], corpus: List[Case], known: Set[str]) -> Dict[str, List[str]]:
    """{file name: what is wrong with it} for new cases (those without a problem are left out)."""
    sources = {c.header.get("source") for c in corpus}
    names = {c.name for c in corpus}
    seen: Dict[str, str] = {}
    found: Dict[str, List[str]] = {}
    for path in files:
        case = load(path)
        source = case.header.get("source", "")
        wrong = [key for key in ("source", "expect", "why", "os", "family") if not case.header.get(key)]
        if not source.startswith("https://"):
            wrong.append("source is no https:// address")
        if source in sources:
            wrong.append("the corpus has this address already")
        if source in seen:
            wrong.append("%s has this address too" % seen[source])
        seen.setdefault(source, path.name)
        if path.stem in names:
            wrong.append("the corpus has a case of this name")
        if case.expect not in known or not set(case.also) <= known:
            wrong.append("expect/also names no check: %s" % ", ".join([case.expect, *case.also]))
        if case.header.get("os") not in OS_NAMES:
            wrong.append("os is not one of %s" % "/".join(OS_NAMES))
        if not path.name.startswith(case.expect + "--"):
            wrong.append("the file name does not start with %s--" % case.expect)
        if "set" in case.header:
            wrong.append("it has a set already")
        if not case.body.strip():
            wrong.append("no text")
        if wrong:
            found[path.name] = wrong
    return found


def _words(text: str) -> str:
    return " ".join(text.split()).lower()


def same_text(files: List[Path], corpus: List[Case]) -> Dict[str, List[str]]:
    """{file name: the corpus cases with the same text} for new cases: a doc quoted at another commit, a fix's PR and its
    merge commit, a FAQ copied between sibling repositories (a twin: one thread's text under two addresses), or the same
    short error from another project (not a twin). Read before a case joins; a held-out case is named by its repository
    alone."""
    by_text: Dict[str, List[str]] = {}
    for case in corpus:
        held = case.header.get("set", "").startswith("holdout-")
        repository = "/".join(case.header.get("source", "").split("/")[3:5])
        by_text.setdefault(_words(case.body), []).append("a held-out case of %s" % repository if held else case.name)
    found: Dict[str, List[str]] = {}
    for path in files:
        same = by_text.get(_words(load(path).body))
        if same:
            found[path.name] = same
    return found


def dump(corpus: List[Case]) -> Dict[str, List[str]]:
    return {c.name: list(code_of(c.body)) for c in corpus}


def diff(before: Dict[str, List[str]], after: Dict[str, List[str]], corpus: List[Case]) -> List[str]:
    """What changed between two dumps, said so that no held-out case is named: reading which held-out case a rule
    moved is reading it."""
    lines: List[str] = []
    held: List[Tuple[bool, bool]] = []  # (right before, right after) per held-out case that changed
    for case in corpus:
        old, new = before.get(case.name), after.get(case.name)
        if old == new:
            continue
        if case.header.get("set", "").startswith("holdout-"):
            held.append((_right_as(old, case), _right_as(new, case)))
        else:
            lines.append("%s  expects %s: %s -> %s" % (case.name, case.expect, _shown(old), _shown(new)))
    lines.append("held-out changed: %d (now right %d, now wrong %d)"
                 % (len(held), sum(1 for was, now in held if now and not was), sum(1 for was, now in held if was and not now)))
    return lines


def _right_as(got: Optional[Sequence[str]], case: Case) -> bool:
    return names_cause(got[0] if got else "none", case)


def _shown(got: Optional[Sequence[str]]) -> str:
    return "/".join(part for part in got if part) if got else "(not in the dump)"


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
    checking = sub.add_parser("check")
    checking.add_argument("files", nargs="+", type=Path)
    dumping = sub.add_parser("dump")
    dumping.add_argument("file", type=Path)
    comparing = sub.add_parser("diff")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "score":
        corpus = [load(p) for p in sorted(args.dir.glob("*.txt"))] if args.dir else cases()
        score(args.sets, args.by, args.misses, corpus)
    elif args.command == "split":
        split(args.batch, args.files)
    elif args.command == "dump":
        args.file.write_text(json.dumps(dump(cases()), indent=0, sort_keys=True), encoding="utf-8")
    elif args.command == "diff":
        read = [json.loads(path.read_text(encoding="utf-8")) for path in (args.before, args.after)]
        print("\n".join(diff(read[0], read[1], cases())))
    else:
        known = {c.id for c in CHECKS} | {"none"}
        corpus = cases()
        found = problems(args.files, corpus, known)
        for name, wrong in sorted(found.items()):
            print("%s: %s" % (name, "; ".join(wrong)))
        print("%d of %d new cases have a problem" % (len(found), len(args.files)))
        for name, same in sorted(same_text(args.files, corpus).items()):
            print("%s: the same text as %s (a twin if the same thread or doc)" % (name, ", ".join(same)))
        raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
