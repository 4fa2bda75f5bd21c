"""Test-only check: dereferences NULL inside the probe (a real SIGSEGV)."""

from envdoctor.target.model import Check


def probe(torch, ctx):
    import ctypes

    ctypes.string_at(0)
    return {}


CHECK = Check(id="test-segfault", title="test: segfault", probe=probe, diagnose=lambda facts: [], order=5)
