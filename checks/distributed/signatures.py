"""How a job's distributed failures read in a log (for `explain`). Most live between the ranks, where one
process cannot reproduce them (Signature.across_ranks): explain then says to run `check --distributed` under
the job's launcher. This machine's own share (its /dev/shm, its NCCL_SOCKET_IFNAME, its InfiniBand) the
`distributed` check's probe confirms here."""

from __future__ import annotations

from envdoctor.target.model import Remedy, Signature
from envdoctor.target.remedies.actions import env_remedy

from .machines import FREE_MASTER_PORT, ONE_GPU_PER_RANK

CONFIRM_ACROSS_RANKS = Remedy("Run envdoctor on every rank with the job's own launcher: `torchrun --nnodes N --nproc-per-node G ... "
                              "-m envdoctor check --distributed` (or `srun python -m envdoctor check --distributed`): it names the "
                              "rank, host and step", id="check-distributed")

# NCCL's shared-memory transport (include/shm.h): "Call to posix_fallocate failed: No space left on device",
# "Call to shm_open failed : Permission denied", "Error while creating shared memory segment nccl-... (size N)";
# torch surfaces it as "NCCL error ...: unhandled system error" / ncclSystemError. Docker gives /dev/shm 64 MB
# (github.com/NVIDIA/nccl/issues/1518; vLLM's docker docs: --ipc=host or --shm-size).
SHM = r"Error while creating shared memory segment|posix_fallocate failed|shm_open failed|nccl-shm-\w+"
# DataLoader's workers out of shared memory, in torch's words (torch/utils/data/dataloader.py: "It is possible that
# dataloader's workers are out of shared memory"; torch/csrc/DataLoader.cpp: "Unexpected bus error encountered in worker.
# This might be caused by insufficient shared memory (shm)"); device-memory reads them, this check's probe confirms
DATALOADER_SHM = (r"workers are out of shared memory|insufficient shared memory \(shm\)|"
                  r"DataLoader worker \(pid[^)]*\) is killed by signal: Bus error")

# The c10d store and torchrun's rendezvous: a rank that never arrives, an address no rank can reach.
RENDEZVOUS = (r"The client socket has timed out after \S+ while trying to connect to|RendezvousConnectionError|RendezvousTimeoutError|"
              # (and torch 2.x's TCPStore waiting for ranks that never came: "Timed out after 1801 seconds waiting for
              # clients. 1/2 clients joined."; not its "[W socket.cpp:558] The client socket has failed to connect to
              # [DESKTOP-X]:29500" warning, which Windows prints on runs that go on)
              r"waiting for clients\. \d+/\d+ clients joined|"
              r"Timed out initializing process group in store based barrier|The server socket has failed to listen on any local network|"
              # (a rank asking rank 0 for NCCL's id through the store, and rank 0 gone: "[1] is setting up NCCL communicator and
              # retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection
              # reset by peer", torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp)
              r"retrieving ncclUniqueId from \[\d+\] via c10d key-value store|"
              # (the rendezvous error's message said without its name: "The connection to the C10d store has failed";
              # and gloo's ranks on different address families, one resolved to IPv4, another to IPv6: "[enforce fail at
              # .../gloo/transport/tcp/device.cc:276] ss1.ss_family == ss2.ss_family. 2 vs 10")
              r"The connection to the C10d store has failed|ss1\.ss_family == ss2\.ss_family")
# torchrun restarting its worker group after a crash: a barrier timeout that follows is that crash's echo.
AFTER_RESTART = r"Worker group FAILED\. \d+/\d+ attempts left; will restart"

# NCCL's own account of what failed (its WARN lines name the call)
NCCL_DEBUG_ONCE = env_remedy("Run once with NCCL_DEBUG=INFO: the WARN line names the call that failed", "nccl-debug", {"NCCL_DEBUG": "INFO"})

# A port some process already listens on (EADDRINUSE, errno 98 on Linux), in the words torch's store and THD print it
ADDRESS_IN_USE = r"(?i:\baddress already in use\b)|\berrno:? ?98\b|\bEADDRINUSE\b"
# A socket connect to a peer that failed, as NCCL words the error of it (its WARN and its INFO lines alike)
_CONNECT_FAILED = r"(Connection refused|No route to host|Connection timed out)"

