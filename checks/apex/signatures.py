"""How apex failures read in a traceback (for `explain`), and what can be said from the text alone."""

from __future__ import annotations

from envdoctor.target.model import Remedy, Signature

from .probe import ALL_EXTENSIONS, CPP_EXTENSIONS, CUDA_EXTENSIONS

# What `explain` can say from a traceback alone; the live findings add the exact commands for this interpreter.
UNINSTALL_IMPOSTOR = Remedy("Uninstall the PyPI package named apex (`pip uninstall apex`): it is a Pyramid web toolkit. NVIDIA apex "
                            "is not on PyPI; build it from github.com/NVIDIA/apex if you need it", id="apex-uninstall")
REBUILD = Remedy("Rebuild NVIDIA apex from its source against the installed torch, with its C++ and CUDA extensions "
                 "(APEX_CPP_EXT=1 APEX_CUDA_EXT=1 pip install -v --no-build-isolation git+https://github.com/NVIDIA/apex), "
                 "or uninstall it: transformers and diffusers fall back to their own code", id="apex-build-from-source")
NO_AMP = Remedy("Use torch's own mixed precision (torch.amp.autocast and torch.amp.GradScaler; transformers/accelerate "
                "`fp16: true`) instead of apex.amp, or build apex 25.05 or older (the last tag with apex.amp) from source",
                id="apex-amp-removed")
FUSED_NORM_REMEDIES = (
    Remedy("Uninstall apex: transformers (4.17 to 5.7) then uses its own T5LayerNorm instead of apex FusedRMSNorm, which "
           "accepts an input of another dtype than its weight", id="apex-uninstall"),
    REBUILD,
    Remedy("Or give the fused norm an input of its weight's dtype: load the model in one dtype (bf16 or fp16 throughout)",
           id="apex-norm-same-dtype"),
)

# The fused norm kernel refusing an input of another dtype than its weight
_NORM_DTYPES = r"expected scalar type (Float|Half|BFloat16) but found (Float|Half|BFloat16)"

_FAILING_MODULES = "|".join(CPP_EXTENSIONS + CUDA_EXTENSIONS + ("fused_adam_cuda", "xentropy_cuda"))

