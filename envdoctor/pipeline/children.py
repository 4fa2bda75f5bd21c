"""The processes envdoctor starts (probe workers, pip): each leads a process group of its own,
so that stopping it stops what it started too (a grandchild holding its output pipe, pip's
build processes); on Linux pip also dies with envdoctor however envdoctor dies (kill -9 too)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

POSIX = os.name == "posix"


def _die_with_envdoctor() -> None:
    """In the child, before it runs: Linux sends it SIGKILL when envdoctor's thread that started it ends."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the process group still stops it with envdoctor's kill
        pass


def own_group(die_with_envdoctor: bool = True) -> Dict[str, Any]:
    """subprocess.Popen's keywords for a child that leads its own group and (`die_with_envdoctor`)
    is killed when the thread that starts it ends: for a child started and awaited in one thread
    (pip); a probe worker outlives the thread of the check group that started it."""
    dies = die_with_envdoctor and sys.platform == "linux"
    return {"start_new_session": POSIX, "preexec_fn": _die_with_envdoctor if dies else None}


# How long kill_group waits for the group's other processes to be gone (a SIGKILL is delivered at once, but a
# loaded machine takes a moment to tear a process down; an orphan is reaped by init).
GROUP_GONE_S = 2.0

# The threads reaping the children kill_group_meanwhile stopped, until wait_for_reaping() joins them
_REAPERS: List[threading.Thread] = []
_REAPERS_LOCK = threading.Lock()


def kill_group(child: subprocess.Popen[Any]) -> None:
    """SIGKILL the child and every process of its group, reap the child, and wait (briefly) until no
    process of the group is left: when envdoctor returns, what it started is gone, not going."""
    _signal_group(child)
    _reap_group(child)


def kill_group_meanwhile(child: subprocess.Popen[Any]) -> None:
    """kill_group, the reaping in a thread: the SIGKILL is sent now, and the caller goes on (judging, printing)
    while the kernel tears the child down, which for a worker holding a CUDA context takes a GPU machine some
    0.2 s. The thread is not a daemon, so the interpreter waits for it at exit; wait_for_reaping() waits sooner.
    On Windows the kill waits as before: a dying process still holds its DLLs open, which a pip step after it
    (fix's rollback) could not replace."""
    if not POSIX:
        kill_group(child)
        return
    _signal_group(child)
    reaper = threading.Thread(target=_reap_group, args=(child,), name="envdoctor-reaper-%d" % child.pid)
    with _REAPERS_LOCK:
        _REAPERS.append(reaper)
    reaper.start()


def wait_for_reaping() -> None:
    """Until every child kill_group_meanwhile stopped is reaped and its group gone (a command's or an API call's end)."""
    with _REAPERS_LOCK:
        reapers, _REAPERS[:] = list(_REAPERS), []
    for reaper in reapers:
        reaper.join()


def _signal_group(child: subprocess.Popen[Any]) -> None:
    if POSIX:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
    if child.poll() is None:
        child.kill()


def _reap_group(child: subprocess.Popen[Any]) -> None:
    child.wait()
    if POSIX:
        deadline = time.monotonic() + GROUP_GONE_S
        while time.monotonic() < deadline:
            try:
                os.killpg(child.pid, 0)
            except OSError:  # ProcessLookupError: the group is empty
                return
            if not _live_members(child.pid):  # only zombies left, for their new parent to reap
                return
            time.sleep(0.02)


def _live_members(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (Linux: /proc; elsewhere assumed so)."""
    if not os.path.isdir("/proc/self"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
