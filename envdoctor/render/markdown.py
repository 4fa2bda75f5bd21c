"""The report as Markdown for a bug report: the checks as a table, the findings, and a System
section with what `python -m torch.utils.collect_env` would print."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from envdoctor.render.vocabulary import GLYPH, SEVERITY_MARK, headline, intent_lines, mark, section, summary_line
from envdoctor.target.model import Report, Severity


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


def cpu_flags_text(flags: Dict[str, Any]) -> str:
    """'F16C ✓ AVX ✓ AVX2 ✓ FMA ✓ AVX-512F ✗ AVX512_FP16 ✗ AVX512_BF16 ✗ AVX-VNNI ✗ AMX ✗'."""
    parts: List[str] = []
    for key, present in flags.items():
        needs = _FLAG_REQUIRES.get(key)
        if needs in flags and not flags[needs]:
            continue
        label = "AMX" if key == "amx_tile" and not present else CPU_FLAG_LABELS.get(key, key.upper())
        parts.append("%s %s" % (label, mark(present)))
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
        py = section(system.get("python"))
        if py:
            add("Python", "%s %s %s-bit%s%s" % (py.get("version"), py.get("implementation"), py.get("bits"),
                                               ", " + py["compiler"] if py.get("compiler") else "", ", venv" if py.get("venv") else ""))
        conda = section(system.get("conda"))
        if conda:
            add("Conda env", ("%s%s" % (conda.get("name") or "?", " (active)" if conda.get("active") else "")) if conda.get("env") else "no")
        tools = section(system.get("tools"))
        for key, label in (("gcc", "GCC"), ("clang", "clang"), ("cmake", "CMake"), ("nvcc", "nvcc (CUDA toolkit)")):
            if key in tools:
                add(label, _tool_text(tools[key]))
        cpu = section(system.get("cpu"))
        if cpu:
            add("CPU", " · ".join(str(v) for v in (cpu.get("model") or "?", cpu.get("vendor")) if v))
            add("Cores", _cores_text(cpu))
            if isinstance(cpu.get("flags"), dict):
                add("CPU fp16/bf16 instructions", cpu_flags_text(cpu["flags"]))
    if runtime.get("cpu_capability"):
        add("torch CPU capability", runtime["cpu_capability"])
    if system:
        memory = section(system.get("memory"))
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
            add("CPU backends", " ".join("%s %s" % (label, mark(v)) for label, v in backends) + threads)
    return rows


def system_markdown(environment: Dict[str, Any]) -> List[str]:
    """The "### System" section: what collect_env would print, as tables; nothing for an older report."""
    system, runtime = section(environment.get("system")), section(environment.get("torch_runtime"))
    rows = _system_rows(system, runtime)
    if not rows:
        return []
    out = ["", "### System", "", "| fact | value |", "|---|---|"]
    out += ["| %s | %s |" % (fact, _md_cell(value)) for fact, value in rows]
    packages = section(system.get("packages"))
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
    out.append("`%s`" % headline(report))
    out.append("")
    config = intent_lines(report)
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
