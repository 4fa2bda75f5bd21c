"""The repository stands on its own: no file cites notes that live outside it or a
development machine's paths, and every `docs/facts.md §N` citation names a section
(and, where it quotes one, a heading or phrase) that exists in docs/facts.md."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Pattern, Tuple

import pytest
from conftest import ROOT

FACTS = ROOT / "docs" / "facts.md"
THIS = Path(__file__).resolve()
SOURCE_AREAS = ("envdoctor", "checks", "tests", "benchmarks", "docs", "README.md", "noxfile.py", "pyproject.toml", "setup.py")
# Notes outside the repository and paths of the machine the project was developed on.
FORBIDDEN = re.compile(r"GPU-FACTS|\bFACTS\.md|/work/|/root/|\.\./shared")
NOTES = re.compile(r"GPU-FACTS|\bFACTS\.md|\.\./shared")
# The traceback and config corpora hold other people's logs and configs verbatim, copied from public threads and
# repositories with their addresses: the /root/ and /work/ in them are their authors' machines, not this one.
CORPORA = (ROOT / "tests" / "data" / "tracebacks", ROOT / "tests" / "data" / "configs")
# `docs/facts.md §4`, a range `§1–§3`, an optional quoted heading: `§5 "Install"`, `§2: "BF16 ..."`.
REFERENCE = re.compile(r'§(\d+[a-z]?)(?:\s*[–-]\s*§?(\d+[a-z]?))?(?:[:,]?\s*"([^"\n]+)")?')
HEADING = re.compile(r"^(#{2,3})\s+(\d+[a-z]?)\.\s", re.MULTILINE)


def tracked_files(area: str) -> List[Path]:
    """The files of `area` that git tracks, or every file under it outside a checkout (an sdist)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", area], capture_output=True, timeout=60, check=True)
        names = [n for n in out.stdout.decode("utf-8").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = []
    if names:
        return [ROOT / n for n in names]
    base = ROOT / area
    if base.is_file():
        return [base]
    return sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def source_files(area: str) -> List[Path]:
    return [p for p in tracked_files(area) if p.resolve() != THIS and p.exists()]


def read(path: Path) -> str:
    """A file's text; a JSON file's strings, one a line, so that `\\u00a7` reads as §."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix == ".json":
        return "\n".join(_json_strings(json.loads(text)))
    return text


def _json_strings(value: object) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k] + _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def facts_sections(text: str) -> Dict[str, str]:
    """docs/facts.md's numbered sections ("1" … "7", "3a" …) -> their text, headings included."""
    heads = list(HEADING.finditer(text))
    sections = {}
    for i, m in enumerate(heads):
        level = len(m.group(1))
        end = next((h.start() for h in heads[i + 1:] if len(h.group(1)) <= level), len(text))
        if level == 3:  # a subsection ends at the next heading of any level <= 3
            sub = re.compile(r"^#{2,3}\s", re.MULTILINE).search(text, m.end())
            end = sub.start() if sub else len(text)
        sections[m.group(2)] = text[m.start():end]
    return sections


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[*`]", "", text).split()).lower()


def broken_references(text: str, sections: Dict[str, str]) -> List[str]:
    """The `§N` citations of a file that cites docs/facts.md which name no section of it,
    or quote a heading or phrase that section does not hold."""
    if "docs/facts.md" not in text:
        return []
    broken = []
    for m in REFERENCE.finditer(text):
        for number in filter(None, (m.group(1), m.group(2))):
            if number not in sections:
                broken.append("%s: no section %s" % (m.group(0), number))
        quoted = m.group(3)
        if quoted and m.group(1) in sections and _plain(quoted) not in _plain(sections[m.group(1)]):
            broken.append('%s: section %s holds no "%s"' % (m.group(0), m.group(1), quoted))
    return broken


def _offences(pattern: re.Pattern, files: List[Path]) -> Iterator[Tuple[str, int, str]]:
    for path in files:
        for number, line in enumerate(read(path).splitlines(), 1):
            for m in pattern.finditer(line):
                yield path.relative_to(ROOT).as_posix(), number, m.group(0)


def _areas() -> List[object]:
    return list(SOURCE_AREAS)


# ---------------------------------------------------------------- docs/facts.md


def test_facts_has_the_numbered_sections_the_code_cites() -> None:
    sections = facts_sections(read(FACTS))
    assert list(sections) == ["1", "2", "3", "3a", "3b", "3c", "4", "5", "6", "7"]
    assert "### Minor version compatibility" in sections["1"] and "### apex" in sections["7"]
    assert "| 12.1 GA / Update 1 | >= 530.30.02 | >= 531.14 |" in sections["1"]


def test_facts_cites_public_sources_only() -> None:
    text = read(FACTS)
    assert not FORBIDDEN.search(text)
    assert not re.search(r"/home/(?!me\b)\w+|/tmp/|/Users/", text), "a machine path in docs/facts.md"
    assert "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html" in text


def test_the_reference_checker_catches_a_missing_section_and_a_wrong_heading() -> None:
    sections = facts_sections(read(FACTS))
    good = 'docs/facts.md §5 "Build checks"; docs/facts.md §1–§3; §3a/§3c; §2: "BF16 requires compute capability 8.0 or higher"'
    assert broken_references(good, sections) == []
    assert broken_references("docs/facts.md §9", sections) == ["§9: no section 9"]
    assert broken_references('docs/facts.md §5 "Quantum flux"', sections) == ['§5 "Quantum flux": section 5 holds no "Quantum flux"']
    assert broken_references("§9 in a file that cites nothing", sections) == []


# ---------------------------------------------------------------- sources


@pytest.mark.parametrize("area", _areas())
def test_no_source_file_cites_outside_notes_or_machine_paths(area: str) -> None:
    files = source_files(area)
    corpus = {p for p in files if any(c in p.resolve().parents for c in CORPORA)}  # (a set: a list's `in` is 7,000 x 7,000)
    offences = list(_offences(FORBIDDEN, [p for p in files if p not in corpus])) + list(_offences(NOTES, sorted(corpus)))
    assert not offences, "\n".join("%s:%d: %s" % o for o in offences)


@pytest.mark.parametrize("area", SOURCE_AREAS)
def test_every_facts_reference_names_an_existing_section(area: str) -> None:
    sections = facts_sections(read(FACTS))
    broken = ["%s: %s" % (p.relative_to(ROOT).as_posix(), b) for p in source_files(area) for b in broken_references(read(p), sections)]
    assert not broken, "\n".join(broken)


# ---------------------------------------------------------------- recorded fixtures

# tests/fixtures/record.py's convention: the recording machine's paths never reach a snapshot.
MACHINE_PATHS = re.compile(r"/work/|/root/|/tmp/pytest|pytest-of-|/tmp/tmp[a-z0-9_]{8}\b")
CONVENTIONAL_HOME = "/home/me"


def fixture_files() -> List[Path]:
    return sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.json"))


def _home_pattern() -> Optional[Pattern[str]]:
    home = str(Path.home()).rstrip("/")
    if home in ("", "/", CONVENTIONAL_HOME):
        return None
    return re.compile(r"(?<![\w.~-])" + re.escape(home) + r"(?![\w.~-])")


def test_there_are_recorded_and_handwritten_fixtures() -> None:
    names = {p.relative_to(ROOT / "tests" / "fixtures").as_posix() for p in fixture_files()}
    assert "cpu-torch-2.13.0.json" in names and "handwritten/cuda-compat-driver-470-torch-cu121.json" in names


def test_no_fixture_holds_the_recording_machines_paths() -> None:
    offences = list(_offences(MACHINE_PATHS, fixture_files()))
    home = _home_pattern()
    if home is not None:
        offences += list(_offences(home, fixture_files()))
    assert not offences, "\n".join("%s:%d: %s" % o for o in offences)


def test_recorded_fixtures_follow_the_path_convention() -> None:
    recorded = [p for p in fixture_files() if "handwritten" not in p.parts and "measurements" not in p.parts]
    assert len(recorded) >= 10
    for path in recorded:
        environment = json.loads(path.read_text(encoding="utf-8"))["environment"]
        assert environment["prefix"] in ("/home/me/venv", "/usr/local"), path.name
        assert environment["executable"].startswith(environment["prefix"] + "/bin/python"), path.name


# The project's own places at the top level; a scratch config or a test's output left there
# (train.yaml, v9.json) is not a source of the project and must not be committed.
TOP_LEVEL = {".ci", ".gitignore", "README.md", "benchmarks", "checks", "docs", "envdoctor", "examples", "noxfile.py", "pyproject.toml",
             "setup.py", "tests"}


def test_the_top_level_holds_only_the_projects_own_places() -> None:
    files = tracked_files(".")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: an sdist has its own top level")
    names = {p.relative_to(ROOT).parts[0] for p in files}
    assert names - TOP_LEVEL == set()
