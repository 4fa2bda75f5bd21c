"""fix, undo and explain as text lines, rendered from their JSON form (Plan.to_dict(),
FixOutcome.to_dict(), the journal's runs, Explanation.to_dict()), so that `--json` and the
terminal say the same things."""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.render.vocabulary import SEVERITY_MARK, count
from envdoctor.target.model import Severity


def plan_lines(plan: Dict[str, Any]) -> List[str]:
    steps = plan.get("steps") or []
    unresolved = plan.get("unresolved") or []
    notes = ["note: --prefer %s: no finding here offers that remedy" % key for key in plan.get("prefer_unmatched") or ()]
    if not steps and not unresolved:
        return notes + ["Nothing to fix: no error or warning findings."]
    auto = [s for s in steps if s.get("applies")]
    out = notes + ["Plan: %s envdoctor can apply, %s for you." % (count(len(auto), "step"), count(len(steps) - len(auto), "manual step")), ""]
    for step in steps:
        remedy = step["remedy"]
        tag = step["kind"] if step.get("applies") else "manual"
        chosen = " (--prefer)" if step.get("preferred") else ""
        out.append("%d. [%s] %s  (%s)%s" % (step["number"], tag, remedy["summary"], remedy.get("id") or "-", chosen))
        if step.get("consequence"):
            out.append("   needed after the edits above: the config as they leave it was checked again")
        for finding in step.get("findings") or ():
            mark = SEVERITY_MARK[Severity(finding["severity"])][0]
            out.append("   for %s %s: %s" % (mark, finding["check"], finding["title"]))
        out += ["   %s" % line for line in step.get("lines") or ()]
        for passed in step.get("passed_over") or ():
            out.append("   not taken: %s (%s): %s" % (passed.get("id") or passed["summary"], passed["kind"], passed["reason"]))
        for other in step.get("alternatives") or ():
            how = "--prefer %s" % other["id"] if other.get("id") and other["kind"] != "manual" else other["kind"]
            out.append("   or [%s] %s" % (how, other["summary"]))
        out.append("")
    for finding in unresolved:
        mark = SEVERITY_MARK[Severity(finding["severity"])][0]
        out.append("No remedy known: %s %s: %s" % (mark, finding["check"], finding["title"]))
    return out


def outcome_lines(outcome: Dict[str, Any]) -> List[str]:
    out: List[str] = [""]
    for verdict in outcome.get("verified") or ():
        out.append("step %d: %s" % (verdict["step"], "fixed" if verdict["fixed"] else "NOT fixed"))
        out += ["   %s" % e for e in verdict.get("evidence") or ()]
    for finding in outcome.get("also_fixed") or ():
        out.append("also gone: %s: %s" % (finding["check"], finding["title"]))
    for dropped in outcome.get("dropped") or ():
        out.append("step %d not kept: %s" % (dropped["step"], dropped["reason"]))
    if outcome.get("failure") and not outcome.get("dropped"):
        out.append("fix failed: %s" % outcome["failure"])
    if outcome.get("rolled_back"):
        out.append("rolled back:")
        out += ["   %s" % line for line in outcome["rolled_back"]]
    status = outcome.get("status")
    for finding in outcome.get("revealed") or ():
        out.append("now seen: %s: %s" % (finding["check"], finding["title"]))
    if outcome.get("revealed"):
        out.append("   torch imports now, so the checks judged what they could not before: "
                   "`envdoctor fix` again plans these.")
    for finding in outcome.get("left") or ():
        out.append("still yours: %s: %s (the plan's manual step)" % (finding["check"], finding["title"]))
    if status == "verified":
        out.append("Fixed and verified (journal %s; `envdoctor undo` reverts it)%s." % (
            outcome.get("journal"), "; the manual steps above are left for you" if outcome.get("left") else ""))
    elif status == "partly-verified":
        kept = ", ".join(str(n) for n in outcome.get("kept") or ())
        out.append("Partly fixed: step %s kept and verified, the rest rolled back (journal %s; `envdoctor undo` reverts what was kept)."
                   % (kept, outcome.get("journal")))
    elif status in ("rolled-back", "not-fixed"):
        out.append("Nothing was changed in the end: everything this run did was rolled back (journal %s)." % outcome.get("journal"))
    else:
        out.append("The rollback did not finish: see journal %s and `envdoctor undo --list`." % outcome.get("journal"))
    return out


