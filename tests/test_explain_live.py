"""`envdoctor explain` and `envdoctor run` end to end: real subprocesses, real probes on the
real CPU torch (and on torch 2.0.1, where seed 004's LayerNorm failure still happens)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import ROOT, run_envdoctor
from tracebacks import CORPUS, load

SEED_004 = CORPUS / "cpu-half-kernels--seed-004-autotrain-sdxl-dreambooth-cpu.txt"
FP8_PLAIN = """Traceback (most recent call last):
  File "/home/me/fp8_math.py", line 4, in <module>
    y = w8 + x
RuntimeError: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half
"""
SEED_001_LINEAR = """Traceback (most recent call last):
  File "/home/me/venv/lib/python3.10/site-packages/diffusers/models/embeddings.py", line 226, in forward
    sample = self.linear_1(sample)
  File "/home/me/venv/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 116, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half
"""


def explain_json(*args: str, text: str = "", timeout: float = 300) -> Dict[str, Any]:
    proc = run_envdoctor("explain", "--json", *args, input=text, timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr
    data: Dict[str, Any] = json.loads(proc.stdout)
    assert data["schema"] == "envdoctor/1" and data["exit_code"] == proc.returncode
    return data


def test_fp8_promotion_is_confirmed_here() -> None:
    (first, *_) = explain_json("-", text=FP8_PLAIN)["diagnoses"]
    assert first["check"] == "fp8" and first["confirmed"] is True
    assert "same message" in first["confirmation"] and "Float8_e4m3fn" in first["confirmation"]
    assert set(first) >= {"check", "confidence", "cause", "evidence", "confirmed", "remedies"}


def test_the_fp32_fp16_linear_of_seed_001_is_confirmed_here_in_the_cpu_wording() -> None:
    (first, *_) = explain_json("-", text=SEED_001_LINEAR)["diagnoses"]
    assert first["check"] == "dtype-mismatch" and first["confirmed"] is True
    assert first["involved"]["op"] == "linear" and first["involved"]["dtypes"] == ["float32", "float16"]
    assert "linear input fp32 × weight fp16 on cpu" in first["confirmation"]


NOT_COMPILED = """Traceback (most recent call last):
  File "/home/me/train.py", line 12, in <module>
    model = model.cuda()
  File "/home/me/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 310, in _lazy_init
    raise AssertionError("Torch not compiled with CUDA enabled")
