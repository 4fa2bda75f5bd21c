"""extension-abi: do the compiled extensions of this stack (torchvision, torchaudio,
triton, xformers, flash-attn, bitsandbytes, NVIDIA apex) load against the
installed torch, and are their versions the ones paired with it?

The probe imports each installed extension for real (that is the only test that
counts: `undefined symbol: ...`, `operator torchvision::nms does not exist`,
xformers' "can't load C++/CUDA extensions" warning), recording the exception,
the warnings, log records and anything written to stdout/stderr during the
import. The rules compare the installed versions with the pins each companion
declares (its Requires-Dist) and with the release tables below, and give the
exact pip command that installs the companion paired with the installed torch,
with torch pinned on the same command line so that pip cannot swap it.

One module per job: `probe` (worker side: the imports, as guarded steps), `pairing`
(the release tables and which companion is paired with which torch), `rules` (the
findings and remedies).

It runs late (order 70): importing extensions registers operators and can print,
warn or even crash, and should not disturb the checks before it.
"""

from __future__ import annotations

from envdoctor.target.model import Check, Remedy, Signature

from ..apex.probe import CUDA_EXTENSIONS as APEX_CUDA_EXTENSIONS
from ..cuda_compat.signatures import LOCATED_NO_KERNEL
from ..torch_install import MACHO_WRONG_CPU, PACKAGE_C_LOGGED, SPLIT_CUDA_LIBRARY, TENSORFLOW_LOADER, TORCH_CORE_NOT_FOUND, TORCH_VARIANT_BY_CTYPES
from .probe import probe
from .rules import ID, diagnose, summarize

# apex's own extensions are apex's (its check knows how to rebuild them).
_EXT_FRAMES = (r"(site|dist)-packages[/\\](torchvision|torchaudio|xformers|flash_attn|bitsandbytes|triton)[/\\]",
               r"flash_attn_2_cuda")

# The cause of a compiled extension missing a symbol or an operator of the installed torch, however the log names it
BUILT_FOR_ANOTHER_TORCH = "a compiled extension was built against another torch release or CUDA than the installed ones"

# What `explain` can say from a traceback alone; the live findings name the paired release for this torch.
REINSTALL_EXTENSION = Remedy("Install the extension's release built for the installed torch (`envdoctor check --only "
                             "extension-abi` names it, `envdoctor fix` installs it with torch pinned), or build it from source "
                             "against this torch with `--no-build-isolation`", id="reinstall-extension")

# Packages that compile C++/CUDA against torch's libraries: when one of them cannot load libtorch*.so,
# the package was built for another torch (torch itself imported), not a broken torch.
_COMPANION_FRAMES = (r"(site|dist)-packages/(torch_sparse|torch_scatter|torch_cluster|torch_spline_conv|torch_geometric|mmcv|"
                     r"detectron2|pytorch3d|torchvision|torchaudio|xformers|flash_attn|bitsandbytes|transformer_engine|"
                     r"deepspeed|vllm)/",)

# How packages name their compiled modules by convention: exllamav2_ext, fused_*_cuda, *_kernels, torch_directml_native,
# awq_inference_engine
COMPILED_SUFFIX = r"(_ext|_cuda|_kernels?|_native|_inference_engine)"

# CPython's own compiled modules, shipped as .pyd files in a Windows install's DLLs folder
# (https://docs.python.org/3/using/windows.html): their DLL failures are the Python install's, never an extension's
PYTHON_OWN_MODULES = (r"_(asyncio|bz2|ctypes|decimal|elementtree|hashlib|lzma|msi|multiprocessing|overlapped|queue|socket|"
                      r"sqlite3|ssl|tkinter|uuid|wmi|zoneinfo)")

# Another package's compiled module, reached through a companion's import (torchvision imports Pillow): Pillow's
# _imaging, OpenCV, numpy's and scipy's own, onnxruntime's; the desktop libraries' own (pywin32's win32api and
# pywintypes, Qt's QtCore/QtGui through matplotlib); and the compiled cores of the everyday packages beside torch
# (cryptography's _rust, cffi's _cffi_backend, tokenizers, sentencepiece, onnx, TensorFlow, ray, pydantic-core, MeCab)
OTHER_PACKAGES_DLL = (r"DLL load failed while importing (_imaging\w*|cv2|_multiarray_umath|_ufuncs\w*|_arpack|\w*sparsetools|"
                      r"onnxruntime_pybind11_state|win32\w*|pywintypes|Qt(Core|Gui|Widgets)\w*|_rust|_cffi_backend|tokenizers|"
                      r"_sentencepiece|onnx_cpp2py_export|_pywrap_\w+|_raylet|_pydantic_core|_MeCab)\b")

# Windows' ERROR_PROC_NOT_FOUND (WinError 127: a module loaded, but a symbol it imports is not in the DLLs it found) in the
# languages users paste it in; learn.microsoft.com/windows/win32/debug/system-error-codes--0-499- (the translations are
# Windows' own for each UI language; "The specified program cannot be found" is how a retyped Chinese one reads back)
PROC_NOT_FOUND = (r"(?i:the specified (procedure|program) (could not|cannot|can't|couldn't) be found)|找不到指定的程序|"
                  r"指定されたプロシージャが見つかりません|Die angegebene Prozedur wurde nicht gefunden|"
                  r"(?i:la procédure spécifiée est introuvable)|Не найдена указанная процедура|"
                  r"(?i:no se encontró el procedimiento especificado)|지정된 프로시저를 찾을 수 없습니다|"
                  r"(?i:impossibile trovare la procedura specificata)|(?i:não foi possível encontrar o procedimento especificado)")

# The library that fails is torch's own (torch/lib/libshm.so, libtorch_cpu.so): torch-install's, whoever imported it
TORCH_OWN_LIBRARY = r"torch[\\/]+(lib[\\/]+lib\w+|_C[\w.-]*)\.so[.\d]*: undefined symbol"  # its libraries, its own _C
# torch's own import in a traceback's frames: where it is the one failing, the failure is torch-install's
TORCH_OWN_IMPORT = r"[\\/]torch[\\/]__init__\.py"

# An import of a package other than torch and its companions, as a paste shows it (a code line, a notebook cell's echo, a
# `>>>` prompt), or an integration's "Could not import <package>"
_OTHER_IMPORT = (r"^\s*(>>>\s*|-*>?\s*\d+\s+)?(from (?!(torch|torchvision|torchaudio|os|sys|typing|__future__|tensorflow|keras)\b)"
                 r"[\w.]+ import\b|"
                 r"import (?!(torch|torchvision|torchaudio|os|sys|re|json|time|math|numpy|typing|tensorflow|keras)\b)[a-z_]\w*\s*$|"
                 # (or a compiled module aliased, named as research code names its ops or by a compiled suffix: "import
                 # MultiScaleDeformableAttention as MSDA"; not "import pandas as pd")
                 + r"import ([A-Z]\w*|\w+%s)\s+as\s+\w+\s*$)|" % COMPILED_SUFFIX
                 + r"Could not import \w+ python package")

# What the readings of a symbol or a library of torch's missing under an extension say, written once
SYMBOL_NOT_IN_TORCH = "a compiled extension was built against another torch: a symbol it needs is not in the loaded torch"
LOADS_TORCH_ITSELF = ("a compiled extension loads torch's libraries itself and cannot find them: import torch before it, or "
                      "install its build for this torch")
BUILD_EXTENSION = Remedy("Build the package's extension against the installed torch: `pip install --no-build-isolation -e .` in "
                         "its source tree (with a CUDA toolkit matching torch's CUDA for its CUDA ops)", id="build-extension")
