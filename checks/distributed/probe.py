"""What NCCL will meet on this machine when a job's ranks start here (worker side: the standard library,
torch optional): the network interfaces up, InfiniBand devices, /dev/shm, the GPUs this process sees,
NCCL's version, and the NCCL variables that pick its transports."""

from __future__ import annotations

import os
import socket
from typing import Any, Dict

ID = "distributed"

# The variables that decide NCCL's transports (NCCL's documentation, Environment Variables:
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html); none holds a secret.
NCCL_VARIABLES = ("NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE")


def probe(torch: Any, ctx: Any) -> Dict[str, Any]:
    from envdoctor.target.exchange import machine

    facts: Dict[str, Any] = dict(machine(), host=socket.gethostname(),
                                 variables={k: os.environ[k] for k in NCCL_VARIABLES if k in os.environ}, gpus=0, nccl=None)
    if torch is not None:
        try:
            facts["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if facts["gpus"]:
                facts["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception as exc:  # noqa: BLE001 - a CUDA that cannot answer is the cuda-compat check's finding
            facts["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
    return facts
