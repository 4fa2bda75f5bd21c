"""What pip refuses, said in one line that names the way out: an environment uv made (no pip
in it), a Python that is externally managed (PEP 668), a resolver conflict. The uv case on a
real uv environment; pip's own words for the others as pip prints them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.pipeline.fix.action import NotApplicable
from envdoctor.pipeline.fix.kinds.pip import _last_error, prepare

# pip 24's refusal in a Debian/Ubuntu system Python (the marker file in its stdlib folder)
PEP_668 = """error: externally-managed-environment

× This environment is externally managed
╰─> To install Python packages system-wide, try apt install
    python3-xyz, where xyz is the package you are trying to
    install.

note: If you believe this is a mistake, please contact your Python installation or OS distribution provider. \
You can override this, at the risk of breaking your Python installation or OS, by passing --break-system-packages.
hint: See PEP 668 for the detailed specification.
"""
# pip 23.2's dry run on this machine, where its configuration constrains torch<=2.14.1
CONFLICT = """ERROR: Cannot install torch==2.13.0+cu126 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested torch==2.13.0+cu126
    The user requested (constraint) torch<=2.14.1

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts
"""


def test_an_externally_managed_python_is_refused_with_the_venv_route() -> None:
    said = _last_error(PEP_668)
    assert said.startswith("this Python is externally managed (PEP 668)") and "python3 -m venv" in said and "\n" not in said


def test_a_resolver_conflict_is_named_by_pips_own_cause_lines() -> None:
    assert _last_error(CONFLICT) == ("the requirements conflict: The user requested torch==2.13.0+cu126; "
                                     "The user requested (constraint) torch<=2.14.1")
    quiet = "\n".join(line for line in CONFLICT.splitlines() if line.startswith("ERROR:"))  # what --quiet leaves
    assert _last_error(quiet).startswith("ERROR: Cannot install torch==2.13.0+cu126 because")


def test_an_environment_uv_made_has_no_pip_and_the_step_says_how_to_run_it_with_uv(tmp_path: Path) -> None:
    uv = pytest.importorskip("uv", reason="uv is not installed here").find_uv_bin()
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(tmp_path / "env")], check=True, capture_output=True)
    python = str(tmp_path / "env" / "bin" / "python")
    assert "uv = " in (tmp_path / "env" / "pyvenv.cfg").read_text()
    with pytest.raises(NotApplicable) as refused:
        prepare({"install": ["numpy"]}, python)
    assert str(refused.value) == ("%s is in an environment uv made, which has no pip: run the step with uv "
                                  "(`uv pip install ... --python %s`), or add pip with `uv pip install pip --python %s`"
                                  % (python, python, python))
