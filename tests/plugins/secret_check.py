"""Test-only check: puts an environment secret into its facts, findings and stderr."""

import os
import sys

from envdoctor.target.model import Check, Finding, Severity


def probe(torch, ctx):
    token = os.environ.get("HF_TOKEN", "")
    sys.stderr.write("leaking %s\n" % token)
    return {"seen": "token=%s" % token, "url": "https://user:%s@example.invalid/x" % token}


def diagnose(facts):
    return [Finding("test-secret", "echo", Severity.WARNING, "echo: %s" % facts["seen"], (facts["url"],))]


CHECK = Check(id="test-secret", title="test: secret", probe=probe, diagnose=diagnose, requires_torch=False, order=9)