IMPORT_TORCH_FIRST = Remedy("Import torch before the extension (`import torch` first), so torch's libraries are loaded; if it "
                            "still fails, install the extension's build for this torch", id="import-torch-first")

BUILT_AGAINST_ANOTHER_ABI = ("a compiled extension was built against another torch release or another C++ ABI (cxx11abi "
                             "TRUE/FALSE) than the installed torch")
BUILT_FOR_ANOTHER_RUNTIME = "a compiled extension was built for another CUDA runtime than the one this machine and torch have"
WINDOWS_LOAD_FAILS = "a compiled extension cannot load on Windows: built for another torch or CUDA, or a DLL it needs is missing"
NEEDS_ANOTHER_TORCH_BUILD = ("a compiled companion package needs a torch library this torch does not have: it was built for "
                             "another torch release or CUDA build")

# A kernel without code for this GPU's architecture is built here instead of waiting for a wheel that has it
BUILD_FOR_THIS_GPU = Remedy("Or build the extension here for this GPU (TORCH_CUDA_ARCH_LIST naming its compute capability)",
                            id="build-extension-for-gpu")

SIGNATURES = (
    Signature("import-fails", r"(libtorch\w*|libc10\w*)\.so: cannot open shared object file", frames=_COMPANION_FRAMES,
              frames_required=True, cause=NEEDS_ANOTHER_TORCH_BUILD,
              remedies=(REINSTALL_EXTENSION,)),
    # any other package's compiled module looking for torch's libraries with torch's own import nowhere in the traceback
    # (k2's `import _k2` before `import torch`: "libc10.so: cannot open shared object file"): the extension loads them
    # itself, so it was imported before torch or built against another torch's layout, and torch is not what is broken
    Signature("import-fails", r"(libtorch\w*|libc10\w*)\.so[.\d]*: cannot open shared object file",
              frames=(r"(site|dist)-packages/(?!torch/)[\w-]+/",), frames_required=True, unless=(TORCH_OWN_IMPORT,),
              cause=LOADS_TORCH_ITSELF, remedies=(IMPORT_TORCH_FIRST, REINSTALL_EXTENSION)),
    # (or where the import shown is another package's own compiled module, from a source tree: detectron2's `from
    # detectron2 import _C`)
    Signature("import-fails", r"(libtorch\w*|libc10\w*)\.so[.\d]*: cannot open shared object file",
              context=(r"^\s*from (?!torch\b)[\w.]+ import _C\b|^\s*import (?!torch\b)[\w.]+\._C\b",), context_required=True,
              unless=(TORCH_OWN_IMPORT,),
              cause=LOADS_TORCH_ITSELF, remedies=(IMPORT_TORCH_FIRST, REINSTALL_EXTENSION)),
    # (or with no frame at all, torch's core libraries: "ImportError: libc10.so: cannot open shared object file", which
    # torch's own modules find through their rpath, so a module that links them by name, imported first, fails so)
    Signature("import-fails", TORCH_CORE_NOT_FOUND, unless=(TORCH_OWN_IMPORT,),
              cause=LOADS_TORCH_ITSELF, remedies=(IMPORT_TORCH_FIRST, REINSTALL_EXTENSION)),
    # (or said by ctypes, with no frame: "OSError: libtorch_cuda.so: cannot open shared object file". torch's own import
    # loads its CUDA or ROCm library as an extension module, which fails as an ImportError; an OSError for it is a loader's
    # call, torchaudio's `_load_lib` or torch.ops.load_library of a package built for torch's CUDA or ROCm build under
    # another one)
    Signature("import-fails", TORCH_VARIANT_BY_CTYPES, unless=(TORCH_OWN_IMPORT,),
              cause=NEEDS_ANOTHER_TORCH_BUILD,
              remedies=(REINSTALL_EXTENSION,)),
    # a package logging its own compiled module's import failure (torch_install.PACKAGE_C_LOGGED): a build for another CUDA
    Signature("import-fails", PACKAGE_C_LOGGED,
              cause="a package's compiled module does not load: it was built for another torch or CUDA than the one here",
              remedies=(REINSTALL_EXTENSION,)),
    # a package's prebuilt compiled module needing a newer C library than the system's ("version `GLIBC_2.32' not found
    # (required by .../sam2_train/_C.so)"), or a newer C++ or OpenMP runtime than the one loaded first (libstdc++'s
    # GLIBCXX_/CXXABI_, libgomp's GOMP_4.0 that torch's bundled libgomp lacks: "required by .../libwarpctc.so"); torch's
    # own libraries are torch-install's, bitsandbytes' quantized-base's, and the system's own libraries (/usr/lib/.../libstdc++
    # needing a newer glibc) are no package's
    Signature("import-fails", r"version .(GLIBC(XX)?|CXXABI|GOMP)_[\d.]+' not found \(required by (?![^)\n]*(torch[\\/]+lib|bitsandbytes))"
                              r"(?!(/usr)?/lib(32|64)?/(?![^)\n]*-packages))[^)\n]*\.so\b",
              cause="a compiled extension was built on a newer system than this one (its glibc, libstdc++ or OpenMP runtime)",
              remedies=(Remedy("Build the extension from source on this machine against the installed torch (`pip install "
                               "--no-build-isolation --no-binary :all: <package>`, or the project's own build step), or run it "
                               "on a newer OS or in its container", id="build-extension-here"), REINSTALL_EXTENSION)),
    # a C++ symbol (mangled _Z...: c10::, at::, torch::, std::) or the CUDA runtime's: what a build against another torch
    # lacks; a plain C symbol of the extension's own dependency (sox's WavpackGetMode) is that dependency's build
    # (and torch's C ABI, the shim compiled extensions call since 2.6: torch_library_impl, aoti_torch_*)
    # (nvcc's runtime entry points too: `__cudaPopCallConfiguration`, which nvcc 9.2+ emits, missing from the CUDA runtime
    # torch 0.4 brought: an extension built with another CUDA; github.com/jwyang/faster-rcnn.pytorch/issues/190)
    # (bitsandbytes' own native library is quantized-base's)
    # (not a C++ symbol of the everyday libraries beside torch, whose own builds disagree: Arrow's, protobuf's,
    # sentencepiece's, OpenCV's)
    Signature("import-fails", r"undefined symbol: (_Z\S+|_*cuda\w+|nccl\w+|torch_\w+|aoti_torch_\w+)", frames=_EXT_FRAMES + _COMPANION_FRAMES,
              # (nor cuDNN's own sub-libraries, one cuDNN's against another's: "Could not load library libcudnn_cnn_train.so.8.
              # Error: /usr/local/cuda-12.3/lib64/libcudnn_cnn_train.so.8: undefined symbol: _ZN5cudnn3cnn...", a system cuDNN
              # shadowing torch's; cuDNN cannot start, which is cublas's)
              unless=(TORCH_OWN_LIBRARY, r"libbitsandbytes\w*\.(so|dll)[^\n]*undefined symbol",
                      r"undefined symbol: _ZN?[KRO]*(5arrow|6google8protobuf|13sentencepiece|2cv|5cudnn)\d"),
              cause=BUILT_AGAINST_ANOTHER_ABI,
              remedies=(REINSTALL_EXTENSION,)),
    # (the same with no frame or path in view: a symbol of torch's own C++ namespaces, torch::, c10::, at::, however the
    # paste wrote it, "undefined symbol (_ZN5torch3jit17parseSchemaOrNameERKSs)", is what a build against another torch
    # lacks; where torch's own library or import is the one failing, torch-install reads it)
    # (a member function's ref- or const-qualifier in the mangling, _ZNR5torch7Library4_def..., and the symbol on the line
    # after the colon, as a log that wraps long names prints it)
    # (and torch's Python bindings' plain C names: "undefined symbol: THPVariableClass")
    Signature("import-fails", r"undefined symbol:?\s*\(?(\.{2,3}\s*)?(_ZN?[KRO]*(5torch|3c10|2at)\d+\w+|THP[A-Z]\w+)",
              unless=(TORCH_OWN_LIBRARY, r"torch[/\\]+__init__\.py|^\s*(>>>\s*)?import torch\s*$"),
              cause=BUILT_AGAINST_ANOTHER_ABI,
              remedies=(REINSTALL_EXTENSION,)),
    # The same at link time: a program or extension linked against a libtorch of the other C++ ABI or release ("undefined
    # reference to `c10::detail::torchCheckFail(char const*, ..., std::__cxx11::basic_string<...> const&)'": LAMMPS'
    # pair_nequip against the pip torch's pre-cxx11 libtorch; github.com/mir-group/pair_nequip): a libtorch download of
    # the program's ABI, or the program built with torch's (`torch._C._GLIBCXX_USE_CXX11_ABI`)
    Signature("import-fails", r"undefined references? to .(c10|at|torch|caffe2)::",
              cause="the program or extension is linked against a libtorch built with another C++ ABI (cxx11abi) or from "
                    "another release than the one it was compiled with",
              remedies=(Remedy("Link against a libtorch of the same release and C++ ABI as the build (the cxx11-abi download "
                               "from pytorch.org for a program built with the new ABI, or -D_GLIBCXX_USE_CXX11_ABI set to torch's "
                               "own `torch._C._GLIBCXX_USE_CXX11_ABI`)", id="libtorch-same-abi"),)),
    # A build's own check that the two libraries it links were built with different C++ ABIs (DeePMD-kit's CMake: "PyTorch
    # CXX11 ABI mismatch TensorFlow: 0 != 1"; its op library at load: "This deepmd-kit package was compiled with
    # CXX11_ABI_FLAG=1, but TensorFlow runtime was compiled with CXX11_ABI_FLAG=0")
    Signature("import-fails", r"CXX11[ _]ABI mismatch\b|compiled with CXX11_ABI_FLAG=\d, but \w+( runtime)? was compiled with "
                              r"CXX11_ABI_FLAG=\d",
              cause="the extension links libraries built with different C++ ABIs (cxx11abi): torch's and another framework's, "
                    "or torch's and the extension's own build",
              remedies=(Remedy("Build the extension against libraries of one C++ ABI: torch and the other framework from the same "
                               "channel (both pip or both conda-forge), or -D_GLIBCXX_USE_CXX11_ABI set to torch's own "
                               "`torch._C._GLIBCXX_USE_CXX11_ABI`", id="one-cxx-abi"),)),
    # PyG's compiled companions (torch_scatter, torch_sparse, torch_cluster, torch_spline_conv) load their library with
    # `torch.ops.load_library(importlib.machinery.PathFinder().find_spec(f"_{library}_{suffix}", ...).origin)`: no such
    # module for this device (a CPU wheel's `_cuda` missing, a wheel for another torch) reads "'NoneType' object has no
    # attribute 'origin'"
    Signature("import-fails", r"'NoneType' object has no attribute 'origin'",
              frames=(r"(site|dist)-packages/torch_(scatter|sparse|cluster|spline_conv)/__init__\.py",), frames_required=True,
              cause="a PyG companion (torch_scatter, torch_sparse, torch_cluster, torch_spline_conv) has no compiled library "
                    "for this torch and device: a wheel for another torch or CUDA (or the CPU one)",
              remedies=(REINSTALL_EXTENSION,)),
    # A package's own library under site-packages missing a symbol the paste cut off (an issue title ending at "undefined
    # symbol:"; github.com/traveller59/spconv/issues/579): which symbol is unknown, so only torch's own libraries are excluded
    # (or the module named alone by CPython's ABI tag: "ImportError causal_conv1d_cuda.cpython-310-x86_64-linux-gnu.so
    # undefined symbol"; a bare `_C` could be torch's own)
    # (or a module straight under site-packages, torch_xla's "_XLAC.cpython-37m-x86_64-linux-gnu.so: undefined symbol:")
    Signature("import-fails", r"(site|dist)-packages[\\/]+(?!torch[\\/])(\w+[\\/])?\S*\.so[.\d]*: undefined symbol:?\s*$|"
                              r"(?<![\w/\\.])(?!_C\.)\w+\.cpython-[\w-]+\.so:? undefined symbol:?\s*$",
              unless=(TORCH_OWN_LIBRARY,),
              cause=BUILT_FOR_ANOTHER_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # (or a title that names only the package and the symptom: "flash_attn_2 undefined symbol", "xformers undefined
    # symbol error"; bitsandbytes' and apex's own libraries are their checks', torch's own "torch ... undefined symbol"
    # torch-install's)
    # (and a compiled module named alone by its convention's suffix, "_version_cpu.so: undefined symbol", torch-scatter's)
    Signature("import-fails", r"(?<![\w/\\.-])(?!lib)\w+(%s|_cpu)\.(so|pyd)[.\d]*:? undefined symbol" % COMPILED_SUFFIX,
              unless=(TORCH_OWN_LIBRARY,),
              cause=BUILT_FOR_ANOTHER_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    Signature("import-fails", r"^\W*(flash_attn\w*|xformers|torch_(sparse|scatter|cluster|spline_conv)|mmcv\w*|detectron2|"
                              r"pytorch3d|torchvision|torchaudio|transformer_engine|deepspeed|vllm|\w+%s)\W{0,3}(\w+\W{1,3}){0,2}?"
                              r"undefined symbol\b(\W*error)?\W*$" % COMPILED_SUFFIX,
              cause=BUILT_FOR_ANOTHER_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # pybind11's own check of the Python a module was built for ("ImportError: Python version mismatch: module was compiled
    # for Python 3.10, but the interpreter version is incompatible: 3.11.6", pybind11/detail/common.h)
    Signature("import-fails", r"Python version mismatch: module was compiled for Python \d+\.\d+",
              cause="a compiled extension was built for another Python than this environment's",
              remedies=(REINSTALL_EXTENSION, BUILD_EXTENSION)),
    # A package's own version gate naming the torch its compiled ops were built for ("Version mismatch: Open3D needs
    # PyTorch version 1.7.*, but version 1.8.2 is installed!"; github.com/isl-org/Open3D-ML/issues/430; IPEX's "Intel®
    # Extension for PyTorch* needs to work with PyTorch 2.2.*, but PyTorch 2.1.0+cu121 is found")
    # (torchao's: "Skipping import of cpp extensions due to incompatible torch version 2.7.1+cu128 for torchao version 0.15.0")
    Signature("import-fails", r"(?i:\b(needs|requires|built for|compiled (for|with|against))( to work with)? (PyTorch|torch)( version)? ?[\w.*+]+,? but "
                              r"(version |PyTorch |torch )?[\w.+]+ (is|was) (installed|found|loaded)|\bincompatible (torch|PyTorch) version\b)",
              cause="a package's compiled ops were built for another torch release than the installed one",
              remedies=(REINSTALL_EXTENSION,)),
    # (torchvision.io's image library registers its ops as image::decode_jpeg, image::read_file, ...)
    # (or cut where a title ends: "RuntimeError: operator torchvision::nms")
    Signature("import-fails", r"operator (torchvision|image)::\w+( does not exist|\s*$)|No such operator (torchvision|image)::\w+|"
                              r"Could not find the operator (torchvision|image)::\w+",
              frames=(r"torchvision",),
              cause="torchvision's C++ ops (_C, or its image library) did not load: the installed torchvision does not match "
                    "torch (another release, or a CUDA build beside a CPU-only torch)",
              remedies=(REINSTALL_EXTENSION,)),
    # a TorchScript custom class its library should have registered (torch's own words: "Tried to instantiate class
    # 'FasterTransformer.ParallelGptOp', but it does not exist! Ensure that it is registered via torch::class_"): the op
    # library was not loaded, or was built against another torch and failed to register (not torch's own quantized engine's
    # classes, 'quantized.LinearPackedParamsBase')
    Signature("import-fails", r"Tried to instantiate class '(?!(__torch__\.torch\.classes\.)?quantized\.)[\w.]+', but it does not exist",
              cause="a compiled op library's custom class is not registered: the library did not load, or was built against "
                    "another torch release",
              remedies=(Remedy("Load the op library before use (`torch.classes.load_library(...)`) and build it against the "
                               "installed torch (or run the torch release it was built for)", id="op-library-for-this-torch"),
                        REINSTALL_EXTENSION)),
    # A compiled module missing a symbol of Python's own C API (Py*/_Py*: "undefined symbol: _Py_ZeroStruct", macOS's
    # "Symbol not found: __Py_ZeroStruct"): built for another Python (Python 2's _Py_ZeroStruct is gone from Python 3),
    # not for another torch. torch's own libraries missing one are torch-install's (libtorch_python.so's PySlice_Unpack
    # on a Python 3.6 older than its build)
    Signature("import-fails", r"(undefined symbol|Symbol not found):? _*Py(_|[A-Z])\w*", unless=(r"torch[\\/]+(lib|_C)\b|libtorch\w*\.so",),
              cause="a compiled module was built for another Python version than the one running it",
              remedies=(Remedy("Reinstall or rebuild the package with the Python that runs it (a wheel for this Python "
                               "version, or `pip install --force-reinstall --no-cache-dir <package>` in this environment)",
                               id="extension-for-this-python"),)),
    # A package's own compiled module (`_C`) missing: installed from a source tree or its requirements without building
    # its C++/CUDA part (GroundingDINO's "name '_C' is not defined"), or built and then left behind by another torch
    # (or its `_ext`, as mmcv names its ops: "No module named 'mmcv._ext'", mmcv-lite or a build without MMCV_WITH_OPS; and
    # mmcv's whole `ops` package, which the plain `mmcv` 1.x and `mmcv-lite` packages leave out: its FAQ, "No module named
    # 'mmcv.ops'", install mmcv-full)
    Signature("import-fails", r"name '_C' is not defined|No module named '(?!torch\.)[\w.]+\._(C|ext)'|No module named 'mmcv\.ops'|"
                              # (or one built per GPU architecture, missing for this GPU's: "No module named
                              # 'sageattention._qattn_sm89'")
                              r"No module named '(?!torch\.)[\w.]+\._\w*_sm\d{2,3}\w*'|"
                              r"cannot import name '_C' from '(?!torch')[\w.]+'|"
                              # (a package's own words for its failed import: detrex's "ImportError: Cannot import
                              # 'detrex._C', therefore 'MultiscaleDeformableAttention' is not available")
                              r"(?i:cannot import) '(?!torch\.)[\w.]+\._(C|ext)'",
              cause="a package's compiled extension (_C, _ext) was never built here, or does not load against this torch",
              remedies=(BUILD_EXTENSION, REINSTALL_EXTENSION)),
    # (Python before 3.7 names no module: "ImportError: cannot import name '_C'", a package's `from core.nn import _C`;
    # not where the import shown is torch's own)
    Signature("import-fails", r"cannot import name '_C'[ \t]*(\n|$)", unless=(r"from torch import (\w+, )*_C\b",),
              cause="a package's compiled extension (_C) was never built here, or does not load against this torch",
              remedies=(BUILD_EXTENSION, REINSTALL_EXTENSION)),
    # macOS's loader not finding a library a package's compiled module links through its rpath ("dlopen(.../_k2.cpython-36m-
    # darwin.so, 2): Library not loaded: @rpath/libk2context.dylib"): the package's own libraries, or torch's, not where the
    # extension expects them; torch's own module missing one is torch's (macOS 13+ puts the image's UUID before its path:
    # "Referenced from: <7A2E...> /.../torch/lib/libtorch_python.dylib")
    Signature("import-fails", r"Library not loaded: @rpath/[\w.+-]+\.dylib", unless=(r"Referenced from: (<[\w-]+> )?\S*[\\/]torch[\\/]",),
              frames=(r"(site|dist)-packages/(?!torch/)[\w-]+/",),
              cause="a package's compiled module cannot find a library it links through its rpath: its own libraries are "
                    "not where it was built to find them, or it was built against another torch",
              remedies=(Remedy("Reinstall the package's build for this torch and platform (conda packages: let the environment's "
                               "lib/ be found, `export DYLD_LIBRARY_PATH=$CONDA_PREFIX/lib`)", id="extension-rpath"),
                        REINSTALL_EXTENSION)),
    # A compiled module named as such by convention (exllamav2_ext, *_cuda, *_kernels) that is not there at all: the
    # wheel carries no build for this torch/CUDA/Python (exllamav2's prebuilt cu121 wheels), or it was never built.
    # apex's own modules (amp_C, fused_layer_norm_cuda, ...) are apex's
    Signature("import-fails", r"No module named '(?!(%s)')\w+%s'" % ("|".join(APEX_CUDA_EXTENSIONS), COMPILED_SUFFIX),
              cause="a package's compiled extension is missing: its wheel has no build for this torch, CUDA or Python, or it "
                    "was installed from source without building its C++/CUDA part",
              remedies=(REINSTALL_EXTENSION,)),
    # The same module imported in a try/except and used later: the guard hid the import error, the name says which module
    # (AutoAWQ's "NameError: name 'awq_ext' is not defined" when its kernels do not load; github.com/QwenLM/Qwen3/issues/221)
    # (not a script's own flag or variable: "name 'use_cuda' is not defined", DeepSpeed's usual "model_engine")
    Signature("import-fails", r"name '(?!(%s)')(?!(use|is|has|with|on|to|enable|run|device|inference|train)_)(?!model_engine')\w+%s' "
                              r"is not defined" % ("|".join(APEX_CUDA_EXTENSIONS), COMPILED_SUFFIX),
              cause="a package's compiled extension did not import (its guard hid why): no build for this torch, CUDA or "
                    "Python, or never built",
              remedies=(REINSTALL_EXTENSION,)),
    # torch 1.8-1.13's split CUDA libraries looked for outside torch's own import: an extension built against such a
    # torch, loaded under a newer one (torch-sparse's, torchaudio's `torch.ops.load_library`)
    Signature("import-fails", SPLIT_CUDA_LIBRARY, unless=(TORCH_OWN_IMPORT,),
              cause="a compiled extension was built against torch 1.8-1.13, whose CUDA library was split in two; this torch "
                    "has no libtorch_cuda_cu/_cpp",
              remedies=(REINSTALL_EXTENSION,)),
    # A package's own compiled code with no build for this GPU or this torch, as the package says it: tiny-cuda-nn's "Could
    # not find compatible tinycudann extension for compute capability 75", DGL's per-torch libraries ("There is no such file
    # `graphbolt_pytorch_2.4.1.dll`": no Windows build for torch 2.4.1; "Cannot find DGL C++ sparse library at
    # .../libdgl_sparse_pytorch_1.9.0.so", "TensorDispatcher: dlopen failed: .../libtensoradapter_pytorch_1.10.2.so"), mmcv's
    # op registry ("hard_voxelize_forward_impl: implementation for device cuda:0 not found", "ms_deform_attn_impl_forward:
    # ...": an mmcv built without its CUDA ops; no `\w+` before the name's end, which is quadratic on data), a CPU build of
    # DGL beside a GPU ("Device API gpu is not enabled. Please install the cuda version of dgl")
    Signature("import-fails", r"(?i:could not find (a )?compatible \w+ extension for compute capability \d+)|"
                              r"\b(lib)?(graphbolt|dgl_sparse)_pytorch_[\d.]+\.(dll|so|dylib)\b|"
                              r"_impl(_forward|_backward)?: implementation for device cuda(:\d+)? not found|"
                              r"Device API (gpu|cuda) is not enabled",
              cause="a package's compiled extension has no build for this GPU, this torch or CUDA at all (a CPU-only or "
                    "another torch's build)",
              remedies=(REINSTALL_EXTENSION,)),
    # (and DGL's own words for that library missing, said without its path: "Cannot find DGL C++ sparse library", its
    # graphbolt's the same)
    Signature("import-fails", r"Cannot find DGL C\+\+ (sparse|graphbolt) library",
              cause="DGL has no library built for this torch release (DGL builds one per torch version)",
              remedies=(REINSTALL_EXTENSION,)),
    # (DGL's tensoradapter for this torch missing is a warning DGL goes on after: only where the run stopped on it)
    Signature("import-fails", r"\blibtensoradapter_pytorch_[\d.]+\.(dll|so|dylib)\b", last_only=True,
              cause="DGL has no tensoradapter library built for this torch release", remedies=(REINSTALL_EXTENSION,)),
    # A package's compiled part built without CUDA, in its own words ("don't compiled with cuda" from spconv's tensorview, a
    # CPU-only cumm beside a CUDA torch); torch's own "Torch not compiled with CUDA" is torch-install's
    Signature("import-fails", r"(?i:(?<!torch )(?<!torch is )(?<!torch was )\b(don'?t|not|wasn'?t|isn'?t) (been )?compiled with "
                              r"(cuda|gpu)\b)",
              cause="a package's compiled part was built without CUDA (a CPU-only build) and is asked to run on the GPU",
              remedies=(REINSTALL_EXTENSION,)),
    # A custom op's own launch check naming the error CUDA gave ("CUDA kernel failed : no kernel image is available" in
    # pointnet2's sampling_gpu.cu): an extension built for another CUDA or GPU
    Signature("import-fails", r"CUDA kernel failed ?: ?(no kernel image is available|invalid device function|initialization error)",
              context=(r"\.cu\b",), context_required=True,
              cause="a compiled extension's CUDA kernel cannot launch: it was built for another CUDA release or GPU architecture",
              remedies=(REINSTALL_EXTENSION,)),
    # A package saying its own compiled part did not load, in its own words: "xFormers can't load C++/CUDA extensions"
    # (its warning cut before the versions it names), DGL's "Cannot load Graphbolt C++ library", "Couldn't load custom
    # C++ ops"; bitsandbytes' native library is quantized-base's
    # (AutoGPTQ's "CUDA extension not installed." where its wheel's kernels do not load under this torch)
    Signature("extension-not-loaded", r"(?i:(cannot|can't|could not|couldn't|failed to|unable to) load (the )?((?!bitsandbytes)[\w-]+ )?"
                              r"(C\+\+|CUDA|C\+\+/CUDA|native) (librar(y|ies)|extensions?|ops|kernels?))|"
                              r"(?i:\b(CUDA|C\+\+|C\+\+/CUDA) (extensions?|kernels) (for [\w.-]+ )?(is |are )?not installed\b)",
              cause="a package's compiled C++/CUDA part does not load: built for another torch, CUDA or Python",
              remedies=(REINSTALL_EXTENSION,)),
    # torch's loader naming another package's library it could not load (`torch.ops.load_library`, torchaudio's and PyG's
    # companions: 'OSError: [WinError 127] ... Error loading "C:\...\site-packages\torchaudio\lib\libtorchaudio.pyd" or one
    # of its dependencies.'); torch's own torch\lib DLLs are torch-install's
    Signature("import-fails", r'Error loading \\?"?[^"\n]*?[\\/]+(site|dist)-packages[\\/]+(?!torch[\\/])\w+[\\/][^"\n]*\.(pyd|dll)\b',
              cause=SYMBOL_NOT_IN_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # a companion's own warning that its compiled part did not load, with Windows' reason (torchvision's "Failed to load
    # image Python extension: '[WinError 127] The specified procedure could not be found'", PyG's "An issue occurred while
    # importing 'torch-sparse'. Disabling its usage. Stacktrace: [WinError 127] ...")
    Signature("import-fails", r"(Failed to load image Python extension|An issue occurred while importing '[\w-]+')[^\n]*"
                              r"\[WinError (126|127|193)\]",
              cause=SYMBOL_NOT_IN_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # A package's operators that never registered, asked for by name: "No such operator torch_scatter::cuda_version",
    # vLLM's "'_OpNamespace' '_C' object has no attribute 'rms_norm'" (torch's own aten operators are torch's)
    Signature("import-fails", r"No such operator (?!(aten|prim|quantized|torchvision|image|xformers)::)\w+::\w+|"
                              r"'_OpNamespace' '(?!aten'|prim')\w+' object has no attribute",
              cause="a compiled extension's operators are not registered: its library did not load, or was built against "
                    "another torch",
              remedies=(REINSTALL_EXTENSION,)),
    # Python's own words for a package's compiled module that Windows cannot load ("Could not find module
    # '...\torch_scatter\_scatter_cuda.pyd' (or one of its dependencies)"); torch's own DLLs are torch-install's
    Signature("import-fails", r"Could not find module '?[^'\n]*?\.pyd'? \(or one of its dependencies\)",
              unless=(r"[\\/]torch[\\/]+lib[\\/]",),
              cause="a compiled extension cannot load on Windows: built for another torch or CUDA (a CUDA build beside a "
                    "CPU-only torch), or a DLL it needs is missing",
              remedies=(REINSTALL_EXTENSION,)),
    # A companion's operator registered for the CPU only, called on CUDA tensors: its CPU build beside a CUDA torch
    # ("Could not run 'torchvision::nms' with arguments from the 'CUDA' backend"; github.com/ultralytics/ultralytics; a blog's
    # copy loses the space after the quote: "'torchvision::nms'with")
    Signature("import-fails", r"Could not run '(torchvision|torchaudio)::\w+' ?with arguments from the 'CUDA' backend",
              cause="the companion (torchvision, torchaudio) is a CPU build beside a CUDA torch: its operators have no CUDA kernels",
              remedies=(REINSTALL_EXTENSION,)),
    # ... and any other package's operator the same way ("Could not run 'fbgemm::permute_2D_sparse_data' with arguments from
    # the 'CUDA' backend": fbgemm-gpu built for another CUDA than torch's), not torch's own namespaces (aten, prims,
    # quantized, c10d), whose operators missing on a backend are torch's
    Signature("import-fails", r"Could not run '(?!(aten|prims|_?quantized|_?c10d\w*|profiler|torchvision|torchaudio)::)\w+::\w+'+ ?"
                              r"with arguments from the 'CUDA' backend",
              cause="the package's compiled operators have no CUDA kernels for this torch: a CPU build, or one built for "
                    "another CUDA or torch release",
              remedies=(REINSTALL_EXTENSION,)),
    # xformers' C++/CUDA ops not registered: its wheel was built for another torch (its own warning names both), or it was
    # installed from source without building them ("No such operator xformers::efficient_attention_forward_cutlass - did
    # you forget to build xformers with `python setup.py develop`?")
    Signature("import-fails", r"No such operator xformers::\w+",
              cause="xformers' compiled ops did not load: the installed xformers was built for another torch (or never built)",
              remedies=(REINSTALL_EXTENSION,)),
    Signature("import-fails", r"Couldn't load custom C\+\+ ops", frames=(r"torchvision",),
              cause="torchvision's C++ ops did not load: torchvision and torch do not match",
              remedies=(REINSTALL_EXTENSION,)),
    # A CUDA runtime library another package's compiled module needs (built for CUDA 11 on a CUDA 12 machine, Colab's
    # moves): the import that failed is that package's, not torch's, which brings its own runtime
    # (not TensorFlow's or JAX's own runtime: no torch extension, another framework's install, which this tool does not
    # probe: "Failed to load the native TensorFlow runtime" after pywrap_tensorflow's libcudart.so.10.0)
    Signature("import-fails", r"lib(cudart|cublas\w*|cudnn\w*|cusparse\w*|cufft\w*|nvrtc\w*)\.so[.\d]*: cannot open shared object file",
              frames=(r"(site|dist)-packages/(?!torch/|bitsandbytes/|tensorflow\w*/|jax\w*/)[\w.-]+/",), frames_required=True,
              unless=(TORCH_OWN_IMPORT, TENSORFLOW_LOADER),
              cause=BUILT_FOR_ANOTHER_RUNTIME,
              remedies=(REINSTALL_EXTENSION,)),
    # The same without frames, where the paste shows the import that failed and it is another package's ("from awq import
    # ...", "from core.nn import _C", "Could not import vllm"): torch brings its own CUDA runtime, so a frameless
    # libcudart error after importing another package is that package's build (or a library loaded through ctypes, as
    # ctransformers and llama-cpp-python load theirs, torch's own import nowhere in view)
    Signature("import-fails", r"lib(cudart|cublas\w*|cudnn\w*|cusparse\w*|cufft\w*|nvrtc\w*)\.so[.\d]*: ?cannot open shared object file",
              context=(_OTHER_IMPORT, r"[/\\]ctypes[/\\]__init__\.py"), context_required=True,
              # (bitsandbytes' own library, loaded through ctypes too, is quantized-base's)
              unless=(r"[/\\]torch[/\\]__init__\.py|^\s*(>>> )?import torch\s*$|bitsandbytes", TENSORFLOW_LOADER),
              cause=BUILT_FOR_ANOTHER_RUNTIME,
              remedies=(REINSTALL_EXTENSION,)),
    # A package that loads the CUDA runtime by itself through ctypes and names what it could not load: cpm_kernels (the
    # int4 kernels of ChatGLM and MiniCPM's quantized models) says "RuntimeError: Library cudart is not initialized"
    # (cpm_kernels/library/base.py) where no libcudart of its own is on the library path; torch's bundled runtime is not
    # one it looks for (github.com/THUDM/ChatGLM-6B FAQ: `conda install cudatoolkit`)
    Signature("import-fails", r"\bLibrary (cudart|cublas|cublasLt|nvrtc|curand) is not initialized\b",
              cause="a package that loads the CUDA runtime itself (cpm_kernels, the int4 kernels of quantized ChatGLM and "
                    "MiniCPM models) found no CUDA runtime library of its own; torch's bundled one is not where it looks",
              remedies=(Remedy("Install the CUDA runtime it loads (`conda install cudatoolkit`, or the CUDA toolkit of "
                               "torch's CUDA version on the library path), or run the model unquantized or on its CPU path",
                               id="cuda-runtime-for-extension"),)),
    # onnxruntime-gpu's CUDA execution provider, a compiled library like any extension, failing to load the CUDA and cuDNN
    # libraries its build was linked against: "Failed to load library libonnxruntime_providers_cuda.so with error:
    # libcublasLt.so.11: cannot open shared object file" (a CUDA 11 build on Colab's CUDA 12), Windows' "LoadLibrary failed
    # with error 126 ... onnxruntime_providers_cuda.dll" (its cuDNN 9 missing beside a torch that brings cuDNN 8), "CUDA_PATH
    # is set but CUDA wasn't able to be loaded". Its releases each need one CUDA and cuDNN major: onnxruntime-gpu 1.19+ on
    # PyPI is built for CUDA 12 and cuDNN 9 (onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements)
    # (not its TensorRT provider: that one fails where TensorRT itself is not installed, and onnxruntime goes on without it)
    # (nor where what it cannot load is the driver's own libcuda: no NVIDIA driver at all)
    Signature("import-fails", r"Failed to load library libonnxruntime_providers_cuda\.so with error|"
                              r"LoadLibrary failed with error 126\b[^\n]{0,400}?onnxruntime_providers_cuda\.dll|"
                              r"can'?t load onnxruntime_providers_cuda\.dll|CUDA_PATH is set but CUDA wasn'?t able to be loaded",
              unless=(r"libcuda\.so",),
              cause="onnxruntime-gpu's CUDA provider was built for another CUDA or cuDNN major than this machine (or torch's "
                    "nvidia-* wheels) provides",
              remedies=(Remedy("Install the onnxruntime-gpu release built for the CUDA and cuDNN here (1.19+ on PyPI needs CUDA 12 "
                               "and cuDNN 9, the majors torch's cu12 wheels bring from 2.4; CUDA 11 builds come from "
                               "onnxruntime's own feed), or the CUDA and cuDNN its release names", id="onnxruntime-for-cuda"),)),
    # WinError 127 in a private compiled module: it looked up a symbol the loaded torch no longer exports (built for
    # another torch: "DLL load failed while importing _fused: The specified procedure could not be found")
    # (and torch's own `_C`, where torch's own import is nowhere in view: a package's `_C` missing a symbol, in any
    # language: pytorch3d's, nunchaku's, diff-gaussian-rasterization's; torch's own _C fails for a missing DLL, 126)
    Signature("import-fails", r"DLL load failed while importing (?!(%s|%s)\b)_?\w+: (%s)"
                              % (PYTHON_OWN_MODULES, "|".join(APEX_CUDA_EXTENSIONS), PROC_NOT_FOUND),
              unless=(OTHER_PACKAGES_DLL, r"torch[/\\]+__init__\.py|^\s*from torch\._C import"),
              cause=SYMBOL_NOT_IN_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # (and the same met by torch.ops.load_library, with which PyG's companions load their own library: "OSError: [WinError
    # 127] The specified procedure could not be found" under torch_sparse/__init__.py and torch/_ops.py)
    Signature("import-fails", r"\[WinError 127\] (%s)" % PROC_NOT_FOUND, frames=(r"(^|/)torch/_ops\.py$",) + _COMPANION_FRAMES,
              frames_required=True,
              cause=SYMBOL_NOT_IN_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # A package's own `_C` (nunchaku's, not torch's: no torch/__init__.py in the traceback) failing with WinError 127 in
    # any language, or any DLL error, with that package's frame in view
    Signature("import-fails", r"DLL load failed while importing _C\b",
              frames=(r"(^|/)(?!torch/)\w[\w.-]*/[\w/.-]+\.py$",), frames_required=True,
              unless=(r"torch[/\\]+__init__\.py", OTHER_PACKAGES_DLL),
              cause="a compiled extension's own _C was built against another torch (a wheel for another release or a nightly)",
              remedies=(REINSTALL_EXTENSION,)),
    # macOS's loader refusing a module built for the other CPU ("... (mach-o file, but is an incompatible architecture
    # (have 'x86_64', need 'arm64e'))": an Intel build of torch_spline_conv under an Apple-silicon Python,
    # github.com/rusty1s/pytorch_sparse/issues/199); torch's own libraries are torch-install's
    Signature("import-fails", MACHO_WRONG_CPU, unless=(r"[\\/]torch[\\/]",),
              cause="a compiled extension was built for the other CPU architecture (x86_64 under Rosetta vs arm64): install "
                    "or build it from a native arm64 Python",
              remedies=(REINSTALL_EXTENSION,)),
    # Windows' own dialog for a DLL whose import is missing from what it loaded ("The procedure entry point [?sym@@...]
    # could not be located in the dynamic link library ...\site-packages\xformers\_C.pyd"): a package's module built
    # against another torch; torch's own DLLs are torch-install's
    Signature("import-fails", r"entry point\b.{0,300}?could not be located in the dynamic link library [^\n]*?[\\/]site-packages[\\/]"
                              r"(?!torch[\\/])\w+[\\/]",
              cause=SYMBOL_NOT_IN_TORCH,
              remedies=(REINSTALL_EXTENSION,)),
    # A compiled module Windows cannot load for any reason, in any language: a package's private one (`_turbomind`, `_fused`:
    # "DLL load failed while importing _turbomind: 找不到指定的模块"), one named as an extension by convention (exllamav2_ext,
    # *_cuda, *_kernels; torch-directml's `torch_directml_native`: "The specific procedure could not be found"), or any other
    # beside torch (KNN_CUDA's `knn`, `tensorrt`): a DLL it was linked against (the CUDA runtime of its build) or a torch
    # symbol is missing, far more often than not. Python's own compiled modules (the DLLs folder of a Windows install: _lzma,
    # _ssl, _sqlite3, _ctypes, ...), torch's _C, Triton's launcher (below) and the everyday packages' cores (Pillow, OpenCV,
    # numpy, onnxruntime: OTHER_PACKAGES_DLL) are not read so
    Signature("import-fails", r"DLL load failed while importing (?!_C\b)(?!%s\b)(?!(cuda_utils|__triton_launcher)\b)\w+"
                              % PYTHON_OWN_MODULES,
              unless=(OTHER_PACKAGES_DLL,),
              cause=WINDOWS_LOAD_FAILS,
              remedies=(REINSTALL_EXTENSION,)),
    # Triton's own launcher module, compiled into its cache on first use (cuda_utils.pyd under ~/.triton/cache): a cache
    # built for another Python, Triton or CUDA, or without the MSVC runtime it links (triton-windows' troubleshooting)
    Signature("import-fails", r"DLL load failed while importing (cuda_utils|__triton_launcher)\b",
              cause="Triton's compiled launcher in its cache does not load: built for another Python, Triton or CUDA, or its "
                    "runtime DLLs are missing",
              remedies=(Remedy("Delete Triton's and torchinductor's caches (~/.triton/cache, %TEMP%\\torchinductor_<user>) and "
                               "run again; install the Triton build for this Python and torch", id="triton-cache-clear"),)),
    Signature("import-fails", r"DLL load failed( while importing \w+)?", frames=_EXT_FRAMES + _COMPANION_FRAMES, frames_required=True,
              unless=(OTHER_PACKAGES_DLL,),
              cause=WINDOWS_LOAD_FAILS,
              remedies=(REINSTALL_EXTENSION,)),
    # NATTEN's own words for its compiled library not loading (natten/context.py: "Failed to import libnatten. This could be
    # due to an invalid/incomplete install."): a wheel for another torch or CUDA, or a build that did not finish
    Signature("import-fails", r"Failed to import libnatten\b",
              cause="NATTEN's compiled library (libnatten) does not load: its wheel was built for another torch or CUDA, or "
                    "its build from source did not finish",
              remedies=(REINSTALL_EXTENSION,)),
    Signature("import-fails", r"flash_attn_2_cuda\S*:? (undefined symbol|cannot open shared object file)|No module named '?flash_attn_2_cuda'?",
              frames=(r"flash_attn",),
              cause="flash-attn's compiled module is missing or was built for another torch, CUDA or C++ ABI (cxx11abi)",
              remedies=(REINSTALL_EXTENSION,)),
    Signature("import-fails", r"Could not load this library: \S*(torchvision|torchaudio|xformers)\S*",
              cause="a companion's C++ library does not load against the installed torch (wrong release or CUDA build)",
              remedies=(REINSTALL_EXTENSION,)),
    Signature("extension-not-loaded", r"xFormers can't load C\+\+/CUDA extensions\. xFormers was built for|"
                                      # (its warning's prefix, where a title kept only the first words; and an xformers
                                      # installed from source without building its extensions: "Need to compile C++
                                      # extensions to use all xFormers features")
                                      r"WARNING\[XFORMERS\]: xFormers can't load|"
                                      r"WARNING\[XFORMERS\]: Need to compile C\+\+ extensions to use all xFormers features|"
                                      # (or its version lines retold without the warning's head: "xFormers was built for:
                                      # PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu118)")
                                      r"xFormers was built for:?\s*PyTorch [\w.+]+ with CUDA \d+ \(you have [\w.+]+\)",
              cause="xformers' compiled kernels do not load: built for another torch, CUDA or Python (or never built, from a "
                    "source install): its memory-efficient attention kernels are unavailable",
              remedies=(REINSTALL_EXTENSION,)),
    # A library's own CUDA check naming its source file and line (cuda-compat's LOCATED_NO_KERNEL: xformers' bundled
    # FlashAttention 3 on an RTX 50xx, "CUDA error (.../flash_fwd_launch_template.h:175): no kernel image is available for
    # execution on the device"): the kernel that has no code for this GPU is the library's build, not torch's
    Signature("extension-other-arch", LOCATED_NO_KERNEL,
              cause="a compiled extension's own kernel has no code for this GPU's architecture: its build predates the GPU "
                    "or left its architecture out",
              remedies=(REINSTALL_EXTENSION, BUILD_FOR_THIS_GPU)),
    # CUTLASS-based kernels (xformers' memory-efficient attention) compiled for one architecture and run on another print
    # "FATAL: this function is for sm80, but was built for sm750" (a wheel built for A100 on a T4): the extension's build
    Signature("extension-other-arch", r"this function is for sm_?\d+, but was built for sm_?\d+",
              cause="a compiled extension (xformers, or another CUTLASS-based kernel) was built for another GPU architecture "
                    "than this GPU's",
              remedies=(REINSTALL_EXTENSION,)),
    # An extension built from source for architectures its code cannot target: libcu++'s own guard (cuda/std/barrier: "#error
    # "CUDA synchronization primitives are only supported for sm_70 and up."") where TORCH_CUDA_ARCH_LIST (or torch's
    # default list) still names older ones (S-LoRA's README: export TORCH_CUDA_ARCH_LIST="8.0 8.6")
    Signature("extension-other-arch", r"#error\W{0,3}[^\n]{0,120}\bonly supported (for|on) sm_?\d+ and (up|above|newer|later)\b",
              cause="the extension was compiled for GPU architectures older than its code supports (TORCH_CUDA_ARCH_LIST, or "
                    "the default list of a build with no GPU in view, names them)",
              remedies=(Remedy("Build with TORCH_CUDA_ARCH_LIST naming only this machine's GPUs (e.g. \"8.0 8.6\"), or install a "
                               "prebuilt wheel of the extension", id="arch-list-for-build"),)),
    # SageAttention dispatching to a per-architecture kernel its wheel was built without (sageattention/core.py: "SM89 kernel
    # is not available. Make sure you GPUs with compute capability 8.9."; an RTX 5090 under a wheel built before sm_120)
    Signature("extension-other-arch", r"\bSM\d{2,3} kernel is not available\b",
              cause="SageAttention's wheel has no kernel for this GPU's architecture: built before the GPU or without it",
              remedies=(REINSTALL_EXTENSION, BUILD_FOR_THIS_GPU)),
    # A package's compiled module without its CUDA functions (built where CUDA was not found, or against another torch's
    # CUDA: torchmcubes' "module 'torchmcubes_module' has no attribute 'mcubes_cuda'. Did you mean: 'mcubes_cpu'?", TripoSR's
    # troubleshooting); torch's own _C without CUDA is torch-install's CPU build
    Signature("extension-not-loaded", r"module '(?!torch[.'])[\w.]+' has no attribute '\w*_cuda\w*'",
              cause="a package's compiled extension was built without its CUDA kernels (no CUDA toolkit, or one of another "
                    "major than torch's, found at build time), or against another torch",
              remedies=(REINSTALL_EXTENSION, BUILD_FOR_THIS_GPU)),
    # xformers' operator listing when its wheel has no CUDA kernels for this torch ("xFormers wasn't build with CUDA
    # support", as older releases spell it): a CPU or mismatched build of xformers
    Signature("extension-not-loaded", r"xFormers wasn'?t buil[dt] with CUDA support",
              cause="the installed xformers has no CUDA kernels for this torch: a build for another torch or CUDA (or a CPU "
                    "build); torch's own scaled_dot_product_attention does without it",
              remedies=(REINSTALL_EXTENSION,)),
    # torch.utils.cpp_extension building an extension with an nvcc of another CUDA than torch's (_check_cuda_version):
    # "The detected CUDA version (12.2) mismatches the version that was used to compile PyTorch (11.3)"; DeepSpeed's op
    # builder says the same before its JIT build ("Installed CUDA version 12.2 does not match the version torch was
    # compiled with 11.7, unable to compile cuda/cpp extensions": deepspeed/ops/op_builder/builder.py)
    Signature("cuda-variant-mismatch", r"detected CUDA version ?\([\d.]+\) mismatches the version that was used to compile|"
                                       # (k2's own build check: "PyTorch is built with CUDA version: 11.3. The current running
                                       # CUDA version is: 11.4.120", github.com/k2-fsa/k2 get_cuda_version.cmake's caller)
                                       r"PyTorch is built with CUDA version:? [\d.]+\.?\s*(\n\s*)?The current running CUDA version is:? [\d.]+|"
                                       r"Installed CUDA version [\d.]+ does not match (the version torch was compiled with|torch(.s)? version\b)"
                                       # (not where DeepSpeed goes on: "... but since the APIs are compatible, accepting this
                                       # combination", or DS_SKIP_CUDA_CHECK's "Allowing this combination")
                                       r"(?![^\n]*\b(accepting|Allowing) this combination)",
              cause="an extension is being built with a CUDA toolkit (nvcc) other than the CUDA this torch was built with",
              remedies=(Remedy("Build with the CUDA toolkit of torch's own CUDA version (point CUDA_HOME at it), or install the torch "
                               "wheel built for the toolkit you have", id="toolkit-matches-torch"),)),
    # pip's resolver saying a package that pins one torch release exactly (the compiled companions do: xformers,
    # torchvision, torchaudio, vllm) now sits beside another: "xformers 0.0.23 requires torch==2.1.1, but you have torch
    # 2.2.0 which is incompatible"; the probe's pairing names the companion's release for the installed torch
    # (pip before 20.3 said it "has requirement torch==1.13.1, but you'll have torch 2.0.0 which is incompatible")
    Signature("version-mismatch", r"\b[\w.-]+ [\w.+]+ requires torch==[\w.+]+, but you have torch [\w.+]+ which is incompatible|"
                                  r"\b[\w.-]+ [\w.+]+ has requirement torch==[\w.+]+, but you'll have torch [\w.+]+ which is incompatible",
              confirmed_by=("extension-abi:version-mismatch",),
              cause="a package built for one torch release (an exact pin) sits beside another torch: pip installed a torch "
                    "other than the one its compiled parts were built against",
              remedies=(REINSTALL_EXTENSION,)),
    # DeepSpeed's own check of its prebuilt ops against the running torch (deepspeed/ops/op_builder/builder.py: "PyTorch
    # version mismatch! DeepSpeed ops were compiled and installed with a different version than what is being used at
    # runtime. Please re-install DeepSpeed or switch torch versions. Install torch version=2.1, Runtime torch version=2.2")
    Signature("version-mismatch", r"DeepSpeed ops were compiled and installed with a different version than what is being used",
              cause="DeepSpeed's prebuilt ops were compiled against another torch release than the one running",
              remedies=(Remedy("Reinstall DeepSpeed against the installed torch (`pip install --no-cache-dir --force-reinstall "
                               "deepspeed`, which builds its ops for it), or install the torch its wheel was built for",
                               id="deepspeed-for-torch"),)),
    # torch's compiler importing a name from a triton other than the one its release pins: torch 2.5-2.6's inductor
    # imports `AttrsDescriptor` from triton.compiler.compiler, which triton 3.3 removed; `triton_key` moved the same way
    # (torch/_inductor/runtime/hints.py and codecache.py against triton's own history). The probe's pairing names the
    # triton torch pins
    Signature("version-mismatch", r"cannot import name '?\w+'? from '?triton(\.[\w.]+)?'?",
              confirmed_by=("extension-abi:version-mismatch",),
              cause="the installed triton is not the release this torch was built with (torch pins it exactly): torch's "
                    "compiler (torch.compile, inductor) imports names that triton moved or removed",
              remedies=(Remedy("Install the triton torch pins (`pip install triton==<torch's pin>`; on Windows the "
                               "triton-windows release made for this torch), or the torch release made for this triton",
                               id="triton-for-torch"),)),
    # torchvision's and torchaudio's own start-up check (their extension.py _check_cuda_version)
    # (and PyG's companions, whose __init__ makes the same check: "Detected that PyTorch and torch_scatter were compiled with
    # different CUDA versions. PyTorch has CUDA version 10.1 and torch_scatter has CUDA version 10.2")
    # (and its second sentence alone, as a manual quotes it: "PyTorch has CUDA Version=11.7 and torchvision has CUDA
    # Version=11.8. Please reinstall the torchvision that matches your PyTorch install.")
    Signature("cuda-variant-mismatch", r"Detected that PyTorch and (torchvision|TorchAudio|torchaudio|torch_\w+) were compiled with "
                                       r"different CUDA (major )?versions|"
                                       r"PyTorch has CUDA (V|v)ersion ?=? ?[\d.]+ and (torchvision|TorchAudio|torchaudio|torch_\w+) "
                                       r"has CUDA (V|v)ersion",
              cause="a companion (torchvision, torchaudio, a PyG library) was built for another CUDA version than torch",
              remedies=(REINSTALL_EXTENSION,)),
)

CHECK = Check(
    id=ID,
    title="compiled extensions vs torch",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=True,
    timeout_s=180.0,
    order=70,
    signatures=SIGNATURES,
)
