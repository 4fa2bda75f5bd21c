"""What NCCL will meet on this machine when a job's ranks start here (worker side: the standard library,
torch optional): the network interfaces up, InfiniBand devices, /dev/shm, the GPUs this process sees,
NCCL's version, the NCCL variables that pick its transports, and whether the job's master port is free."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Dict

ID = "distributed"

# The variables that decide NCCL's transports (NCCL's documentation, Environment Variables:
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html); none holds a secret.
NCCL_VARIABLES = ("NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE")

# torchrun's --master-port default (https://pytorch.org/docs/stable/elastic/run.html), where MASTER_PORT is not set
DEFAULT_MASTER_PORT = 29500
# A launched job's own variables: its store already holds the master port, which is then no finding
_LAUNCHED = ("TORCHELASTIC_RUN_ID", "LOCAL_RANK", "RANK")


def master_port() -> Dict[str, Any]:
    """Can a job's master listen on its port here? Bound (never listened on, never connected: nothing leaves the
    machine) as torch's TCPStore binds it, with SO_REUSEADDR, so that a port an ended run left in TIME_WAIT reads as
    free, and one a live process listens on reads as taken (EADDRINUSE)."""
    if any(name in os.environ for name in _LAUNCHED):
        return {"checked": False, "why": "inside a launched job, whose own store holds the port"}
    raw = os.environ.get("MASTER_PORT", "")
    if raw and not raw.strip().isdigit():
        return {"checked": False, "why": "MASTER_PORT is not a number"}
    port = int(raw) if raw else DEFAULT_MASTER_PORT
    found: Dict[str, Any] = {"checked": True, "port": port, "from_env": bool(raw), "taken": False}
    import socket  # (here, where the probe runs: the parent imports this module with the check's declaration)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":  # (on Windows the option lets a bind share a port another process listens on)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("", port))
    except OSError as exc:
        found.update(taken=exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", errno.EADDRINUSE)),
                     error="%s: %s" % (type(exc).__name__, exc))
    finally:
        sock.close()
    return found


def probe(torch: Any, ctx: Any) -> Dict[str, Any]:
    import socket

    from envdoctor.target.exchange import machine

    facts: Dict[str, Any] = dict(machine(), host=socket.gethostname(),
                                 variables={k: os.environ[k] for k in NCCL_VARIABLES if k in os.environ}, gpus=0, nccl=None,
                                 master_port=master_port())
    if torch is not None:
        try:
            facts["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if facts["gpus"]:
                facts["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception as exc:  # noqa: BLE001 - a CUDA that cannot answer is the cuda-compat check's finding
            facts["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
    return facts
