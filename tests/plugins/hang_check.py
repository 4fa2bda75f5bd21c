"""Test-only check: a probe that never returns."""

import time

from envdoctor.target.model import Check


def probe(torch, ctx):
    while True:
        time.sleep(3600)


CHECK = Check(id="test-hang", title="test: hang", probe=probe, diagnose=lambda facts: [], order=7)
