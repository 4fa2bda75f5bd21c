"""A plug-in whose second step aborts the interpreter: the runner must name that step,
and the probe must go on past it in a fresh worker."""

import os

from envdoctor.target.model import Check
from envdoctor.target.probekit.steps import StepLost, step


def probe(torch, ctx):
    facts = {}
    with step("reading a harmless value"):
        facts["first"] = 1
    try:
        with step("calling the fragile extension", package="fragile", version="1.0"):
            os.abort()
    except StepLost as lost:
        facts["risky"] = "lost: %s" % lost.error
    with step("measuring after it"):
        facts["after"] = "measured"
    return facts


def diagnose(facts, env):
    return []


CHECK = Check(id="test-step-crash", title="test: a step that crashes", probe=probe, diagnose=diagnose)
