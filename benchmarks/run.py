"""Side-by-side start-up costs: envdoctor against what it replaces.

    python benchmarks/run.py [--runs 7] [--json FILE] [--libs-python PYTHON]

Every pair is timed interleaved (A, B, A, B, ...) in one run so that machine
noise hits both sides; medians and ratios are printed as a Markdown table.
Goals: `envdoctor --version` <= 1.5x `import typer`; `envdoctor check`
<= 1.5x a bare `import torch` (the mission aims at ~1.1x) and faster than
`python -m torch.utils.collect_env`; the parent's peak RSS < 80 MB.
With --libs-python (an environment with transformers, diffusers and peft), also
`envdoctor check --python PYTHON` (no config: the libraries are not imported) against a bare
`import torch` there (<= 1.2x, as on any stack), and `check --libraries` (their models run)
against that environment's `diffusers-cli env`, which runs no op at all (no slower). `envdoctor fix` (the plan, no
--yes) against `check` (about 1.1x: planning is text work), and with --old-torch-python on a config
that has a plan to make.
No test asserts these numbers: they are measured here, reported in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

PY = sys.executable
BIN = Path(PY).parent
ENVDOCTOR = [str(BIN / "envdoctor")] if (BIN / "envdoctor").exists() else [PY, "-m", "envdoctor"]

# The parent's own peak RSS, and the worker's (a waited-for child), from one run.
RSS_PROBE = (
    "import resource, sys\n"
    "from envdoctor.cli import main\n"
    "rc = main(['check', '--json'])\n"
    "r = resource.getrusage\n"
    "print('RSS', r(resource.RUSAGE_SELF).ru_maxrss, r(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
)

PAIRS = [
    ("envdoctor --version", ENVDOCTOR + ["--version"], "python -c 'import typer'", [PY, "-c", "import typer"], 1.5),
    ("envdoctor check", ENVDOCTOR + ["check"], "python -c 'import torch'", [PY, "-c", "import torch"], 1.5),
    ("envdoctor check --json", ENVDOCTOR + ["check", "--json"], "python -c 'import torch'", [PY, "-c", "import torch"], 1.5),
    ("envdoctor check", ENVDOCTOR + ["check"], "python -m torch.utils.collect_env", [PY, "-m", "torch.utils.collect_env"], 1.0),
    # planning costs no more than about the check it plans from: it is text work on the report
    ("envdoctor fix", ENVDOCTOR + ["fix", "--no-config"], "envdoctor check", ENVDOCTOR + ["check", "--no-config"], 1.1),
]

# On a GPU machine a user's script starts CUDA too: `check` there beside `import torch` alone and beside torch's first
# CUDA op (the context, which every GPU run pays before its first kernel), both as measured, neither held to a test.
CUDA_START = "import torch; torch.ones(1, device='cuda').add_(1); torch.cuda.synchronize()"
GPU_PAIRS = [
    ("envdoctor check (GPU)", ENVDOCTOR + ["check", "--no-config"], "python -c 'import torch'", [PY, "-c", "import torch"], 1.2),
    ("envdoctor check (GPU)", ENVDOCTOR + ["check", "--no-config"], "python -c 'import torch; <first CUDA op>'",
     [PY, "-c", CUDA_START], 1.2),
]

# seed 004's autotrain config: on torch 2.0.1 its fp16 fails on the CPU, so `fix` has a plan to make
SEED_004 = "task: dreambooth\nbase_model: stabilityai/stable-diffusion-xl-base-1.0\nproject_name: p\nbackend: local\nparams:\n  mixed_precision: fp16\n"


# A 10 MB training log (progress bars redrawn with carriage returns, loss lines, the odd
# warning) with seed 004's traceback at its end, explained in a few times envdoctor's own start-up.
TRACEBACK_004 = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/clip/modeling_clip.py", line 234, in forward\n'
    "    hidden_states = self.layer_norm1(hidden_states)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", line 2515, in layer_norm\n'
    "    return torch.layer_norm(input, normalized_shape, weight, bias, eps, torch.backends.cudnn.enabled)\n"
    "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'\n"
)


def training_log(path: Path, size: int = 10 * 2**20) -> Path:
    with path.open("w", encoding="utf-8") as out:
        written, step = 0, 0
        while written < size:
            step += 1
            bar = "".join("\rSteps: %3d%%|%-10s| %d/10000 [00:%02d<01:25, 6.9it/s, loss=0.%04d]" % (
                step % 100, "#" * (step % 10), step, step % 60, (step * 37) % 10000) for _ in range(4))
            line = bar + "\n" + ("UserWarning: None of the inputs have requires_grad=True\n" if step % 500 == 0 else "")
            out.write(line)
            written += len(line)
        out.write(TRACEBACK_004)
    return path


def explain_pairs(folder: Path) -> list:
    """The 10 MB log against the same command on the bare traceback (explain's own start-up: the
    command line, the twelve checks' signatures) and against `envdoctor --version`."""
    log = training_log(folder / "train.log")
    bare = folder / "traceback.txt"
    bare.write_text(TRACEBACK_004, encoding="utf-8")
    explain = ENVDOCTOR + ["explain", "--no-probe"]
    return [("envdoctor explain --no-probe train.log (10 MB)", explain + [str(log)],
             "envdoctor explain --no-probe traceback.txt", explain + [str(bare)], 3.0),
            ("envdoctor explain --no-probe train.log (10 MB)", explain + [str(log)], "envdoctor --version",
             ENVDOCTOR + ["--version"], 4.0),
            # no error anywhere, 1,000 lines of 4,000 characters of data: every line is read as a message pasted alone,
            # against every signature (the worst input for the matcher; before its patterns were bounded, 49 s)
            ("envdoctor explain --no-probe junk.log (4 MB of data lines)", explain + [str(junk_log(folder / "junk.log"))],
             "envdoctor --version", ENVDOCTOR + ["--version"], 60.0)]


def junk_log(path: Path) -> Path:
    """tests/tracebacks.py's JUNK lines, 1,000 of them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from tracebacks import JUNK

    path.write_text("".join(JUNK[i % len(JUNK)] + "\n" for i in range(1000)), encoding="utf-8")
    return path


def seed_pairs(python: str, config: Path) -> list:
    """`fix` with a plan (an edit and its diff, alternatives) against `check` of the same config, and
    `check` of that old stack against its own `import torch` (torch 2.0.1 pins triton 2.0.0, whose import
    alone loads LLVM: envdoctor judges that pair by torch's pin instead)."""
    args = ["--python", python, "--config", str(config)]
    return [("envdoctor fix --python OLD --config seed-004", ENVDOCTOR + ["fix", *args],
             "envdoctor check --python OLD --config seed-004", ENVDOCTOR + ["check", *args], 1.1),
            ("envdoctor check --no-config --python OLD", ENVDOCTOR + ["check", "--no-config", "--python", python],
             "OLD python -c 'import torch'", [python, "-c", "import torch"], 1.2)]


def library_pairs(python: str) -> list:
    """The training libraries' environment: a plain check imports none of them (nothing asks for their models)
    and is held to the bare `import torch` as on any stack; with --libraries it runs their models, against
    `diffusers-cli env` (which imports them and runs nothing)."""
    cli = str(Path(python).parent / "diffusers-cli")
    return [
        ("envdoctor check --python LIBS", ENVDOCTOR + ["check", "--no-config", "--python", python],
         "LIBS python -c 'import torch'", [python, "-c", "import torch"], 1.2),
        ("envdoctor check --libraries --python LIBS", ENVDOCTOR + ["check", "--libraries", "--no-config", "--python", python],
         "diffusers-cli env", [cli, "env"], 1.0),
    ]


# Every side runs with its bytecode, as an installed package has it (pip compiles at install; a first import writes it):
# a PYTHONDONTWRITEBYTECODE=1 around the benchmark (some machines set it) would make every run compile every module it
# imports from source, a cost no user pays twice (explain's ~200 modules: 0.4 s a run here) and the warm-up run is there to pay.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: Sequence[str]) -> float:
    start = time.perf_counter()
    subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV)
    return time.perf_counter() - start


def measure_pair(a: Sequence[str], b: Sequence[str], runs: int) -> Dict[str, float]:
    timed(a), timed(b)  # warm the page cache for both
    ta: List[float] = []
    tb: List[float] = []
    ratios: List[float] = []
    for _ in range(runs):
        x, y = timed(a), timed(b)
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)
    return {"a_median_s": statistics.median(ta), "b_median_s": statistics.median(tb), "ratio_median": statistics.median(ratios)}


