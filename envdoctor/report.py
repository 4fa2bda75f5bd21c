"""Rendering a Report: rich terminal text, Markdown for bug reports, JSON.

The model knows nothing of glyphs or colours; everything visual lives here.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, TextIO, Tuple

from envdoctor.model import CheckResult, Finding, Report, Severity, Status

GLYPH = {
    Status.OK: ("✓", "green"),
    Status.WARNING: ("!", "yellow"),
    Status.ERROR: ("✗", "red"),
    Status.CRASHED: ("✗", "red"),
    Status.TIMEOUT: ("✗", "red"),
    Status.SKIPPED: ("-", "dim"),
}
ASCII_GLYPH = {Status.OK: "OK", Status.WARNING: "!", Status.ERROR: "X", Status.CRASHED: "X", Status.TIMEOUT: "X", Status.SKIPPED: "-"}
SEVERITY_MARK = {Severity.ERROR: ("✗", "red"), Severity.WARNING: ("!", "yellow"), Severity.INFO: ("•", "cyan"), Severity.OK: ("✓", "green")}
EVIDENCE_LINES = 6
# For terminals that cannot encode them (a cp1252 console): every text, not just glyphs.
_ASCII = str.maketrans({"→": "->", "·": "-", "×": "x", "…": "...", "•": "*", "✓": "OK", "✗": "X",
                        "—": "-", "–": "-", "≥": ">=", "≤": "<=", "’": "'", "“": '"', "”": '"'})


def render_json(report: Report, ascii_only: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=ascii_only)


def headline(env: Dict[str, Any]) -> str:
    torch = "torch %s" % env["torch"] if env.get("torch") else "no importable torch"
    where = _dict(env.get("where"))
    place = " · %s" % where["label"] if where.get("label") and where.get("platform") != "terminal" else ""
    return "envdoctor %s · %s (Python %s) · %s · %s %s%s" % (
        env.get("envdoctor"), env.get("executable") or env.get("target_python"), env.get("python"), torch,
        (env.get("platform") or "").split("-")[0], env.get("machine") or "", place,
    )


def intent_lines(env: Dict[str, Any]) -> List[str]:
    """What the training configs ask for, each value with where it is written:
    "Training config: train.yaml (autotrain-advanced DreamBooth)", then "precision fp16  train.yaml:12 `mixed_precision: fp16`"."""
    from envdoctor.configs.intent import Intent

    intent = Intent.from_dict(env.get("intent"))
    lines = ["note: %s" % n for n in env.get("config_notes") or ()]
    if intent is None:
        return lines
    lines.append("Training config: " + ", ".join("%s (%s)" % (s.file, s.label or s.tool) for s in intent.sources))
    shown = [("device", None), ("precision", None)] + [("weight_dtype", p) for p in intent.parts()] + [("adapter", None), ("dora", None)]
    for name, part in shown:
        setting = intent.effective(name, part)
        if setting is None:
            continue
        label = "%s %s" % (part, "weights") if part else name
        value = {True: "on", False: "off"}.get(setting.value, setting.value) if isinstance(setting.value, bool) else setting.value
        lines.append("  %s %s  %s" % (label, value, setting.where()))
    return lines


def summary_line(report: Report) -> str:
    s = report.summary()
    counts = s["findings"]
    broken = s["status"]["crashed"] + s["status"]["timeout"]
    parts = []
    if counts["error"]:
        parts.append("%d error%s" % (counts["error"], "" if counts["error"] == 1 else "s"))
    if counts["warning"]:
        parts.append("%d warning%s" % (counts["warning"], "" if counts["warning"] == 1 else "s"))
    if broken:
        parts.append("%d check%s did not finish" % (broken, "" if broken == 1 else "s"))
    if not parts:
        notes = " (%d note%s, -v for details)" % (counts["info"], "" if counts["info"] == 1 else "s") if counts["info"] else ""
        return "No issues found in %d checks%s." % (s["checks"], notes)
    return "%s in %d checks." % (", ".join(parts), s["checks"])


class TerminalRenderer:
    def __init__(self, stream: Optional[TextIO] = None, verbose: bool = False, color: Optional[bool] = None) -> None:
        from rich.console import Console

        self.console = Console(
            file=stream or sys.stdout,
            highlight=False,
            soft_wrap=True,
            no_color=color is False,
            force_terminal=color,  # None: as the stream is; False: plain text (a notebook's text fallback)
            force_jupyter=False,  # inside a kernel the text goes where it is told; notebooks get report_html
        )
        self.verbose = verbose
        self.encoding = getattr(self.console.file, "encoding", None) or "utf-8"
        self.unicode = self.encoding.lower().replace("-", "").startswith("utf")

    def _t(self, text: str) -> str:
        """The text as this stream can encode it, never an encoding error."""
        if self.unicode:
            return text
        return text.translate(_ASCII).encode(self.encoding, "replace").decode(self.encoding)

    def _out(self, text: str = "", style: Optional[str] = None) -> None:
        self.console.print(self._t(text), style=style, markup=False, emoji=False, highlight=False)

    def render(self, report: Report) -> None:
        from rich.text import Text

        self._out(headline(report.environment), style="bold")
        for config_line in intent_lines(report.environment):
            self._out(config_line, style=None if config_line.startswith(" ") else "bold")
        self._out()
        for result in report.checks:
            glyph, color = GLYPH[result.status]
            if not self.unicode:
                glyph = ASCII_GLYPH[result.status]
            line = Text()
            line.append("[%s] " % glyph, style=color)
            line.append(self._t(result.title), style="bold")
            line.append(" (%s)" % result.id, style="dim")
            if result.summary:
                line.append("  " + self._t(result.summary))
            self.console.print(line)
            for finding in result.findings:
                if finding.severity is Severity.OK:
                    continue
                if finding.severity is Severity.INFO and not self.verbose:
                    self._finding_title(finding)
                else:
                    self._finding(finding)
            if self.verbose and result.facts:
                self._facts(result)
        self._out()
        code = report.exit_code
        self._out("Doctor summary: " + summary_line(report), style="bold red" if code else "bold green")

    def _finding_title(self, finding: Finding) -> None:
        from rich.text import Text

        mark, color = SEVERITY_MARK[finding.severity]
        line = Text("    ")
        line.append(self._t(mark), style=color)
        line.append(" " + self._t(finding.title))
        self.console.print(line)

    def _finding(self, finding: Finding) -> None:
        self._finding_title(finding)
        evidence = list(finding.evidence)
        shown = evidence if self.verbose else evidence[:EVIDENCE_LINES]
        for item in shown:
            for line in str(item).splitlines() or [""]:
                self._out("        " + line, style="dim")
        if len(shown) < len(evidence):
            self._out("        … %d more (-v shows all)" % (len(evidence) - len(shown)), style="dim")
        for remedy in finding.remedies:
            self._out("      → %s" % remedy.summary)
            for command in remedy.commands:
                self._out("          $ " + command, style="cyan")

    def _facts(self, result: CheckResult) -> None:
        from rich.table import Table

        facts = dict(result.facts)
        ops = facts.pop("ops", None)
        if ops:
            table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
            for column in ("op", "device", "dtype", "ok", "max_rel_err", "error"):
                table.add_column(column, overflow="fold")
            for op in ops:
                dtype = op.get("dtype", "")
                if op.get("mix"):
                    dtype = op["mix"]
                elif op.get("other_dtype") or op.get("to_dtype"):
                    dtype = "%s %s %s" % (dtype, "+" if op.get("other_dtype") else "→", op.get("other_dtype") or op.get("to_dtype"))
                err = op.get("max_rel_err")
                cells = (str(op.get("op")), str(op.get("device")), dtype, "yes" if op.get("ok") else "NO",
                         "" if err is None else str(err), (op.get("error") or "")[:160])
                table.add_row(*(self._t(c) for c in cells))
            self.console.print(table, style="dim")
        if facts:
            text = json.dumps(facts, indent=2, ensure_ascii=False, default=str)
            for line in text.splitlines():
                self._out("        " + line, style="dim")


def render_terminal(report: Report, stream: Optional[TextIO] = None, verbose: bool = False) -> None:
    TerminalRenderer(stream, verbose).render(report)


def render_text(report: Report, verbose: bool = False) -> str:
    """The terminal report as plain text (no colours): a notebook's text fallback, a plain console's repr."""
    import io

    buffer = io.StringIO()
    TerminalRenderer(buffer, verbose, color=False).render(report)
    return buffer.getvalue()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# Display names of the CPU instruction sets sysinfo records (x86 flags, then ARM features).
CPU_FLAG_LABELS = {
    "f16c": "F16C", "avx": "AVX", "avx2": "AVX2", "fma": "FMA", "avx512f": "AVX-512F", "avx512bw": "AVX-512BW",
    "avx512vl": "AVX-512VL", "avx512_vnni": "AVX-512VNNI", "avx512_fp16": "AVX512_FP16", "avx512_bf16": "AVX512_BF16",
    "avx_vnni": "AVX-VNNI", "amx_tile": "AMX-TILE", "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8", "amx_fp16": "AMX-FP16",
    "fphp": "FPHP", "asimdhp": "ASIMDHP", "asimddp": "ASIMDDP", "bf16": "BF16", "i8mm": "I8MM", "sve": "SVE", "sve2": "SVE2", "sme": "SME",
}
# Flags that cannot be present without another: hidden when it is absent, so that a CPU
# without AVX-512 or AMX reads "AVX-512F ✗ AVX512_FP16 ✗ AVX512_BF16 ✗ AMX ✗".
_FLAG_REQUIRES = {"avx512bw": "avx512f", "avx512vl": "avx512f", "avx512_vnni": "avx512f",
                  "amx_bf16": "amx_tile", "amx_int8": "amx_tile", "amx_fp16": "amx_tile"}


def _dict(value: Any) -> Dict[str, Any]:
    """A sub-dict of a report that may come from an older or newer envdoctor."""
    return value if isinstance(value, dict) else {}


def _mark(value: Any) -> str:
    return "✓" if value else "✗"


def cpu_flags_text(flags: Dict[str, Any]) -> str:
    """'F16C ✓ AVX ✓ AVX2 ✓ FMA ✓ AVX-512F ✗ AVX512_FP16 ✗ AVX512_BF16 ✗ AVX-VNNI ✗ AMX ✗'."""
    parts: List[str] = []
    for key, present in flags.items():
        needs = _FLAG_REQUIRES.get(key)
        if needs in flags and not flags[needs]:
            continue
        label = "AMX" if key == "amx_tile" and not present else CPU_FLAG_LABELS.get(key, key.upper())
        parts.append("%s %s" % (label, _mark(present)))
    return " ".join(parts)


def _tool_text(tool: Any) -> str:
    if not isinstance(tool, dict):
        return "not found"
    if tool.get("error"):
        return "%s: %s" % (tool.get("path") or "?", tool["error"])
    return str(tool.get("line") or tool.get("version") or "?")


def _gib(n: Any) -> str:
    return "%.1f GiB" % (n / 2**30) if isinstance(n, (int, float)) else "?"


def _cores_text(cpu: Dict[str, Any]) -> str:
    parts = ["%s logical" % cpu.get("logical_cores")]
    if cpu.get("usable_cores") not in (None, cpu.get("logical_cores")):
        parts.append("%s usable" % cpu["usable_cores"])
    if cpu.get("sockets"):
        parts.append("%s socket%s" % (cpu["sockets"], "" if cpu["sockets"] == 1 else "s"))
    if cpu.get("threads_per_core"):
        parts.append("%s thread%s per core" % (cpu["threads_per_core"], "" if cpu["threads_per_core"] == 1 else "s"))
    return ", ".join(parts)


def _system_rows(system: Dict[str, Any], runtime: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(fact, value) pairs for what the report has: an older report has none of them."""
    rows: List[Tuple[str, str]] = []

    def add(fact: str, value: Any) -> None:
        if value is not None and value != "":
            rows.append((fact, str(value)))

    if system:
        if system.get("os"):
            add("OS", "%s (%s)" % (system["os"], system["machine"]) if system.get("machine") else system["os"])
        add("Kernel", system.get("kernel"))
        add("libc", system.get("libc") or "?")
        py = _dict(system.get("python"))
        if py:
            add("Python", "%s %s %s-bit%s%s" % (py.get("version"), py.get("implementation"), py.get("bits"),
                                               ", " + py["compiler"] if py.get("compiler") else "", ", venv" if py.get("venv") else ""))
        conda = _dict(system.get("conda"))
        if conda:
            add("Conda env", ("%s%s" % (conda.get("name") or "?", " (active)" if conda.get("active") else "")) if conda.get("env") else "no")
        tools = _dict(system.get("tools"))
        for key, label in (("gcc", "GCC"), ("clang", "clang"), ("cmake", "CMake"), ("nvcc", "nvcc (CUDA toolkit)")):
            if key in tools:
                add(label, _tool_text(tools[key]))
        cpu = _dict(system.get("cpu"))
        if cpu:
            add("CPU", " · ".join(str(v) for v in (cpu.get("model") or "?", cpu.get("vendor")) if v))
            add("Cores", _cores_text(cpu))
            if isinstance(cpu.get("flags"), dict):
                add("CPU fp16/bf16 instructions", cpu_flags_text(cpu["flags"]))
    if runtime.get("cpu_capability"):
        add("torch CPU capability", runtime["cpu_capability"])
    if system:
        memory = _dict(system.get("memory"))
        if memory:
            add("Memory", "%s total, %s available" % (_gib(memory.get("total_bytes")), _gib(memory.get("available_bytes"))))
        if "nvidia_driver" in system:
            add("NVIDIA driver", system.get("nvidia_driver") or "none")
    if runtime:
        add("torch", "%s%s" % (runtime.get("version"), " (debug build)" if runtime.get("debug") else ""))
        add("CUDA runtime (torch build)", runtime.get("cuda") or ("none (ROCm build)" if runtime.get("hip") else "none (CPU build)"))
        add("HIP (torch build)", runtime.get("hip"))
        add("cuDNN", runtime.get("cudnn") or "none")
        if runtime.get("cxx11_abi") is not None:
            add("C++11 ABI", "yes" if runtime["cxx11_abi"] else "no")
        backends = [(label, runtime.get(key)) for key, label in (("mkl", "MKL"), ("mkldnn", "oneDNN"), ("openmp", "OpenMP"), ("xnnpack", "XNNPACK"))
                    if runtime.get(key) is not None]
        if backends:
            threads = " · %s threads" % runtime["num_threads"] if runtime.get("num_threads") else ""
            add("CPU backends", " ".join("%s %s" % (label, _mark(v)) for label, v in backends) + threads)
    return rows


