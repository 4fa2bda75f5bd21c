"""A plug-in whose every step aborts: the runner must give up after a few lost steps
instead of restarting workers forever."""

import os

from envdoctor.target.model import Check
from envdoctor.target.probekit.steps import StepLost, step


def probe(torch, ctx):
    lost = 0
    for n in range(20):
        try:
            with step("fragile call %d" % n, package="fragile", version="1.0"):
                os.abort()
        except StepLost:
            lost += 1
    return {"lost": lost}


CHECK = Check(id="test-every-step-crashes", title="test: every step crashes", probe=probe, diagnose=lambda facts, env: [],
              requires_torch=False)