AssertionError: Torch not compiled with CUDA enabled
"""


def test_torch_not_compiled_with_cuda_is_read_both_ways_and_the_probe_decides() -> None:
    """Both readings are torch-install's. From the text alone the CPU wheel beside a GPU leads and the
    machine without CUDA follows; probed on this machine (a CPU torch, no NVIDIA GPU), cuda-compat finds
    no CUDA device, which confirms the second reading, and it goes first."""
    read = [(d["check"], d["code"]) for d in explain_json("--no-probe", "-", text=NOT_COMPILED)["diagnoses"]]
    assert read == [("torch-install", "cpu-only-torch"), ("torch-install", "no-cuda-here")]
    first, second = explain_json("-", text=NOT_COMPILED)["diagnoses"]
    assert (first["check"], first["code"], first["confirmed"]) == ("torch-install", "no-cuda-here", True)
    assert "no CUDA device" in first["confirmation"]
    assert (second["check"], second["code"]) == ("torch-install", "cpu-only-torch") and second["confirmed"] is not True
    assert any(r["id"] == "device-here" for r in first["remedies"])


NOT_COMPILED_XPU = NOT_COMPILED.replace("cuda", "xpu").replace("CUDA", "XPU")
CUDA_UNAVAILABLE = "pytorch is not being installed with GPU.\n\ntorch.cuda.is_available() returning False.\n"
HIP_NO_CODE = "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously reported\n"
MPS_BF16 = 'Traceback (most recent call last):\n  File "/Users/me/app.py", line 3, in <module>\nTypeError: BFloat16 is not supported on MPS\n'


def test_an_accelerator_this_machine_lacks_is_unknown_here_not_refuted() -> None:
    """A torch without XPU asked for Intel's GPU, bf16 on a Mac's GPU, ROCm without code for the AMD card: this machine has
    none of those GPUs, so its probes can neither confirm nor refute them (before, the XPU and MPS readings said "does
    not reproduce it" here). And
    `is_available()` False told in words: the machine without a CUDA GPU that this one is confirms that reading."""
    (xpu,) = explain_json("-", text=NOT_COMPILED_XPU)["diagnoses"]
    assert (xpu["check"], xpu["code"], xpu["involved"]["device"], xpu["confirmed"]) == ("torch-install", "cpu-only-torch", "xpu", None)
    assert xpu["confirmation"].startswith("cannot be reproduced here: this machine has no Intel GPU (XPU)")
    (mps,) = explain_json("-", text=MPS_BF16)["diagnoses"]
    assert (mps["check"], mps["involved"]["device"], mps["confirmed"]) == ("bf16-support", "mps", None)
    assert mps["confirmation"].startswith("cannot be reproduced here: this machine has no Apple GPU (MPS)")
    (hip,) = explain_json("-", text=HIP_NO_CODE)["diagnoses"]
    assert (hip["check"], hip["code"], hip["involved"]["device"], hip["confirmed"]) == ("cuda-compat", "no-kernel-image", "cuda", None)
    assert any(r["id"] == "rocm-gfx-override" for r in hip["remedies"])
    first, *others = explain_json("-", text=CUDA_UNAVAILABLE)["diagnoses"]
    assert (first["check"], first["code"], first["confirmed"]) == ("torch-install", "no-cuda-here", True)
    assert {(d["check"], d["code"]) for d in others} == {("torch-install", "cpu-only-torch"), ("cuda-compat", "driver-too-old")}


# The message torch's c10d store raises when a rank cannot reach MASTER_ADDR:MASTER_PORT (torch/csrc/distributed/c10d/
# TCPStore.cpp), and NCCL's shared-memory failure as torch 2.4 reports it
RENDEZVOUS = """[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/me/train.py", line 9, in <module>
[rank1]:     dist.init_process_group("nccl")
[rank1]: torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500).
"""
SHM = "\n".join([
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    "Last error:",
    "Error while creating shared memory segment /dev/shm/nccl-eQz2sT (size 5767520)", ""])


def test_a_cause_between_the_ranks_is_named_and_explain_says_one_process_cannot_reproduce_it() -> None:
    """The distributed family: a rendezvous timeout is `distributed`'s, and no single process can say it is not
    here (the verdict is unknown, with how to confirm it: check --distributed under the launcher); NCCL's
    shared memory is this machine's own share, which the probe here judges (no GPU: not reproduced)."""
    (first, *_) = explain_json("-", text=RENDEZVOUS)["diagnoses"]
    assert (first["check"], first["code"], first["confirmed"]) == ("distributed", "ranks-missing", None)
    assert first["confirmation"].startswith("one process cannot reproduce it: it lies between the job's ranks")
    assert any(r["id"] == "check-distributed" for r in first["remedies"])
    (shm, *_) = explain_json("-", text=SHM)["diagnoses"]
    assert (shm["check"], shm["code"]) == ("distributed", "shm-small")
    assert shm["confirmed"] is False and "/dev/shm" in shm["confirmation"]
    assert [r["id"] for r in shm["remedies"]][:2] == ["shm-size", "nccl-shm-disable"]


def test_dataloaders_shared_memory_is_host_memorys_and_the_shm_probe_of_another_check_is_what_it_is_judged_by() -> None:
    """DataLoader's own words for its workers out of shared memory (dev-34's real case) read as device-memory; the
    verdict shows what distributed's probe saw of /dev/shm (this machine's is large: not reproduced)."""
    text = load(CORPUS / "device-memory--simplerecon-docker-shm-title.txt").body
    (first, *_) = explain_json("-", text=text)["diagnoses"]
    assert (first["check"], first["code"], first["confirmed"]) == ("device-memory", "shm-small", False)
    assert "distributed: " in first["confirmation"] and "/dev/shm" in first["confirmation"]
    assert [r["id"] for r in first["remedies"]][:2] == ["shm-size", "shm-fewer-workers"]


def test_seed_004_is_not_reproduced_by_torch_2_13_and_says_so() -> None:
    proc = run_envdoctor("explain", str(SEED_004))
    assert proc.returncode == 0, proc.stderr
    assert "1. cpu-half-kernels" in proc.stdout
    assert "does not reproduce it: here torch 2.13" in proc.stdout and "runs layer_norm float16 on cpu" in proc.stdout
    assert "Train in fp32 on the CPU" in proc.stdout


@pytest.mark.slow
def test_seed_004_is_confirmed_on_torch_2_0_1(old_torch_python: Path) -> None:
    data = explain_json("--python", str(old_torch_python), str(SEED_004))
    (first, *_) = data["diagnoses"]
    assert first["check"] == "cpu-half-kernels" and first["confirmed"] is True
    assert "torch 2.0.1" in first["confirmation"] and "LayerNormKernelImpl" in first["confirmation"]
    assert data["probed"]["torch"].startswith("2.0.1")


def test_no_probe_reads_only() -> None:
    data = explain_json("--no-probe", str(SEED_004))
    assert data["probed"] is None and data["diagnoses"][0]["confirmed"] is None


def test_a_traceback_that_is_not_ours_exits_1_with_a_hint() -> None:
    case = load(CORPUS / "none--graphmae-mat1-mat2-shapes.txt")
    proc = run_envdoctor("explain", "-", input=case.body)
    assert proc.returncode == 1
    assert "No known cause" in proc.stdout and "envdoctor check" in proc.stdout and "shapes cannot be multiplied" in proc.stdout


@pytest.mark.parametrize("args, stdin, message", [
    (("-",), "", "the input is empty"),
    (("-",), "\x00\x01\x02" * 3000, "binary data"),
    (("/no/such/log.txt",), None, "cannot read /no/such/log.txt"),
    (("--python", "/no/such/python", str(SEED_004)), None, "no such interpreter"),
])
def test_unreadable_input_is_one_line_and_exit_2(args: Any, stdin: Any, message: str) -> None:
    proc = run_envdoctor("explain", *args, input=stdin)
    assert proc.returncode == 2 and message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
def test_a_100_mb_log_streamed_through_stdin_in_bounded_memory(tmp_path: Path) -> None:
    """100 MB of progress lines and a traceback at the end, piped; the peak memory of the
    explaining process stays far below the input's size."""
    script = tmp_path / "feed.py"
    script.write_text(
        "import sys\n"
        "line = b'Steps:  42%|####2     | 4200/10000 [01:02<01:25, 67.9it/s, loss=0.0123, lr=1e-4]\\r' * 20 + b'\\n'\n"
        "out = sys.stdout.buffer\n"
        "for _ in range(100 * 2**20 // len(line)):\n"
        "    out.write(line)\n"
        "out.write(open(sys.argv[1], 'rb').read().split(b'\\n----\\n', 1)[1])\n")
    feed = subprocess.Popen([sys.executable, str(script), str(SEED_004)], stdout=subprocess.PIPE)
    # VmHWM: this process's own peak (getrusage's ru_maxrss also counts the forking parent's, pytest's, RSS)
    measure = ("import re, runpy, sys; sys.argv = ['envdoctor', 'explain', '--no-probe', '--json', '-']\n"
               "try:\n    runpy.run_module('envdoctor', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
               "print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", measure], stdin=feed.stdout, capture_output=True, text=True, cwd=str(ROOT),
                          timeout=300)
    feed.wait()
    data = json.loads(proc.stdout)
    assert data["diagnoses"][0]["check"] == "cpu-half-kernels" and data["input"]["bytes"] > 100 * 2**20
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    assert peak_kib < 150 * 1024, peak_kib


