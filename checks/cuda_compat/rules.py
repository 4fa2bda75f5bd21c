"""The cuda-compat rules: pure functions over the probe's facts and the Target, run in envdoctor's
own process and tested on snapshots recorded from real machines."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.remedies.actions import env_remedy, pip_remedy

from .probe import ID, PROC_VERSION

NO_KERNEL_IMAGE = "CUDA error: no kernel image is available for execution on the device"
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"


class _Gpu:
    def __init__(self, ident: str, name: str, cap: Optional[ct.Capability], source: str) -> None:
        self.id = ident
        self.name = name
        self.cap = cap
        self.source = source

    def label(self) -> str:
        return "%s (%s, compute capability %s)" % (self.id, self.name, ct.capability_text(self.cap))


class _View:
    """What the raw facts say, derived once: driver, GPUs, torch build."""

    def __init__(self, facts: Dict[str, Any], env: Target) -> None:
        self.facts = facts
        self.env = env
        self.system = env.os
        self.machine = str(env.machine or "x86_64")
        self.python = ct.release_key(env.python_version)  # "3.11.7" -> (3, 11)
        self.smi = facts.get("nvidia_smi") or {}
        self.proc = facts.get("proc_driver") or {}
        self.lib = facts.get("libcuda") or {}
        self.torch: Optional[Dict[str, Any]] = facts.get("torch")
        self.smi_gpus = [g for g in self.smi.get("gpus") or [] if isinstance(g, dict)]
        self.driver: Optional[str] = None
        self.driver_source = ""
        for gpu in self.smi_gpus:
            if ct.parse_driver(gpu.get("driver_version")):
                self.driver, self.driver_source = gpu["driver_version"], "nvidia-smi"
                break
        if self.driver is None and self.proc.get("version"):
            self.driver, self.driver_source = self.proc["version"], PROC_VERSION
        self.driver_cuda = ct.cuda_from_driver_api(self.lib.get("driver_version"))
        self.driver_cuda_source = "cuDriverGetVersion" if self.driver_cuda else ""
        if self.driver_cuda is None and self.torch:
            n = ct.found_version(" ".join(self._torch_texts()))
            self.driver_cuda = ct.cuda_from_driver_api(n)
            self.driver_cuda_source = "torch (found version %s)" % n if n else ""
        self.visible = (facts.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
        self.torch_gpus = [
            _Gpu(d.get("id", "cuda:?"), d.get("name") or "?", ct.parse_capability(d.get("capability")), "torch")
            for d in (self.torch or {}).get("devices") or [] if not d.get("error")
        ]
        self.physical = [
            _Gpu("GPU %s" % g.get("index", i), g.get("name") or "?",
                 ct.parse_capability(g.get("compute_cap")) or ct.capability_from_name(g.get("name")), "nvidia-smi")
            for i, g in enumerate(self.smi_gpus)
        ]

    def _torch_texts(self) -> List[str]:
        t = self.torch or {}
        init = "torch.cuda.init(): %s" % t["init_error"] if t.get("init_error") else ""
        return [*(t.get("available_warnings") or []), init, *(t.get("init_warnings") or [])]

    def torch_evidence(self) -> List[str]:
        return [x for x in self._torch_texts() if x]

    @property
    def gpus_present(self) -> bool:
        return bool(self.physical or self.torch_gpus or (self.lib.get("device_count") or 0) > 0)

    def judged_gpus(self) -> List[_Gpu]:
        """The GPUs a run will use: torch's view when it has one (it honours
        CUDA_VISIBLE_DEVICES), else nvidia-smi's, narrowed by CUDA_VISIBLE_DEVICES indices.
        When the variable hides them all, every GPU: a wheel must still fit the machine."""
        if self.torch_gpus:
            return self.torch_gpus
        if self.visible is None:
            return self.physical
        picked: List[_Gpu] = []
        for token in self.visible.split(","):
            token = token.strip()
            if not token.isdigit() or int(token) >= len(self.physical):
                return picked if picked else self.physical
            picked.append(self.physical[int(token)])
        return picked

    def capabilities(self) -> List[ct.Capability]:
        return sorted({g.cap for g in self.judged_gpus() if g.cap is not None})

    def driver_text(self) -> str:
        parts = []
        if self.driver:
            top = ct.max_cuda_for_driver(self.driver, self.system)
            parts.append("driver %s (%s%s)" % (self.driver, self.driver_source,
                                               ", supports CUDA <= %d.%d" % top if top else ""))
        if self.driver_cuda:
            parts.append("CUDA driver API %d.%d (%s)" % (self.driver_cuda + (self.driver_cuda_source,)))
        return "; ".join(parts) or "driver version unknown"

    def installed(self, name: str) -> Optional[str]:
        return (self.facts.get("packages") or {}).get(name)

    def wheel(self, prefer: Optional[str] = None) -> Optional[ct.WheelChoice]:
        return ct.choose_wheel(self.capabilities(), self.driver, self.driver_cuda, self.python,
                               self.system, self.machine, prefer)


def _wheel_remedy(view: _View, choice: Optional[ct.WheelChoice], summary: str, rid: str) -> Remedy:
    if choice is None:
        return Remedy(
            "No torch wheel in envdoctor's tables fits this driver, these GPUs and Python %s: upgrade the NVIDIA "
            "driver, or pick a build by hand at https://pytorch.org/get-started/previous-versions/"
            % (view.env.python_version or "?"),
            kind="manual", id=rid,
        )
    with_vision = bool(view.installed("torchvision"))
    with_audio = bool(view.installed("torchaudio"))
    notes = ["torch %s built for CUDA %d.%d (arch %s)" % (choice.torch, choice.cuda[0], choice.cuda[1], " ".join(choice.arch))]
    if choice.support == "minor-compat":
        row = ct.min_driver(choice.cuda, view.system)
        notes.append("it runs on this driver through CUDA minor-version compatibility; PTX JIT "
                     "(torch.compile/Triton kernels) wants driver >= %s" % row)
    if with_vision and choice.torchvision:
        notes.append("torchvision %s is its pair" % choice.torchvision)
    if with_audio and not choice.torchaudio:
        notes.append("no torchaudio exists for torch %s: uninstall torchaudio or keep torch <= 2.11" % choice.torch)
    return pip_remedy("%s: %s" % (summary, "; ".join(notes)), rid, view.env,
                      install=choice.requirements(with_vision, with_audio), index_url=choice.index_url)


def _driver_remedy(view: _View, need: str, cuda: ct.Cuda) -> Remedy:
    return Remedy(
        "Upgrade the NVIDIA driver to >= %s, the minimum for torch's CUDA %d.%d build (NVIDIA CUDA Toolkit release notes); any newer "
        "driver works: %s" % (need, cuda[0], cuda[1], DRIVER_DOWNLOAD),
        kind="manual", id="driver-upgrade", action={"driver_min": need},
    )


def _visible_finding(view: _View, severity: Severity) -> Optional[Finding]:
    if view.visible is None or not view.physical:
        return None  # nothing hidden on a machine without GPUs
    shown = ct.visible_device_count(view.visible, len(view.physical))
    if shown is None or shown > 0:
        return None
    evidence = ["CUDA_VISIBLE_DEVICES=%r" % view.visible,
                "nvidia-smi sees %d GPU(s): %s" % (len(view.physical), ", ".join(g.label() for g in view.physical))]
    if (view.torch or {}).get("cuda"):
        evidence += view.torch_evidence()
    if view.lib.get("cuInit") and view.lib.get("cuInit") != "CUDA_SUCCESS":
        evidence.append("cuInit(0): %s" % view.lib["cuInit"])
    return Finding(
        ID, "cuda-visible-devices-hides-all", severity,
        "CUDA_VISIBLE_DEVICES=%r hides every GPU from CUDA: torch will see no device" % view.visible,
        tuple(evidence),
        (env_remedy("Unset CUDA_VISIBLE_DEVICES (or list the GPU indices to use, e.g. CUDA_VISIBLE_DEVICES=0)",
                    "unset-cuda-visible-devices", unset_env=["CUDA_VISIBLE_DEVICES"]),),
        {"variable": "CUDA_VISIBLE_DEVICES", "value": view.visible},
    )


def _no_device(view: _View) -> Finding:
    evidence = []
    smi = view.smi
    if smi.get("error"):
        evidence.append("nvidia-smi: %s" % smi["error"])
    else:
        fb = smi.get("fallback") or smi
        text = (fb.get("stdout") or fb.get("stderr") or "").strip()
        evidence.append("nvidia-smi: exit status %s%s" % (fb.get("returncode"), ": " + text.splitlines()[0] if text else ""))
    evidence.append("%s: %s" % (PROC_VERSION, view.proc.get("version") or view.proc.get("error")))
    if view.lib.get("loaded"):
        evidence.append("libcuda: cuInit %s, %s device(s)" % (view.lib.get("cuInit"), view.lib.get("device_count")))
    else:
        evidence.append("libcuda: %s" % view.lib.get("error"))
    evidence += view.torch_evidence()
    remedies: List[Remedy] = []
    t = view.torch
    if t and t.get("cuda"):
        remedies.append(pip_remedy(
            "If this machine should have an NVIDIA GPU, install its driver (%s). If it has none, the CPU wheel of "
            "torch is GBs smaller than this CUDA %s build" % (DRIVER_DOWNLOAD, t["cuda"]),
            "torch-cpu-wheel", view.env, install=["torch==%s+cpu" % t["version"].split("+")[0]],
            index_url=ct.DOWNLOAD_INDEX + "cpu",
        ))
    title = "no CUDA device: no NVIDIA GPU or driver found"
    if view.driver:
        title = "no CUDA device: NVIDIA driver %s is installed but no GPU is visible" % view.driver
    return Finding(ID, "no-cuda-device", Severity.INFO, title, tuple(evidence), tuple(remedies), {"device": "cuda"})


def _driver_findings(view: _View, build: ct.Cuda) -> List[Finding]:
    t = view.torch or {}
    support = ct.driver_support(build, view.driver, view.driver_cuda, view.system)
    if support in ("full", "unknown"):
        return []
    row = ct.min_driver(build, view.system)
    family = ct.family_min_driver(build[0], view.system)
    subject = {"package": "torch", "version": t.get("version"), "cuda": t.get("cuda"), "driver": view.driver}
    if support == "minor-compat":
        return [Finding(
            ID, "driver-minor-compat", Severity.WARNING,
            "torch is built for CUDA %s but the driver supports an older CUDA %d.x: it runs through minor-version "
            "compatibility, PTX JIT (torch.compile/Triton, +PTX kernels) may fail" % (t.get("cuda"), build[0]),
            (view.driver_text(), "CUDA %s wants driver >= %s for every feature (NVIDIA CUDA Toolkit release notes)" % (t.get("cuda"), row)),
            (_driver_remedy(view, row or family or "?", build),),
            subject,
        )]
    evidence = [view.driver_text(),
                "torch %s is built for CUDA %s: needs driver >= %s (CUDA %d.x minor-version compatibility: >= %s)"
                % (t.get("version"), t.get("cuda"), row or "?", build[0], family or "none")]
    evidence += view.torch_evidence()
    choice = view.wheel(prefer=t.get("version"))
    return [Finding(
        ID, "driver-too-old", Severity.ERROR,
        "the NVIDIA driver is too old for this torch (CUDA %s build): CUDA is unavailable" % t.get("cuda"),
        tuple(evidence),
        (_driver_remedy(view, row or family or "?", build),
         _wheel_remedy(view, choice, "Or install the torch wheel built for this driver", "torch-wheel-for-driver")),
        subject,
    )]


def _arch_findings(view: _View, arch: Any) -> List[Finding]:
    t = view.torch or {}
    findings: List[Finding] = []
    entries = " ".join(a.text for a in ct.parse_arch_list(arch)) or "(empty)"
    for gpu in view.judged_gpus():
        if gpu.cap is None:
            continue
        cover = ct.arch_coverage(arch, gpu.cap)
        if cover is not None and cover[0] == "native":
            continue
        choice = view.wheel(prefer=t.get("version"))
        subject = {"device": gpu.id, "name": gpu.name, "capability": ct.capability_text(gpu.cap),
                   "package": "torch", "version": t.get("version")}
        if cover is None:
            evidence = [
                "%s; torch %s carries %s" % (gpu.label(), t.get("version"), entries),
                "%s and no PTX compute_XY with XY <= %d%d: kernels fail with \"%s\""
                % ("no sm_%d%d cubin (Jetson parts need their exact one)" % gpu.cap if gpu.cap in ct.EXACT_ONLY
                   else "no cubin sm_%dY with Y <= %d" % gpu.cap, gpu.cap[0], gpu.cap[1], NO_KERNEL_IMAGE),
            ]
            if any(a.kind == "sm" and a.major == gpu.cap[0] for a in ct.parse_arch_list(arch)):
                evidence.append("torch's _check_cubins() warning compares only the major version (sm_%d*), so it "
                                "does not fire for this GPU" % gpu.cap[0])
            findings.append(Finding(
                ID, "no-kernel-image", Severity.ERROR,
                "%s has no kernels in this torch build: every CUDA op will fail with \"no kernel image is available\""
                % gpu.label(),
                tuple(evidence + [w for w in view.torch_evidence() if "sm_" in w or "capability" in w]),
                (_wheel_remedy(view, choice, "Install a torch wheel that carries sm_%d%d" % gpu.cap, "torch-wheel-for-gpu"),),
                subject,
            ))
        else:
            build = ct.parse_cuda(t.get("cuda"))
            jit_blocked = build is not None and ct.driver_support(build, view.driver, view.driver_cuda, view.system) == "minor-compat"
            evidence = ["%s; torch %s carries %s" % (gpu.label(), t.get("version"), entries),
                        "first use JIT-compiles every kernel (minutes), needs a driver as new as torch's CUDA %s, and the "
                        "bundled cuBLAS/cuDNN may still lack kernels for this GPU" % t.get("cuda")]
            if jit_blocked:
                evidence.append("%s is older than CUDA %s: the JIT fails with \"the provided PTX was compiled with an "
                                "unsupported toolchain\"" % (view.driver_text(), t.get("cuda")))
            findings.append(Finding(
                ID, "ptx-jit-only", Severity.ERROR if jit_blocked else Severity.WARNING,
                "%s has no native kernels in this torch build, only PTX (%s) that the driver must JIT-compile"
                % (gpu.label(), cover[1]),
                tuple(evidence),
                (_wheel_remedy(view, choice, "Install a torch wheel with native sm_%d%d kernels" % gpu.cap, "torch-wheel-for-gpu"),),
                subject,
            ))
    return findings


def _cufft_findings(view: _View, build: ct.Cuda) -> List[Finding]:
    """cuFFT on each GPU: the live FFT decides where it ran (one that ran is no finding, whatever the table says; one
    that failed is an error, explained by the table where a GPU's cuFFT kernels came after this torch's CUDA, Ada and
    Hopper before 11.8); without it, the table alone warns."""
    t = view.torch or {}
    ffts = {d.get("id"): d["fft"] for d in t.get("devices") or () if isinstance(d.get("fft"), dict)}
    findings: List[Finding] = []
    for gpu in view.judged_gpus():
        need = ct.CUFFT_FIRST_CUDA.get(gpu.cap) if gpu.cap else None
        too_old = need is not None and build < need
        fft = ffts.get(gpu.id)
        if (fft and fft.get("ok")) or (not fft and not too_old):
            continue
        if fft and "out of memory" in str(fft.get("error") or "").lower():
            continue  # a full GPU refused the FFT's buffers: device-memory's finding, not cuFFT's
        subject = {"device": gpu.id, "name": gpu.name, "capability": ct.capability_text(gpu.cap), "package": "torch",
                   "version": t.get("version")}
        live = ("%s: torch.fft.rfft float32 (%d points) fails: %s" % (gpu.id, (fft.get("shape") or [0])[0], fft.get("error"))
                if fft else None)
        choice = view.wheel(prefer=t.get("version"))
        if not too_old:  # cuFFT fails although this CUDA has kernels for the GPU: the library itself
            findings.append(Finding(
                ID, "cufft-failed", Severity.ERROR,
                "%s: cuFFT fails here (torch %s, CUDA %s): every FFT (torch.fft, torch.stft, audio features) fails with it"
                % (gpu.label(), t.get("version"), t.get("cuda")),
                (str(live),),
                (_wheel_remedy(view, choice, "Reinstall torch with the CUDA libraries it was built for", "torch-wheel-for-gpu"),),
                subject,
            ))
            continue
        assert need is not None
        findings.append(Finding(
            ID, "cufft-too-old-for-gpu", Severity.ERROR if fft else Severity.WARNING,
            "%s needs cuFFT from CUDA %d.%d or later, and torch %s is built with CUDA %s: every FFT (torch.fft, torch.stft, "
            "audio features) %s with \"cuFFT error: CUFFT_INTERNAL_ERROR\"" % (
                gpu.label(), need[0], need[1], t.get("version"), t.get("cuda"), "fails here" if fft else "fails"),
            tuple(x for x in (
                live, "%s; torch %s, CUDA %s" % (gpu.label(), t.get("version"), t.get("cuda")),
                "cuFFT has no kernels for compute capability %s before CUDA %d.%d and does not run older ones forward "
                "(github.com/pytorch/pytorch/issues/88038)" % (ct.capability_text(gpu.cap), need[0], need[1])) if x),
            (_wheel_remedy(view, choice, "Install a torch wheel built with CUDA %d.%d or later" % need, "torch-wheel-for-gpu"),),
            subject,
        ))
    return findings


def _mismatch_finding(view: _View) -> Optional[Finding]:
    texts = [view.smi.get("stdout") or "", view.smi.get("stderr") or "", view.lib.get("cuInit") or ""]
    hit = [x.strip().splitlines()[0] for x in texts if "Driver/library version mismatch" in x or "SYSTEM_DRIVER_MISMATCH" in x]
    if not hit:
        return None
    return Finding(
        ID, "driver-library-mismatch", Severity.ERROR,
        "the loaded NVIDIA kernel module and the user-space driver library differ (driver updated without reboot)",
        tuple(hit + ["%s: %s" % (PROC_VERSION, view.proc.get("version") or view.proc.get("error"))] + view.torch_evidence()),
        (Remedy("Reboot the machine (or unload and reload the nvidia kernel modules) so that the kernel module "
                "matches the installed driver", kind="manual", id="reboot-after-driver-update"),),
        {"driver": view.driver},
    )


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    view = _View(facts, env)
    t = view.torch
    findings: List[Finding] = []

    mismatch = _mismatch_finding(view)
    if mismatch is not None and not view.gpus_present:
        return [mismatch]
    if not view.gpus_present:
        if t and t.get("hip"):
            return [_rocm_info(view)]
        build = ct.parse_cuda((t or {}).get("cuda"))
        too_old = [f for f in (_driver_findings(view, build) if build else []) if f.code == "driver-too-old"]
        if too_old:  # a driver answered (e.g. torch's "found version N") but is too old to list GPUs
            return too_old
        return [_no_device(view)]
    if mismatch is not None:
        findings.append(mismatch)

    if t is None:  # torch missing or not importable: torch-install reports that as an error
        choice = view.wheel()
        imp = facts.get("torch_import") or {}
        findings.append(Finding(
            ID, "torch-wheel-for-driver", Severity.INFO,
            "torch is not importable; the CUDA wheel for this driver and these GPUs is %s"
            % ("torch %s from %s" % (choice.torch, choice.index_url) if choice else "not in envdoctor's tables"),
            tuple(x for x in (view.driver_text(), "GPUs: " + ", ".join(g.label() for g in view.judged_gpus()),
                              imp.get("error")) if x),
            (_wheel_remedy(view, choice, "Install torch for this driver", "torch-wheel-for-driver"),),
            {"package": "torch"},
        ))
        hidden = _visible_finding(view, Severity.WARNING)
        return findings + ([hidden] if hidden else [])

    if t.get("hip"):
        findings.append(_rocm_info(view))
        if view.physical and not t.get("is_available"):
            choice = view.wheel()
            findings.append(Finding(
                ID, "rocm-torch-on-nvidia", Severity.WARNING,
                "this is a ROCm (AMD) build of torch but the GPUs here are NVIDIA: it sees none of them",
                ("torch %s (HIP %s)" % (t.get("version"), t.get("hip")),
                 "nvidia-smi: " + ", ".join(g.label() for g in view.physical)),
                (_wheel_remedy(view, choice, "Install the CUDA build of torch", "torch-wheel-for-driver"),),
                {"package": "torch", "version": t.get("version")},
            ))
        return findings

    build = ct.parse_cuda(t.get("cuda"))
    if build is None:  # CPU-only wheel on a machine with an NVIDIA GPU
        choice = view.wheel(prefer=t.get("version"))
        evidence = ["torch %s is a CPU-only build (torch.version.cuda is None)" % t.get("version"),
                    view.driver_text(),
                    "GPUs: " + ", ".join(g.label() for g in (view.physical or view.torch_gpus))]
        if t.get("init_error"):
            evidence.append("torch.cuda.init(): %s" % t["init_error"])
        findings.append(Finding(
            ID, "cpu-only-torch", Severity.ERROR,
            "torch %s is a CPU-only build on a machine with an NVIDIA GPU: nothing will run on the GPU" % t.get("version"),
            tuple(evidence),
            (_wheel_remedy(view, choice, "Install the CUDA build of torch for this driver", "torch-cuda-wheel"),),
            {"package": "torch", "version": t.get("version")},
        ))
        hidden = _visible_finding(view, Severity.WARNING)
        return findings + ([hidden] if hidden else [])

    driver = _driver_findings(view, build)
    findings.extend(driver)
    hidden = _visible_finding(view, Severity.ERROR)
    if hidden is not None:
        findings.append(hidden)
    arch = t.get("arch_flags") if t.get("arch_flags") is not None else t.get("arch_list")
    if ct.parse_arch_list(arch):
        findings.extend(_arch_findings(view, arch))
    findings.extend(_cufft_findings(view, build))
    explained = any(f.severity is Severity.ERROR for f in findings)
    if not t.get("is_available") and not explained:
        findings.append(Finding(
            ID, "cuda-init-failed", Severity.ERROR,
            "torch %s (CUDA %s) cannot initialise CUDA although NVIDIA GPUs are present" % (t.get("version"), t.get("cuda")),
            tuple([view.driver_text()] + view.torch_evidence()
                  + (["cuInit(0): %s" % view.lib["cuInit"]] if view.lib.get("cuInit") else [])),
            (Remedy("Run `nvidia-smi`; check that /dev/nvidia* exist in this container (--gpus all) and that the driver "
                    "loads; then retry", kind="manual", id="check-driver"),),
            {"package": "torch", "version": t.get("version")},
        ))
    return findings


def _rocm_info(view: _View) -> Finding:
    t = view.torch or {}
    return Finding(
        ID, "rocm-build", Severity.INFO,
        "torch %s is a ROCm build (HIP %s): NVIDIA driver and arch rules do not apply" % (t.get("version"), t.get("hip")),
        ("torch.version.hip = %s" % t.get("hip"), "devices: %s" % (", ".join(
            "%s (%s)" % (d.get("id"), d.get("name")) for d in t.get("devices") or []) or "none")),
        (), {"package": "torch", "version": t.get("version")},
    )


def summarize(facts: Dict[str, Any]) -> str:
    view = _View(facts, Target())
    t = view.torch
    parts: List[str] = []
    if view.driver or view.driver_cuda:
        parts.append(view.driver_text().split(" (")[0])
    else:
        parts.append("no NVIDIA driver")
    if t is None:
        parts.append("torch not importable")
    elif t.get("hip"):
        parts.append("torch ROCm %s" % t.get("hip"))
    else:
        parts.append("torch %s" % ("CUDA %s" % t["cuda"] if t.get("cuda") else "CPU-only"))
    gpus = view.judged_gpus() or view.physical
    if gpus:
        parts.append("%d GPU(s): %s" % (len(gpus), ", ".join("%s %s" % (g.name, ct.capability_text(g.cap)) for g in gpus)))
        if view.physical and not view.torch_gpus and ct.visible_device_count(view.visible, len(view.physical)) == 0:
            parts[-1] += " (all hidden by CUDA_VISIBLE_DEVICES=%r)" % view.visible
    else:
        parts.append("no GPU")
    nvcc = facts.get("nvcc") or {}
    if nvcc.get("release"):
        parts.append("nvcc %s on PATH (build toolkit)" % nvcc["release"])
    return " · ".join(parts)
