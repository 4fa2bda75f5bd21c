"""Test-only check: a probe that raises, and one that prints to stdout first."""

import os
import sys

from envdoctor.target.model import Check


def probe(torch, ctx):
    # no newline: glued to the next protocol line it would corrupt it, so the worker
    # must have moved fd 1 away from the protocol stream
    sys.stdout.write("noise on stdout that must not corrupt the protocol")
    sys.stdout.flush()
    os.write(1, b"and more from C-level code")
    raise ValueError("probe exploded")


CHECK = Check(id="test-raises", title="test: raises", probe=probe, diagnose=lambda facts: [], order=8)