# A hang in NCCL's transport goes away with peer-to-peer copies off: the test that tells it from a rank that stalled
P2P_OFF_CONFIRMS = env_remedy("Confirm a transport fault: NCCL_P2P_DISABLE=1 (peer-to-peer off) on every rank", "nccl-p2p-disable",
                              {"NCCL_P2P_DISABLE": "1"})

# ... and one in the network between the nodes goes away with InfiniBand off
IB_OFF_CONFIRMS = env_remedy("Confirm a network fault by taking InfiniBand out of the picture: NCCL_IB_DISABLE=1 on every node "
                             "(TCP sockets)", "ib-disable", {"NCCL_IB_DISABLE": "1"})

SHM_REMEDIES = (
    Remedy("Give the container more shared memory: `docker run --shm-size=16g` or `--ipc=host` (Kubernetes: an emptyDir "
           "with medium: Memory at /dev/shm)", id="shm-size"),
    env_remedy("Or let NCCL do without shared memory (slower between GPUs of one node)", "nccl-shm-disable", {"NCCL_SHM_DISABLE": "1"}),
)

SIGNATURES = (
    Signature("shm-small", SHM,
              cause="NCCL's shared-memory transport could not create its segments in /dev/shm: too small (a container's "
                    "64 MB default) or not writable", remedies=SHM_REMEDIES),
    Signature("shm-small", r"unhandled system error|ncclSystemError", context=(SHM,), context_required=True,
              cause="NCCL's 'unhandled system error' is its shared memory failing: /dev/shm too small or not writable",
              remedies=SHM_REMEDIES),
    # NCCL's threads killed by SIGBUS: a write into a /dev/shm segment larger than the container's shared memory (the
    # file is created sparse, the pages fail when touched: "Caught signal 7 (Bus error: nonexistent physical address)"
    # with ncclGroupEnd/libnccl in the backtrace; github.com/msr-fiddle/pipedream, Docker's 64 MB default; gdb's
    # "received signal SIGBUS, Bus error" in ncclShmOpen(char*, ...) inside another framework's copy of NCCL)
    Signature("shm-small", r"signal 7 \(Bus error|\bBus error\b", context=(r"\bnccl[A-Z]?\w*\(|libnccl\.so",), context_required=True,
              cause="NCCL touched shared memory the container does not have: /dev/shm is smaller than its segments (SIGBUS)",
              remedies=SHM_REMEDIES),
    # A process ended by SIGBUS, as its launcher reports it (torchrun's "Signal 7 (SIGBUS) received by PID", DeepSpeed's
    # "exits with return code = -7", subprocess' "<Signals.SIGBUS: 7>", "signaled to shutdown with signal 7"): pages of a
    # /dev/shm segment the container does not have (Docker's 64 MB default; github.com/huggingface/text-generation-inference
    # /issues/446, fixed with --shm-size). DataLoader's own words for it are host memory's (device-memory)
    Signature("shm-small", r"\bsignal 7\b|\bSIGBUS\b|exits with return code = -7\b|exitcode\s*:\s*-7\b",
              unless=(DATALOADER_SHM,),
              cause="a process died of SIGBUS: it touched shared memory the machine or container does not have (/dev/shm "
                    "smaller than what NCCL or the processes map)",
              remedies=SHM_REMEDIES[:1]),
    # The same error with nothing around it that names the call: NCCL's system-call failures are, in order of how
    # often threads settle them, its shared memory in a container and its sockets (NCCL's documentation,
    # Troubleshooting: "Docker ... --shm-size=1g or --ipc=host"; NCCL_DEBUG=INFO names the failing call)
    Signature("system-error", r"unhandled system error|ncclSystemError", confirmed_by=("distributed:shm-small",), across_ranks=True,
              unless=(SHM,),  # the log names the shared memory: shm-small's, above
              cause="a system call inside NCCL failed: most often its shared memory (/dev/shm too small or not writable in a "
                    "container), else a socket between the ranks; NCCL_DEBUG=INFO names the call",
              remedies=SHM_REMEDIES + (NCCL_DEBUG_ONCE,)),
    # The master's port taken (EADDRINUSE): a second job on the same machine, or a stale process of an earlier run, holds
    # MASTER_PORT (torch's store: "The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in
    # use)"; THD's "Address already in use at .../THD/process_group/General.cpp"). Only beside torch.distributed's words: a
    # web UI's own port in use is not the ranks' (a server's bind fails as Python's OSError: "[Errno 98] Address already in
    # use"; torch's store raises it as a RuntimeError, which is the ranks' with no other word beside it)
    Signature("port-in-use", ADDRESS_IN_USE,
              context=(r"(?i)MASTER_PORT|master_port|torch\.distributed|process_group|init_process_group|c10d|torchrun|"
                       r"rendezvous|\bTHD\b|server socket|tcp://|:29500\b|(?-i:RuntimeError: Address already in use\b)",),
              context_required=True,
              confirmed_by=("distributed:port-in-use",),
              cause="the job's master port is taken: another job on this machine (or a stale process of an earlier run) "
                    "already listens on MASTER_PORT",
              remedies=(FREE_MASTER_PORT,)),
    # (not where the store could not bind its port: that is the port taken, read above)
    Signature("ranks-missing", RENDEZVOUS, unless=(AFTER_RESTART, ADDRESS_IN_USE), across_ranks=True,
              cause="the ranks could not meet: a rank that never started or crashed first, a MASTER_ADDR/MASTER_PORT (or "
                    "rendezvous endpoint) the other nodes cannot reach, or a firewall between the nodes",
              remedies=(CONFIRM_ACROSS_RANKS,
                        Remedy("Check from every node that MASTER_ADDR resolves and MASTER_PORT is reachable (`nc -zv HOST PORT`), "
                               "and read the first rank that failed: its own error is the cause", id="reach-master"))),
    # NCCL's ncclRemoteError: the peer's process died or the network between them failed
    Signature("ranks-missing", r"remote process exited or there was a network error|ncclRemoteError", across_ranks=True,
              cause="a rank's peer went away mid-collective: its process exited (read that rank's own error first) or the "
                    "network between the nodes failed (InfiniBand or a switch on one node)",
              remedies=(CONFIRM_ACROSS_RANKS,
                        IB_OFF_CONFIRMS)),
    # torch's Windows and macOS builds have no NCCL (torch.distributed's documentation: NCCL on Linux only; gloo elsewhere)
    # (also as people retype it in a title: "doesnt", "bulit")
    Signature("no-nccl", r"Distributed package doesn'?t have NCCL bu(il|li)t in|ProcessGroupNCCL is not available|"
                         r"NCCL backend is not available",
              cause="this torch has no NCCL (its Windows and macOS builds never do): a job on GPUs asked for the nccl backend",
              remedies=(Remedy("Use the gloo backend on Windows and macOS (init_process_group('gloo'), or the trainer's "
                               "ddp_backend/--backend gloo), or run the job on Linux or WSL2, where torch has NCCL", kind="manual",
                               id="backend-gloo"),)),
    # torch 2.4+ starts the c10d TCPStore on libuv, which its Windows builds lack; USE_LIBUV=0 brings back the old store
    # (pytorch.org/tutorials/intermediate/TCPStore_libuv_backend.html)
    Signature("no-libuv", r"use_libuv was requested but PyTorch was buil[dt] without libuv support",
              cause="torch's rendezvous store asked for libuv, which this torch build (Windows) lacks",
              remedies=(env_remedy("Use the store without libuv: USE_LIBUV=0 in the launcher's environment", "use-libuv-off",
                                   {"USE_LIBUV": "0"}),)),
    Signature("same-gpu", r"Duplicate GPU detected ?: rank \d+ and rank \d+ both on CUDA device", across_ranks=True,
              cause="two ranks on one GPU: more processes than GPUs (--nproc-per-node), or a script that does not pick "
                    "its device from LOCAL_RANK",
              remedies=(ONE_GPU_PER_RANK,
                        CONFIRM_ACROSS_RANKS)),
    Signature("ranks-differ", r"Mismatched NCCL version|connecting to address with family 0 is neither AF_INET",
              across_ranks=True,
              cause="the nodes run different NCCL releases (another torch or nvidia-nccl wheel on one node): their "
                    "bootstrap messages do not agree",
              remedies=(Remedy("Install the same torch (and nvidia-nccl-cu* wheel) on every node", id="same-everywhere"),
                        CONFIRM_ACROSS_RANKS)),
    Signature("infiniband-some", r"NET/IB ?: Got completion from peer .* with error|(?<!INFO )NET/IB ?: No device found|"
                                 r"ibv_\w+ failed|IB(V)? (device|port) .* (not found|down)",
              across_ranks=True,
              cause="NCCL's InfiniBand/RoCE transport fails between the nodes: InfiniBand missing or down on a node, "
                    "or the nodes' HCAs cannot reach each other (GID index, switches)",
              remedies=(IB_OFF_CONFIRMS,
                        CONFIRM_ACROSS_RANKS)),
    # (gloo's own: "[enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find
    # address for: eth0", GLOO_SOCKET_IFNAME naming an interface this machine lacks)
    Signature("socket-ifname", r"Bootstrap ?: no socket interface found|NCCL_SOCKET_IFNAME .*(not found|no interface)|"
                               r"gloo[^\n]*Unable to find address for: \w+|"
                               r"Socket creation failed ?: Address family not supported|"
                               r"NCCL WARN .*Connect to \S+ failed ?: " + _CONNECT_FAILED + "|"
                               # (its INFO line as it retries: "NCCL INFO Call to connect returned Connection refused, retrying")
                               r"NCCL INFO Call to connect returned " + _CONNECT_FAILED,
              cause="NCCL has no usable network interface to the other nodes: NCCL_SOCKET_IFNAME names none that is up here, "
                    "or a firewall between the nodes",
              remedies=(env_remedy("Let NCCL pick the interface (unset NCCL_SOCKET_IFNAME), or set it to one up on every node",
                                   "socket-ifname-unset", unset_env=["NCCL_SOCKET_IFNAME"]), CONFIRM_ACROSS_RANKS)),
    # CUDA's cudaErrorPeerAccessUnsupported (217) inside NCCL: its P2P transport between two GPUs the driver will not
    # connect (GeForce cards, PCIe ACS, a VM); NCCL's documentation (Troubleshooting, PCI Access Control Services)
    Signature("collective-fails", r"peer access is not supported between these two devices|Cuda failure 217\b",
              cause="NCCL's peer-to-peer transport between these GPUs is refused by the driver (consumer GPUs, PCIe ACS or "
                    "a VM without P2P)",
              remedies=(env_remedy("Turn peer-to-peer off: NCCL_P2P_DISABLE=1 on every rank (copies go through host memory)",
                                   "nccl-p2p-disable", {"NCCL_P2P_DISABLE": "1"}), CONFIRM_ACROSS_RANKS)),
    # The serving engines' own all-reduce kernel for tensor parallelism, which maps the other GPUs' buffers through CUDA IPC
    # and peer access instead of NCCL (vLLM's and sglang's csrc/custom_all_reduce.cuh: "Failed: Cuda error
    # /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'"), failing where the GPUs cannot reach each other so
    # (ms-swift's FAQ, PR #4612: add --disable_custom_all_reduce true)
    Signature("collective-fails", r"custom_all_reduce\w*\.(cuh|cu|py):\d+\W{0,3}(?!\s*$)",
              cause="the serving engine's custom all-reduce kernel (CUDA IPC and peer access between the GPUs) failed between "
                    "these GPUs (consumer cards, PCIe ACS, a VM or container without peer-to-peer)",
              remedies=(Remedy("Turn the engine's custom all-reduce off so that NCCL reduces (vLLM and sglang "
                               "`--disable-custom-all-reduce`, ms-swift `--disable_custom_all_reduce true`)",
                               id="custom-all-reduce-off"), CONFIRM_ACROSS_RANKS)),
    # accelerate's own refusal on GeForce RTX 40xx, whose driver gives NCCL no peer-to-peer (accelerate/utils/environment.py
    # check_cuda_p2p_ib_support: "Using RTX 4000 series doesn't support faster communication broadband via P2P or IB.
    # Please set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1"` or use `accelerate launch` which will do this
    # automatically.")
    Signature("collective-fails", r"doesn't support faster communication broadband via P2P or IB",
              cause="accelerate refuses NCCL's peer-to-peer and InfiniBand transports on these GPUs (GeForce RTX 40xx, whose "
                    "driver has no peer-to-peer) until they are turned off",
              remedies=(env_remedy("Turn peer-to-peer and InfiniBand off: NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 on every rank "
                                   "(`accelerate launch` sets them itself)", "nccl-p2p-ib-disable",
                                   {"NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1"}),)),
    # A CUDA call inside NCCL failing ("NCCL error in: ..., unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    # ncclUnhandledCudaError): on one rank, a GPU that ran out of memory or hit an error before, or a transport its driver
    # refuses (NVLink SHARP, peer-to-peer); NCCL_DEBUG=INFO names the CUDA call
    # (torch 0.4's DataParallel words it "NCCL Error 1: unhandled cuda error", the error's number in NCCL's enum)
    # (not where NCCL's "Last error:" says the call was an allocation that failed, "Failed to CUDA calloc async 4194304
    # bytes", "Cuda failure 'out of memory'": the GPU's memory, device-memory's)
    Signature("collective-fails", r"NCCL [Ee]rror[^\n]*\bunhandled cuda error|\bncclUnhandledCudaError\b|"
                                  r"\bNCCL_ERROR_UNHANDLED_CUDA_ERROR\b", across_ranks=True,
              unless=(r"\bFailed to CUDA calloc\b|Cuda failure '?out of memory|\bcudaErrorMemoryAllocation\b",),
              cause="a CUDA call inside NCCL failed on a rank: that GPU out of memory or failing already, or a transport its "
                    "driver refuses (peer-to-peer, NVLink SHARP); NCCL_DEBUG=INFO names the call",
              remedies=(NCCL_DEBUG_ONCE, P2P_OFF_CONFIRMS, CONFIRM_ACROSS_RANKS)),
    # NCCL's failure named and nothing else: an issue title ("NCCL-ERROR !!!", "多机多卡微调报错ncclInternalError"), a
    # launcher's one-line summary ("NCCL error"): the job's collectives, which NCCL_DEBUG=INFO and the ranks together tell
    # apart; a line that says which error it was is read by the readings above (unhandled system/cuda error)
    Signature("collective-fails", r"(?i:\bnccl[- _]?error\b)(?![^\n]*(\bin:|unhandled|invalid usage|remote process))|"
                                  r"(?<![A-Za-z0-9_])ncclInternalError\b|\bNCCL_ERROR_INTERNAL_ERROR\b",  # (after CJK text: no \b there)
              # (not where the log says which error it was: NCCL's own "NCCL error in: <file>, internal error" with its
              # exception, which a script's own misuse raises as often, or a shared-memory segment it failed to create)
              unless=(r"NCCL error in:|shared memory segment|/dev/shm|unhandled system error|ncclSystemError|Duplicate GPU",),
              across_ranks=True,
              cause="NCCL failed in the job's collectives: a transport between the GPUs or nodes (shared memory, peer-to-peer, "
                    "the network interface), or one rank that failed first; NCCL_DEBUG=INFO names the call",
              remedies=(NCCL_DEBUG_ONCE, P2P_OFF_CONFIRMS, CONFIRM_ACROSS_RANKS)),
    # Intel's oneCCL (torch's `ccl` backend on XPU and CPU clusters, oneccl_bindings_for_pytorch) raising its own exception,
    # "oneCCL: <file>.cpp:<line> <function>: EXCEPTION: <what>": its runtime or a transport failed, as NCCL's errors above
    # say for CUDA jobs ("ze_data was not initialized": Level Zero's runtime missing, github.com/intel/ipex-llm's
    # troubleshooting, `sudo apt install level-zero-dev`)
    Signature("collective-fails", r"\boneCCL: \S+\.(cpp|hpp):\d+ \w+: EXCEPTION: ", across_ranks=True,
              cause="Intel's oneCCL failed in the job's collectives: its runtime (the oneAPI environment, Level Zero for XPUs) "
                    "missing on a node, or a transport between the ranks; CCL_LOG_LEVEL=info names the call",
              remedies=(Remedy("Source the oneAPI environment (`source /opt/intel/oneapi/setvars.sh`) on every node and install "
                               "Level Zero's runtime (the `level-zero` and `level-zero-dev` packages) for XPUs; rerun one step "
                               "with CCL_LOG_LEVEL=info to see the failing call", id="oneccl-runtime"), CONFIRM_ACROSS_RANKS)),
    # nccl-tests' own report of an NCCL call that failed (github.com/NVIDIA/nccl-tests src/common.cu NCCLCHECK: "Test NCCL
    # failure common.cu:959 'internal error - please report this issue to the NCCL developers'"): NCCL itself failed
    # between these GPUs or nodes, with no training script in the way (not its CUDA allocation failing: "'out of memory'")
    Signature("collective-fails", r"\bTest NCCL failure \S+:\d+ '(?!out of memory)", across_ranks=True,
              cause="NCCL itself failed in nccl-tests between these GPUs or nodes: a transport (peer-to-peer, shared memory, "
                    "the network interfaces the nodes name differently, InfiniBand); NCCL_DEBUG=INFO names the call",
              remedies=(NCCL_DEBUG_ONCE, P2P_OFF_CONFIRMS, CONFIRM_ACROSS_RANKS)),
    # NCCL refusing a dtype for a collective ("Input tensor data type is not supported for NCCL process group: BFloat16"):
    # bfloat16 collectives came with NCCL 2.10.3 (its release notes; github.com/NVIDIA/nccl/issues/477), so a torch whose
    # NCCL is older cannot all-reduce bf16 gradients; `check --distributed` runs bf16 collectives on every rank
    Signature("collective-fails", r"data type is not supported for NCCL process group",
              cause="the NCCL in this torch cannot reduce that dtype: bfloat16 collectives need NCCL 2.10.3 or later (a torch "
                    "of 1.10 or later brings one)",
              remedies=(Remedy("Use a torch whose NCCL has bfloat16 collectives (torch 1.10+, NCCL 2.10.3+), or reduce the "
                               "gradients in fp32 (DDP's bf16 compression hook off, mixed precision keeping fp32 master "
                               "weights)", id="nccl-for-dtype"), CONFIRM_ACROSS_RANKS)),
    # The watchdog's timeout alone is most often the script's own (a rank that skipped a collective, a data loader that
    # stalls one rank): read as the transport only where the log speaks of peer-to-peer copies (not NCCL's INFO lines of
    # a healthy start, "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", unless they say P2P was refused)
    Signature("collective-fails", r"Watchdog caught collective operation timeout", across_ranks=True,
              context=(r"^(?!.*\bNCCL INFO\b(?!.*(Could not enable P2P|P2P is disabled))).*?(\bP2P\b|NCCL_P2P_\w+|\bACS\b|IOMMU)",),
              context_required=True,
              cause="a collective never completed: a rank hung or skipped it, or NCCL's transport hangs between these GPUs "
                    "(peer-to-peer copies on consumer GPUs or behind PCIe ACS: NCCL_P2P_DISABLE=1 confirms)",
              remedies=(CONFIRM_ACROSS_RANKS,
                        P2P_OFF_CONFIRMS)),
    # A log whose last words are NCCL's own, nothing raised after them: the job stalled inside NCCL (its warnings, or its
    # peer-to-peer transport refused between the GPUs: "NCCL INFO Could not enable P2P between dev 1(=1c000) and dev 0";
    # github.com/Lightning-AI/pytorch-lightning/issues/19425, github.com/NVIDIA/Megatron-LM/issues/316). Read only where
    # nothing came after them (last_only: a run that failed later printed them on the way); NCCL's other words above say
    # more and outrank it
    Signature("collective-fails", r"\bNCCL WARN\b|\bNCCL INFO (Could not enable P2P|P2P is disabled between connected GPUs)\b",
              across_ranks=True, last_only=True,
              cause="the job stopped inside NCCL: its transport between these GPUs (peer-to-peer copies on consumer GPUs or "
                    "behind PCIe ACS, shared memory in a container) or one rank that never joined",
              remedies=(P2P_OFF_CONFIRMS, CONFIRM_ACROSS_RANKS)),
    # The same hang told in words, with no error at all: one line saying the job hangs (freezes, deadlocks) and that it
    # runs on several GPUs or in a collective ("training freezes on 4 RTX 3090 GPUs", "ncclAllReduce deadlocks on 2x RTX
    # 5880"). Read only where no raised error explains the log.
    Signature("collective-fails", r"(?i)^(?=.*?\b(hangs?|hung|hanging|freez\w*|frozen|stuck|deadlock\w*)\b)"
                                  r"(?=.*?(\bnccl\w*|all_?reduce|\bp2p\b|\bmulti[- ]?gpus?\b|\b\d+ ?x ?(rtx|gtx|gpus?|[avhlb]\d{2,3})\b|"
                                  r"\b\d+ (\w+ ){0,3}gpus\b))", across_ranks=True,
              cause="a collective hangs between the GPUs: NCCL's peer-to-peer transport on consumer GPUs or behind PCIe ACS "
                    "(NCCL_P2P_DISABLE=1 confirms), or one rank stalled or skipped a collective",
              remedies=(CONFIRM_ACROSS_RANKS,
                        P2P_OFF_CONFIRMS)),
)