def measure_rss(runs: int) -> Dict[str, float]:
    parent: List[int] = []
    worker: List[int] = []
    for _ in range(runs):
        proc = subprocess.run([PY, "-c", RSS_PROBE], capture_output=True, text=True, check=False, env=ENV)
        line = next(line for line in proc.stderr.splitlines() if line.startswith("RSS "))
        _, p, w = line.split()
        parent.append(int(p))
        worker.append(int(w))
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024  # ru_maxrss: KiB on Linux, bytes on macOS
    return {"parent_peak_rss_mib": statistics.median(parent) / scale, "worker_peak_rss_mib": statistics.median(worker) / scale}


def measure_library_runs(python: str, runs: int) -> float:
    """library-probes' own time beyond its imports (facts.runs_s): twelve tiny models' forward
    and backward passes, median of `runs` checks. Goal: well under a second."""
    seconds = []
    for _ in range(runs):
        proc = subprocess.run(ENVDOCTOR + ["check", "--json", "--no-config", "--only", "library-probes", "--python", python],
                              capture_output=True, text=True, check=False, env=ENV)
        check = json.loads(proc.stdout)["checks"][0]
        seconds.append(float(check["facts"]["runs_s"]))
    return statistics.median(seconds)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="envdoctor-bench-") as folder:  # the 10 MB logs go with it
        return measure_all(Path(folder))


