"""Test-only check: a probe that raises, and one that prints to stdout first."""

import sys

from envdoctor.model import Check


def probe(torch, ctx):
    print("noise on stdout that must not corrupt the protocol")
    sys.stdout.flush()
    raise ValueError("probe exploded")


CHECK = Check(id="test-raises", title="test: raises", probe=probe, diagnose=lambda facts: [], order=8)
