"""A probe that segfaults, aborts, hangs or raises becomes a result; the worker is
restarted and every other check still reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import PLUGINS, check_of, run_envdoctor

REAL = ["torch-install", "cpu-half-kernels", "dtype-mismatch", "fp8"]


def _plugin_env(*names: str) -> dict:
    return {"ENVDOCTOR_CHECKS_PATH": os.pathsep.join(str(PLUGINS / n) for n in names)}


PLUGIN_IDS = {
    "segfault_check.py": "test-segfault",
    "abort_check.py": "test-abort",
    "hang_check.py": "test-hang",
    "raises_check.py": "test-raises",
}


def _run(*names: str, extra: tuple = ()) -> tuple:
    only = ",".join(REAL + [PLUGIN_IDS[n] for n in names])
    proc = run_envdoctor("check", "--json", "--only", only, *extra, env=_plugin_env(*names))
    return proc, json.loads(proc.stdout)


def test_segfault_and_abort_become_crashed_results_and_the_rest_still_runs() -> None:
    proc, report = _run("segfault_check.py", "abort_check.py")
    assert proc.returncode == 1, proc.stderr
    seg = check_of(report, "test-segfault")
    assert seg["status"] == "crashed"
    assert seg["summary"] == "crashed: SIGSEGV"
    assert seg["findings"][0]["code"] == "probe-crashed"
    assert seg["findings"][0]["severity"] == "error"
    # faulthandler's dump names the probe that was running
    assert any("segfault_check.py" in line for line in seg["findings"][0]["evidence"])
    abort = check_of(report, "test-abort")
    assert abort["status"] == "crashed"
    assert abort["summary"] == "crashed: SIGABRT"
    for check_id in REAL:
        assert check_of(report, check_id)["status"] == "ok", check_id
    assert report["environment"]["worker_restarts"] == 2
    # the checks after the crash ran in a fresh worker and still measured
    assert any(not o["ok"] for o in check_of(report, "fp8")["facts"]["ops"])


def test_hang_times_out_and_the_rest_still_runs() -> None:
    # 8 s: --timeout also bounds the restarted worker's `import torch`, which a loaded CI machine can make slow
    proc, report = _run("hang_check.py", extra=("--timeout", "8"))
    assert proc.returncode == 1
    hang = check_of(report, "test-hang")
    assert hang["status"] == "timeout"
    assert hang["summary"] == "timed out after 8 s"
    assert hang["findings"][0]["code"] == "probe-timeout"
    for check_id in REAL:
        assert check_of(report, check_id)["status"] == "ok", check_id


# Installed through PYTHONPATH: the first process that imports torch leaves a mark; every later one
# (the restarted worker) takes longer than --timeout to import it.
SLOW_SECOND_IMPORT = """
import os, sys, time
MARK = %r
class _Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            if os.path.exists(MARK):
                time.sleep(60)
            else:
                open(MARK, "w").close()
        return None