def measure_all(folder: Path) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--libs-python", help="an interpreter with transformers, diffusers and peft: adds the library-probe pairs")
    parser.add_argument("--old-torch-python", help="an interpreter with torch 2.0.1: adds `fix` with a plan against `check`, "
                                                   "and `check` of it against its own `import torch`")
    parser.add_argument("--gpu", action="store_true", help="on a machine with an NVIDIA GPU: `check` against `import torch` "
                                                               "and against torch's first CUDA op")
    parser.add_argument("--only", help="measure only the pairs whose command contains this text (e.g. explain)")
    args = parser.parse_args()

    rows = []
    pairs = list(PAIRS) + explain_pairs(folder) + (library_pairs(args.libs_python) if args.libs_python else [])
    if args.old_torch_python:
        config = folder / "train.yaml"
        config.write_text(SEED_004, encoding="utf-8")
        pairs += seed_pairs(args.old_torch_python, config)
    if args.gpu:
        pairs += GPU_PAIRS
    if args.only:
        pairs = [p for p in pairs if args.only in p[0]]
    for name_a, argv_a, name_b, argv_b, goal in pairs:
        result = measure_pair(argv_a, argv_b, args.runs)
        rows.append({"command": name_a, "baseline": name_b, "goal_ratio": goal, **result})
    rss = measure_rss(max(3, args.runs // 2))
    library_runs_s = measure_library_runs(args.libs_python, max(3, args.runs // 2)) if args.libs_python else None
    import torch  # noqa: F401 - only to report the version measured

    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": "%s, %s, %d cores" % (platform.platform(terse=True), platform.machine(), os.cpu_count() or 0),
        "python": platform.python_version(),
        "torch": sys.modules["torch"].__version__,
        "runs": args.runs,
        "envdoctor": ENVDOCTOR[-1] if len(ENVDOCTOR) == 1 else "python -m envdoctor",
    }
    print("Measured %(date)s on %(machine)s, Python %(python)s, torch %(torch)s; medians of %(runs)d interleaved runs." % meta)
    print()
    print("| command | baseline | command s | baseline s | ratio | goal |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        verdict = "met" if r["ratio_median"] <= r["goal_ratio"] else "NOT met"
        goal = "faster" if r["goal_ratio"] == 1.0 else "<= %.1fx" % r["goal_ratio"]
        print("| `%s` | `%s` | %.2f | %.2f | %.2fx | %s (%s) |" % (
            r["command"], r["baseline"], r["a_median_s"], r["b_median_s"], r["ratio_median"], goal, verdict))
    print()
    print("Peak RSS: parent %.0f MiB (goal < 80 MiB: %s), probe worker %.0f MiB." % (
        rss["parent_peak_rss_mib"], "met" if rss["parent_peak_rss_mib"] < 80 else "NOT met", rss["worker_peak_rss_mib"]))
    if library_runs_s is not None:
        print("library-probes' model runs beyond their imports: %.2f s (goal < 1 s: %s)." % (
            library_runs_s, "met" if library_runs_s < 1.0 else "NOT met"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"meta": meta, "pairs": rows, "rss": rss, "library_runs_s": library_runs_s}, indent=2))
    if shutil.which("accelerate"):
        print("(accelerate is installed: compare `accelerate env` by hand; see docs/facts.md §7 for the field.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