# ---- envdoctor run


def run_child(tmp_path: Path, code: str, *extra: str, stdin: Any = None, timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / "child.py"
    script.write_text(code)
    env = dict(os.environ, ENVDOCTOR_STATE_DIR=str(tmp_path / "state"))
    return subprocess.run([sys.executable, "-m", "envdoctor", "run", *extra, "--", sys.executable, str(script)],
                          capture_output=True, input=stdin, timeout=timeout, env=env, cwd=str(ROOT))


def test_run_passes_a_failing_childs_output_through_and_explains_it_after(tmp_path: Path) -> None:
    proc = run_child(tmp_path, "import sys\nprint('Using device: cpu')\nprint('to stderr', file=sys.stderr)\n"
                               "raise RuntimeError(\"\\\"LayerNormKernelImpl\\\" not implemented for 'Half'\")\n")
    assert proc.returncode == 1
    assert proc.stdout == b"Using device: cpu\n"  # the child's stdout, untouched: the diagnosis goes to stderr
    err = proc.stderr.decode()
    assert err.startswith("to stderr\nTraceback (most recent call last):")
    assert err.index("RuntimeError: \"LayerNormKernelImpl\"") < err.index("envdoctor: the command failed (exit code 1)")
    assert "1. cpu-half-kernels" in err and "does not reproduce it" in err


def test_run_with_fix_prints_the_plan(tmp_path: Path) -> None:
    proc = run_child(tmp_path, "raise RuntimeError('Promotion for Float8 Types is not supported, attempted to promote "
                               "Float8_e4m3fn and Half')\n", "--fix")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "1. fp8" in err and "confirmed here" in err
    assert "Nothing to fix" in err or "Plan:" in err


def test_run_of_a_succeeding_command_says_nothing(tmp_path: Path) -> None:
    proc = run_child(tmp_path, "import sys\nsys.stdout.write('ok\\n')\nsys.stderr.write('warn\\n')\n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"ok\n", b"warn\n")


def test_run_returns_the_childs_exit_code_and_signal(tmp_path: Path) -> None:
    assert run_child(tmp_path, "import sys\nsys.exit(7)\n").returncode == 7
    killed = run_child(tmp_path, "import os, signal\nprint('bye', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert killed.returncode == 128 + signal.SIGKILL and killed.stdout == b"bye\n"


def test_a_signal_sent_to_envdoctor_reaches_the_child(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text("import signal, sys, time\n"
                      "signal.signal(signal.SIGTERM, lambda *a: (print('child got SIGTERM', flush=True), sys.exit(3)))\n"
                      "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "run", "--", sys.executable, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=str(ROOT))
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert out == b"child got SIGTERM\n" and proc.returncode == 3


def test_run_passes_50_mb_through_byte_for_byte(tmp_path: Path) -> None:
    proc = run_child(tmp_path, "import sys\nblock = bytes(range(256)) * 4096\n"
                               "for _ in range(50):\n    sys.stdout.buffer.write(block)\n")
    assert proc.returncode == 0 and len(proc.stdout) == 50 * 2**20
    assert proc.stdout == (bytes(range(256)) * 4096) * 50


def test_run_gives_the_child_our_stdin(tmp_path: Path) -> None:
    proc = run_child(tmp_path, "import sys\nprint(sys.stdin.read().upper())\n", stdin=b"hello from stdin")
    assert proc.returncode == 0 and proc.stdout == b"HELLO FROM STDIN\n"


def test_run_without_a_command_or_with_a_missing_one(tmp_path: Path) -> None:
    assert run_envdoctor("run").returncode == 2
    missing = run_envdoctor("run", "--", "no-such-command-envdoctor")
    assert missing.returncode == 127 and "cannot run no-such-command-envdoctor" in missing.stderr
