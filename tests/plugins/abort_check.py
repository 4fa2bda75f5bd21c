"""Test-only check: abort() inside the probe (SIGABRT, as a failed C assertion does)."""

import os

from envdoctor.target.model import Check


def probe(torch, ctx):
    os.abort()


CHECK = Check(id="test-abort", title="test: abort", probe=probe, diagnose=lambda facts: [], order=6)
