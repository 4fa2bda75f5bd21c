"""How device-memory failures read in a traceback (for `explain`), and what can be said from the text alone."""

from __future__ import annotations

from envdoctor.target.model import Remedy, Signature

from ..cublas.signatures import AFTER_ASSERT
from ..cuda_compat.signatures import BUILD_DOES_NOT_FIT
from ..distributed.signatures import DATALOADER_SHM, SHM_REMEDIES
from ..torch_install import PAGING_FILE

# How out of memory reads in a traceback, and what causes it:
#   torch's caching allocator: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total
#   capacity of ... of which ... is free. Process 2211 has ... memory in use ...` (torch.cuda.OutOfMemoryError in older
#   releases, the same class; see https://pytorch.org/docs/stable/notes/cuda.html#cuda-memory-management, and
#   github.com/pytorch/pytorch/issues/40863: "another program ... is already using all the GPU memory", check nvidia-smi);
#   the CUDA runtime at context creation: `RuntimeError: CUDA error: out of memory` (github.com/yangjianxin1/GPT2-chitchat/issues/19:
#   GPU 0 was held by another framework's job, the other GPUs free);
#   cuBLAS: `CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`` (github.com/QwenLM/Qwen3/issues/873:
#   solved by running on a GPU with enough free memory);
#   cuDNN: `CUDNN_STATUS_ALLOC_FAILED` (github.com/amdegroot/ssd.pytorch/issues/33: solved with a smaller batch size).
# What `explain` can say from a traceback alone; the live findings add this machine's free memory and processes.
EXPLAIN_REMEDIES = (
    Remedy("Make the step fit: a smaller batch (with gradient accumulation for the same effective batch), gradient "
           "checkpointing, bf16/fp16 weights, or 8-bit optimizers", id="smaller-batch"),
    Remedy("Free the GPU: stop the other processes that hold its memory (`nvidia-smi`), a crashed earlier run, a notebook "
           "kernel, another rank placed on the same GPU", id="free-gpu"),
    Remedy("If much memory is reserved but unallocated (fragmentation), set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
           id="alloc-conf"),
)
# Out of memory said in other words near a cuBLAS/cuDNN failure: the allocator's report, a large
# allocation, the runtime's own code.
# People's own words count: "VRAM climbs to 24G", "显存" (GPU memory, in the Chinese threads the seeds come from).
OOM_HINTS = (r"out of memory|OutOfMemory|Tried to allocate|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
             r"reserved in total by PyTorch|memory (is )?(full|exhausted)|\bOOM\b|VRAM|GPU memory|显存",)

# An out-of-memory the log itself shows to be the program's: memory that grows until it fails (a leak: tensors kept with
# their autograd graphs, losses accumulated undetached), or evaluation failing where training at the same batch fits
# (no `torch.no_grad()`: github.com/sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning/issues/57). No GPU is big enough
# for that, and the remedies for a full GPU would hide it.
PROGRAM_GROWTH = (r"(?i)\bmemory leak|\bleak(s|ing)? (memory|GPU|VRAM)|\b(train|training)( loop)? (is|works?|worked|runs?|ran)"
                  r"( perfectly)? (ok|okay|fine|well)\b|"
                  # memory told growing over the run: "GPU memory usage growed slowly during training"
                  r"\bmemory (usage |use |consumption )?(keeps? )?(grow(s|ed|ing)?|grew|increas(es|ed|ing)|ris(es|ing)|rose)\b|"
                  # "a slow and steady increase", "unable to train for more than ~2 epochs": it ran, then ran out
                  r"\b(slow|steady|gradual)( and (slow|steady|gradual))? increase\b|"
                  r"\b(after|for more than) ~?(\d+|a few|two|three|several) (epochs|iterations|iters|steps)\b",)

# An allocation no GPU could hold (over 10,000 GiB; "Tried to allocate more than 1EB memory", numpy's "Unable to allocate
# 7.28 TiB for an array"): a size computed wrong (a negative or overflowed shape) or the failure after another one (NCCL's
# maintainers on an OOM following a broadcast timeout, github.com/NVIDIA/nccl), never memory pressure
IMPOSSIBLE_SIZE = r"(Tried|Unable) to allocate (more than 1EB|[\d.]+ ?[TPE]iB|\d{4,}(\.\d+)? ?GiB)"  # no GPU has 1,000 GiB

