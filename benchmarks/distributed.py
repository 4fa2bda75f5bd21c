"""`envdoctor check --distributed` at several rank counts against its floor, side by side.

    python benchmarks/distributed.py [--ranks 2 4 8] [--runs 3] [--json FILE] [--libraries]

The floor: torchrun starting the same number of processes that only `import torch`,
`init_process_group("gloo")`, `barrier()` and exit. Each pair is timed interleaved (floor,
envdoctor, floor, ...) so that machine noise hits both; medians and ratios are printed as a
Markdown table with the report's size and rank 0's own time (its check and the exchange: the
`distributed` check's duration). Goal (issue 26): <= 1.3x the floor. Measured on the machine it runs
on; no test asserts these numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

PY = sys.executable
TORCHRUN = [PY, "-m", "torch.distributed.run", "--standalone"]
CHECK = ["-m", "envdoctor", "check", "--distributed", "--json", "--no-config"]
FLOOR = (
    "import torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "dist.barrier()\n"
    "dist.destroy_process_group()\n"
)
GOAL = 1.3


def timed(argv: Sequence[str]) -> subprocess.CompletedProcess:
    started = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, env=dict(os.environ, OMP_NUM_THREADS="1"))
    proc.elapsed = time.perf_counter() - started  # type: ignore[attr-defined]
    return proc


def measure(ranks: int, runs: int, floor_script: Path, extra: Sequence[str] = ()) -> Dict[str, Any]:
    nproc = ["--nproc-per-node", str(ranks)]
    floor = TORCHRUN + nproc + [str(floor_script)]
    ours = TORCHRUN + nproc + CHECK + list(extra)
    timed(floor), timed(ours)  # warm the page cache for both
    floors: List[float] = []
    checks: List[float] = []
    ratios: List[float] = []
    sizes: List[int] = []
    exchange: List[float] = []
    for _ in range(runs):
        f, c = timed(floor), timed(ours)
        if c.returncode not in (0, 1) or not c.stdout.strip():
            raise SystemExit("check --distributed at %d ranks failed (exit %s): %s" % (ranks, c.returncode, c.stderr[-2000:]))
        floors.append(f.elapsed)  # type: ignore[attr-defined]
        checks.append(c.elapsed)  # type: ignore[attr-defined]
        ratios.append(checks[-1] / floors[-1])
        sizes.append(len(c.stdout.encode("utf-8")))
        job = json.loads(c.stdout)["checks"][-1]
        exchange.append(float(job.get("duration_s") or 0.0))
    return {"ranks": ranks, "floor_median_s": statistics.median(floors), "check_median_s": statistics.median(checks),
            "ratio_median": statistics.median(ratios), "report_bytes": statistics.median(sizes),
            "exchange_median_s": statistics.median(exchange), "goal_ratio": GOAL}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--libraries", action="store_true", help="check --libraries: every rank runs the training libraries' "
                        "models too (imports transformers, diffusers, peft where installed)")
    args = parser.parse_args()
    import torch

    print("Measured %s on %s, %s, %d cores, Python %s, torch %s; medians of %d interleaved runs%s.\n" % (
        time.strftime("%Y-%m-%d"), platform.platform(), platform.machine(), os.cpu_count() or 0, platform.python_version(),
        torch.__version__, args.runs, "; check --libraries" if args.libraries else ""))
    print("| ranks | floor s | check --distributed s | ratio | goal | report bytes | rank 0: check and exchange s |")
    print("|---|---|---|---|---|---|---|", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="envdoctor-bench-") as folder:
        floor_script = Path(folder) / "floor.py"
        floor_script.write_text(FLOOR, encoding="utf-8")
        for n in args.ranks:  # each row as it is measured: a long run cut short keeps what it had
            r = measure(n, args.runs, floor_script, ["--libraries"] if args.libraries else [])
            rows.append(r)
            met = "met" if r["ratio_median"] <= GOAL else "NOT met"
            print("| %d | %.2f | %.2f | %.2fx | <= %.1fx (%s) | %d | %.2f |" % (
                r["ranks"], r["floor_median_s"], r["check_median_s"], r["ratio_median"], GOAL, met, r["report_bytes"],
                r["exchange_median_s"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