sys.meta_path.insert(0, _Slow())
"""


def test_a_restart_that_cannot_import_torch_again_in_time_leaves_the_rest_unmeasured_not_torchless(tmp_path: Path) -> None:
    """torch imported in the first worker: a restart that cannot import it within --timeout must not
    report "torch does not import" (skipped); the checks left are timeouts that say why."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_SECOND_IMPORT % str(tmp_path / "imported-once"))
    env = _plugin_env("hang_check.py")
    env["PYTHONPATH"] = str(site)
    only = ",".join(["torch-install", "test-hang", "cpu-half-kernels"])
    proc = run_envdoctor("check", "--json", "--only", only, "--timeout", "4", env=env, timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert check_of(report, "torch-install")["status"] == "ok"
    assert check_of(report, "test-hang")["summary"] == "timed out after 4 s"
    left = check_of(report, "cpu-half-kernels")
    assert left["status"] == "timeout"
    assert left["summary"] == "not run: a restarted worker did not import torch again within 4 s"


def test_a_probe_that_raises_and_prints_is_contained_in_the_same_worker() -> None:
    proc, report = _run("raises_check.py")
    assert proc.returncode == 0  # an unexpected exception is a warning, not an error
    raised = check_of(report, "test-raises")
    assert raised["status"] == "crashed"
    assert "ValueError: probe exploded" in raised["summary"]
    assert raised["findings"][0]["severity"] == "warning"
    assert report["environment"]["worker_restarts"] == 0
    for check_id in REAL:
        assert check_of(report, check_id)["status"] == "ok"


def test_broken_plugin_is_reported_not_raised() -> None:
    proc = run_envdoctor("check", "--json", env=_plugin_env("broken_plugin.py"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    broken = check_of(report, "broken_plugin")
    assert broken["status"] == "crashed"
    assert "ImportError: this plug-in needs a library" in broken["findings"][0]["evidence"][0]


def test_crash_in_terminal_output_is_a_line_not_a_traceback() -> None:
    proc = run_envdoctor("check", "--only", "torch-install,test-segfault", env=_plugin_env("segfault_check.py"))
    assert proc.returncode == 1
    assert "[✗] test: segfault (test-segfault)  crashed: SIGSEGV" in proc.stdout
    assert "Traceback (most recent call last)" not in proc.stderr


def test_entry_point_plugin_is_loaded(tmp_path: Path) -> None:
    """A real distribution on the path advertising the envdoctor.checks group."""
    dist = tmp_path / "envdoctor_demo_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: envdoctor-demo-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[envdoctor.checks]\ndemo = envdoctor_demo_plugin:CHECK\n")
    (tmp_path / "envdoctor_demo_plugin.py").write_text(
        "from envdoctor.target.model import Check, Finding, Severity\n"
        "def probe(torch, ctx):\n"
        "    return {'sum': float(torch.ones(3).sum())}\n"
        "def diagnose(facts):\n"
        "    return [Finding('demo', 'sum', Severity.INFO, 'sum is %s' % facts['sum'])]\n"
        "CHECK = Check(id='demo', title='demo plug-in', probe=probe, diagnose=diagnose)\n"
    )
    env = {"PYTHONPATH": str(tmp_path)}
    proc = run_envdoctor("check", "--json", "--only", "demo", env=env)
    assert proc.returncode == 0, proc.stderr
    demo = check_of(json.loads(proc.stdout), "demo")
    assert demo["facts"]["sum"] == 3.0
    assert demo["findings"][0]["title"] == "sum is 3.0"
    listing = run_envdoctor("check", "--list", env=env)
    assert "entry point demo (envdoctor-demo-plugin 1.0)" in listing.stdout
    disabled = run_envdoctor("check", "--list", env={**env, "ENVDOCTOR_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "demo" not in disabled.stdout.split()


def test_a_stray_torch_folder_in_the_working_directory_does_not_shadow_torch(tmp_path: Path) -> None:
    """`python -c` puts the cwd first on sys.path; the worker drops it."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('the stray folder was imported')\n")
    proc = run_envdoctor("check", "--json", "--only", "torch-install,fp8", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["environment"]["torch"].startswith("2.13.0")
    assert check_of(report, "fp8")["status"] == "ok"


def test_a_plugin_reusing_a_builtin_id_is_reported_and_the_builtin_kept(tmp_path: Path) -> None:
    (tmp_path / "impostor_fp8.py").write_text(
        "from envdoctor.target.model import Check\n"
        "CHECK = Check(id='fp8', title='not the real fp8', probe=lambda torch, ctx: {}, diagnose=lambda facts: [])\n"
    )
    proc = run_envdoctor("check", "--json", env={"ENVDOCTOR_CHECKS_PATH": str(tmp_path)})
    report = json.loads(proc.stdout)
    fp8 = check_of(report, "fp8")
    assert fp8["title"] == "float8" and fp8["facts"]["ops"]
    duplicate = next(c for c in report["checks"] if c["status"] == "crashed")
    assert "duplicate check id (already from builtin)" in duplicate["findings"][0]["evidence"][0]


def test_no_plugins_flag_skips_plugins() -> None:
    env = _plugin_env("segfault_check.py")
    assert "test-segfault" in run_envdoctor("check", "--list", env=env).stdout
    proc = run_envdoctor("check", "--json", "--no-plugins", env=env)
    assert proc.returncode == 0
    assert "test-segfault" not in [c["id"] for c in json.loads(proc.stdout)["checks"]]


# A "python" that starts a grandchild holding its stdout and stderr, then hangs: neither the
# worker's exit nor the end of its output ever comes.
HANGING_INTERPRETER = "#!/bin/sh\nsleep %s &\nsleep %s\n"


def _running(marker: str) -> list:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_target_that_hangs_with_a_grandchild_holding_its_output_ends_by_timeout_and_by_ctrl_c(tmp_path: Path) -> None:
    """--timeout bounds the wait for the worker's first word; Ctrl-C ends the run; and either
    way every process the target started is gone (the worker's whole process group is killed)."""
    marker = "%d.%d" % (os.getpid() % 997, 421)
    python = tmp_path / "python"
    python.write_text(HANGING_INTERPRETER % (marker, marker))
    python.chmod(0o755)
    proc = run_envdoctor("check", "--python", str(python), "--timeout", "3", timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "envdoctor: error: %s did not start a Python worker within 3 s" % python
    assert _running(marker) == []

    # SIGINT as a terminal has it: a suite started in the background (a CI shell) has it ignored, and children inherit that
    child = subprocess.Popen([sys.executable, "-m", "envdoctor", "check", "--python", str(python)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not _running(marker) and time.monotonic() < deadline:  # the target has started
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)  # a liveness bound, not a timing
    assert child.returncode != 0 and "Traceback" not in err, err
    assert _running(marker) == []


def test_a_check_that_ended_well_is_judged_while_its_workers_are_torn_down_and_returns_with_them_gone(monkeypatch) -> None:
    """A worker holding a CUDA context takes a GPU machine some 0.2 s to tear down (measured on an H100,
    tests/fixtures/measurements): check kills its workers at once and reaps them while it judges and prints. When
    the call returns, each is reaped and its process group is empty, as before."""
    import envdoctor
    from envdoctor.pipeline import children

    stopped: list = []
    real = children.kill_group_meanwhile

    def recording(child: subprocess.Popen) -> None:
        real(child)
        stopped.append((child, children._REAPERS[-1]))  # the reaper that thread started for it

    monkeypatch.setattr(children, "kill_group_meanwhile", recording)
    monkeypatch.setattr("envdoctor.pipeline.check.runner.kill_group_meanwhile", recording)
    report = envdoctor.check(show=False, only=["torch-install"], default_config=False)
    assert report.exit_code == 0 and len(stopped) == 1
    child, reaper = stopped[0]
    assert reaper.name == "envdoctor-reaper-%d" % child.pid and not reaper.daemon  # the interpreter waits for it at exit
    assert not reaper.is_alive() and child.returncode == -signal.SIGKILL
    assert not children._live_members(child.pid) and children._REAPERS == []


def test_the_reaping_a_kill_leaves_to_a_thread_ends_the_whole_group() -> None:
    """kill_group_meanwhile on a real child leading a group with a grandchild: the call returns at once, and
    wait_for_reaping() returns with both gone."""
    from envdoctor.pipeline import children

    child = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & sleep 300"], **children.own_group())
    time.sleep(0.2)  # the grandchild has started
    assert children._live_members(child.pid)
    children.kill_group_meanwhile(child)
    children.wait_for_reaping()
    assert child.returncode == -signal.SIGKILL and not children._live_members(child.pid)