# WinError 1455 (torch_install's PAGING_FILE: "the paging file is too small for this operation to complete", in the OS's
# language): Windows has no virtual memory (commit) left to map a DLL, most often torch's CUDA DLLs (cudnn_*, cublas*)
# loaded again by every DataLoader worker or environment process (github.com/ultralytics/ultralytics and kohya_ss
# maintainers: a bigger paging file, fewer workers). The DLL itself is fine.
PAGING_FILE_BIGGER = Remedy("Let Windows' paging file grow (System > Advanced > Performance > Virtual memory: system managed "
                            "size, on a drive with free space), or start fewer processes that each load torch (DataLoader "
                            "num_workers, parallel environments)", id="paging-file")

# What the host's RAM running out asks for, however it showed (the OOM killer's SIGKILL, Python's MemoryError)
HOST_RAM = Remedy("Give the host's RAM room: load weights with low_cpu_mem_usage / device_map, fewer ranks or DataLoader "
                  "workers per node, less CPU offload, smaller replay buffers or dataset caches (memory-mapped arrays), or "
                  "more RAM or swap", id="host-ram")

SIGNATURES = (
    # cuDNN picks a convolution algorithm whose workspace fits in what is free; none fitting reads as this
    # (github.com/TQTQliu/MVSGaussian/issues/18: the maintainer names GPU memory as its usual cause)
    Signature("out-of-memory", r"Unable to find a valid cuDNN algorithm to run convolution",
              cause="no cuDNN convolution algorithm fits in the GPU memory left: the GPU is (nearly) full",
              remedies=EXPLAIN_REMEDIES),
    # Apple silicon's unified memory through MPS: "MPS backend out of memory (MPS allocated: ..., other allocations: ...)"
    # (and Metal's own command-buffer status under any engine on the Mac, llama.cpp's or MLX's: "Insufficient Memory
    # (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", Apple's MTLCommandBufferError outOfMemory)
    Signature("out-of-memory", r"MPS backend out of memory|kIOGPUCommandBufferCallbackErrorOutOfMemory\b",
              cause="the Mac's MPS allocator ran out of its share of unified memory (PYTORCH_MPS_HIGH_WATERMARK_RATIO caps it)",
              remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"(CUDA|HIP|XPU) out of memory\b|"  # the same allocator on ROCm and Intel GPUs; told in words too
                               # (an engine's own report, lowercase: lmdeploy's "cuda: out of memory")
                               r"\bcuda: out of memory\b|"
                               # an extension's own allocator (tiny-cuda-nn: "cudaMalloc(&rawptr, ...) failed with error out of memory")
                               # (CTranslate2, faster-whisper's engine: "cuda failed with error out of memory")
                               r"(cudaMalloc\w*\([^\n]*\)|\bcuda) failed with error out of memory|"
                               # (the allocator over a user-set memory fraction: c10's CUDACachingAllocator)
                               # (and as newer torch's OutOfMemoryError words it, with nothing after it: "OutOfMemoryError:
                               # Allocation on device", what ComfyUI's error panel shows)
                               r"Allocation on device(?: \d+ would exceed allowed memory|\s*(?:$|\n))|"
                               # (Vulkan's allocator, the engines behind the ncnn upscalers: VkResult -1 and -2 are
                               # VK_ERROR_OUT_OF_HOST_MEMORY and VK_ERROR_OUT_OF_DEVICE_MEMORY, Vulkan spec "VkResult")
                               # (or by name where memory is allocated: Vulkan-Hpp's "vk::Device::allocateMemory:
                               # ErrorOutOfDeviceMemory"; not "vk::createInstanceUnique: ErrorOutOfHostMemory", a broken ICD)
                               r"vkAllocateMemory failed -[12]\b|\ballocate\w*: ErrorOutOf(Device|Host)Memory\b|"
                               # (torch-directml's allocator: "Could not allocate tensor with 1032884736 bytes. There is not
                               # enough GPU video memory available!")
                               r"There is not enough GPU video memory available|"
                               # the allocator's report whatever the first words were (IPEX's "Current platform can NOT
                               # allocate memory block with size larger than 4GB! Tried to allocate 7.03 GiB (GPU 0; 15.91
                               # GiB total capacity; ...": github.com/simonlui/Docker_IPEX_ComfyUI)
                               r"Tried to allocate [\d.]+ [KMGT]i?B \(GPU \d+; [\d.]+ [KMGT]i?B total capacity", unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="torch's caching allocator could not get the memory it asked for: the batch does not fit next to what is "
                    "resident (other processes, this process's own tensors and cache), or the memory is fragmented",
              remedies=EXPLAIN_REMEDIES),
    # (not the class named in code a traceback shows: "except torch.cuda.OutOfMemoryError:", "isinstance(e, torch.OutOfMemoryError)")
    Signature("out-of-memory", r"(?<!except )(?<!\()(?<!, )\btorch\.(?:cuda\.)?OutOfMemoryError\b", unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="torch's caching allocator ran out of GPU memory (torch.OutOfMemoryError, torch.cuda.OutOfMemoryError in "
                    "older releases)", remedies=EXPLAIN_REMEDIES),
    # The same said by other front-ends and runtimes: stable-diffusion-webui's split attention ("Not enough memory, use lower
    # resolution (max approx. 1216x1216). Need: 0.5GB free, Have:0.3GB free", modules/sd_hijack_optimizations.py), Intel's
    # Unified Runtime under torch's XPU backend ("Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"), the tail
    # of torch's own message where the paste kept only it ("If reserved but unallocated memory is large try setting
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), and Colab's host RAM ("Your session crashed after using all
    # available RAM.")
    Signature("out-of-memory", r"Not enough memory, use lower resolution|UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY|"
                               r"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF|"
                               r"Your session crashed after using all available RAM",
              unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="the device's (or the host's) memory ran out: the batch, resolution or model does not fit next to what is "
                    "resident", remedies=EXPLAIN_REMEDIES),
    # (NCCL's own allocation beside torch's caching allocator, which had reserved the device: "Failed to CUDA calloc async
    # 4194304 bytes", NCCL's alloc.h; a log may hold a placeholder for the count)
    Signature("out-of-memory", r"\bFailed to CUDA calloc( async)? \S+ bytes", unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="NCCL could not allocate its buffers on the GPU: the memory was held by the run (torch's caching allocator "
                    "keeps what it freed)", remedies=EXPLAIN_REMEDIES),
    # (torch 0.x's THC wording: "cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/...", spaced as pasted)
    # (and Intel's XPU runtime: "RuntimeError: Allocation is out of device memory on current platform.")
    Signature("out-of-memory", r"CUDA (driver )?error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|Allocation is out of device memory\b|"
                               r"(?i:cuda runtime error) ?\(2\) ?: ?out of memory", unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="the CUDA runtime could not allocate, often already when creating the context: another process holds the GPU",
              remedies=EXPLAIN_REMEDIES),
    # Out of GPU memory told in a user's words, with no allocator message pasted: "OOM", "显存不足", "VRAM is full"
    # (not "OOM" joined by hyphens on both sides, a name: a run's, a config's, "sdxl-lora-OOM-repro-bs2"; and not
    # vLLM's start-up advice, "If you are running out of memory, consider decreasing `gpu_memory_utilization`")
    # (nor a compound that says it is avoided, "OOM-safe margin", "OOM-free"; nor torch.cuda.memory_summary()'s count of none,
    # "CUDA OOMs: 0")
    # (bounded by what is not a Latin letter or digit, so that CJK beside it counts: "跑到一半就OOM了"; and Chinese's and
    # Japanese's other word orders: "爆显存", "VRAM不足")
    # (nor where it is denied or over: "no OOM this time", "OOM gone after enabling gradient checkpointing", "did not run out
    # of memory", a previous run's "OOM'd at bs8")
    Signature("out-of-memory", r"(?<![A-Za-z0-9_]-)(?<![A-Za-z0-9_])%(denied)sOOM(s|ed|ing)?(?![A-Za-z0-9_])(?!-(safe|free|proof|aware|"
                               r"resilient|resistant|tolerant|guard|protect|prevent|avoid)|%(over)s)|"
                               r"(?<![A-Za-z0-9_])%(denied)sOOM(s|ed|ing)?(?![A-Za-z0-9_])(?!-\w|%(over)s)|"
                               % {"denied": r"(?<!\bno )(?<!\bprev run )(?<!\bprevious run )",
                                  "over": r"s?:\s*0\b|( is)? (gone|fixed|solved)\b"} +
                               r"显存(不足|不够|溢出|爆|占满)|爆显存|"
                               r"VRAM ?(不足|が足りない)|"
                               # (and in Russian, Japanese and Korean: "нехватка памяти", "недостаточно видеопамяти",
                               # "メモリ不足", "메모리 부족")
                               r"(?i:(нехватка|недостаточно|не хватает) (видео)?памяти)|(ビデオ)?メモリ(不足|が足りない)|"
                               r"메모리(가)? 부족|"
                               # (the words without the allocator's message: "it ends with OutOfMemoryError", "会out of
                               # mem"; Java's own error is not torch's, nor the class named in code, "except
                               # torch.cuda.OutOfMemoryError:", "isinstance(e, torch.OutOfMemoryError)")
                               # (nor the class's name missing from an older torch: "module 'torch.cuda' has no attribute
                               # 'OutOfMemoryError'", code written for torch 1.13+)
                               # (but Ray's own, "ray.exceptions.RayTaskError(OutOfMemoryError)", a node out of host memory)
                               r"(?<!has no attribute ')(?<!cannot import name ')(?<!except )"
                               r"((?<!\()(?<!, )\btorch\.(cuda\.)?|\bray\.exceptions\.|(?<![.\w]))OutOfMemoryError\b|"
                               # (not where it is denied, "not an out of memory problem", nor Node.js's own heap)
                               r"(?i:(?<![a-z])(?<!if you are running )(?<!if you're running )(?<!not an )(?<!not )(?<!heap )"
                               r"(?<!not run )(?<!n't run )(?<!never run )(?<!never ran )"
                               # (nor an app's advice that it may: Forge's "[Low VRAM Warning] ... Computations may fallback
                               # to CPU or go Out of Memory.")
                               r"(?<!\bor go )(?<!\bmay go )"
                               # (and misspelled as people type it: "out of memmory", "out of memroy")
                               r"out of (GPU |CUDA |video )?mem(ory|m+ory|roy)?\b)|"
                               # (Portuguese and Spanish: "erro de memória insuficiente na GPU", "sin memoria en la GPU")
                               r"(?i:\b(mem[oó]ria insuficiente|sem mem[oó]ria|sin memoria|falta de memoria)\b[^\n]{0,40}\b(GPU|VRAM|CUDA)\b|"
                               r"\b(GPU|VRAM|CUDA)\b[^\n]{0,40}\b(mem[oó]ria insuficiente|sem mem[oó]ria|sin memoria|falta de memoria)\b)|"
                               r"(?i:\b(VRAM|GPU memory)\b.{0,40}\b(is full|fills up|not enough|insufficient|runs? out|ran out|"
                               r"exhausted|(is |was )?not (being )?(cleared|freed|released)|does(n'?t| not) (clear|free|get released)))",
              unless=PROGRAM_GROWTH + (IMPOSSIBLE_SIZE,),
              cause="the GPU's memory ran out (told in words): the batch or model does not fit next to what is resident",
              remedies=EXPLAIN_REMEDIES),
    # The kernel's OOM killer ending a DataLoader worker: SIGKILL is what Linux sends when host RAM runs out ("DataLoader
    # worker (pid 22114) is killed by signal: Killed."; github.com/batra-mlp-lab/visdial-challenge-starter-pytorch), each
    # worker holding its own copy of the dataset
    Signature("out-of-memory", r"DataLoader worker \(pid[^)]*\) is killed by signal: Killed",
              cause="the host ran out of RAM and the kernel's OOM killer ended a DataLoader worker (each worker holds its own "
                    "copy of what the dataset keeps in memory)",
              remedies=(Remedy("Use fewer DataLoader workers (num_workers) and a smaller prefetch_factor, keep the dataset's "
                               "in-memory data out of Python lists of objects (numpy arrays, memory maps), or add RAM or swap",
                               id="fewer-workers"),)),
    # A training process itself ended by SIGKILL, as its launcher reports it: DeepSpeed's "exits with return code = -9",
    # torchrun's "exitcode  : -9" / "Signal 9 (SIGKILL) received by PID", subprocess' "died with <Signals.SIGKILL: 9>",
    # a shell's exit code 137 (128 + 9). Linux's OOM killer sends SIGKILL when host RAM runs out: loading full weights in
    # every rank, ZeRO's CPU offload (github.com/hiyouga/LlamaFactory: "exits with return code = -9" with 252 GB of RAM full)
    Signature("out-of-memory", r"exits with return code = -9\b|exitcode\s*:\s*-9\b|Signal 9 \(SIGKILL\) received by PID|"
                               r"<Signals\.SIGKILL: 9>|\bexit(ed with)? (code|status) 137\b|non-zero exit status -9\b|"
                               # (a shell's own words: fish's "terminated by signal SIGKILL (Forced quit)", bash's "Killed"
                               # alone on its line, or its job report "./train.sh: line 5: 1234 Killed  python train.py", a
                               # pipeline's member on a line of its own: "       134 Killed      | python3 glem.py")
                               r"terminated by signal SIGKILL\b|(^|\n)[ \t]*Killed[ \t]*(?=\n|$)|: line \d+: +\d+ Killed\b|"
                               r"^[ \t]*\d+ Killed {2,}\| +\S|"
                               # (or glued to the progress bar it cut short, where tqdm wrote no newline: "Loading checkpoint
                               # shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed", retold "Loading checkpoint shards: 0% Killed")
                               r"(\d%|(it/s|s/it)\])[ \t|]*Killed[ \t]*(?=\n|$)|"
                               # (zsh's "zsh: killed     python train.py", bash's job list "[1]+  Killed    python train.py",
                               # Kubernetes' "Reason: OOMKilled" and "Exit Code: 137")
                               r"\bzsh: killed +\S|^\[\d+\][+-]? +Killed +\S|\bOOMKilled\b|(?i:\bexit code:? *137\b)",
              cause="the process was killed with SIGKILL, which is how Linux's OOM killer ends a process when host RAM runs "
                    "out (weights loaded whole in every rank, CPU offload, many DataLoader workers); `dmesg` shows "
                    "'Out of memory: Killed process' when it was",
              remedies=(HOST_RAM,)),
    # Python's own MemoryError: an allocation on the host failed (numpy's np.empty for a replay buffer, a dataset read whole),
    # bare or as numpy words it ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.00 GiB for an array with
    # shape ..."); not with another message (C++'s "std::bad_alloc: cudaErrorMemoryAllocation" is the GPU's)
    Signature("out-of-memory", r"^(\w+\.)*(_Array)?MemoryError(: Unable to allocate\b.*)?$", unless=(IMPOSSIBLE_SIZE,),
              cause="the host ran out of RAM: Python could not allocate memory (a replay buffer or dataset held whole, or a "
                    "32-bit Python's address space)",
              remedies=(HOST_RAM,)),
    # The kernel refusing a process memory (ENOMEM, errno 12: "OSError: [Errno 12] Cannot allocate memory" from os.fork as
    # DataLoader or multiprocessing starts a worker, or mmap): the host's RAM and swap are spent (a Jetson without swap);
    # not an RDMA registration (ibv_reg_mr's "Cannot allocate memory" is the memlock limit, distributed's)
    Signature("out-of-memory", r"\[Errno 12\] Cannot allocate memory",
              cause="the host ran out of RAM: the kernel refused the process memory (starting a DataLoader or multiprocessing "
                    "worker forks the whole process)",
              remedies=(HOST_RAM,)),
    # torch's own host allocator refusing (c10's alloc_cpu.cpp: "DefaultCPUAllocator: not enough memory: you tried to allocate
    # 268435456 bytes" on Windows, "... can't allocate memory: you tried to allocate ... Error code 12" on Linux): the
    # host's RAM, not the GPU's; not a request of a terabyte or more, which is a program's size gone wrong
    Signature("out-of-memory", r"DefaultCPUAllocator: (not enough memory|can't allocate memory)\b",
              unless=(r"you tried to allocate \d{13,} bytes",),
              cause="the host ran out of RAM: torch could not allocate a CPU tensor (a model loaded whole on the CPU before "
                    "it moves, a dataset or batch held in RAM, a paging file too small on Windows)",
              remedies=(HOST_RAM, PAGING_FILE_BIGGER)),
    # Windows' commit limit reached while a process maps a DLL (torch's, whichever library loads it) or a file (a
    # safetensors checkpoint's "os error 1455")
    Signature("out-of-memory", PAGING_FILE,
              cause="Windows ran out of virtual memory (the paging file is too small) for what the process mapped: a library "
                    "(each process that imports torch maps its CUDA DLLs again) or a model file",
              remedies=(PAGING_FILE_BIGGER, HOST_RAM)),
    # DataLoader's workers out of shared memory: /dev/shm (a container's 64 MB by default) holds the batches they hand
    # over (github.com/nianticlabs/simplerecon: docker --shm-size); distributed's probe reads /dev/shm
    Signature("shm-small", DATALOADER_SHM, confirmed_by=("distributed:shm-small",),
              cause="DataLoader's worker processes ran out of shared memory (/dev/shm), where they hand their batches over: "
                    "too small in a container (Docker's 64 MB default) for this batch and worker count",
              remedies=SHM_REMEDIES[:1] + (Remedy("Or need less of it: fewer DataLoader workers, smaller batches, or "
                                                  "num_workers=0", id="shm-fewer-workers"),)),
    # transformers' bitsandbytes quantizer refusing a device_map that left modules on the CPU or disk because the GPU could
    # not hold them ("Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the
    # quantized model."): the quantized model does not fit in the GPU's memory
    Signature("out-of-memory", r"Some modules are dispatched on the CPU or the disk\. Make sure you have enough GPU RAM",
              cause="the quantized model does not fit in the GPU's free memory: device_map placed some of its modules on the CPU "
                    "or disk, where bitsandbytes cannot run them",
              remedies=(Remedy("Free or add GPU memory (another process may hold it), use a smaller model or 4-bit instead of "
                               "8-bit; or allow the CPU part explicitly (`llm_int8_enable_fp32_cpu_offload=True`), which runs "
                               "slowly", id="fit-quantized-model"),) + EXPLAIN_REMEDIES[1:2]),
    # vLLM sizing its KV cache from the memory left after the weights (vllm/worker: "The model's max seq len (32768) is larger
    # than the maximum number of tokens that can be stored in KV cache (7344)")
    # (and when nothing at all is left for it: "No available memory for the cache blocks. Try increasing
    # `gpu_memory_utilization` when initializing the engine.")
    Signature("out-of-memory", r"is larger than the maximum number of tokens that can be stored in KV cache|"
                               r"No available memory for the cache blocks|"
                               # (vLLM 0.8+'s words: "... (16.00 GiB KV cache is needed, which is larger than the available KV
                               # cache memory (9.53 GiB)")
                               r"KV cache is needed, which is larger than the available KV cache memory|"
                               # (TensorRT-LLM's paged KV cache full for the batch: "Can't allocate new blocks. No free blocks
                               # left", its docs' reference/memory page)
                               r"Can't allocate new blocks\. No free blocks left",
              cause="the GPU memory left after the weights holds a KV cache shorter than the model's context",
              remedies=(Remedy("Lower `max_model_len` to what fits, raise `gpu_memory_utilization` (if nothing else uses the GPU), or "
                               "spread the model over more GPUs (tensor_parallel_size)", id="kv-cache-fit"),) + EXPLAIN_REMEDIES[1:2]),
    # vLLM refusing to start where less GPU memory is free than its share asks (vllm/worker: "Free memory on device (70.82/
    # 79.25 GiB) on startup is less than desired GPU memory utilization (0.9, 71.33 GiB)"): another process holds some
    Signature("out-of-memory", r"Free memory on device \([\d.]+/[\d.]+ GiB\) on startup is less than desired GPU memory utilization",
              cause="less GPU memory is free than the engine's gpu_memory_utilization asks for: another process (a second "
                    "engine, a notebook, a desktop) holds part of the GPU",
              remedies=(Remedy("Lower `gpu_memory_utilization` to what is free, or stop what else holds the GPU (`nvidia-smi` "
                               "lists it)", id="engine-memory-share"),)),
    Signature("out-of-memory", r"CUBLAS_STATUS_(ALLOC_FAILED|NOT_INITIALIZED)", context=OOM_HINTS, context_required=True,
              cause="cuBLAS could not create its handle or workspace because the GPU is (nearly) full",
              remedies=EXPLAIN_REMEDIES),
    # The same without a word of memory around it: as its threads settle it, still most often a full GPU (another
    # process or rank holding it; the first 104 cases and dev-21/25), else cuBLAS's own libraries (cublas reads those)
    # (not after the log said the CUDA build does not fit the machine: a driver too old, a GPU not in the build)
    Signature("out-of-memory", r"CUBLAS_STATUS_NOT_INITIALIZED( when calling `?cublasCreate\(handle\)`?)?",
              unless=(AFTER_ASSERT, BUILD_DOES_NOT_FIT),
              cause="cuBLAS could not create its handle: most often the GPU has no memory left for it (another process, "
                    "another rank on the same GPU, a model that filled it), else broken or mismatched cuBLAS libraries",
              remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"CUDNN_STATUS_(ALLOC_FAILED|NOT_INITIALIZED|INTERNAL_ERROR)", context=OOM_HINTS, context_required=True,
              cause="cuDNN could not allocate its handle or a convolution workspace: the GPU is (nearly) full or the batch too large",
              remedies=EXPLAIN_REMEDIES),
)