def runs_lines(runs: List[Dict[str, Any]]) -> List[str]:
    if not runs:
        return ["No fix runs in the journal."]
    out = []
    for run in runs:
        steps = run.get("steps") or []
        if run.get("status") == "damaged":
            out.append("%s  %-11s  %s" % (run["id"], "damaged", run.get("error") or ""))
            continue
        out.append("%s  %-11s  %s  %s" % (run["id"], run.get("status", "?"), run.get("python") or "", count(len(steps), "step")))
        for step in steps:
            out.append("    %d. [%s] %s  %s" % (step["number"], step["kind"], step.get("status", "?"), step.get("summary") or ""))
    return out


_CONFIRMED = {True: "✓", False: "○", None: "?"}
LIKELY = 0.3  # below: a diagnosis another family's frames or context outranked


def explanation_lines(data: Dict[str, Any], remedies: int = 3) -> List[str]:
    """`envdoctor explain`'s report: the diagnoses best first, each with what it involves, its
    evidence, whether this environment reproduces it, and what to change."""
    read = data.get("input") or {}
    context = data.get("context") or {}
    said = [w for w in ("torch %s" % context["torch"] if context.get("torch") else "", context.get("device") or "",
                        ", ".join(context.get("gpus") or ()), "/".join(context.get("precision") or ())) if w]
    # (errors: the raised ones the parser found; a diagnosis may come from other lines, "Killed" or a sentence, so a
    # count of none is left out rather than printed beside it)
    raised = read.get("errors", 0)
    out = ["Read %s%s%s." % (count(read.get("lines", 0), "line"), ", " + count(raised, "raised error") if raised else "",
                             " · the log says: " + " · ".join(said) if said else "")]
    diagnoses = data.get("diagnoses") or []
    if not diagnoses:
        out.append("No known cause: nothing in this text matches a failure envdoctor knows.")
        if read.get("last_error"):
            out.append("   last error: %s" % read["last_error"])
        for near in data.get("near") or ():
            out.append("   closest: %s (%s): %s" % (near["check"], near["code"], near["why"]))
        out.append("Run `envdoctor check` to probe this environment for the failures it does know.")
        return out
    # an alternative its rival outranked is named, not detailed (--json has everything)
    likely = diagnoses[:1] + [d for d in diagnoses[1:] if d["confidence"] >= LIKELY]
    unlikely = [d for d in diagnoses if d not in likely]
    for number, diag in enumerate(likely, 1):
        involved = diag.get("involved") or {}
        what = " · ".join(str(w) for w in (involved.get("op"), "/".join(involved.get("dtypes") or ()), involved.get("device"),
                                              involved.get("library"), "torch %s" % involved["torch"] if involved.get("torch") else "")
                          if w)
        out += ["", "%d. %s (%s, confidence %.2f): %s" % (number, diag["check"], diag["code"], diag["confidence"], diag["cause"])]
        if what:
            out.append("   involves: %s" % what)
        out += ["   %s" % e for e in diag.get("evidence") or ()]
        if data.get("probed") is not None or diag.get("confirmation"):
            out.append("   %s %s" % (_CONFIRMED[diag.get("confirmed")], diag.get("confirmation") or "not probed"))
        for remedy in (diag.get("remedies") or [])[:remedies]:
            out.append("   → %s" % remedy["summary"])
            out += ["       $ %s" % c for c in remedy.get("commands") or ()]
    if unlikely:
        out += ["", "Less likely: " + ", ".join("%s (%s, %.2f)" % (d["check"], d["code"], d["confidence"]) for d in unlikely)]
    probed = data.get("probed")
    if probed:
        out += ["", "Probed live: %s with torch %s (%s)." % (probed.get("python"), probed.get("torch") or "-", ", ".join(probed.get("checks") or ()))]
    return out