def system_markdown(environment: Dict[str, Any]) -> List[str]:
    """The "### System" section: what collect_env would print, as tables; nothing for an older report."""
    system, runtime = _dict(environment.get("system")), _dict(environment.get("torch_runtime"))
    rows = _system_rows(system, runtime)
    if not rows:
        return []
    out = ["", "### System", "", "| fact | value |", "|---|---|"]
    out += ["| %s | %s |" % (fact, _md_cell(value)) for fact, value in rows]
    packages = _dict(system.get("packages"))
    installed = [(name, version) for name, version in packages.items() if version]
    if installed:
        out += ["", "| package | version |", "|---|---|"]
        out += ["| %s | %s |" % (_md_cell(name), _md_cell(str(version))) for name, version in installed]
    missing = [name for name, version in packages.items() if not version]
    if missing:
        out += ["", "Not installed: %s." % ", ".join(missing)]
    return out


def render_markdown(report: Report, verbose: bool = False) -> str:
    env = report.environment
    out: List[str] = ["## envdoctor report", ""]
    out.append("`%s`" % headline(env))
    out.append("")
    config = intent_lines(env)
    if config:
        out += ["```text", *config, "```", ""]
    out.append("| | check | status | summary |")
    out.append("|---|---|---|---|")
    for result in report.checks:
        glyph = GLYPH[result.status][0]
        out.append("| %s | `%s` | %s | %s |" % (glyph, result.id, result.status.value, _md_cell(result.summary)))
    out.append("")
    out.append("**%s**" % summary_line(report))
    findings = [f for f in report.findings if f.severity is not Severity.OK and (verbose or f.severity is not Severity.INFO)]
    notes = [f for f in report.findings if f.severity is Severity.INFO and not verbose]
    if findings:
        out += ["", "### Findings"]
        for f in findings:
            out += ["", "#### %s `%s` · %s" % (SEVERITY_MARK[f.severity][0], f.check, f.title)]
            if f.evidence:
                out += ["", "```text", *[str(e) for e in f.evidence], "```"]
            if f.remedies:
                out.append("")
                for r in f.remedies:
                    out.append("- %s" % r.summary)
                    out += ["  `%s`" % c for c in r.commands]
    if notes:
        out += ["", "### Notes", ""]
        out += ["- `%s` · %s" % (f.check, f.title) for f in notes]
    out += system_markdown(env)
    rest = {k: v for k, v in env.items() if k not in ("system", "torch_runtime")}  # rendered above as tables
    out += ["", "<details><summary>Environment</summary>", "", "```json", json.dumps(rest, indent=2, ensure_ascii=False), "```", "", "</details>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- fix and undo
# Rendered from their JSON form (Plan.to_dict(), Outcome.to_dict(), the journal's runs),
# so that `--json` and the terminal say the same things.

def _count(n: int, word: str) -> str:
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def plan_lines(plan: Dict[str, Any]) -> List[str]:
    steps = plan.get("steps") or []
    unresolved = plan.get("unresolved") or []
    notes = ["note: --prefer %s: no finding here offers that remedy" % key for key in plan.get("prefer_unmatched") or ()]
    if not steps and not unresolved:
        return notes + ["Nothing to fix: no error or warning findings."]
    auto = [s for s in steps if s.get("applies")]
    out = notes + ["Plan: %s envdoctor can apply, %s for you." % (_count(len(auto), "step"), _count(len(steps) - len(auto), "manual step")), ""]
    for step in steps:
        remedy = step["remedy"]
        tag = step["kind"] if step.get("applies") else "manual"
        chosen = " (--prefer)" if step.get("preferred") else ""
        out.append("%d. [%s] %s  (%s)%s" % (step["number"], tag, remedy["summary"], remedy.get("id") or "-", chosen))
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
    if outcome.get("failure"):
        out.append("fix failed: %s" % outcome["failure"])
    if outcome.get("rolled_back"):
        out.append("rolled back:")
        out += ["   %s" % line for line in outcome["rolled_back"]]
    status = outcome.get("status")
    if status == "verified":
        out.append("Fixed and verified (journal %s; `envdoctor undo` reverts it)." % outcome.get("journal"))
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
        out.append("%s  %-11s  %s  %s" % (run["id"], run.get("status", "?"), run.get("python") or "", _count(len(steps), "step")))
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
    out = ["Read %s, %s%s." % (_count(read.get("lines", 0), "line"), _count(read.get("errors", 0), "error"),
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