SIGNATURES = (
    Signature("apex-fused-norm-fails", _NORM_DTYPES,
              frames=(r"apex/normalization/fused_layer_norm\.py",), frames_required=True,
              cause="apex FusedRMSNorm/FusedLayerNorm got an input whose dtype differs from its weight's (seed 002: T5 via "
                    "transformers' FusedRMSNorm swap), or an apex built for another torch",
              remedies=FUSED_NORM_REMEDIES),
    # (the same failure where the paste shows only the C++ frames: "frame #1: c10::Half* at::Tensor::data_ptr<c10::Half>()
    # const + 0x44c (... in .../fused_layer_norm_cuda.cpython-36m-x86_64-linux-gnu.so)"; github.com/artitw/text2text/issues/3)
    Signature("apex-fused-norm-fails", _NORM_DTYPES,
              context=(r"\bin \S*fused_layer_norm_cuda\.\w+",), context_required=True,
              cause="apex FusedRMSNorm/FusedLayerNorm got an input whose dtype differs from its weight's, or an apex built for "
                    "another torch",
              remedies=FUSED_NORM_REMEDIES),
    # apex's own input checks in its CUDA kernels (csrc: CHECK_CUDA / CHECK_CONTIGUOUS, "input must be a CUDA tensor")
    # refusing tensors that are on the GPU: the kernel reads them through another torch's ABI (github.com/FoundationVision/
    # InfinityStar/issues/16: on cuda:0, fixed by rebuilding the environment)
    Signature("apex-fused-norm-fails", r"\b\w+ must be a CUDA tensor|\b\w+ must be contiguous",
              frames=(r"apex/normalization/fused_layer_norm\.py",),
              context=(r"apex/normalization/fused_layer_norm\.py|\bfused_layer_norm_cuda\.\w+\(",), context_required=True,
              cause="apex's fused norm kernel refused its input: with the input on the GPU, an apex built for another torch or "
                    "CUDA than the installed one",
              remedies=(REBUILD, FUSED_NORM_REMEDIES[0])),
    Signature("apex-no-cuda-extensions", r"No module named '?fused_layer_norm_cuda'?",
              frames=(r"apex/normalization/fused_layer_norm\.py",),
              cause="apex was built without its CUDA extensions (Python-only build)",
              remedies=(REBUILD,)),
    Signature("apex-no-cuda-extensions", r"No module named '?amp_C'?", frames=(r"apex/",),
              cause="apex was built without its CUDA extensions: the multi-tensor optimizers need amp_C",
              remedies=(REBUILD,)),
    # (any other compiled module of apex's setup.py, its contrib ones included: "No module named 'fast_layer_norm'" from
    # apex.contrib.layer_norm, built only with --fast_layer_norm; the probe's one list of them)
    Signature("apex-no-cuda-extensions", r"No module named '?(%s)'?" % "|".join(
                  m for m in ALL_EXTENSIONS if m not in ("amp_C", "fused_layer_norm_cuda")),
              frames=(r"apex/",), cause="apex was built without its C++/CUDA extensions (or without the contrib one this "
                                        "module needs: each has its own build flag)",
              remedies=(REBUILD,)),
    # Megatron-LM's layers asking for apex's fused kernels ("ColumnParallelLinear was called with gradient_accumulation_fusion
    # set to True but the custom CUDA extension fused_weight_gradient_mlp_cuda module is not found. To use
    # gradient_accumulation_fusion you must install APEX with --cpp_ext and --cuda_ext", megatron/core/tensor_parallel/layers.py)
    Signature("apex-no-cuda-extensions", r"you must install APEX with --cpp_ext and --cuda_ext|"
                                         r"CUDA extension fused_weight_gradient_mlp_cuda module is not found",
              cause="apex was built without the CUDA extensions Megatron's fused layers need (fused_weight_gradient_mlp_cuda)",
              remedies=(REBUILD, Remedy("Or turn the fusion off (Megatron's --no-gradient-accumulation-fusion; ms-swift's "
                                        "--gradient_accumulation_fusion false)", id="gradient-accumulation-fusion-off"))),
    # apex's fused optimizers refuse to start without amp_C: "apex.optimizers.FusedAdam requires cuda extensions"
    # (apex/optimizers/fused_adam.py, fused_lamb.py, fused_sgd.py, fused_novograd.py; github.com/NVlabs/imaginaire/issues/6)
    Signature("apex-no-cuda-extensions", r"apex\.[\w.]+ requires cuda extensions",
              cause="apex was built without its CUDA extensions: its fused optimizers need amp_C",
              remedies=(REBUILD,)),
    # apex's own warning when its Python-only build is imported ("Warning: apex was installed without --cuda_ext. Fused
    # syncbn kernels will be unavailable." in apex/parallel/__init__.py; "... without --cpp_ext. Falling back to Python
    # flatten and unflatten." in apex/parallel/distributed.py)
    Signature("apex-no-cuda-extensions", r"apex was installed without --(cuda|cpp)_ext",
              cause="apex was built without its C++/CUDA extensions (Python-only build): its fused kernels are unavailable",
              remedies=(REBUILD,)),
    # the impostor's apex/interfaces.py calls zope.interface's Python 2 `implements(IApex)`, which Python 3 refuses
    # ("Class advice impossible in Python3. Use the @implementer class decorator instead."; github.com/NVIDIA/apex/issues/116)
    # (not Twisted's own Python 2 interfaces, which zope.interface refuses the same way: "twisted/internet/_threadedselect.py
    # ... implements(IReactorFDSet)")
    Signature("apex-impostor", r"Class advice impossible in Python ?3", frames=(r"apex/interfaces\.py",),
              unless=(r"(site|dist)-packages[\\/]+twisted[\\/]",),
              cause="the PyPI package named apex (a Pyramid web toolkit for Python 2) is installed instead of NVIDIA apex",
              remedies=(UNINSTALL_IMPOSTOR,)),
    # A library's own guard when it cannot import apex's fused kernels (ColossalAI's "Please install apex from source
    # (https://github.com/NVIDIA/apex) to use the fused RMS normalization kernel"): apex absent, the impostor, or a
    # Python-only build; the apex check tells which
    Signature("apex-no-cuda-extensions", r"(?i:please install (NVIDIA )?apex) from source",
              cause="the library needs NVIDIA apex's compiled kernels and could not import them: apex is missing, is the PyPI "
                    "impostor, or was built without its CUDA extensions",
              remedies=(REBUILD,)),
    # (or as an assertion: timm's "APEX and CUDA required for fused optimizers"; github.com/rwightman/efficientdet-pytorch/issues/241)
    Signature("apex-no-cuda-extensions", r"\bAPEX( and CUDA)? (is )?required for\b",
              cause="the code needs NVIDIA apex's compiled kernels (its fused optimizers) and could not import them: apex is "
                    "missing, is the PyPI impostor, or was built without its CUDA extensions",
              remedies=(REBUILD,)),
    # (the same guard written as a try/except around `import apex`, failing later on the name itself)
    Signature("apex-no-cuda-extensions", r"name [\"']apex[\"'] is not defined",
              cause="the script's guarded `import apex` failed: NVIDIA apex is missing, is the PyPI impostor, or was built "
                    "without the compiled modules the script imports with it (amp_C)",
              remedies=(REBUILD,)),
    # `pip install apex` building the impostor's own dependencies (cryptacular, velruse: Pyramid's, never NVIDIA apex's), as a
    # pip log shows them failing (github.com/NVIDIA/apex/issues/170: "fatal error: gnu-crypt.h" while building cryptacular)
    Signature("apex-impostor", r"(?i:pip-(install|build)-\w+[\\/]+(cryptacular|velruse)[\\/]|"
                               r"(failed building wheel for|running setup\.py install for|building wheel for) (cryptacular|velruse)\b)",
              cause="`pip install apex` installs the PyPI package named apex (a Pyramid web toolkit), whose dependencies fail to "
                    "build; NVIDIA apex is not on PyPI",
              remedies=(UNINSTALL_IMPOSTOR,)),
    Signature("apex-impostor", r"No module named '?(pyramid_mailer|velruse|cryptacular)'?", frames=(r"apex/__init__\.py",),
              cause="the PyPI package named apex (a Pyramid web toolkit) is installed instead of NVIDIA apex",
              remedies=(UNINSTALL_IMPOSTOR,)),
    Signature("apex-impostor", r"No module named '?(pyramid|zope|wtforms|wtforms_recaptcha)(\.[\w.]+)?'", frames=(r"apex/",),
              frames_required=True,
              cause="the PyPI package named apex (a Pyramid web toolkit) is installed instead of NVIDIA apex",
              remedies=(UNINSTALL_IMPOSTOR,)),
    Signature("apex-impostor", r"cannot import name '\w+' from 'pyramid[\w.]*'", frames=(r"apex/",), frames_required=True,
              cause="the PyPI package named apex (a Pyramid web toolkit) is installed instead of NVIDIA apex",
              remedies=(UNINSTALL_IMPOSTOR,)),
    # the impostor's own __init__ imports a name Pyramid 2 removed: the message alone says which apex it is
    Signature("apex-impostor", r"cannot import name 'UnencryptedCookieSessionFactoryConfig'",
              cause="the PyPI package named apex (a Pyramid web toolkit) is installed instead of NVIDIA apex",
              remedies=(UNINSTALL_IMPOSTOR,)),
    # NVIDIA apex removed apex.amp (github.com/NVIDIA/apex/pull/1896, May 2025; first in the 25.07 tag): code written for it
    # (`from apex import amp`) fails on a current build, as it does on the impostor
    # (the impostor has no amp either: where the probe finds it installed, it confirms this reading). Python before 3.7
    # wrote the name alone ("ImportError: cannot import name 'amp'"): apex's, unless the import shown is another package's
    # amp (`from torch.cuda import amp` on a torch before 1.6, `from paddle import amp`)
    # (and current apex's other removal, apex.parallel's DistributedDataParallel; `import apex.amp as amp`)
    Signature("apex-no-amp", r"cannot import name '?amp'? from '?apex'?|module '?apex'? has no attribute '?amp'?|"
                             r"No module named '?apex\.amp'?|cannot import name '?DistributedDataParallel'? from '?apex\.parallel'?|"
                             r"cannot import name '?amp'?[ \t]*(\n|$)",
              unless=(r"from (?!apex\b)[\w.]+ import \(?\s*(\w+,\s*)*amp\b",),
              confirmed_by=("apex:apex-impostor", "apex:apex-no-amp"),
              cause="this apex has no apex.amp: NVIDIA removed it from current apex (or the installed apex is the PyPI "
                    "impostor); code that needs it wants torch.amp, or an apex release from before the removal",
              remedies=(NO_AMP, UNINSTALL_IMPOSTOR)),
    # an apex.amp that is there but lacks the API the code calls ("module 'apex.amp' has no attribute 'initialize'": a
    # container's apex from before amp.initialize, github.com/NVIDIA/DeepLearningExamples Mask R-CNN, fixed by building
    # the apex the code was written for)
    Signature("apex-stale", r"module '?apex\.amp'? has no attribute '?(initialize|scale_loss|master_params|state_dict)'?",
              cause="the installed apex's amp lacks the API this code calls: an apex older (or newer) than the one the code "
                    "was written for, or a partial install",
              remedies=(REBUILD, NO_AMP)),
    # code that imports apex.amp in a try/except (`try: from apex import amp` ... `except ImportError: pass`) fails later on
    # the name itself; apex.amp's own calls (torch.amp has neither) name whose amp it wanted
    Signature("apex-no-amp", r"NameError: name '?amp'? is not defined", context=(r"\bamp\.(initialize|scale_loss|master_params)\(",),
              confirmed_by=("apex:apex-impostor", "apex:apex-no-amp"),
              cause="apex.amp could not be imported (no NVIDIA apex, one built without it, or a current apex that removed it), "
                    "and the script's guarded import left the name amp undefined",
              remedies=(NO_AMP, REBUILD)),
    # apex.amp before its fix replaced optimizer.step with a plain function; torch 1.3's LR schedulers wrap the step as a
    # bound method and fail on it (github.com/NVIDIA/apex/issues/552: "update to a newer apex")
    # torch 2.0 removed torch._six, which apex's amp imported until github.com/NVIDIA/apex/pull/1049: an apex checkout older
    # than the torch beside it (apex/amp/_amp_state.py: "from torch._six import container_abcs")
    # (torch 1.8 had already taken container_abcs out of torch._six: "cannot import name 'container_abcs' from 'torch._six'",
    # github.com/pytorch/pytorch/issues/51959, fixed by the same apex pull request)
    Signature("apex-stale", r"No module named '?torch\._six'?|cannot import name '?\w+'? from '?torch\._six'?",
              context=(r"[\\/]apex[\\/]",), context_required=True,
              cause="apex is older than the installed torch: it imports from torch._six what newer torch removed (torch._six "
                    "itself in 2.0)",
              remedies=(REBUILD, NO_AMP)),
    # (the name apex's amp imported, with no path in view: "cannot import name 'container_abcs' from 'torch._six'" is apex's
    # _amp_state.py in its threads, unless timm 0.3's helpers, which imported it too, are in view)
    Signature("apex-stale", r"cannot import name '?container_abcs'?( from '?torch\._six'?)?", unless=(r"\btimm\b",),
              cause="most likely apex is older than the installed torch: its amp imports container_abcs from torch._six, "
                    "which torch 1.8 removed (other code of that age did too: the traceback's path says whose)",
              remedies=(REBUILD, NO_AMP)),
    # (and torch.nn.backends, which torch 1.3 removed under old apex.amp's function wrappers: github.com/NVIDIA/apex/issues/460,
    # fixed by github.com/NVIDIA/apex/pull/466); not a user's `nn.backends.cudnn` for `torch.backends.cudnn`
    Signature("apex-stale", r"module '?torch\.nn'? has no attribute '?backends'?", unless=(r"\bnn\.backends\.cudnn\b",),
              cause="most likely apex is older than the installed torch: its amp wraps torch.nn.backends, which torch 1.3 removed",
              remedies=(REBUILD, NO_AMP)),
    # apex's own setup.py refusing to build its extensions with an nvcc of another CUDA than torch's
    # (check_cuda_torch_binary_vs_bare_metal, github.com/NVIDIA/apex/blob/master/setup.py: "Cuda extensions are being
    # compiled with a version of Cuda that does not match the version used to compile Pytorch binaries")
    Signature("apex-no-cuda-extensions", r"Cuda extensions are being compiled with a version of Cuda that does not match the "
                                         r"version used to compile Pytorch binaries",
              cause="apex's build stops before its CUDA extensions: the CUDA toolkit (nvcc) building it is another release "
                    "than the CUDA torch was built with",
              remedies=(Remedy("Build apex with the CUDA toolkit of torch's own CUDA release (CUDA_HOME pointing at it, its "
                               "nvcc first on PATH), or install the torch wheel built for the toolkit you have",
                               id="apex-toolkit-matches-torch"), NO_AMP)),
    # the scripts of the BERT era (pytorch-pretrained-BERT, transformers' and fairseq's examples) wrapping a failed
    # `import apex` in their own words: the code needs NVIDIA apex, and the apex here is missing, the impostor or broken
    # (and the trainers' own: "... to run this example", Lightning's "You have asked for Apex AMP but you have not installed
    # it", "Using FP16 with APEX but APEX is not installed")
    Signature("apex-no-amp", r"Please install apex from https?://(www\.)?github\.com/nvidia/apex to (use (distributed and )?fp16|run this)|"
                             r"You have asked for Apex AMP but you have not installed it|(?i:Using FP16 with APEX but APEX is not installed)",
              confirmed_by=("apex:apex-impostor", "apex:apex-no-amp"),
              cause="the script needs NVIDIA apex for fp16 or distributed training, and `import apex` failed here (not "
                    "installed, the PyPI impostor, or a build without its extensions)",
              remedies=(NO_AMP, REBUILD, UNINSTALL_IMPOSTOR)),
    # apex.amp's own check that the model's parameters are fp32 when amp.initialize receives them (apex/amp/_initialize.py:
    # "Found param ... with type torch.cuda.HalfTensor, expected torch.cuda.FloatTensor. When using amp.initialize, you do
    # not need to call .half() on your model before passing it"): the code halved the model itself
    Signature("apex-amp-misuse", r"When using amp\.initialize, you do not need to call \.half\(\) on your model", in_code=True,
              cause="the code casts the model to fp16 itself before apex's amp.initialize, which wants fp32 parameters and "
                    "does the casting for the chosen opt_level",
              remedies=(Remedy("Drop the `.half()` before `amp.initialize(model, optimizer, opt_level=...)`; or move to torch's own "
                               "autocast and GradScaler", id="amp-no-half"), NO_AMP)),
    # apex's fused-norm autograd Functions called with another signature than the installed apex has (its
    # FusedLayerNormAffineFunction gained `memory_efficient`: "forward() missing 1 required positional argument:
    # 'memory_efficient'"): the calling code (transformers, Megatron) and apex are of different ages
    Signature("apex-stale", r"Fused\w*Function\.(forward|apply)\(\) (missing \d+ required positional arguments?|"
                            r"takes \d+ positional arguments? but \d+ (were|was) given)",
              cause="apex and the code calling its fused kernels are of different ages: the Function's arguments changed "
                    "between apex releases",
              remedies=(Remedy("Build the apex release of the calling code's time (or update that code), or uninstall apex: "
                               "transformers falls back to its own layer norms", id="apex-matching-caller"), REBUILD)),
    # apex and torch of different ages either way: apex's own files calling a torch API this torch lacks (current apex's
    # `hasattr(torch.library, "custom_op")` under torch 1.6-1.10: "module 'torch' has no attribute 'library'"; an old
    # apex importing what newer torch moved)
    Signature("apex-stale", r"module '?torch(\.\w+)*'? has no attribute '?\w+|cannot import name '?\w+'? from '?torch(\.[\w.]+)?'?",
              frames=(r"(^|/)apex/",), frames_required=True,
              cause="apex and the installed torch are of different ages: apex's code calls a torch API this torch does not have",
              remedies=(Remedy("Build the apex tag of the installed torch's time (its tags follow NVIDIA's containers: 22.02 "
                               "for torch 1.10), or upgrade torch to one the apex checkout supports", id="apex-matching-tag"),
                        REBUILD)),
    Signature("apex-stale", r"'function' object has no attribute '__self__'", frames=(r"torch/optim/lr_scheduler\.py",),
              frames_required=True,
              cause="an old apex.amp patched optimizer.step as a plain function, which torch's LR schedulers (1.3+) cannot wrap",
              remedies=(REBUILD, NO_AMP)),
    # (not where Python found a plain file by that name, "No module named 'apex.normalization'; 'apex' is not a package":
    # the user's own apex.py shadows whatever apex is installed)
    Signature("apex-impostor", r"No module named '?apex\.(normalization|optimizers|multi_tensor_apply)(?!'?; '?apex'? is not a package)'?",
              cause="the installed apex has no NVIDIA modules: the PyPI web toolkit of that name, or a broken install",
              remedies=(UNINSTALL_IMPOSTOR,)),
    # (and on Windows: "DLL load failed while importing amp_C: The specified procedure could not be found."; the module names
    # are the probe's, with the two contrib modules the trainers import by name, fused_adam_cuda and Megatron's xentropy_cuda)
    Signature("apex-extension-abi", r"\b(%s)\.\S*\.so: undefined symbol(: \S+)?|DLL load failed while importing (%s)\b"
                                    % (_FAILING_MODULES, _FAILING_MODULES),
              cause="an apex extension compiled against another torch",
              remedies=(REBUILD,)),
    Signature("apex-extension-abi", r"undefined symbol", frames=(r"(^|/)apex/",), frames_required=True,
              cause="an apex extension compiled against another torch",
              remedies=(REBUILD,)),
)
