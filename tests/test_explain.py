"""`explain` on text: the corpus of real tracebacks, the reader's cleaning, the parser's shapes,
the confusable pairs. No probes here (test_explain_live.py runs them)."""

from __future__ import annotations

import codecs
import functools
import html
import re
import zlib
from pathlib import Path
from typing import Dict, List

import pytest
from tracebacks import JUNK, Case, cases, held_out

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.explain.match import Matching, match
from envdoctor.pipeline.explain.needles import NeedleIndex, branches, may_match, needles
from envdoctor.pipeline.explain.reader import MAX_KEPT, LogScanner, NotText, read_text
from envdoctor.pipeline.explain.spelling import canonical, dtypes_in
from envdoctor.pipeline.explain.tracebacks import raised_errors

CHECKS = [item.check for item in load_checks(plugins=False)[0]]
CASES = cases()


def explained(text: str) -> Matching:
    return match(read_text(text), CHECKS)


@functools.cache  # the corpus tests ask about each case more than once
def code_of(text: str) -> tuple[str, str]:
    """The first diagnosis as (check, signature code)."""
    found = explained(text).diagnoses
    return (found[0].check, found[0].code) if found else ("none", "")


def top(text: str) -> str:
    return code_of(text)[0]


# ---- the corpus


# The sets of tests/data/tracebacks/README.md: the first 104 cases (signatures written against them, each kept
# right), then the batches gathered for issue 25 (its weakest families, the distributed family, adapters on quantized
# bases, NaN outputs, and samples as users meet them, no family favoured), each split by a hash of their address:
# dev-N (signatures written against them) and holdout-N (never read while writing signatures: the figure a user meets).
FIRST = [c for c in CASES if c.header.get("set") in (None, "holdout")]
DEV = [c for c in CASES if c.header.get("set", "").startswith("dev-")]
BATCHES = sorted({int(c.header["set"].split("-")[1]) for c in DEV})
HOLDOUT = {n: [c for c in CASES if c.header.get("set") == "holdout-%d" % n] for n in BATCHES}
HOLDOUT_2 = HOLDOUT[2]
HELD_OUT = [c for n in BATCHES for c in HOLDOUT[n]]
USERS_SAMPLES = (7, 8, 11, 12, 13, 14, 17, 19, 20)  # sampled as users meet them, no family favoured


def users_sample(case: Case) -> bool:
    """Sampled as users meet it: a set that was all such a sample, or, from batch 21 on, a case its gatherer tagged so."""
    sets = ["holdout-%d" % n for n in USERS_SAMPLES]
    return case.header.get("set") in sets or case.header.get("family", "").startswith("users-sample")


def right(case: Case) -> bool:
    """The first diagnosis names the thread's cause, or the other cause it leaves defensible (`also`)."""
    return names_cause(top(case.body), case)


def names_cause(check: str, case: Case) -> bool:
    return check == case.expect or check in case.also


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    known = {c.id for c in CHECKS} | {"none"}
    assert len(CASES) >= 300 and len(FIRST) + len(DEV) + len(HELD_OUT) == len(CASES)
    assert sorted(c.header["seed"] for c in CASES if c.seed) == ["000", "001", "002", "003", "004"]
    assert sum(1 for c in CASES if c.expect == "none") >= 0.15 * len(CASES)  # confusable negatives
    for case in CASES:
        assert case.expect in known and set(case.also) <= known, case.name
        assert case.header.get("source", "").startswith("https://"), case.name
        assert case.body.strip(), case.name
    assert len({c.header["source"] for c in CASES}) == len(CASES)  # one case per thread
    assert {c.expect for c in CASES} == known  # every check id, and negatives
    assert {c.header.get("os") for c in DEV + HOLDOUT_2} == {"linux", "windows", "macos", "unknown"}
    assert len(HELD_OUT) >= 0.3 * len(DEV + HELD_OUT)


# Read while the dev-9 signatures were written, so moved from their held-out set to dev (tests/data/tracebacks/README.md)
MOVED_TO_DEV = {"none--hair-segmentation-evaluate-metric-update-keeps-logits",
                "none--sparenet-oom-after-two-epochs-losses-accumulated-not-detached"}


def test_every_batch_is_split_by_the_hash_of_its_addresses() -> None:
    """A case is held out exactly where the sha256 of its address says (tests/corpus_tool.py split): none was moved
    between dev and held out by hand but the two the corpus's README names."""
    held = {c.name for c in HELD_OUT}
    misplaced = {c.name for c in DEV + HELD_OUT if (c.name in held) != held_out(c.header["source"])}
    assert misplaced == MOVED_TO_DEV


def test_a_new_batch_is_checked_before_it_joins(tmp_path: Path) -> None:
    """tests/corpus_tool.py check: what a gatherer got wrong is named, case by case, before any case is scored."""
    from corpus_tool import problems

    def case(name: str, source: str, expect: str = "none", extra: str = "") -> Path:
        path = tmp_path / (name + ".txt")
        path.write_text("source: %s\nexpect: %s\nwhy: the thread settled it\nos: linux\nfamily: users-sample-x\n%s----\n"
                        "RuntimeError: x\n" % (source, expect, extra), encoding="utf-8")
        return path

    taken = CASES[0]
    files = [case("none--fresh", "https://github.com/a/b/issues/1"),
             case("none--again", "https://github.com/a/b/issues/1"),
             case("none--old-address", taken.header["source"]),
             case("fp8--wrong-id", "https://github.com/a/b/issues/2", expect="fp9"),
             case(taken.name, "https://github.com/a/b/issues/3", expect=taken.expect),
             case("none--split", "https://github.com/a/b/issues/4", extra="set: dev-2\n")]
    found = problems(files, CASES, {c.id for c in CHECKS} | {"none"})
    assert sorted(found) == sorted(["fp8--wrong-id.txt", "none--again.txt", "none--old-address.txt", "none--split.txt", taken.name + ".txt"])
    assert found["none--again.txt"] == ["none--fresh.txt has this address too"]
    assert found["none--old-address.txt"] == ["the corpus has this address already"]
    assert found["fp8--wrong-id.txt"] == ["expect/also names no check: fp9", "the file name does not start with fp9--"]
    assert found[taken.name + ".txt"] == ["the corpus has a case of this name"]
    assert found["none--split.txt"] == ["it has a set already"]


def test_comparing_two_dumps_names_no_held_out_case() -> None:
    """tests/corpus_tool.py diff: a rule's effect on the cases read for rules by name, on the held-out ones as counts."""
    from corpus_tool import diff

    def case(name: str, expect: str, split: str) -> Case:
        return Case(name, {"expect": expect, "set": split}, "RuntimeError: x\n")

    corpus = [case("fp8--read-for-rules", "fp8", "dev-9"), case("fp8--held-and-mended", "fp8", "holdout-9"),
              case("none--held-and-broken", "none", "holdout-9"), case("none--held-the-same", "none", "holdout-9")]
    before = {"fp8--read-for-rules": ["none", ""], "fp8--held-and-mended": ["none", ""],
              "none--held-and-broken": ["none", ""], "none--held-the-same": ["none", ""]}
    after = dict(before, **{"fp8--read-for-rules": ["fp8", "no-fp8-hardware"], "fp8--held-and-mended": ["fp8", "x"],
                            "none--held-and-broken": ["cublas", "y"]})
    lines = diff(before, after, corpus)
    assert lines == ["fp8--read-for-rules  expects fp8: none -> fp8/no-fp8-hardware",
                     "held-out changed: 2 (now right 1, now wrong 1)"]

def _score(name: str, cases: List[Case]) -> float:
    wrong = [c for c in cases if not right(c)]
    print("  %s: top-1 %d/%d = %.1f%%" % (name, len(cases) - len(wrong), len(cases), 100 * (1 - len(wrong) / len(cases))))
    return 1 - len(wrong) / len(cases)


def test_corpus_accuracy(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print("\ntraceback corpus (tests/data/tracebacks/README.md):")
        first, dev = _score("first 104", FIRST), _score("dev-%d ... dev-%d" % (BATCHES[0], BATCHES[-1]), DEV)
        for n in BATCHES:
            if HOLDOUT[n]:  # a small batch's hash may send every case to dev (batch 87: six, all dev)
                _score("holdout-%d (never read for a signature%s)" % (n, "; sampled as users meet them" * (n in USERS_SAMPLES)),
                       HOLDOUT[n])
        held = _score("holdout-2", HOLDOUT_2)
        _score("the users' samples, held out", [c for c in HELD_OUT if users_sample(c)])
        held_23 = _score("holdout-2 + holdout-3", HOLDOUT_2 + HOLDOUT[3])
        held_all = _score("held out, all %d sets" % sum(1 for n in BATCHES if HOLDOUT[n]), HELD_OUT)
        _score("all", CASES)
        for case in FIRST + DEV:  # the held-out misses are not printed: reading them is writing against them
            if not right(case):
                print("  miss: %s: expected %s, got %s" % (case.name, case.expect, top(case.body)))
    assert first == 1.0
    assert dev >= 0.90
    assert held >= 0.90  # measured 91.7% (issue 25 aims at 90%)
    assert held_23 >= 0.82  # measured 83.0%: holdout-3 was gathered for the weakest families
    # measured 82.0% (83.6% before batch 14, whose held-out users' sample scored 17/28); holdout-3 to -6, -9 and part
    # of -10 were gathered for the weakest families
    assert held_all >= 0.81


@pytest.mark.parametrize("case", [c for c in CASES if c.seed], ids=lambda c: c.name)
def test_every_seed_is_right(case: Case) -> None:
    assert top(case.body) == case.expect


@pytest.mark.parametrize("case", [c for c in FIRST if c.expect == "none"], ids=lambda c: c.name)
def test_no_cause_for_a_traceback_that_is_not_ours(case: Case) -> None:
    assert explained(case.body).diagnoses == []


# ---- the confusable pairs: one message, two meanings


def _traceback(message: str, *frames: str, before: str = "") -> str:
    lines = [before, "Traceback (most recent call last):"]
    for frame in frames:
        lines += ['  File "%s", line 10, in forward' % frame, "    return f(x)"]
    return "\n".join(lines + [message, ""])


SITE = "/usr/lib/python3.10/site-packages/"


def test_the_same_dtype_message_is_apex_inside_apex_and_dtype_mismatch_elsewhere() -> None:
    message = "RuntimeError: expected scalar type Float but found Half"
    assert top(_traceback(message, SITE + "transformers/models/t5/modeling_t5.py",
                          SITE + "apex/normalization/fused_layer_norm.py")) == "apex"
    assert top(_traceback(message, SITE + "transformers/models/clip/modeling_clip.py", SITE + "torch/nn/functional.py")) \
        == "dtype-mismatch"


def test_a_missing_half_kernel_is_cpu_half_kernels_and_a_missing_bf16_cuda_kernel_is_bf16s() -> None:
    assert top(_traceback("RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'", SITE + "torch/nn/functional.py")) \
        == "cpu-half-kernels"
    assert top(_traceback("RuntimeError: \"max_all_cuda\" not implemented for 'BFloat16'", SITE + "torch/nn/functional.py")) \
        == "bf16-support"
    # a kernel missing for a non-float dtype is a bug of the caller's data, not ours
    assert top(_traceback("RuntimeError: \"argmax_cpu\" not implemented for 'Bool'", SITE + "torch/nn/functional.py")) == "none"


def test_cublas_init_failure_is_device_memory_unless_the_log_shows_cublas_libraries_out_of_step() -> None:
    """As the threads settle it (the first 104 and dev-21/25: VRAM full each time, never cuBLAS), a handle cuBLAS cannot
    create is device-memory's, with or without a memory word; cublas's where the log names its libraries out of step.
    ALLOC_FAILED alone stays cublas's."""
    message = "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    frame = SITE + "torch/nn/modules/linear.py"
    assert top(_traceback(message, frame)) == "device-memory"
    # (both readings offered, the full GPU first: each check's probe tries its own)
    assert [d.check for d in explained(_traceback(message, frame)).diagnoses] == ["device-memory", "cublas"]
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 23.65 GiB total capacity)\n"
    assert top(_traceback(message, frame, before=oom)) == "device-memory"
    libraries = "export LD_LIBRARY_PATH=/usr/local/cuda-11.3/lib64:$LD_LIBRARY_PATH\n"
    assert top(_traceback(message, frame, before=libraries)) == "cublas"
    alloc = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
    assert top(_traceback(alloc, frame)) == "cublas"
    assert top(_traceback(alloc, frame, before="watching nvidia-smi, VRAM climbs to 24G then it fails\n")) == "device-memory"


def test_a_gemm_refused_is_cublas_unless_the_log_shows_its_shapes_do_not_fit() -> None:
    message = "RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasSgemm( handle, opa, opb, m, n, k, ...)`"
    frame = SITE + "torch/nn/functional.py"
    assert top(_traceback(message, frame)) == "cublas"
    cpu = "on the CPU the same cell says: RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x4 and 5x11)\n"
    assert top(_traceback(message, frame, before=cpu)) == "none"


def test_float8_promotion_is_dora_fp8_from_an_adapter_and_fp8_from_plain_math() -> None:
    message = "RuntimeError: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half"
    assert top(_traceback(message, "/home/me/OneTrainer/modules/module/LoRAModule.py")) == "dora-fp8"
    assert top(_traceback(message, SITE + "peft/tuners/lora/layer.py")) == "dora-fp8"
    assert top(_traceback(message, SITE + "torchao/float8/float8_linear.py")) == "fp8"


def test_an_fp16_overflow_told_in_words_is_library_probes_only_beside_fp16_and_never_for_the_safety_checker() -> None:
    """No error line at all: a NaN loss or a black image is the fp16 overflow only where the text asks for fp16
    (or names a setup that overflows in it), and never where the pipeline's safety checker blanked the image."""
    for text in ("I fine-tune t5-large with fp16=True and the loss becomes nan after a few steps.\n",
                 "SDXL gives me a black image every time, whatever the prompt.\n",
                 "float16的logits中有很多nan值\n",  # CJK around the word: no \\b boundary there
                 "Works with bfloat16, but the output is empty with float16.\n",
                 # NaN in the plural, after a verb (transformers' T5 in .half(), dev-2)
                 "model = T5Model.from_pretrained('t5-base').cuda().half()\nwith longer inputs it still yields nans\n"):
        assert top(text) == "library-probes", text
    for text in ("The loss becomes nan after a few steps.\n",  # nothing says fp16: a learning rate, a data bug
                 "I get a black image in fp16; the log says: Potential NSFW content was detected in one or more images.\n"):
        assert top(text) == "none", text


def test_an_adapter_on_a_quantized_base_is_read_by_structure_and_not_where_the_adapter_is_missing_or_the_api_drifted() -> None:
    """dora-fp8's structural readings: an error raised in peft's layers for quantized bases, a line that points there,
    or one line naming an adapter, a quantized or fp8 base and a failure; but a quantized model with no adapter at all
    (transformers' "purely quantized" refusal) and a keyword one peft release added are other causes."""
    raised = _traceback("NotImplementedError: aten::add_ not implemented for AffineQuantizedTensor",
                        SITE + "peft/tuners/lora/torchao.py")
    assert code_of(raised) == ("dora-fp8", "adapter-on-quantized-base")
    drift = _traceback("TypeError: Linear4bit.merge() got an unexpected keyword argument 'safe_merge'", SITE + "peft/tuners/lora/bnb.py")
    assert top(drift) == "none"
    for text in ("Error positioning: peft/utils/integrations.py\n",
                 "the official scaled fp8 weights still do not support lora\n",
                 "WARNING - Loading LoRA on quantized model (int8_weight_only) - this may fail\n"):
        assert code_of(text) == ("dora-fp8", "adapter-on-quantized-base"), text
    # an error naming a quantized layer or tensor class beside an adapter, whichever library's class it is
    for message in ("AttributeError: 'Params4bit' object has no attribute 'compress_statistics'",
                    "RuntimeError: aten::mm is not implemented for AffineQuantizedTensor",
                    "TypeError: unsupported operand type(s) for +: 'QBytesTensor' and 'Tensor'"):
        text = _traceback(message, SITE + "peft/tuners/lora/layer.py", before="Loading LoRA adapter lora_A.safetensors")
        assert code_of(text) == ("dora-fp8", "adapter-on-quantized-base"), message
        assert top(_traceback(message, SITE + "mylib/model.py")) == "none", message  # no adapter anywhere: not this reading
    assert top("ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters on "
               "top of the quantized model to correctly perform fine-tuning.\n") == "none"


def test_an_fp8_capability_gate_is_read_by_structure_in_any_tools_words() -> None:
    """One line naming fp8, a GPU's capability or architecture, and a gate is fp8's, whichever tool wrote it
    (torchtitan's wording: on an A100 it is the hardware; dev-3 keeps the one thread where its gate wrongly refused an AMD
    MI350, a miss this rule accepts); with an adapter on the line it is dora-fp8's reading."""
    gate = "ValueError: Failed to swap to Float8Linear because float8 is only supported on SM89 or later.\n"
    assert code_of(gate) == ("fp8", "no-fp8-hardware")
    assert code_of("RuntimeError: FP8 requires an Ada or Hopper GPU; found NVIDIA A100-SXM4-80GB\n") == ("fp8", "no-fp8-hardware")
    assert top("the scaled fp8 checkpoint does not support LoRA on this GPU\n") == "dora-fp8"
    assert top("fp8 weights load fine and the images are right\n") == "none"


def test_pythons_could_not_find_module_is_the_extensions_for_a_pyd_and_torchs_for_torch_lib() -> None:
    """Python 3.8+'s "Could not find module '...' (or one of its dependencies)": a package's .pyd (dev-33, a CUDA
    torch-scatter beside a CPU torch) is extension-abi; torch's own torch\\lib DLL (dev-31) is torch-install's."""
    by_name = {c.name: c for c in CASES}
    assert code_of(by_name["torch-install--torch-scatter-windows-scatter-cuda-pyd-cpu-torch"].body) == ("extension-abi", "import-fails")
    assert code_of(by_name["torch-install--c10-dll-vcredist"].body) == ("torch-install", "torch-dll-failed")


def test_an_allocation_no_gpu_could_hold_is_not_memory_pressure() -> None:
    """A size computed wrong (dev-31: "Tried to allocate more than 1EB memory" after an NCCL timeout) is no full GPU."""
    [case] = [c for c in CASES if c.name == "none--nccl-timeout-then-oom-more-than-1eb-cascade"]
    assert code_of(case.body) == ("none", "")
    assert top("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB") == "device-memory"
    assert top("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 81920.00 GiB") == "none"


def test_an_out_of_memory_the_log_shows_growing_or_only_in_evaluation_is_the_programs() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB.\n"
    assert top(oom) == "device-memory"
    assert top(oom.replace("CUDA", "HIP")) == top(oom.replace("CUDA", "XPU")) == "device-memory"  # ROCm's, Intel's
    for before in ("I'm experiencing a nasty memory leak which very quickly leads to a CUDA OOM:\n",
                   "train is ok.\ntest is error.\n",
                   "the training loop works perfectly fine at this batch size, validation fails:\n"):
        assert top(before + oom) == "none", before


def test_cuda_unavailable_told_in_words_has_three_readings_and_torch_loads_own_words_none() -> None:
    found = explained("pytorch is not being installed with GPU.\n\ntorch.cuda.is_available() returning False.\n").diagnoses
    assert [(d.check, d.code) for d in found] == [("torch-install", "cpu-only-torch"), ("torch-install", "no-cuda-here"),
                                                  ("cuda-compat", "driver-too-old")]
    # a prompt's answer on the next line, as people paste a REPL session (Python's and IPython's)
    repl = explained("my 3060 is not used\n>>> import torch\n>>> torch.cuda.is_available()\nFalse\n").diagnoses
    assert [(d.check, d.code) for d in repl] == [(d.check, d.code) for d in found]
    assert repl[0].evidence[0] == "line 3: >>> torch.cuda.is_available() -> False"
    assert code_of("In [2]: torch.xpu.is_available()\nOut[2]: False\n") == ("torch-install", "cpu-only-torch")
    assert top("Did it work?\nFalse\n") == "none"  # an answer with no call before it joins nothing
    on_a_mac = explained("On my MacBook M2, torch.cuda.is_available() is False\n").diagnoses
    assert (on_a_mac[0].check, on_a_mac[0].code) == ("torch-install", "no-cuda-here")
    assert top("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If "
               "you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu')\n") == "none"


def test_torchs_capability_warning_is_a_false_alarm_for_a_later_minor_of_the_newest_capability_built() -> None:
    """GB10 (12.1) under a torch built up to 12.0 runs its sm_120 cubins; a Pascal card under a torch that starts at 7.0
    does not (two real cases each, dev-31 and dev-24..28)."""
    by_name = {c.name: c for c in CASES}
    for name in ("none--pytorch-gb10-capability-warning-false-positive", "none--unsloth-gb10-warning-fa2-fallback"):
        assert code_of(by_name[name].body) == ("none", ""), name
    for name in ("cuda-compat--kaggle-p100-sm60-torch-cu128-sm70-minimum",
                 "cuda-compat--comfyui-docker-gtx1080ti-sm61-torch-cu128-needs-cu126"):
        assert code_of(by_name[name].body) == ("cuda-compat", "no-kernel-image"), name


def test_a_cuda_runtime_error_is_read_by_its_number_or_its_name_however_it_is_printed() -> None:
    for text, want in (("RuntimeError: CUDA error 35 (cudaLaunchKernel)\n", ("cuda-compat", "driver-too-old")),
                       ("RuntimeError: cuda_error: 803\n", ("cuda-compat", "driver-library-mismatch")),
                       ("ERROR: kernel failed with cudaErrorNoKernelImageForDevice\n", ("cuda-compat", "no-kernel-image")),
                       ("RuntimeError: Cuda error: 209[cudaLaunchKernel(func, gridSize, blockSize, args, 0, stream);]\n",
                        ("cuda-compat", "no-kernel-image"))):
        assert code_of(text) == want, text
    assert top("Error: 2090 CUDA devices found\n") == "none"  # a number that only starts like one


def test_the_readings_written_in_stop_39_and_their_look_alikes() -> None:
    """Each structural reading written from dev cases in stop 39 (batches 36 to 39, and three older dev misses), beside
    what must not read as it."""
    # a program's advice after the error it printed is a condition, not an OOM (Real-ESRGAN's except block)
    advice = "If you encounter CUDA out of memory, try to set --tile with a smaller number.\n"
    assert top("Error \"unfolded2d_copy\" not implemented for 'Half'\n" + advice) == "cpu-half-kernels"
    assert top("Error CUDA out of memory. Tried to allocate 2.00 GiB\n" + advice) == "device-memory"
    # a raised error naming a GPU without native bf16 and bf16 together; not an Ampere GPU, not a poster's prose
    assert top("KeyError: 'flop count not found for t4 with precision: bf16-mixed'\n") == "bf16-support"
    assert top("KeyError: 'flop count not found for a100 with precision: bf16-mixed'\n") == "none"
    assert top("Repro: FastVisionModel + use_dora=True + T4 GPU (no bf16 support)\n") == "none"
    # a compiled module whose guarded import failed, named later; not any undefined name
    assert top(_traceback("NameError: name 'awq_ext' is not defined", SITE + "awq/modules/linear/gemm.py")) == "extension-abi"
    assert top(_traceback("NameError: name 'model_ext' is not defined", "/home/me/train.py")) == "extension-abi"
    assert top(_traceback("NameError: name 'model' is not defined", "/home/me/train.py")) == "none"
    # a package's version gate for the torch its ops were built for
    assert top("Exception: Version mismatch: Open3D needs PyTorch version 1.7.*, but version 1.8.2 is installed!\n") == "extension-abi"
    # nvcc's runtime entry points, and a symbol a title cut off, in a package's library; torch's own is torch-install's
    assert top("ImportError: /x/_ext/roi_pooling/_roi_pooling.so: undefined symbol: __cudaPopCallConfiguration\n") == "extension-abi"
    assert top("OSError:anaconda3/lib/python3.6/site-packages/spconv/libspconv.so: undefined symbol:\n") == "extension-abi"
    assert top("OSError: /env/lib/python3.10/site-packages/torch/lib/libtorch_cpu.so: undefined symbol:\n") != "extension-abi"
    # transformers' bitsandbytes version gate
    assert top("ValueError: You have a version of `bitsandbytes` that is not compatible with 8bit inference and training make "
               "sure you have the latest version of `bitsandbytes` installed\n") == "quantized-base"
    # `pip install apex` building the impostor's dependencies
    pip_log = ("    crypt_blowfish-1.2/crypt.h:17:23: fatal error: gnu-crypt.h: No such file or directory\n"
               "    error: command 'gcc' failed with exit status 1\n"
               "Command \"/opt/conda/bin/python -u -c \"import setuptools;__file__='/tmp/pip-install-g5jfjni4/cryptacular/setup.py'\" "
               "install\" failed with error code 1 in /tmp/pip-install-g5jfjni4/cryptacular/\n")
    assert top(pip_log) == "apex"
    assert top(pip_log.replace("cryptacular", "pycocotools")) == "none"
    # MPSGraph's assertion on a bf16 operand; the same on f16 is no bf16 matter
    mps = "/AppleInternal/Library/MPSGraphExecutable.mm:2565: failed assertion `Incompatible element type for parameter at " \
          "index 1, mlir module expected element type f32 but received %s'\n"
    assert code_of(mps % "bf16") == ("bf16-support", "bf16-mps")
    assert top(mps % "si32") != "bf16-support"
    # "Torch not compiled with CUDA enabled" retyped: both readings still offered, the CPU wheel first
    assert [d.code for d in explained("Torch not compiled with cuda\n").diagnoses] == ["cpu-only-torch", "no-cuda-here"]
    # the driver too old, without the version torch prints; NVRTC not knowing the GPU
    assert code_of("RuntimeError: NVIDIA driver too old\n") == ("cuda-compat", "driver-too-old")
    assert code_of("RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)\n") == ("cuda-compat", "no-kernel-image")
    # apex: its fused norm's dtype failure seen through its module's C++ frames; a fused optimizer's requirement
    cpp = ("RuntimeError: expected scalar type Half but found Float (data_ptr<c10::Half> at /x/TensorMethods.h:6321)\n"
           "frame #1: c10::Half* at::Tensor::data_ptr<c10::Half>() const + 0x44c (0x7ef in /site-packages/%s.cpython-36m-x86_64-linux-gnu.so)\n")
    assert top(cpp % "fused_layer_norm_cuda") == "apex"
    assert top(cpp % "my_layer_cuda") == "dtype-mismatch"
    assert top("AssertionError: APEX and CUDA required for fused optimizers\n") == "apex"
    # autocast meeting fp16 and bf16; GradScaler over bf16 gradients offered beside bf16-support's reading
    assert top("RuntimeError: Unexpected floating ScalarType in at::autocast::prioritize\n") == "dtype-mismatch"
    grads = explained("RuntimeError: \"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for 'BFloat16'\n")
    assert {d.check for d in grads.diagnoses} == {"bf16-support", "library-probes"}
    # transformers' bitsandbytes integration that does not import
    assert top("Failed to import transformers.integrations.bitsandbytes because of the following error (look up to see its "
               "traceback):\nNo module named 'triton.ops'\n") == "quantized-base"
    # IPEX's version gate; macOS's missing C++ symbol pasted without its dlopen(...)
    assert top("ERROR! Intel® Extension for PyTorch* needs to work with PyTorch 2.2.*, but PyTorch 2.1.0+cu121 is found.\n") == "extension-abi"
    assert top("Symbol not found: __Z16THPVariable_WrapN2at6TensorE\n") == "extension-abi"
    assert top("Symbol not found: _cblas_sgemm\n") == "none"
    # a torch that predates the device asked for
    assert code_of("RuntimeError: Expected one of cpu, cuda, xpu, mkldnn, opengl, opencl, ideep, hip, ve, ort, mlc, xla, lazy, "
                   "vulkan, meta, hpu device type at start of device string: mps\n") == ("torch-install", "torch-too-old-for-device")
    # CUDA unavailable as programs print it: both of torch-install's readings; not collect_env's report line, not a quantizer
    for said in ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "Have CUDA:  False", "CUDA available: False",
                 "No GPU found. Conversion on CPU is very slow."):
        assert code_of(said + "\n") == ("torch-install", "cpu-only-torch"), said
    assert top("Is CUDA available: False\n") == "none"
    assert top("ValueError: No GPU found. A GPU is needed for quantization.\n") == "quantized-base"
    # a log that ends in NCCL's own warnings or its refused peer-to-peer, with no error raised; not its ordinary lines, and
    # not where a raised error explains the log
    nccl = ("host:34127:34127 [0] NCCL INFO Bootstrap : Using eno1:192.168.1.133<0>\n"
            "host:34127:34127 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n")
    assert top(nccl) == "none"
    assert top(nccl + "host:34127:34127 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n") == "distributed"
    assert top(nccl + "host:454:838 [0] NCCL INFO Could not enable P2P between dev 1(=1c000) and dev 0(=1b000)\n") == "distributed"
    assert top(nccl + "host:34127:34127 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
               + _traceback("ValueError: Tokenizer class LlamaTokenizer does not exist", "/home/me/train.py")) == "none"
    # older dev misses: a UI that lost the closing quote; "built without" for "not compiled with"; rocBLAS without kernels
    # for the card's gfx target
    assert top("ERROR: ForgeParams4bit' object has no attribute 'quant_storage\n") == "quantized-base"
    assert code_of("Torch built without cuda support\n") == ("torch-install", "cpu-only-torch")
    assert top("RuntimeError: Torch built without libuv support\n") != "torch-install"
    assert code_of("rocBLAS error: Cannot read C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\/rocblas/library/TensileLibrary.dat: No such "
                   "file or directory for GPU arch : gfx1103\n") == ("cuda-compat", "no-kernel-image")


def test_the_readings_written_in_stop_40_and_their_look_alikes() -> None:
    """Each structural reading written from dev-40 to dev-43 (and, with the GPU's own tests in test_gpu_failures.py, from what a real
    H200 printed), beside what must not read as it."""
    # apex's own files calling a torch API this torch lacks; the same AttributeError outside apex is not apex's
    gone = "AttributeError: module 'torch' has no attribute 'library'"
    assert top(_traceback(gone, SITE + "apex/normalization/fused_layer_norm.py")) == "apex"
    assert top(_traceback(gone, "/home/me/train.py")) != "apex"
    # a scatter or index op writing one float dtype into another
    assert top("RuntimeError: scatter_add_cuda_(): Expected self.dtype to be equal to src.dtype\n") == "dtype-mismatch"
    assert top("RuntimeError: index_add_(): self (Float) and source (Half) must have the same scalar type\n") == "dtype-mismatch"
    # NaN pixels cast by any program's own conversion; not a cast warning elsewhere
    cast = "RuntimeWarning: invalid value encountered in cast\n  %s\n"
    assert top(cast % "outputs.append((x * 255).numpy().astype(np.uint8))") == "library-probes"
    assert top(cast % "counts = np.asarray(table).astype(np.int64)") != "library-probes"
    # a package saying its compiled part did not load; bitsandbytes' native library stays quantized-base's
    assert top("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. CUDA 1108 vs. CUDA 1210\n") == "extension-abi"
    assert top("ImportError: Cannot load Graphbolt C++ library\n") == "extension-abi"
    assert top("Could not load bitsandbytes native library: libcudart.so.12\n") == "quantized-base"
    # a custom op's launch check naming a kernel image or init error, in its .cu file; an illegal access is the code's
    launch = "CUDA kernel failed : %s\nvoid furthest_point_sampling_kernel_wrapper(int) at L:233 in _ext_src/src/sampling_gpu.cu\n"
    assert top(launch % "initialization error") == "extension-abi"
    assert top(launch % "an illegal memory access was encountered") != "extension-abi"
    # torch's library sought by another package's module, with torch's own import nowhere; torch's own import is torch's
    k2 = _traceback("ImportError: libc10.so: cannot open shared object file: No such file or directory",
                    SITE + "k2/__init__.py", SITE + "k2/autograd.py")
    assert code_of(k2) == ("extension-abi", "import-fails")
    assert top(_traceback("ImportError: libc10.so: cannot open shared object file: No such file or directory",
                          SITE + "transformers/__init__.py", SITE + "torch/__init__.py")) == "torch-install"
    # numpy's C API versions disagreeing, warned by torch; torch's DLL named only after WinError 126
    assert code_of("UserWarning: Failed to initialize NumPy: module compiled against API version 0xf but this version of "
                   "numpy is 0xe\n") == ("torch-install", "numpy-abi")
    assert top('HELP, OSError: [WinError 126] fbgemm.dll" or one of its dependencies\n') == "torch-install"
    assert top("OSError: [WinError 126] mylib.dll or one of its dependencies\n") != "torch-install"
    # dev-41: torch's CPU build seen from a CUDA call; a prebuilt extension needing a newer glibc (torch's own library is
    # torch-install's); cpp_extension's toolkit check without its space; bitsandbytes' no-GPU line after CUDA failed to
    # start; a kernel library refusing bf16 as a dtype
    for said in ("RuntimeError: Cannot get CUDA generator without ATen_cuda library. PyTorch splits its backend",
                 "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'"):
        assert code_of(said + "\n") == ("torch-install", "cpu-only-torch"), said
    glibc = "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by %s)\n"
    assert top(glibc % "/mnt/Medical-SAM2/sam2_train/_C.so") == "extension-abi"
    assert top(glibc % "/env/lib/python3.7/site-packages/torch/lib/libshm.so") == "torch-install"
    assert top("The detected CUDA version(11.8) mismatches the version that was used to compile PyTorch (12.4)\n") == "extension-abi"
    bnb = ("UserWarning: The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit "
           "multiplication, and GPU quantization are unavailable.\n")
    assert top(bnb) == "quantized-base"
    assert top("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
               "functions before calling NumCudaDevices() that might have already set an error? Error 804: forward "
               "compatibility was attempted on non supported HW\n" + bnb) == "cuda-compat"
    assert top("RuntimeError: un-supported dtype: bfloat16\n") == "bf16-support"
    assert top("RuntimeError: un-supported dtype: int64\n") != "bf16-support"
    # dev-42: torch's DLL named first with Windows' words after it; not another package's DLL. CUTLASS refusing
    # _scaled_mm's row-wise path; not CUTLASS elsewhere
    assert top("fbgemm.dll - The specified module could not be found\n") == "torch-install"
    assert top("opencv_world.dll - The specified module could not be found\n") != "torch-install"
    cutlass = '  File "/home/me/lingua/%s.py", line 23, in matmul\n    output = torch.%s(\nRuntimeError: cutlass cannot initialize\n'
    assert code_of(cutlass % ("float8", "_scaled_mm")) == ("fp8", "no-fp8-hardware")
    assert top(cutlass % ("kernels", "my_gemm")) != "fp8"
    # dev-43: a package's version gate in torchao's words; a compiled part built without CUDA (not torch's own words);
    # an extension module named by its ABI tag alone, missing a symbol (not a bare _C); torch._six is old code, not torch
    assert top("Skipping import of cpp extensions due to incompatible torch version 2.7.1+cu128 for torchao version "
               "0.15.0\n") == "extension-abi"
    assert top("ValueError: /io/include/tensorview/tensor.h(171)\ndon't compiled with cuda\n") == "extension-abi"
    assert top("AssertionError: Torch not compiled with CUDA enabled\n") == "torch-install"
    assert top("ImportError causal_conv1d_cuda.cpython-310-x86_64-linux-gnu.so undefined symbol\n") == "extension-abi"
    assert top("ImportError _C.cpython-310-x86_64-linux-gnu.so undefined symbol\n") != "extension-abi"
    assert top("ModuleNotFoundError: No module named 'torch._six'\n") == "none"
    assert top(_traceback("ModuleNotFoundError: No module named 'torch._six'", SITE + "apex/amp/_amp_state.py")) == "apex"
    assert top("ModuleNotFoundError: No module named 'torch._C'\n") == "torch-install"



def test_the_readings_written_in_stop_41_and_their_look_alikes() -> None:
    """Each structural reading written from the dev sets in stop 41, beside what must not read as it."""
    # out of memory said in words, in any language around it; Java's OutOfMemoryError is not torch's
    assert top("When I increase the context, it ends with OutOfMemoryError error\n") == "device-memory"
    assert top("单张卡40g测试transformers和hug上的例子会out of mem\n") == "device-memory"
    assert top("Exception in thread main java.lang.OutOfMemoryError: Java heap space\n") != "device-memory"
    # torch 0.4-1.1's CUDA 9 builds on a Turing GPU (THCGeneral's invalid argument, spaced either way); not another error
    assert code_of("RuntimeError: cuda runtime error (11) :invalid argument at /pytorch/aten/src/THC/THCGeneral.cpp:383\n") \
        == ("cuda-compat", "no-kernel-image")
    assert top("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=11 : invalid argument\n") \
        == "cuda-compat"
    assert top("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=87 error=30 : unknown error\n") != "cuda-compat"
    # NaN losses under AMP told in Chinese prose, the English words inside it unbounded by \b; not without an fp16 word
    assert top("基于mt5+amp的模型微调loss直接走向nan\n") == "library-probes"
    assert top("模型微调loss直接走向nan\n") != "library-probes"
    # a package's _C (or private module) missing a symbol, in Windows' words in any language; torch's own _C is not
    for said in ("找不到指定的程序。", "指定されたプロシージャが見つかりません。", "The specified procedure could not be found.",
                 "Die angegebene Prozedur wurde nicht gefunden."):
        assert code_of("ImportError: DLL load failed while importing _C: %s\n" % said) == ("extension-abi", "import-fails"), said
    torch_own = _traceback("ImportError: DLL load failed while importing _C: 找不到指定的程序。", SITE + "torch/__init__.py")
    assert top(torch_own) == "torch-install"
    assert top("ImportError: DLL load failed while importing _C: The specified module could not be found.\n") != "extension-abi"
    # dev-44: apex's container_abcs with no path in view (not where timm's helpers are); a kernel package refusing the GPU's
    # architecture; a C++ or OpenMP runtime version another .so needs (not torch's own); an adapter that spoils a GGUF or
    # fp8 base's output, told in words
    assert top("ImportError: cannot import name 'container_abcs' from 'torch._six'\n") == "apex"
    assert top(_traceback("ImportError: cannot import name 'container_abcs' from 'torch._six'",
                          SITE + "timm/models/layers/helpers.py")) != "apex"
    assert code_of("ValueError: Unsupported CUDA architecture: sm75\n") == ("cuda-compat", "no-kernel-image")
    assert top("ValueError: Unsupported dtype: float64\n") != "cuda-compat"
    gomp = "ImportError: %s/libgomp.so.1: version `GOMP_4.0' not found (required by %s)\n"
    assert top(gomp % (SITE + "torch/lib", "/usr/local/warp-ctc/build/libwarpctc.so")) == "extension-abi"
    assert top(gomp % ("/usr/lib", SITE + "torch/lib/libtorch_cpu.so")) != "extension-abi"
    assert top("When using the LoRA with the GGUF Q4_K model the output looks bad.\n") == "dora-fp8"
    assert top("When using the LoRA with the bf16 model the output looks bad.\n") != "dora-fp8"
    # a process killed by SIGILL with only torch in view; not where numpy's OpenBLAS or another package's import is
    assert code_of("Illegal instruction (core dumped)\n") == ("torch-install", "torch-import-failed")
    assert top(">>> import torch\n非法指令 (核心已转储)\n") == "torch-install"
    assert top(">>> from pypylon import pylon\nIllegal instruction (core dumped)\n") != "torch-install"
    assert top("numpy 1.19.5\nIllegal instruction (core dumped)\n") != "torch-install"
    # a GPU named by its model number beside an fp8 gate; fp8 asked of a cuBLAS without a GEMM for its recipe
    assert code_of("Does it mean that 3090 no longer supports FP8?\n") == ("fp8", "no-fp8-hardware")
    assert top("Does it mean that 3090 no longer supports this model?\n") != "fp8"
    assert top("Unable to find suitable cuBLAS GEMM algorithm, when using MXFP8BlockScaling\n") == "fp8"
    assert top("Unable to find suitable cuBLAS GEMM algorithm\n") != "fp8"
    # nvcc refusing the GPU's architecture while an extension builds; not nvcc failing on the code
    assert code_of("nvcc fatal   : Unsupported gpu architecture 'compute_86'\n") == ("cuda-compat", "no-kernel-image")
    assert top("nvcc fatal   : Could not open output file '/tmp/tmpxft_0001.o'\n") != "cuda-compat"
    # apex's setup.py refusing another CUDA than torch's; the BERT-era scripts' own words for a failed apex import
    assert code_of("RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version "
                   "used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 11.3.\n") \
        == ("apex", "apex-no-cuda-extensions")
    assert code_of("ImportError: Please install apex from https://www.github.com/nvidia/apex to use distributed and fp16 "
                   "training.\n") == ("apex", "apex-no-amp")
    # fp16's loss scaler giving up (DeepSpeed's and fairseq's words); not its ordinary skipped step
    assert code_of("Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n") \
        == ("library-probes", "fp16-overflow")
    assert top("FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.\n") == "library-probes"
    assert top("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n") != "library-probes"
    # dev-45: a torch C++ symbol missing however the paste wrote it, not where torch's own import fails; PyG's companions
    # finding no library of theirs; MPS refusing a bf16 tensor; the driver too old for an API call, or said in lowercase;
    # a kernel library without an fp8 kernel for the GPU; NaN that "occurs" in fp16; programs saying CUDA is not there;
    # the CUDA runtime a library loads through ctypes
    assert top("fails with undefined symbol (_ZN5torch3jit17parseSchemaOrNameERKSs)\n") == "extension-abi"
    assert top("ImportError: %storch/lib/libtorch_cpu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs\n" % SITE) \
        == "torch-install"
    spline = ('  File "%s", line 11, in <module>\n    torch.ops.load_library(importlib.machinery.PathFinder().find_spec(\n'
              "AttributeError: 'NoneType' object has no attribute 'origin'\n")
    assert top(spline % (SITE + "torch_spline_conv/__init__.py")) == "extension-abi"
    assert top(spline % "/home/me/train.py") != "extension-abi"
    assert code_of("TypeError: Trying to convert BFloat16 to the MPS backend but it does not have support for that dtype.\n") \
        == ("bf16-support", "bf16-mps")
    assert code_of("RuntimeError: [TM][ERROR] CUDA runtime error: API call is not supported in the installed CUDA driver\n") \
        == ("cuda-compat", "driver-too-old")
    assert top('level=DEBUG msg="Unable to load cudart" error="your nvidia driver is too old or missing."\n') == "cuda-compat"
    assert code_of("No feasible kernel found for the problem: sm75_f16_e4m3b128_f16\n") == ("fp8", "no-fp8-hardware")
    assert top("No feasible kernel found for the problem: sm75_f16_f16\n") != "fp8"
    assert top("when bfloat16 inference, everything is OK, but it occurs NAN when fp16.\n") == "library-probes"
    for said in ("No supported Nvidia GPU found, use CPU instead",
                 "UserWarning: The unoptimized RealESRGAN is slow on CPU. We do not use it."):
        assert top(said + "\n") == "torch-install", said
    dlopen = ('  File "/usr/lib/python3.10/ctypes/__init__.py", line 374, in __init__\n'
              "    self._handle = _dlopen(self._name, mode)\nOSError: libcudart.so.12: cannot open shared object file: No such "
              "file or directory\n")
    assert top(dlopen) == "extension-abi"
    # a package saying its CUDA extension is not installed; half precision refused by a "target device" retold
    assert code_of("WARNING - CUDA extension not installed.\n") == ("extension-abi", "extension-not-loaded")
    assert top("Target device doesn't support float16 computation (Can't use GPU)\n") == "cpu-half-kernels"
    assert top("Target device doesn't support this model\n") != "cpu-half-kernels"
    # dev-46: "no kernel image" capitalised, and torch 0.x's numbered "invalid device function"; the master port taken
    # beside torch.distributed's words (not a web UI's port); MPS's own tensor type names; torch's DLL whose path a paste
    # wrapped mid-word
    assert top("CUDA error: No kernel image is available for execution on the device\n") == "cuda-compat"
    assert code_of("RuntimeError: cuda runtime error (8) : invalid device function at c:/thc/generic/THCTensorMath.cu:301\n") \
        == ("cuda-compat", "no-kernel-image")
    assert code_of("RuntimeError: Address already in use at /pytorch/torch/lib/THD/process_group/General.cpp:17\n") \
        == ("distributed", "port-in-use")
    assert top("OSError: [Errno 98] Address already in use\nCannot start the gradio server on port 7860\n") != "distributed"
    assert code_of("RuntimeError: Input type (MPSFloatType) and weight type (MPSHalfType) should be the same\n") \
        == ("dtype-mismatch", "mixes-rejected")
    wrapped = ('OSError: [WinError 126] The specified module was not found. Error loading "X:\\AI\\_xxl_data\\to\n'
               'rch\\lib\\c10_cuda.dll" or one of its dependencies.\n')
    assert top(wrapped) == "torch-install"
    assert top('OSError: [WinError 126] Error loading "C:\\app\\mylib.dll" or one of its dependencies.\n') != "torch-install"
    # bash's own "Killed" for a process the OOM killer ended (alone on its line, or in its job report); not the word in
    # a sentence. transformers' quantizer finding the model's modules sent to the CPU or disk for lack of GPU memory
    assert code_of("Epoch 1/10\nKilled\n") == ("device-memory", "out-of-memory")
    assert top("./train.sh: line 5: 12345 Killed                  python train.py\n") == "device-memory"
    assert top("the worker was killed by the user\n") != "device-memory"
    assert top("ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the "
               "quantized model.\n") == "device-memory"
    # dev-47: a PTX or TensorRT older than the GPU; xformers' warning cut after its first words; onnxruntime's provider
    # missing the cuDNN it was built for is not torch's library
    assert code_of("ptxas /tmp/f, line 6; error   : PTX .version 7.4 does not support .target sm_89\n") \
        == ("cuda-compat", "no-kernel-image")
    assert top("[E] [TRT] ../rtSafe/cuda/caskUtils.cpp (80) - Assertion Error in trtSmToCask: 0 (Unsupported SM.)\n") \
        == "cuda-compat"
    assert top("[TRT] 1: [caskUtils.cpp::trtSmToCask::147] Error Code 1: Internal Error (Unsupported SM: 0x809)\n") \
        == "cuda-compat"
    assert code_of("WARNING[XFORMERS]: xFormers can't load\n") == ("extension-abi", "extension-not-loaded")
    assert top("[E:onnxruntime:Default, provider_bridge_ort.cc:1480 TryGetProviderInfo_CUDA] Failed to load library "
               "libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file\n") != "torch-install"
    assert top("Error Code 9: API Usage Error (Target GPU SM 120 is not supported by this TensorRT release.)\n") == "cuda-compat"
    assert top("'sm_120' is not a recognized processor for this target (ignoring processor)\n") == "cuda-compat"
    assert top("ImportError: DLL load failed while importing awq_inference_engine\n") == "extension-abi"
    # from the tools' own sources: flash-attn's kernels for A100/H100 alone; a bitsandbytes older than the code; rank 0 gone
    # while another rank asks it for NCCL's id through the store
    assert top("RuntimeError: FlashAttention backward for head dim 256 with dropout requires A100/A800 or H100/H800\n") \
        == "cuda-compat"
    assert top("RuntimeError: Expected is_sm80 || is_sm90 to be true, but got false.\n") == "cuda-compat"
    assert code_of("AttributeError: module 'bitsandbytes.nn' has no attribute 'Linear4bit'\n") == ("quantized-base", "quantized-fails")
    assert top("AttributeError: module 'torch.nn' has no attribute 'Linear4bit'\n") != "quantized-base"
    assert code_of("RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
                   "store by key '0', but store->get('0') got error: Connection reset by peer\n") == ("distributed", "ranks-missing")
    # CUDA failing to start although a driver is there, in torch's words; nvidia-smi unable to reach the kernel driver
    for said in ("UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu.",
                 "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
                 "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
                 "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"):
        assert code_of(said + "\n") == ("cuda-compat", "cuda-init-failed"), said
    assert code_of("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
                   "NVIDIA driver is installed and running.\n") == ("cuda-compat", "no-cuda-device")
    # pip's resolver on a package pinning another torch exactly; not a range another package asks for. xformers without
    # its compiled extensions
    assert code_of("xformers 0.0.23 requires torch==2.1.1, but you have torch 2.2.0 which is incompatible.\n") \
        == ("extension-abi", "version-mismatch")
    assert top("transformers 4.40.0 requires tokenizers<0.20, but you have tokenizers 0.21.0 which is incompatible.\n") != "extension-abi"
    assert code_of("WARNING[XFORMERS]: Need to compile C++ extensions to use all xFormers features.\n") \
        == ("extension-abi", "extension-not-loaded")
    # kohya's sd-scripts' own fp8_base assertions (train_network.py): mixed precision off; a torch before float8
    assert code_of("AssertionError: fp8_base requires mixed precision='fp16' or 'bf16' / fp8を使う場合はmixed_precision='fp16'"
                   "または'bf16'が必要です。\n") == ("dora-fp8", "dora-float8-base")
    assert code_of("AssertionError: fp8_base requires torch>=2.1.0 / fp8を使う場合はtorch>=2.1.0が必要です。\n") == ("fp8", "no-float8")
    # the driver's PTX JIT failing where a binary has no code for the GPU
    for said in ("RuntimeError: CUDA error: a PTX JIT compilation failed", "RuntimeError: CUDA error: PTX JIT compiler library not found"):
        assert code_of(said + "\n") == ("cuda-compat", "no-kernel-image"), said
    # apex.amp's own check against a model halved before amp.initialize; apex's fused Functions called with another signature
    assert code_of("RuntimeError: Found param module.weight with type torch.cuda.HalfTensor, expected torch.cuda.FloatTensor.\n"
                   "When using amp.initialize, you do not need to call .half() on your model\nbefore passing it, no matter what "
                   "optimization level you choose.\n") == ("apex", "apex-amp-misuse")
    assert code_of("TypeError: FusedLayerNormAffineFunction.forward() missing 1 required positional argument: "
                   "'memory_efficient'\n") == ("apex", "apex-stale")
    assert top("TypeError: MyFunction.forward() missing 1 required positional argument: 'x'\n") != "apex"
    # a CUDA call inside NCCL failing on a rank
    assert code_of("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
                   "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n") \
        == ("distributed", "collective-fails")
    # torch's own bf16 answer told in words
    assert code_of("torch.cuda.is_bf16_supported() returned False\n") == ("bf16-support", "bf16-unsupported")
    assert top("torch.cuda.is_bf16_supported() returned True\n") != "bf16-support"


def test_the_readings_written_in_stop_42_and_their_look_alikes() -> None:
    """Each reading written from dev-48 to dev-52 in stop 42, beside what must not read as it."""
    # nvcc's refusal quoted without its "nvcc fatal" prefix; not another tool's unsupported architecture of the CPU
    assert code_of('Error:"Unsupported gpu architecture \'compute_75\'"\n') == ("cuda-compat", "no-kernel-image")
    assert top("error: unsupported architecture 'armv6'\n") != "cuda-compat"
    # newer torch's OutOfMemoryError with nothing after its first words, and Vulkan's out-of-memory results (-1 host,
    # -2 device); not another Vulkan failure
    assert code_of("torch.OutOfMemoryError: Allocation on device \n") == ("device-memory", "out-of-memory")
    assert code_of("Error message：Allocation on device\n") == ("device-memory", "out-of-memory")
    assert top("Allocation on device 0 succeeded after retry\n") != "device-memory"
    assert code_of("'vkAllocateMemory failed -2' occured but image still comes out\n") == ("device-memory", "out-of-memory")
    assert top("vkCreateInstance failed -9\n") != "device-memory"
    # NCCL refusing a collective's dtype (bfloat16 before NCCL 2.10.3); not gloo's refusal of an op
    assert code_of("RuntimeError: Input tensor data type is not supported for NCCL process group: BFloat16\n") == (
        "distributed", "collective-fails")
    assert top("RuntimeError: ProcessGroupGloo does not support reduce_scatter\n") != "distributed"
    # a link against a libtorch of the other C++ ABI; not a link error of the program's own symbols
    assert code_of("pair_nequip.cpp:(.text+0xb7): undefined reference to `c10::detail::torchCheckFail(char const*, char const*, "
                   "unsigned int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)'\n") \
        == ("extension-abi", "import-fails")
    assert top("main.cpp:(.text+0x1a): undefined reference to `my_helper(int)'\n") != "extension-abi"
    # dev-49: an apex.amp without the API the code calls; not another module's missing initialize
    assert code_of("AttributeError: module 'apex.amp' has no attribute 'initialize'\n") == ("apex", "apex-stale")
    assert top("AttributeError: module 'wandb' has no attribute 'initialize'\n") != "apex"
    # zsh's words for SIGILL where the killed command names torch; not where it names only python (another wheel)
    assert code_of("[1]    28461 illegal hardware instruction  python -c 'import torch'\n") == ("torch-install", "torch-import-failed")
    assert top("3137 illegal hardware instruction (core dumped) python\n") != "torch-install"
    # PyG's companions built for another CUDA, in their own start-up check's words
    assert code_of("RuntimeError: Detected that PyTorch and torch_scatter were compiled with different CUDA versions. PyTorch has "
                   "CUDA version 10.1 and torch_scatter has CUDA version 10.2.\n") == ("extension-abi", "cuda-variant-mismatch")
    # an Intel XPU build whose kernels need fp64 on a GPU without it; not a dtype refused by MPS
    assert code_of("RuntimeError: Required aspect fp64 is not supported on the device\n") == ("cuda-compat", "no-kernel-image")
    assert top("TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64.\n") \
        != "cuda-compat"
    # dev-50: any compiled module of apex's (its contrib ones too) missing beside apex's frames; not a module of that name
    # elsewhere
    apex_contrib = _traceback("ModuleNotFoundError: No module named 'fast_layer_norm'", "~/apex/apex/contrib/layer_norm/layer_norm.py")
    assert code_of(apex_contrib) == ("apex", "apex-no-cuda-extensions")
    assert top("ModuleNotFoundError: No module named 'fast_tokenizer'\n") != "apex"
    # torch's compiler importing a name from a triton other than its pin; not a name missing from another package
    assert code_of("ImportError: cannot import name 'AttrsDescriptor' from 'triton.compiler.compiler'\n") == (
        "extension-abi", "version-mismatch")
    assert top("ImportError: cannot import name 'AttrsDescriptor' from 'mylib.compiler'\n") != "extension-abi"
    # dev-51: torch 1.0-1.3's words for a CPU without half kernels; not the same words for a float type
    assert code_of("RuntimeError: _thnn_conv2d_forward not supported on CPUType for Half\n") == ("cpu-half-kernels", "fp16-missing")
    assert top("RuntimeError: _thnn_conv2d_forward not supported on CPUType for Long\n") != "cpu-half-kernels"
    # a kernel image in a user's words beside a Blackwell GPU; not without one in view
    assert code_of("GeoAI QGIS plugin fails to load model on Windows (RTX 50-series) – CUDA kernel image error\n") == (
        "cuda-compat", "no-kernel-image")
    assert top("The plugin fails with a kernel image error after the update\n") != "cuda-compat"
    # DeepSpeed's own check of its prebuilt ops against the running torch
    assert code_of("RuntimeError: PyTorch version mismatch! DeepSpeed ops were compiled and installed with a different version "
                   "than what is being used at runtime.\n") == ("extension-abi", "version-mismatch")
    # dev-52: FasterTransformer's CUTLASS kernels refusing the GPU's architecture; not another library's assertion
    assert code_of("RuntimeError: [FT][ERROR] Unsupported Arch Assertion fail: /w/EETQ/csrc/cutlass_kernels/"
                   "cutlass_preprocessors.cc:125\n") == ("cuda-compat", "no-kernel-image")
    assert top("RuntimeError: [FT][ERROR] Assertion fail: /w/csrc/gemm.cc:88\n") != "cuda-compat"


def test_the_readings_written_in_stop_43_and_their_look_alikes() -> None:
    """Each reading written from dev-53 and dev-55 to dev-58 in stop 43, beside what must not read as it."""
    # uv refusing a lock file's torch pin that has no wheel for this platform; not another package's
    uv = ("error: Distribution `%s==2.5.1 @ registry+https://pypi.org/simple` can't be installed because it doesn't have a "
          "source distribution or wheel for the current platform\n")
    assert code_of(uv % "torch") == ("torch-install", "torch-missing")
    assert top(uv % "torchmetrics") != "torch-install" and top(uv % "numpy") != "torch-install"
    # transformers asked for FlashAttention-2 on a model loaded in float32; not the same warning for a half model's other
    # complaint, nor flash-attn's GPU gate
    fa2 = ("Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in "
           "Qwen2ForCausalLM is torch.%s.\n")
    assert code_of(fa2 % "float32") == ("library-probes", "fa2-needs-half")
    assert top(fa2 % "float16") != "library-probes"
    assert top("You are attempting to use Flash Attention 2.0 with a model not initialized on GPU.\n") != "library-probes"
    # dev-55: mmcv's op registry without the op's CUDA half, forward or backward; not another device's
    assert code_of("RuntimeError: ms_deform_attn_impl_forward: implementation for device cuda:0 not found.\n") == (
        "extension-abi", "import-fails")
    assert top("RuntimeError: ms_deform_attn_impl_forward: implementation for device xla:0 not found.\n") != "extension-abi"
    # black output told in words where the user turned the NSFW filter off; not where the filter blanked it
    blob = "I only get a black blob where the mask is drawn. I have a 1660 Super GPU. I added the --sd-disable-nsfw argument.\n"
    assert code_of(blob) == ("library-probes", "fp16-overflow")
    assert top("I only get a black square on my 1660 Super. Potential NSFW content was detected in the output.\n") \
        != "library-probes"
    # dev-56: torch 1.x's caffe2 DLLs named before the error, WinError 193 too; not another package's DLL
    title = "%s.dll makes import torch occur OSerror，[WinError 193] %%1 is not a valid Win32 application\n"
    assert code_of(title % "caffe2_detectron_ops_gpu") == ("torch-install", "torch-dll-failed")
    assert top(title % "libzmq") != "torch-install"
    # Python's own MemoryError, bare or numpy's; not an allocation no machine could hold
    assert code_of(_traceback("MemoryError", "/x/replay.py")) == ("device-memory", "out-of-memory")
    numpy_oom = "numpy.core._exceptions._ArrayMemoryError: Unable to allocate %s for an array with shape (1000000, 84, 84)\n"
    assert code_of(numpy_oom % "6.57 GiB") == ("device-memory", "out-of-memory")
    assert top(numpy_oom % "7.28 TiB") != "device-memory"
    # Ultralytics' exporter refusing half precision on the CPU; not its other device guards
    assert code_of("WARNING ⚠️ half=True only compatible with GPU export, i.e. use device=0\n") == (
        "cpu-half-kernels", "fp16-refused")
    assert top("WARNING ⚠️ int8=True only compatible with CPU export\n") != "cpu-half-kernels"
    # pip building PyPI's torch 0.1.2 source package: no wheel for this interpreter; not another missing module of tools
    assert code_of("ModuleNotFoundError: No module named 'tools.nnwrap'\n") == ("torch-install", "torch-missing")
    assert top("ModuleNotFoundError: No module named 'tools.utils'\n") != "torch-install"
    # dev-57: DGL's libraries built per torch release, missing for this one; not a library of another name
    assert code_of("FileNotFoundError: Cannot find DGL C++ sparse library at /env/lib/python3.8/site-packages/dgl/dgl_sparse/"
                   "libdgl_sparse_pytorch_1.9.0.so\n") == ("extension-abi", "import-fails")
    assert code_of("/opt/dgl/src/runtime/tensordispatch.cc:43: TensorDispatcher: dlopen failed: /env/site-packages/dgl/"
                   "tensoradapter/pytorch/libtensoradapter_pytorch_1.10.2.so: cannot open shared object file\n")[0] == "extension-abi"
    assert top("FileNotFoundError: Cannot find library at /env/lib/libdgl_sparse.so\n") != "extension-abi"
    # dev-58: the ptxas Triton bundles not knowing the GPU's architecture; not ptxas refusing another option's value
    assert code_of("RuntimeError: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal   : Value 'sm_121a' is not "
                   "defined for option 'gpu-name'\n") == ("cuda-compat", "no-kernel-image")
    assert top("ptxas fatal   : Value 'O5' is not defined for option 'opt-level'\n") != "cuda-compat"
    # Python's faulthandler reporting SIGILL; not with another package's import in view
    assert code_of("ARM64/PyTorch Fatal Python error: Illegal instruction\n") == ("torch-install", "torch-import-failed")
    assert top(">>> import numpy\nFatal Python error: Illegal instruction\n") != "torch-install"



def test_the_readings_written_in_stop_44_and_their_look_alikes() -> None:
    """Each reading written in stop 44, beside what must not read as it."""
    # onnxruntime-gpu's CUDA provider built for another CUDA or cuDNN major, on Linux and Windows; not its TensorRT
    # provider (TensorRT not installed) nor a DLL of another package
    ort = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1209 onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : "
           "FAIL : %s\n")
    assert code_of(ort % "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open "
                         "shared object file: No such file or directory") == ("extension-abi", "import-fails")
    assert code_of(ort % 'LoadLibrary failed with error 126 "" when trying to load "C:\\venv\\lib\\site-packages\\'
                         'onnxruntime\\capi\\onnxruntime_providers_cuda.dll"') == ("extension-abi", "import-fails")
    assert top(ort % 'LoadLibrary failed with error 126 "" when trying to load "C:\\venv\\lib\\site-packages\\'
                     'onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll"') != "extension-abi"
    assert top(ort % 'LoadLibrary failed with error 126 "" when trying to load "C:\\app\\zlibwapi.dll"') != "extension-abi"
    # Windows' paging file too small to map torch's CUDA DLLs, in any language: host memory, not a broken torch
    paging = ('OSError: [WinError 1455] %s Error loading "C:\\env\\lib\\site-packages\\torch\\lib\\'
              'cudnn_cnn_infer64_8.dll" or one of its dependencies.\n')
    assert code_of(paging % "The paging file is too small for this operation to complete.") == ("device-memory", "out-of-memory")
    assert code_of(paging % "页面文件太小，无法完成操作。") == ("device-memory", "out-of-memory")
    assert top(paging.replace("1455", "126") % "The specified module could not be found.") == "torch-install"
    # a compiled module missing a symbol of Python's C API: built for another Python; torch's own library is torch-install's,
    # and a symbol that only starts with "Py" is not the C API's
    assert code_of("ImportError: /env/site-packages/pkg/csim.so: undefined symbol: _Py_ZeroStruct\n") == (
        "extension-abi", "import-fails")
    assert code_of("ImportError: dlopen(/env/site-packages/sim/_ext/bindings.so, 2): Symbol not found: __Py_ZeroStruct\n") == (
        "extension-abi", "import-fails")
    assert top("python: symbol lookup error: /env/site-packages/torch/lib/libtorch_python.so: undefined symbol: "
               "PySlice_Unpack\n") == "torch-install"
    assert top("ImportError: /env/site-packages/pkg/csim.so: undefined symbol: Pythia_init\n") != "extension-abi"
    # dev-60: another package's import, in any case and aliased, before a CUDA runtime library it cannot find; not torch's
    cudart = "%s\nImportError: libcudart.so.10.0: cannot open shared object file: No such file or directory\n"
    assert code_of(cudart % "import MultiScaleDeformableAttention as MSDA") == ("extension-abi", "import-fails")
    assert top(cudart % "import torch as T") != "extension-abi" and top(cudart % "import Torch") != "extension-abi"
    # bitsandbytes' own library missing its kernels' symbols is quantized-base's; another extension's is extension-abi's
    symbol = "%s: undefined symbol: _Z36__device_stub__kOptimizer32bit1StateI12hip_bfloat16Li2EEvPT_S2_PfS3_ffffffiffbi\n"
    assert top(symbol % "/env/site-packages/bitsandbytes/libbitsandbytes_rocm62.so") == "quantized-base"
    assert top(symbol % "/env/site-packages/xformers/_C.so") == "extension-abi"
    # a program's own words that CUDA is not available (the probes then decide: a CPU-only torch, no GPU, an old driver);
    # not that CUDA is, nor a CUDA kernel of a library that is not
    assert code_of("RuntimeError: CUDA is not available. DiscoArt is unbearably slow on CPU.\n") == (
        "torch-install", "cpu-only-torch")
    assert code_of("Error\n cuda is not available in the system. fall back to 'cpu'\n") == ("torch-install", "cpu-only-torch")
    assert top("INFO: CUDA is available, using GPU 0\n") == "none"
    assert top("WARNING: the fused CUDA kernel is not available, using the PyTorch implementation\n") == "none"
    # dev-61: torch's mangled names with a ref-qualifier, wrapped onto the next line, and the linker's "more undefined
    # references"; not another library's symbols
    assert code_of("OSError: fbgemm_gpu_config.so: undefined symbol:\n    _ZNR5torch7Library4_defEON3c106detail\n") == (
        "extension-abi", "import-fails")
    assert top("OSError: fbgemm_gpu_config.so: undefined symbol:\n    _ZN6google8protobuf7Message\n") != "extension-abi"
    assert code_of("lib.a(parser.o):(.text+0x30e): more undefined references to `c10::Error::Error(c10::SourceLocation, "
                   "std::string const&)' follow\n")[0] == "extension-abi"
    # a library's own CUDA check naming its source file: its kernel lacks the GPU's architecture; torch's own words are
    # cuda-compat's
    assert code_of("CUDA error (/w/xformers/third_party/flash-attention/hopper/flash_fwd_launch_template.h:175): no kernel "
                   "image is available for execution on the device\n") == ("extension-abi", "extension-other-arch")
    assert top("RuntimeError: CUDA error: no kernel image is available for execution on the device\n") == "cuda-compat"
    assert top("CUDA error (/w/flash_fwd_launch_template.h:175): no kernel image is available for execution on the "
               "device\non my RTX 5090\n") == "extension-abi"  # whatever GPU the log names
    assert top("RuntimeError: CUDA error: no kernel image is available for execution on the device\non my RTX 5090\n") \
        == "cuda-compat"
    # torch's capability warning wrapped after "is not compatible"; not a sentence that goes on about something else
    assert code_of("UserWarning: NVIDIA B200 with CUDA capability sm_100 is not compatible\nwith the current PyTorch "
                   "installation.\n") == ("cuda-compat", "no-kernel-image")
    assert code_of("NVIDIA B200 with CUDA capability sm_100 is not compatible with this container's driver\n") != (
        "cuda-compat", "no-kernel-image")
    # dev-62: torch 0.4's NCCL words and Lightning 1.x's words for no GPU; not NCCL's other error, nor GPUs found
    assert code_of("NCCL Error 1: unhandled cuda error\n") == ("distributed", "collective-fails")
    assert code_of("NCCL Error 2: unhandled system error\n") != ("distributed", "collective-fails")
    assert code_of("pytorch_lightning.utilities.exceptions.MisconfigurationException: GPUs requested but none are "
                   "available.\n") == ("torch-install", "cpu-only-torch")
    assert top("INFO: GPUs requested: 2, available: 2\n") == "none"
    # dev-63: mmcv's compiled ops (`_ext`) missing, as the `_C` of a package is; not torch's own nor a plain module's
    assert code_of("ModuleNotFoundError: No module named 'mmcv._ext'\n") == ("extension-abi", "import-fails")
    assert top("ModuleNotFoundError: No module named 'torch._ext'\n") != "extension-abi"
    assert top("ModuleNotFoundError: No module named 'mmcv.ext'\n") != "extension-abi"
    # What a review of this stop's readings showed, each now held: a bare model number (a line number, a port) is no
    # Blackwell GPU; the bitsandbytes banner beside another extension's missing symbol leaves that one extension-abi's;
    # onnxruntime's provider under a long Windows path, but not where the driver's libcuda is what is missing; an aliased
    # everyday import is no compiled module's; torch's own libtorch_python missing a C-API symbol has one reading; a
    # located error's path may hold "(x86)"; "CUDA is not available" as a condition, a contrast or one op's is no reading
    kernel = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    assert "Blackwell" not in explained('GPU: Tesla K80\n  File "/x/modeling_utils.py", line 5080, in load\n' + kernel).diagnoses[0].cause
    assert top("Listening on 0.0.0.0:5090\nptxas fatal : Unresolved extern function '__nv_fast_tanh'\n") == "none"
    assert top("CUDA SETUP: Loading binary /env/site-packages/bitsandbytes/libbitsandbytes_cuda118.so...\n"
               "ImportError: /env/site-packages/vllm/_C.abi3.so: undefined symbol: _Z17cuda_device_countv\n") == "extension-abi"
    assert top(ort % 'LoadLibrary failed with error 126 "" when trying to load "D:\\AI\\ComfyUI_windows_portable_nvidia\\'
                     'ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\onnxruntime\\capi\\'
                     'onnxruntime_providers_cuda.dll"') == "extension-abi"
    assert top(ort % "Failed to load library libonnxruntime_providers_cuda.so with error: libcuda.so.1: cannot open shared "
                     "object file: No such file or directory") != "extension-abi"
    assert top("import pandas as pd\nOSError: libcudnn.so.8: cannot open shared object file: No such file or directory\n") \
        == "torch-install"
    assert [d.check for d in explained("ImportError: libtorch_python.so: undefined symbol: PySlice_Unpack\n").diagnoses] \
        == ["torch-install"]
    assert code_of("CUDA error (C:\\Program Files (x86)\\src\\flash_fwd_launch_template.h:175): no kernel image is "
                   "available for execution on the device\n") == ("extension-abi", "extension-other-arch")
    for line in ("/x/grad_scaler.py:120: UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.",
                 "  --device DEVICE  Defaults to cpu when CUDA is not available",
                 "Warning: CUDA is not available for deform_conv, using the slow PyTorch implementation"):
        assert top(line + "\nKeyError: 'labels'\n") == "none", line
    assert top("WARNING  Torch reports CUDA not available\n") == "torch-install"
    # What a review of stop 43's readings showed, each now held: a training log's repeated metrics are its content, not a
    # collector's column; three warnings a run goes on after (transformers' FlashAttention-2 on float32, Ultralytics' half
    # export, DGL's tensoradapter) read only where the run stopped on them; uv's refusal of torch-xla is not torch's; the
    # user's own `safety_checker=None` does not rule black images out
    metrics = "".join("{'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': %d.0}\n" % n for n in range(12))
    assert top(metrics + "trained with --fp16\n") == "library-probes"
    fa2 = ("Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in "
           "Qwen2ForCausalLM is torch.float32.\n")
    assert top(fa2 + _traceback("KeyError: 'labels'", "/x/train.py")) == "none"
    assert top(fa2) == "library-probes"
    assert top("WARNING ⚠️ half=True only compatible with GPU export, i.e. use device=0\n"
               + _traceback("ModuleNotFoundError: No module named 'tensorrt'", "/x/export.py")) != "cpu-half-kernels"
    assert top("export: --half only compatible with GPU export, i.e. use --device 0\n") == "cpu-half-kernels"
    assert top("error: Distribution `torch-xla==2.5.0 @ registry+https://pypi.org/simple` can't be installed because it "
               "doesn't have a source distribution or wheel for the current platform\n") != "torch-install"
    assert top("pipe = StableDiffusionPipeline.from_pretrained(m, torch_dtype=torch.float16, safety_checker=None)\n"
               "I get black images with fp16\n") == "library-probes"
    # uv's "has no wheels with a matching platform tag" for torch itself; not torch-xla's, nor another package's after torch
    tag = "  ╰─▶ Because %s has no wheels with a matching platform tag, we can conclude that your requirements are unsatisfiable.\n"
    assert top(tag % "torch==2.5.1") == "torch-install"
    assert top(tag % "torch-xla==2.5.0") != "torch-install"
    assert top(tag % "only torch<=2.5.1 is available and xformers==0.0.29") != "torch-install"
    # A sweep of healthy logs and ordinary failures (each line as the tools print it on every run): NCCL's INFO that no
    # InfiniBand is there, vLLM's start-up advice about memory, stable-diffusion-webui's memory monitor giving up on a Mac
    # or under DirectML, a CPU CI's pytest skip reasons, CPU autocast disabling itself, "OOM" inside a run's name
    keyerror = _traceback("KeyError: 'input'", "/x/train.py")
    for line in ("ws-7:4121:4290 [0] NCCL INFO NET/IB : No device found.",
                 "INFO 08-14 10:21:44 model_runner.py:1028] CUDA graphs can take additional 1~3 GiB memory per GPU. If you "
                 "are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.",
                 "Warning: caught exception 'Torch not compiled with CUDA enabled', memory monitor disabled",
                 "Warning: caught exception 'Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                 "and installed a driver from http://www.nvidia.com/Download/index.aspx', memory monitor disabled",
                 "SKIPPED [5] tests/test_amp.py:12: CUDA not available",
                 "SKIPPED [4] tests/test_fp8.py:9: FP8 requires compute capability >= 8.9 (H100/Ada)",
                 "/x/torch/amp/autocast_mode.py:265: UserWarning: In CPU autocast, but the target dtype is not supported. "
                 "Disabling autocast.",
                 "wandb: 🚀 View run sdxl-lora-OOM-repro-bs2 at: https://wandb.ai/jdoe/sdxl-lora/runs/zx81kq2d"):
        assert top(line + "\n" + keyerror) == "none", line
        if "autocast" not in line:  # (CPU autocast's warning read alone, as the run's last words, is still a reading)
            assert top(line + "\n100%|██████████| 500/500 [01:02<00:00,  8.01it/s]\n") == "none", line
    assert top("NCCL WARN NET/IB : No device found.\n") == "distributed"
    assert top("I keep running out of memory on my 3090\n") == "device-memory"
    assert top("it OOMs at batch 16, and the OOM-killer took the dataloader\n") == "device-memory"


def test_the_readings_written_in_stop_45_and_their_look_alikes() -> None:
    """Each reading written or narrowed in stop 45, beside what must not read as it."""
    # a GeForce card named by its number alone is a GPU for bf16's and fp8's gates; a line number, a step or a port is not
    assert top("ValueError: bf16 is not supported on a 2080 Ti\n") == "bf16-support"
    assert top("ValueError: bf16 is not supported: the model at line 2080 was saved in bfloat16\n") == "none"
    assert top("RuntimeError: fp8 e4m3 is not supported on the 3090\n") == "fp8"
    assert top("RuntimeError: fp8 e4m3 is not supported here (kernel.cu:4090)\n") == "none"
    # a compiled module needing a newer glibc is its package's; the system's own libstdc++ needing one is no package's
    glibc = "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by %s)\n"
    assert top(glibc % "/usr/lib/x86_64-linux-gnu/libstdc++.so.6") == "none"
    assert top(glibc % "/usr/lib/python3/dist-packages/pkg/_C.so") == "extension-abi"
    assert top(glibc % "/env/site-packages/av/../av.libs/libavcodec.so.59") == "extension-abi"
    # dev-64: fp8's threshold named as a number (or AMD's fp8 GPUs) beside a float8 gate; not another capability
    assert top("AssertionError: Float8 dynamic activation quantization is only supported on CUDA>=8.9 and MI300+\n") == "fp8"
    assert top("AssertionError: Float8 dynamic activation quantization is only supported on CUDA>=12.8\n") != "fp8"
    # Python 3.6's "cannot import name 'amp'" is apex's, not where the import shown is torch's own amp
    assert code_of("ImportError: cannot import name 'amp'\n") == ("apex", "apex-no-amp")
    assert top('  File "train.py", line 3, in <module>\n    from torch.cuda import amp\nImportError: cannot import name '
               "'amp'\n") != "apex"
    assert top("ImportError: cannot import name 'amp' from 'torch.cuda' (/env/torch/cuda/__init__.py)\n") != "apex"
    # old apex.amp wrapping torch.nn.backends, which torch 1.3 removed
    assert code_of("AttributeError: module 'torch.nn' has no attribute 'backends'\n") == ("apex", "apex-stale")
    assert top("AttributeError: module 'torch.nn' has no attribute 'RMSNorm'\n") != "apex"
    # pip finding no torch (or torch-directml) for this Python; a package whose name starts with torch- is not torch
    pip = "ERROR: Could not find a version that satisfies the requirement %s (from versions: none)\n"
    assert top(pip % "torch==2.1.0+cu121") == "torch-install"
    assert top(pip % "torch-directml") == "torch-install"
    assert top(pip % "torch-spine-conv") == "none"
    assert top("ERROR: No matching distribution found for torch-tensorrt==1.2.0\n") == "none"
    # bitsandbytes' own check that its tensors are on the GPU: the quantized weights were left on the CPU
    assert code_of("ComfyUI execution error: All input tensors need to be on the same GPU, but found some tensors to not "
                   "be on a GPU:\n [(torch.Size([4718592, 1]), device(type='cpu'))]\n") == ("quantized-base", "quantized-fails")
    assert top("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
               "cpu!\n") != "quantized-base"
    # dev-65: cuDNN's frontend refusing one plan is a warning torch goes on after: a cause only where the run stopped on it
    plan = ("/env/torch/nn/modules/conv.py:306: UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_"
            "DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at "
            "../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)\n  return F.conv1d(input, weight, bias, self.stride,\n")
    assert top(plan + _traceback("ValueError: Expected 2D Tensor, got 1D.", SITE + "torchaudio/_backend/utils.py")) == "none"
    assert top(plan) == "cublas"
    assert top("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous "
               "input.\n") == "cublas"
    # optimum's ONNX exporter refusing an fp16 export on the CPU
    assert code_of("FP16 export is supported only when exporting on GPU. Please pass the option `--device cuda`.\n") == (
        "cpu-half-kernels", "fp16-refused")
    # DeepSpeed's op builder finding another CUDA toolkit than torch's, however a title retells it
    assert top("Installed CUDA version 11.7 does not match torch version\n") == "extension-abi"
    assert top("Installed CUDA version 11.7 does not match the version torch was compiled with 12.1, unable to compile "
               "cuda/cpp extensions without a matching cuda version.\n") == "extension-abi"
    # NaN values under "f16" (a repository's own name for fp16); not under bf16
    nan = "RuntimeError: Function 'LogSigmoidBackward0' returned nan values in its 0th output.\n"
    assert top("policy model in f16 + load_in_4bit\n" + nan) == "library-probes"
    assert top("policy model in bf16\n" + nan) != "library-probes"
    # dev-66: Python 3.6's bare "cannot import name '_C'" is a package's compiled ops, not where torch's own import is shown
    c = "ImportError: cannot import name '_C'\n"
    assert top('  File "/x/core/nn/ca_block.py", line 6, in <module>\n    from core.nn import _C\n' + c) == "extension-abi"
    assert top('  File "/x/run.py", line 2, in <module>\n    from torch import _C\n' + c) != "extension-abi"
    # macOS's loader missing a package's @rpath library; torch's own module missing one is torch's
    dylib = ("ImportError: dlopen(%s, 2): Library not loaded: @rpath/%s\n  Referenced from: %s\n  Reason: image not found\n")
    k2 = SITE + "_k2.cpython-36m-darwin.so"
    assert top(dylib % (k2, "libk2context.dylib", k2)) == "extension-abi"
    tc = SITE + "torch/_C.cpython-38-darwin.so"
    assert top(dylib % (tc, "libc++.1.dylib", tc)) != "extension-abi"
    # bf16 refused by ptxas however retold, and by LLVM on an AMD GPU without bf16 arithmetic; not LLVM on another intrinsic
    assert top("'.bf16' requires .target sm_80 or higher - Error -\n") == "bf16-support"
    assert top("LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.fdot2.bf16.bf16\n") == "bf16-support"
    assert top("LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.sdot4\n") != "bf16-support"
    # hipBLAS's statuses read as cuBLAS's
    assert code_of("RuntimeError: CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling `HIPBLAS_STATUS_NOT_SUPPORTED`\n") == (
        "cublas", "gemm-failed")
    # MPSGraph refusing float32 and half in one op; not two integer types
    mps = ("(mpsFileLoc): /AppleInternal/Library/BuildRoots/x/MPSGraphUtilities.mm:228:0: error: 'mps.add' op requires the "
           "same element type for all operands and results\n(mpsFileLoc): /AppleInternal/x/MPSGraphUtilities.mm:228:0: note: see "
           "current operation: %%5 = \"mps.add\"(%%4, %%arg2) : (%s, %s) -> tensor<*xf32>\n")
    assert top(mps % ("tensor<2x1280xf32>", "tensor<*xf16>")) == "dtype-mismatch"
    assert top(mps % ("tensor<2x1280xi64>", "tensor<*xi32>")) != "dtype-mismatch"
    # integer weights asked to require gradients beside a quantized model; not elsewhere
    grads = "RuntimeError: Only Tensors of floating point and complex dtype can require gradients\n"
    assert top("model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\n" + grads) == "quantized-base"
    assert top("labels = torch.tensor(ids, requires_grad=True)\n" + grads) != "quantized-base"
    # flash-attn's ROCm build refusing the card's gfx target or a GPU before MI200
    assert top("gfx1100  is invalid or not supported by Flash-Attention\n") == "cuda-compat"
    assert top("RuntimeError: FlashAttention only supports AMD MI200 GPUs or newer.\n") == "cuda-compat"
    # dev-67: a TorchScript custom class its op library never registered; not a class that is merely misspelt in Python
    assert top("RuntimeError: Tried to instantiate class 'FasterTransformer.ParallelGptOp', but it does not exist! Ensure that "
               "it is registered via torch::class_\n") == "extension-abi"
    assert top("AttributeError: module 'FasterTransformer' has no attribute 'ParallelGptOp'\n") != "extension-abi"

def test_what_the_reviews_and_the_sweep_of_stop_45_found() -> None:
    """Inputs written to break the readings of stops 40-42 and 45, and a second sweep of healthy logs: each was read
    wrongly before, and is read right now."""
    # a bare GeForce number is no GPU in a list of sizes, an nvcc line number, an iteration; a card beside CJK text is one
    te = "AssertionError: FP8 execution requires 2D input matrices with height divisible by 8, but got tensor with dims=[4090, 4096]\n"
    assert top(te) == "none"
    assert top('csrc/fp8_gemm.cu(2080): error: static assertion failed with "FP8 GEMM requires CUDA 11.8 or newer"\n') == "none"
    assert top("ERROR:root:Non-finite loss at iteration 2080 (precision=bf16), skipping update\n") == "none"
    assert top("RuntimeError: fp8 e4m3 is not supported on 4090显卡\n") == "fp8"
    # fp8's threshold as get_device_capability()'s tuple; not cuDNN's version
    assert top("AssertionError: FP8 training requires torch.cuda.get_device_capability() >= (8, 9)\n") == "fp8"
    assert top("UserWarning: fp8 fused attention requires cuDNN >= 8.9\n" + _traceback("KeyError: 'input'", "/x/t.py")) == "none"
    # macOS 13's loader puts the image's UUID before torch's own path: still torch's, not a package's
    uuid = ("ImportError: dlopen(%s, 0x0002): Library not loaded: @rpath/libtorch_cpu.dylib\n  Referenced from: "
            "<7A2E51C4-3B1F-3C4A-9E2D-1F2B3C4D5E6F> %s\n  Reason: tried: '/x/libtorch_cpu.dylib' (no such file)\n")
    torch_c = SITE + "torch/_C.cpython-311-darwin.so"
    assert top(uuid % (torch_c, SITE + "torch/lib/libtorch_python.dylib")) != "extension-abi"
    # DeepSpeed going on past a CUDA mismatch it accepts; torch's own quantized engine's classes
    ds = "Installed CUDA version 12.2 does not match the version torch was compiled with 12.1 but since the APIs are compatible, accepting this combination\n"
    assert top(ds + _traceback("KeyError: 'input'", "/x/t.py")) == "none"
    assert top("RuntimeError: Tried to instantiate class 'quantized.LinearPackedParamsBase', but it does not exist! Ensure "
               "that it is registered via torch::class_\n") != "extension-abi"
    # another package's amp, parenthesised or not; a user's nn.backends.cudnn for torch.backends.cudnn
    amp = "ImportError: cannot import name 'amp'\n"
    assert top('  File "t.py", line 2, in <module>\n    from paddle import amp\n' + amp) != "apex"
    assert top('  File "t.py", line 2, in <module>\n    from torch.cuda import (amp,\n' + amp) != "apex"
    assert top('  File "t.py", line 9, in <module>\n    nn.backends.cudnn.benchmark = True\nAttributeError: module '
               "'torch.nn' has no attribute 'backends'\n") != "apex"
    # pip echoes torch as the user typed it
    assert top("ERROR: No matching distribution found for Torch==1.13.1+cu117\n") == "torch-install"
    # integer weights requiring gradients beside bitsandbytes' optimizer alone is the code's
    grads = "RuntimeError: Only Tensors of floating point and complex dtype can require gradients\n"
    assert top("Using bitsandbytes Adam8bit optimizer\n" + grads) != "quantized-base"
    # the cuDNN frontend's other descriptors read alike, and only where the run stopped on them
    other = ("UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: cudnnFinalize Failed "
             "cudnn_status: CUDNN_STATUS_NOT_SUPPORTED\n")
    assert top(other + _traceback("KeyError: 'input'", "/x/t.py")) == "none"
    # "f16" inside hex is no precision; flash-attn's ROCm build naming its arch list
    assert top("optimizer <torch.optim.sgd.SGD object at 0x7f1634c2e0d0>\nloss nan at step 20\n") == "none"
    assert top("AssertionError: One of GPU archs of ['gfx1100'] is invalid or not supported by Flash-Attention\n") == "cuda-compat"
    # a healthy QLoRA run's printed layout and peft's merge warning; a batch-size finder's OOM-safe margin; memory_summary()
    assert top("trainable params: 20,971,520 || all params: 3,773,042,688 || trainable%: 0.5558\n(q_proj): lora.Linear4bit(\n"
               "  (base_layer): Linear4bit(in_features=4096, out_features=4096, bias=False)\n") == "none"
    assert top("/env/lib/python3.10/site-packages/peft/tuners/lora/bnb.py:325: UserWarning: Merge lora module to 4-bit linear "
               "may get different generations due to rounding errors.\n") == "none"
    assert top("Selected batch_size=32 (OOM-safe margin 15%)\n") == "none"
    assert top("|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |\n") == "none"
    assert top("CUDA OOMs: 3\n") == "device-memory"
    # the shells' and Kubernetes' words for SIGKILL; OOM beside CJK text and Chinese's and Japanese's other word orders;
    # not Node.js's heap nor a denial
    for killed in ("zsh: killed     python train.py", "[1]+  Killed                  python train.py",
                   "    Reason:       OOMKilled\n    Exit Code:    137", "训练跑到一半就OOM了", "一开batch_size=8就爆显存",
                   "VRAM不足で落ちます"):
        assert top(killed + "\n") == "device-memory", killed
    assert top("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n") == "none"
    assert top("This is not an out of memory problem\nRuntimeError: CUDA error: an illegal memory access was encountered\n") != "device-memory"
    # WinError 127 for Python's own modules and the desktop libraries is theirs; Italian and Portuguese Windows; PyG's
    # companions through torch.ops.load_library
    for module in ("_sqlite3", "win32api", "QtCore"):
        assert top("ImportError: DLL load failed while importing %s: The specified procedure could not be found.\n" % module) == "none"
    for words in ("Impossibile trovare la procedura specificata.", "Não foi possível encontrar o procedimento especificado."):
        assert top("ImportError: DLL load failed while importing _C: %s\n" % words) == "extension-abi"
    pyg = _traceback("OSError: [WinError 127] The specified procedure could not be found", SITE + "torch_sparse/__init__.py",
                     SITE + "torch/_ops.py")
    assert top(pyg) == "extension-abi"
    # SIGILL under another package's command; glibc's German words for it under torch
    assert top('$ python3 -c "import llama_cpp"\nIllegal instruction\n') != "torch-install"
    assert top(">>> import torch\nUngültiger Maschinenbefehl (Speicherabzug geschrieben)\n") == "torch-install"
    # MPS given f32 where the graph was built for bf16 is a dtype mix; given bf16 where built for f32, a Mac without bf16
    mps = ("/AppleInternal/x/MPSGraphExecutable.mm:1430: failed assertion `Incompatible element type for parameter at index 1, "
           "mlir module expected element type %s but received %s'\n")
    assert top(mps % ("bf16", "f32")) == "dtype-mismatch"
    assert top(mps % ("f32", "bf16")) == "bf16-support"
    # GradScaler's skipped step is no NaN loss; NaNs said to persist in fp32; mixed precision in Chinese
    assert top("Using auto half precision backend\n{'loss': 2.3412, 'grad_norm': inf, 'learning_rate': 5e-05}\n") == "none"
    assert top("Even with --precision full --no-half the loss is still nan after 200 steps\n") == "none"
    assert top("关闭amp，全部用fp32训练后loss仍然是nan\n") == "none"
    assert top("使用混合精度训练时loss出现nan\n") == "library-probes"
    # other spellings: numpy's ABI version, cupy's NCCL error name, nvcc's gpu-architecture, a driver with a capital D,
    # pip before 20.3, index_copy_'s dtypes, a cast with its factor first, THC's path lowercased on Windows
    for text, check in (
            ("UserWarning: Failed to initialize NumPy: module compiled against ABI version 0x2000000 but this version of "
             "numpy is 0x1000009", "torch-install"),
            ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error", "distributed"),
            ("nvcc fatal   : Value 'sm_86' is not defined for option 'gpu-architecture'", "cuda-compat"),
            ("RuntimeError: The NVIDIA Driver on your system is too old (found version 10010).", "cuda-compat"),
            ("ERROR: xformers 0.0.16 has requirement torch==1.13.1, but you'll have torch 2.0.0 which is incompatible.",
             "extension-abi"),
            ("RuntimeError: index_copy_(): self and source expected to have the same dtype, but got (self) Float and "
             "(source) Half", "dtype-mismatch"),
            ("RuntimeWarning: invalid value encountered in cast\n  frame = (255 * frame.clip(0, 1)).astype(np.uint8)",
             "library-probes"),
            ("THCudaCheck FAIL file=c:\\w\\aten\\src\\thc\\thcgeneral.cpp line=405 error=11 : invalid argument", "cuda-compat")):
        assert top(text + "\n") == check, text
    # Vulkan-Hpp's allocation by name (not an instance a broken ICD cannot create); the PTX JIT's driver-API name; kohya's
    # assertion wrapped; Windows' STATUS_ILLEGAL_INSTRUCTION after torch's import; NaN attention scores in fp16
    assert top("RuntimeError: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n") == "device-memory"
    assert top("RuntimeError: vk::createInstanceUnique: ErrorOutOfHostMemory\n") != "device-memory"
    assert top("numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in "
               "CUDA_ERROR_UNSUPPORTED_PTX_VERSION\n") == "cuda-compat"
    assert top("AssertionError: fp8_base requires mixed\nprecision='fp16' or 'bf16'\n") == "dora-fp8"
    assert top(">>> import torch\n\nProcess finished with exit code -1073741795 (0xC000001D)\n") == "torch-install"
    assert top("We see NaNs in the attention scores when running the model in float16\n") == "library-probes"
    # torch's library sought from a package's own _C in a source tree; a package logging its _C's failure (the library it
    # names is that module's need, not torch's)
    src = _traceback("ImportError: libc10.so: cannot open shared object file: No such file or directory",
                     "/home/me/detectron2/detectron2/layers/deform_conv.py")
    assert top(src.replace("    return f(x)\n", "    from detectron2 import _C\n")) == "extension-abi"
    assert top("WARNING 07-15 10:21:33 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so.11.0: "
               "cannot open shared object file: No such file or directory')\n") == "extension-abi"
    # third review (stop 39's readings and multi-process logs): NCCL's INFO lines of a healthy start ("via P2P/CUMEM") do
    # not make a watchdog timeout the transport's, so the rank that died of OOM is the cause; a timeout where the log says
    # P2P was refused still is
    oom_rank = "\n".join([
        "[rank0]:node1:3311:3391 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "[rank0]:node1:3311:3391 [0] NCCL INFO comm 0x55d5c0a1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        "[rank1]:Traceback (most recent call last):",
        '[rank1]:  File "/workspace/train.py", line 118, in main',
        "[rank1]:    loss.backward()",
        "[rank1]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 1 has a total capacity of 23.64 "
        "GiB of which 1.02 GiB is free.",
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1815, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800051 milliseconds before timing out.",
        "[rank0]:terminate called after throwing an instance of 'c10::DistBackendError'",
        "[rank0]:  what():  [PG 0 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1815, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800051 "
        "milliseconds before timing out.", ""])
    assert top(oom_rank) == "device-memory"
    refused = oom_rank.replace("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", "Could not enable P2P between dev 1(=1c000) "
                               "and dev 0(=1b000)").replace("torch.OutOfMemoryError: CUDA out of memory.", "step 1815 done.")
    assert top(refused) == "distributed"
    # advice after a label or a logger's level is no error; flags and variables named *_cuda/*_engine are no compiled module
    assert top("Error [Errno 2] No such file: 'x.png'\nTip: If you encounter CUDA out of memory, try to set --tile\n") != "device-memory"
    assert top("2024-03-02 10:11:12,902 INFO: If you encounter CUDA out of memory, try to set --tile\n") != "device-memory"
    assert top("NameError: name 'use_cuda' is not defined\n") != "extension-abi"
    assert top("NameError: name 'model_engine' is not defined\n") != "extension-abi"
    assert top("NameError: name 'awq_ext' is not defined\n") == "extension-abi"
    # Debian's dist-packages; torch's words retyped with "is" or in lowercase; rocBLAS with another reason; the store's
    # missing ranks; gloo's missing interface
    assert top("OSError: /usr/local/lib/python3.10/dist-packages/spconv/core_cc.cpython-310-x86_64-linux-gnu.so: undefined "
               "symbol:\n") == "extension-abi"
    assert top("AssertionError: Torch is not compiled with CUDA enabled\n") == "torch-install"
    assert top("torch is not compiled with cuda enabled, what do I do?\n") == "torch-install"
    assert top("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : "
               "gfx1032\n") == "cuda-compat"
    assert top("torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined.\n") == "distributed"
    assert top("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to "
               "find address for: eth0\n") == "distributed"
    assert top("[W ..\\torch\\csrc\\distributed\\c10d\\socket.cpp:558] [c10d] The client socket has failed to connect to "
               "[DESKTOP-7Q77KOJ]:29500 (system error: 10049).\n") != "distributed"
    # third sweep (ordinary failures as users paste them): GradScaler's own code line in a Ctrl-C's frames is no NaN;
    # "fp16=False" is no fp16 word
    ctrl_c = ('  File "/env/site-packages/torch/amp/grad_scaler.py", line 454, in step\n    if not sum(v.item() for v in '
              'optimizer_state["found_inf_per_device"].values()):\nKeyboardInterrupt\n')
    assert top("Traceback (most recent call last):\n" + ctrl_c) == "none"
    trainer = "TrainingArguments(output_dir='out', fp16=False, bf16=False)\n{'loss': nan, 'grad_norm': nan, 'epoch': 0.1}\n"
    assert top(trainer) == "none"
    assert top(trainer.replace("fp16=False", "fp16=True")) == "library-probes"
    # fourth round (torch-install and cuda-compat, extension-abi, confusable negatives): the answer printed on the next
    # line, however the call was wrapped; TensorFlow's loader; torch's own dylibs on macOS; a library named after torch
    for asked in ('$ python -c "import torch; print(torch.cuda.is_available())"\nFalse\n',
                  ">>> print(torch.cuda.is_available())\nFalse\n", "print(torch.cuda.is_available())  # False\n"):
        assert code_of(asked) == ("torch-install", "cpu-only-torch"), asked
    assert top(">>> print(torch.cuda.is_available())\nTrue\n") == "none"
    assert top("2023-01-01 12:00:00: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
               "library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or "
               "directory\nOSError: model not found\n") == "none"
    macos = ("ImportError: dlopen(/env/site-packages/torch/_C.cpython-39-darwin.so, 2): Library not loaded: @rpath/libc10.dylib\n"
             "  Referenced from: /env/site-packages/torch/_C.cpython-39-darwin.so\n  Reason: image not found\n")
    assert top(macos) == "torch-install"
    assert top("OSError: libtorch2trt_dynamic.so: undefined symbol: _ZNK6google8protobuf7Message11GetTypeNameEv\n") == "none"
    # an illegal memory access poisons the context as a device-side assert does; other libraries' own C++ symbols and
    # compiled cores; apex's own modules on Windows; a module merely named *_engine
    assert top("RuntimeError: CUDA error: an illegal memory access was encountered\nRuntimeError: CUDA error: "
               "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmStridedBatchedEx(...)`\n") != "cublas"
    for symbol in ("_ZN5arrow6StatusC1ENS_10StatusCodeERKSs", "_ZN13sentencepiece14SentencePieceProcessorC1Ev"):
        assert top("ImportError: /env/site-packages/pkg/lib.so: undefined symbol: %s\n" % symbol) == "none", symbol
    for module in ("_rust", "_cffi_backend", "tokenizers", "_pydantic_core", "_pywrap_tensorflow_internal"):
        assert top("ImportError: DLL load failed while importing %s: The specified procedure could not be found.\n"
                   % module) == "none", module
    assert code_of(_traceback("ImportError: DLL load failed while importing amp_C: The specified procedure could not be "
                              "found.", SITE + "apex/optimizers/fused_adam.py")) == ("apex", "apex-extension-abi")
    assert top("ModuleNotFoundError: No module named 'rule_engine'\n") == "none"
    assert top("ModuleNotFoundError: No module named 'awq_inference_engine'\n") == "extension-abi"
    # a companion's own library named by Windows' "Error loading" and by its warnings; another namespace's operators;
    # Windows' entry-point dialog under Program Files; torch's Python binding symbols; AutoGPTQ's kernels
    for text in ('OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\env\\Lib\\site-'
                 'packages\\torchaudio\\lib\\libtorchaudio.pyd" or one of its dependencies.',
                 "UserWarning: Failed to load image Python extension: '[WinError 127] The specified procedure could not be found'",
                 "RuntimeError: No such operator torch_scatter::cuda_version",
                 "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'",
                 "The procedure entry point ?x@c10@@YAXXZ could not be located in the dynamic link library C:\\Program Files\\"
                 "Python310\\Lib\\site-packages\\xformers\\_C.pyd.",
                 "ImportError: /env/site-packages/maskrcnn_benchmark/_C.so: undefined symbol: THPVariableClass",
                 "WARNING - CUDA kernels for auto_gptq are not installed, this will result in very slow inference speed."):
        assert top(text + "\n") == "extension-abi", text
    assert top("AttributeError: '_OpNamespace' 'aten' object has no attribute 'foo'\n") != "extension-abi"
    # fifth round (the precision families; apex, bitsandbytes and adapters): torch 1.0's THNN kernels; CTranslate2's int8
    # float16 compute type; masked_scatter's, SDPA's mask's and cuDNN RNN's dtype mixes; token ids into a Linear are no
    # precision mix; the overflow's context in capitals or as Lightning's "16bit"; black images said to persist in fp32;
    # a settings dump's fp16_backend is no fp16 word
    for text, check in (
            ("RuntimeError: _thnn_conv2d_forward is not implemented for type torch.HalfTensor", "cpu-half-kernels"),
            ("ValueError: Requested int8_float16 compute type, but the target device or backend do not support efficient "
             "int8_float16 computation.", "cpu-half-kernels"),
            ("RuntimeError: masked_scatter: expected self and source to have same dtypes but gotFloat and Half", "dtype-mismatch"),
            ("RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: float and  "
             "query.dtype: c10::BFloat16 instead.", "dtype-mismatch"),
            ("RuntimeError: Input and parameter tensors are not the same dtype, found input tensor with Half and parameter "
             "tensor with Float", "dtype-mismatch"),
            ("RuntimeError: expected m1 and m2 to have the same dtype, but got: long int != float", "none"),
            ("Using 16bit Automatic Mixed Precision (AMP)\nRuntimeError: probability tensor contains either `inf`, `nan` or "
             "element < 0", "library-probes"),
            ("Even with --precision full --no-half I still get black images", "none"),
            ("TrainingArguments(fp16=False, bf16=False, fp16_backend=auto, learning_rate=0.05)\n{'loss': nan, 'epoch': 1}",
             "none")):
        assert top(text + "\n") == check, text
    # bitsandbytes' newer words for a library it cannot use, and one older than transformers; adapters under lokr, an AWQ
    # layer's arguments, peft refusing DoRA on a quantized layer; apex's removals and the trainers' own words for it
    for text, check in (
            ("RuntimeError: CUDA Setup failed despite CUDA being available. Please run the following command to get more "
             "information", "quantized-base"),
            ("RuntimeError: Configured CUDA binary not found at /env/site-packages/bitsandbytes/libbitsandbytes_cuda129.so",
             "quantized-base"),
            ("TypeError: Params4bit.__new__() got an unexpected keyword argument '_is_hf_initialized'", "quantized-base"),
            ("ERROR lokr diffusion_model.input_blocks.1.weight \"addmm_cuda\" not implemented for 'Float8_e4m3fn'", "dora-fp8"),
            ("ValueError: Target module WQLinear_GEMM(in_features=4096, out_features=4096, bias=False, w_bit=4, group_size=128) "
             "is not supported.", "dora-fp8"),
            ("ValueError: AwqLoraLinear does not support DoRA yet, please set it to False", "dora-fp8"),
            ("ModuleNotFoundError: No module named 'apex.amp'", "apex"),
            ("ImportError: cannot import name 'DistributedDataParallel' from 'apex.parallel'", "apex"),
            ("MisconfigurationException: You have asked for Apex AMP but you have not installed it.", "apex"),
            ("ImportError: Please install apex from https://www.github.com/nvidia/apex to run this example.", "apex"),
            ("ImportError: /env/site-packages/scaled_masked_softmax_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
             "_ZN3c104cuda9SetDeviceEi", "apex")):
        assert top(text + "\n") == check, text
    # a CUDA word in a conda environment's name or torch.cuda.amp's decorator is no CUDA kernel's frame; a device-side
    # assert carried through peft's bnb layer is the data's, not the adapter's
    cpu_bf16 = _traceback('RuntimeError: "LayerNormKernelImpl" not implemented for \'BFloat16\'',
                          "/home/me/miniconda3/envs/cuda118/lib/python3.10/site-packages/torch/nn/functional.py",
                          "/home/me/miniconda3/envs/cuda118/lib/python3.10/site-packages/torch/cuda/amp/autocast_mode.py")
    assert top("running on cpu\n" + cpu_bf16) != "bf16-support"
    assert top(_traceback("RuntimeError: CUDA error: device-side assert triggered", SITE + "peft/tuners/lora/bnb.py")) != "dora-fp8"


def test_other_failures_get_no_cause() -> None:
    for message in ("FileNotFoundError: [Errno 2] No such file or directory: 'model/config.json'",
                    "ValueError: Tokenizer class LlamaTokenizer does not exist or is not currently imported.",
                    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x768 and 1024x10)",
                    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
                    "RuntimeError: expected scalar type Long but found Float",
                    # a module torchvision removed (an API change, not a missing torch)
                    "ModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor'",
                    # Python's own compiled module: the Python install's, not an extension's
                    "ImportError: DLL load failed while importing _lzma: The specified module could not be found."):
        assert explained(_traceback(message, SITE + "torch/nn/functional.py")).diagnoses == [], message


# ---- what a diagnosis says


def test_a_diagnosis_reads_the_operation_dtypes_device_and_library() -> None:
    text = _traceback("RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
                      SITE + "transformers/models/clip/modeling_clip.py", SITE + "torch/nn/functional.py",
                      before="torch==2.0.1\nUsing device: cpu\n--mixed_precision fp16\n")
    found = explained(text)
    diagnosis = found.diagnoses[0]
    assert diagnosis.involved.to_dict() == {"op": "layer_norm", "dtypes": ["float16"], "device": "cpu",
                                            "library": "transformers (clip)", "torch": "2.0.1"}
    assert found.context.precision == ["fp16"] and found.context.device == "cpu"
    assert diagnosis.remedies and diagnosis.cause and 0 < diagnosis.confidence <= 1
    assert any("LayerNormKernelImpl" in e for e in diagnosis.evidence)


@pytest.mark.parametrize("text, want, dtypes", [
    ("expected m1 and m2 to have the same dtype, but got: float != c10::Half", "but got: Float != Half", ["float32", "float16"]),
    ("Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
     "Input type (Half) and weight type (Float)", ["float16", "float32"]),
    ("Input type (float) and bias type (struct c10::Half) should be the same", "Input type (Float) and bias type (Half)",
     ["float32", "float16"]),
    ("x is torch.bfloat16, w is torch.float8_e4m3fn", "x is BFloat16, w is Float8_e4m3fn", ["bfloat16", "float8_e4m3fn"]),
    # retyped by hand: full-width parentheses, a dtype in another case (dev-12)
    ("Input type （BFLoat16） and bias type (half) Should be the same", "Input type (BFloat16) and bias type (Half)",
     ["bfloat16", "float16"]),
])
def test_every_dtype_spelling_reads_as_one(text: str, want: str, dtypes: List[str]) -> None:
    assert want in canonical(text)
    assert dtypes_in(canonical(text)) == dtypes


# ---- reading logs as they come


def test_colours_progress_bars_and_windows_paths_are_read_through() -> None:
    text = ("\x1b[32mSteps:   0%|          | 0/100\r\x1b[32mSteps:   1%|1         | 1/100 [00:01<02:00]Traceback (most recent call "
            "last):\n"
            '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\nn\\functional.py", line 2515, in layer_norm\r\n'
            "    return torch.layer_norm(\r\n"
            "\x1b[0;31mRuntimeError\x1b[0m: \"LayerNormKernelImpl\" not implemented for 'Half'\r\n")
    (error,) = raised_errors(read_text(text).lines)
    assert error.type == "RuntimeError" and error.message == "\"LayerNormKernelImpl\" not implemented for 'Half'"
    assert error.paths == ["C:/Users/me/venv/Lib/site-packages/torch/nn/functional.py"]


def test_macos_missing_symbols_read_as_linuxs_undefined_symbols() -> None:
    """dyld's "dlopen(<library>, <mode>): Symbol not found: __Z..." is glibc's "<library>: undefined symbol: _Z...": torch's own
    library is torch-install's, a companion's is extension-abi's, on either system."""
    torch_own = "/Users/me/venv/lib/python3.11/site-packages/torch/_C.so"
    companion = "/Users/me/venv/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.so"
    symbol = "_ZN2at14RecordFunctionC1ENS_11RecordScopeEb"
    for library, want in ((torch_own, "torch-install"), (companion, "extension-abi")):
        mac = "OSError: dlopen(%s, 0x0006): Symbol not found: _%s\n  Referenced from: %s\n" % (library, symbol, library)
        linux = "OSError: %s: undefined symbol: %s\n" % (library.replace("/Users/", "/home/"), symbol)
        assert canonical(mac.splitlines()[0]) == "OSError: %s: undefined symbol: %s" % (library, symbol)
        assert top(mac) == top(linux) == want


def test_numpys_size_check_counts_when_raised_not_when_warned() -> None:
    """Cython's size check as a RuntimeWarning is harmless (numpy filters it itself); raised, it is numpy 1 and 2 mixed."""
    message = "numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject"
    warned = ("/x/lib/python3.6/importlib/_bootstrap.py:219: RuntimeWarning: %s\n  return f(*args, **kwds)\n" % message
              + _traceback("RuntimeError: CUDA error (10): invalid device ordinal", "/x/main.py"))
    assert top("ValueError: " + message) == "torch-install"
    assert code_of(warned) != ("torch-install", "numpy-abi")


def test_interleaved_ranks_are_read_one_rank_at_a_time() -> None:
    text = "\n".join([
        "[rank1]: Traceback (most recent call last):",
        "[rank0]: Traceback (most recent call last):",
        '[rank1]:   File "/x/site-packages/torch/nn/modules/linear.py", line 117, in forward',
        '[rank0]:   File "/x/site-packages/apex/normalization/fused_layer_norm.py", line 69, in forward',
        "[rank1]: RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "[rank0]: RuntimeError: expected scalar type Float but found Half", ""])
    errors = {e.stream: e for e in raised_errors(read_text(text).lines)}
    assert errors["rank0"].paths == ["/x/site-packages/apex/normalization/fused_layer_norm.py"]
    assert errors["rank1"].paths == ["/x/site-packages/torch/nn/modules/linear.py"]
    assert [d.check for d in explained(text).diagnoses][:2] == ["apex", "device-memory"]


def test_ipython_tracebacks_old_and_new() -> None:
    new = ("\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"
           "\x1b[0;31mRuntimeError\x1b[0m                              Traceback (most recent call last)\n"
           "Cell \x1b[0;32mIn[3], line 5\x1b[0m\n----> 5 model(x)\n\n"
           "File \x1b[0;32m/usr/lib/python3.10/site-packages/torch/nn/functional.py:2515\x1b[0m, in \x1b[0;36mlayer_norm\x1b[0;34m(input)\x1b[0m\n"
           "\x1b[0;31mRuntimeError\x1b[0m: \"LayerNormKernelImpl\" not implemented for 'Half'\n")
    old = ("<ipython-input-3-1a2b3c> in <module>()\n----> 1 model(x)\n\n"
           "/usr/local/lib/python3.7/dist-packages/torch/nn/functional.py in layer_norm(input, normalized_shape)\n"
           "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'\n")
    for text in (new, old):
        (error,) = raised_errors(read_text(text).lines)
        assert error.paths[-1].endswith("torch/nn/functional.py") and error.frames[-1].function.startswith("layer_norm")
        assert top(text) == "cpu-half-kernels"


def test_chained_exceptions_each_keep_their_frames() -> None:
    text = _traceback("RuntimeError: expected scalar type Float but found Half", SITE + "apex/normalization/fused_layer_norm.py")
    text += "\nThe above exception was the direct cause of the following exception:\n\n"
    text += _traceback("ValueError: pipeline failed", "/home/me/run.py")
    errors = raised_errors(read_text(text).lines)
    assert [e.type for e in errors] == ["RuntimeError", "ValueError"] and errors[1].chained
    assert top(text) == "apex"


def test_utf16_logs_from_powershell_and_a_bom() -> None:
    text = _traceback("RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'", SITE + "torch/nn/functional.py")
    # (and UTF-16 without its BOM, as some Windows tools and .NET write it, either byte order)
    for data in (codecs.BOM_UTF16_LE + text.encode("utf-16-le"), codecs.BOM_UTF8 + text.encode("utf-8"),
                 text.encode("utf-16-le"), text.encode("utf-16-be")):
        scanner = LogScanner()
        for i in range(0, len(data), 7):  # bytes arrive in any cut
            scanner.feed(data[i:i + 7])
        assert match(scanner.close(), CHECKS).diagnoses[0].check == "cpu-half-kernels"


def test_logs_in_a_chinese_or_japanese_windows_consoles_code_page() -> None:
    """`python train.py > log.txt` on a Chinese or Japanese Windows writes the console's code page (GBK, cp932), not
    UTF-8: read as text (it was refused as binary data), the OS's own words too; a UTF-8 log with a stray byte stays UTF-8."""
    prose = {"gbk": "训练开始，正在加载模型。请稍候，这个过程可能需要几分钟时间，取决于硬盘速度和模型大小。\n" * 3,
             "cp932": "学習を開始します。モデルを読み込んでいます。しばらくお待ちください。時間がかかる場合があります。\n" * 3}
    words = {"gbk": "找不到指定的模块。", "cp932": "指定されたモジュールが見つかりません。"}
    for encoding in ("gbk", "cp932"):
        error = ('OSError: [WinError 126] %s Error loading "C:\\sd\\venv\\lib\\site-packages\\torch\\lib\\c10.dll" or '
                 "one of its dependencies." % words[encoding])
        data = (prose[encoding] + _traceback(error, "C:/sd/launch.py")).encode(encoding)
        scanner = LogScanner()
        for i in range(0, len(data), 5):  # bytes arrive in any cut, a character's two bytes apart too
            scanner.feed(data[i:i + 5])
        excerpt = scanner.close()
        assert any(words[encoding] in ln.text for ln in excerpt.lines), encoding
        assert match(excerpt, CHECKS).diagnoses[0].check == "torch-install"
    stray = "RuntimeError: CUDA out of memory ████ 80% C:\\Users\\Jos\xe9\\x.py\n".encode().replace(b"\xc3\xa9", b"\xe9")
    scanner = LogScanner()
    scanner.feed(stray)
    assert [ln.text for ln in scanner.close().lines] == ["RuntimeError: CUDA out of memory ████ 80% C:\\Users\\Jos\ufffd\\x.py"]


def test_binary_input_is_refused_and_empty_input_is_empty() -> None:
    # (bytes of every value; a file's header and a table of numbers whose every other byte is NUL but not all the others)
    for data in (bytes(range(256)) * 64, b"\x7fELF\x02\x01\x01\x00" + bytes(range(64)) * 8, b"\x01\x00\x00\x00" * 512):
        with pytest.raises(NotText):
            scanner = LogScanner()
            scanner.feed(data)
            scanner.close()
    assert LogScanner().close().empty
    assert read_text("\n\n  \n").empty


def test_memory_is_bounded_and_the_traceback_at_the_end_survives() -> None:
    scanner = LogScanner()
    noisy = "".join("step %d loss 0.1 Warning: something %d\n" % (i, i) for i in range(1000)).encode()
    for _ in range(60):  # 60k lines that all open windows
        scanner.feed(noisy)
    scanner.feed(b"x" * 5_000_000)  # one endless line
    scanner.feed(b"\n" + _traceback("RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
                                    SITE + "torch/nn/functional.py").encode())
    excerpt = scanner.close()
    assert len(excerpt.lines) <= MAX_KEPT and excerpt.dropped_lines > 0
    assert max(len(line.text) for line in excerpt.lines) <= 4000
    assert match(excerpt, CHECKS).diagnoses[0].check == "cpu-half-kernels"


def test_lines_of_data_get_no_cause_and_no_near_miss_from_a_signature_that_keys_on_frames_alone() -> None:
    found = explained("\n".join(JUNK * 3) + "\n")
    # (a message pattern that matches no characters keys on frames or context: without them it was not near)
    assert found.diagnoses == [] and found.near == []


# A branch that starts with an unbounded run of a class (`\w+_impl`, `.*foo`), inside its groups or not, is tried from
# every character of a long line of data and runs to its end each time: quadratic on the lines JUNK holds
_UNBOUNDED_START = re.compile(r"^(\(\?[aiLmsux]+\))?(\((\?:|\?P<\w+>)?)*(\\[wWsSdD]|\.|\[[^\]]*\])[*+]")


def test_no_signature_branch_starts_with_an_unbounded_run() -> None:
    assert _UNBOUNDED_START.match(r"\w+_impl: implementation") and _UNBOUNDED_START.match(r"(?:.*)foo")
    assert not _UNBOUNDED_START.match(r"\b\w+Error\b") and not _UNBOUNDED_START.match(r"^\s*from torch")
    starts = ["%s %s: %s" % (check.id, sig.code, branch[:60]) for check in CHECKS for sig in check.signatures
              for branch in branches(sig.message) or (sig.message,) if _UNBOUNDED_START.match(branch)]
    assert starts == []


def test_a_signatures_needles_are_the_literals_it_cannot_match_without() -> None:
    assert needles(r"CUBLAS_STATUS_(ALLOC_FAILED|NOT_INITIALIZED)|cublasCreate\(handle\)") == (
        False, ("CUBLAS_STATUS_", "cublasCreate(handle)"))
    assert needles(r"(?i)\bAtte\w*ing to unscale") == (True, ("ing to unscale",))  # the longest literal of a branch
    assert needles(r"No modules? named") == (False, ("No module",))  # `s?`: the s may be absent, so not in the needle
    assert needles(r"(?<!\w)(CUDA|HIP) out of memory") == (False, (" out of memory",))  # groups may be optional
    assert needles(r"(?m)^foo bar$") == (False, ("foo bar",))
    # a branch that is one case-blind group is read through; then every literal is looked for case-blind
    assert needles(r"(?i:\bcuda\.is_available\(\)|no (nvidia )?gpus? found)|But your machine only has") == (
        True, ("cuda.is_available()", " found", "but your machine only has"))
    assert needles(r"(?i:abc)?|XYZW") is None  # an optional group rules nothing out
    assert may_match(r"(?i:abc)|XYZW", "... xyzw ...", "... xyzw ...")  # the wider net: never a miss
    # the top-level branches: not a bar inside a group, a class or an escape; none where a class or group never closes
    assert branches(r"ab(c|d)|[|)]e|f\|g|") == ("ab(c|d)", "[|)]e", "f\\|g", "")
    assert branches(r"[]|]x|y") == ("[]|]x", "y") and branches(r"[^]]|z") == ("[^]]", "z")
    for unsplit in (r"[ab|c", r"[]", r"(a|b", r"a\]|[b"):
        assert branches(unsplit) is None, unsplit
    for unreadable in (r"(a|b)cd", r"ab|abcdef", r"(?i)İstanbul", r"(?x)abc def", r"[abc]+\d+"):
        assert needles(unreadable) is None, unreadable
    assert not may_match(r"CUDA out of memory", "RuntimeError: expected scalar type", "runtimeerror: expected scalar type")
    # a counted quantifier's bounds are no text the pattern needs (they were once read as the literal "0,30")
    assert needles(r"abcd[^\n]{0,30}efghij") == (False, ("efghij",))
    assert needles(r"ab[^\n]{0,300}cd") is None
    assert needles(r"(?i:un-?supported[^\n]{0,30}(dtype|type))") == (True, ("supported",))
    assert may_match(r"(?i:un-?supported\b[^\n]{0,30}\bdtype)", "un-supported dtype", "un-supported dtype")
    # a branch without a plain literal is read through the groups every match passes: a lookahead's, or a group no
    # quantifier makes optional, the one whose shortest literal is longest
    assert needles(r"(?i)^(?!.*?\blora\b)(?=.*?(fp8|float8|e4m3))(?=.*?\bcapability\b)") == (True, ("capability",))
    assert needles(r"(?i)^(?!.*?\blora\b)(?=.*?(fp8|float8|e4m3))(?=.*?\bsm_?\d\d)") == (True, ("fp8", "float8", "e4m3"))
    assert needles(r"\b(solid )?(black|green) (image|output)s?\b") == (False, ("black", "green"))
    assert needles(r"\b(\w*Marlin\w*Linear|QLinear)\b") == (False, ("Marlin", "QLinear"))
    assert needles(r"(abc|def)+") == (False, ("abc", "def"))
    for optional in (r"(abc|def)?", r"(abc|def)*", r"(abc|def){0,2}", r"(?!abc)", r"(?<=abc)x", r"(?-i:abc)"):
        assert needles(optional) is None, optional
    assert not may_match(r"^(?=.*?(fp8|float8))", "expected scalar type", "expected scalar type")


@pytest.mark.parametrize("half", [0, 1])
def test_the_needles_never_change_a_diagnosis(half: int) -> None:
    """Skipping a signature whose literals are absent is an optimisation only: on every error text the matcher is given
    (every case's and every line of data's, each as it comes and re-read as one line), no signature the index skips
    matches, so every diagnosis and near miss is the same with the index as without it (a signature whose pattern does
    not match reads nothing and says nothing). The corpus in two halves by a stable hash of the names, so that the two
    test processes share it."""
    texts = [c.body for c in CASES if zlib.crc32(c.name.encode("utf-8")) % 2 == half] + (["\n".join(JUNK)] if half else [])
    asked: Dict[str, str] = {}
    original = NeedleIndex.tried

    def recorded(self: NeedleIndex, text: str, folded: str) -> List[int]:
        asked[text] = folded
        return original(self, text, folded)

    NeedleIndex.tried = recorded  # type: ignore[method-assign]
    try:
        for text in texts:
            match(read_text(text), CHECKS)
    finally:
        NeedleIndex.tried = original  # type: ignore[method-assign]
    signatures = [(check.id, sig) for check in CHECKS for sig in check.signatures]
    index = NeedleIndex.of([needles(sig.message) for _, sig in signatures])
    patterns = [re.compile(sig.message) for _, sig in signatures]
    skipped_yet_matching = ["%s %s on %r" % (check, sig.code, text[:120])
                            for text, folded in asked.items() for kept in [set(index.tried(text, folded))]
                            for i, (check, sig) in enumerate(signatures) if i not in kept and patterns[i].search(text)]
    assert len(asked) > 7500 and skipped_yet_matching == []
    covered = sum(needles(sig.message) is not None for _, sig in signatures)
    assert covered >= 0.95 * len(signatures)  # nearly all are skipped where absent


def test_a_traceback_cut_before_its_error_belongs_to_the_error_quoted_without_frames() -> None:
    """An issue's title quotes the error, the pasted traceback lost its last line."""
    text = ("OSError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n\n"
            "Traceback (most recent call last):\n"
            '  File "/env/lib/python3.8/site-packages/torch_sparse/__init__.py", line 19, in <module>\n'
            "    torch.ops.load_library(spec.origin)\n")
    (error,) = raised_errors(read_text(text).lines)
    assert error.paths == ["/env/lib/python3.8/site-packages/torch_sparse/__init__.py"]
    assert top(text) == "extension-abi"


def test_a_message_pasted_alone_and_text_without_errors() -> None:
    lone = explained("\"LayerNormKernelImpl\" not implemented for 'Half'\n")
    assert lone.diagnoses[0].check == "cpu-half-kernels"
    assert lone.diagnoses[0].evidence[0] == "line 1: \"LayerNormKernelImpl\" not implemented for 'Half'"
    calm = read_text("epoch 1 done\nsaving checkpoint\n")
    assert not calm.empty and match(calm, CHECKS).diagnoses == []


def test_the_context_words_look_ahead_covers_every_word() -> None:
    """reader._CONTEXT looks at the first letters before trying its words: a word added to
    _CONTEXT_WORDS whose first letter the look-ahead lacks would never match."""
    from envdoctor.pipeline.explain import reader

    ahead = reader._CONTEXT.pattern[len("(?=["):reader._CONTEXT.pattern.index("]")]
    for word in reader._CONTEXT_WORDS.split("|"):
        first = set(word[1:word.index("]")]) if word.startswith("[") else {word[0]}
        assert first <= set(ahead), word


def test_nccls_own_warnings_are_read_as_errors_where_no_python_error_was_printed() -> None:
    """A hung run's NCCL_DEBUG=WARN output holds no traceback: NCCL's WARN lines are its errors (the wording of
    github.com/NVIDIA/nccl/issues/210, a dev-4 case); its INFO lines are not."""
    log = ("node08:27106:27302 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.8<0>\n"
           "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol\n")
    matching = explained(log)
    assert [e.type for e in matching.errors] == ["NCCL WARN"]
    assert [(d.check, d.code) for d in matching.diagnoses] == [("distributed", "socket-ifname")]
    assert explained("node08:27106:27302 [0] NCCL INFO NET/IB : No device found.\n").errors == []


@pytest.mark.parametrize(("name", "code"), [
    # transformers' fbgemm fp8 quantizer, quoted in a thread's prose (dev-2)
    ("fp8--llama-405b-fp8-on-a100", "no-fp8-hardware"),
    # torch's own _scaled_mm gate of early 2024, "devices with compute capability >= 9.0" (dev-5)
    ("fp8--float8-experimental-scaled-mm-sm89-gate-old-torch", "no-fp8-hardware"),
    # ptxas refusing Ada's fp8 conversions under a Triton that capped PTX at 8.0 (dev-5)
    ("fp8--triton-nightly-sm89-fp8-cvt-needs-ptx-8-1", "no-fp8-hardware"),
    # peft refusing to merge into a GPTQ base (dev-5)
    ("dora-fp8--llamafactory-merge-lora-into-gptq-int4-model", "adapter-on-quantized-base"),
    # the trainers' own merge refusals, peft's "Target module WQLinear_GEMM ... is not supported" (dev-6)
    ("dora-fp8--llamafactory-qlora-on-quantized-base-cannot-merge-adapters", "adapter-on-quantized-base"),
    ("dora-fp8--ms-swift-qwen2-72b-awq-qlora-merge-lora-assert", "adapter-on-quantized-base"),
    ("dora-fp8--transformers-awq-wqlinear-gemm-lora-target-not-supported", "adapter-on-quantized-base"),
    # CUDA's 217 inside NCCL: peer access refused between two consumer GPUs (dev-6)
    ("distributed--raylight-two-4090-all-reduce-cuda-failure-217-p2p", "collective-fails"),
    # ncclSystemError with nothing around it (dev-6)
    ("distributed--dekr-docker-ncclsystemerror-ipc-host", "system-error"),
    # NaN pixels told by numpy's cast warning at diffusers' `(images * 255).round().astype("uint8")` (dev-6)
    ("library-probes--instantstyle-plus-fp16-inversion-nan-black-image", "fp16-overflow"),
    # "the final image was black" beside float16 (dev-6)
    ("library-probes--invokeai-macos-flux-vae-float16-black-image", "fp16-overflow"),
    # stable-diffusion-webui's CUDA start-up test under a DirectML fork's CPU torch; xformers without CUDA kernels (dev-7)
    ("torch-install--stabilitymatrix-rtx3080-directml-webui-package-torch-no-gpu", "cpu-only-torch"),
    ("extension-abi--comfyui-depthanything-v2-rtx5090-xformers-not-built-with-cuda", "extension-not-loaded"),
    # torch's capability warning, vLLM's KV cache, an nvcc of another CUDA, torch's DLL with its path cut (dev-8)
    ("cuda-compat--invokeai-launcher-gtx1060-cc61-torch-built-from-cc75", "no-kernel-image"),
    ("device-memory--qwen15-7b-vllm-kv-cache-7344-lower-max-model-len", "out-of-memory"),
    ("extension-abi--embodiedocc2-setup-cuda-12-2-vs-torch-cu113", "cuda-variant-mismatch"),
    ("torch-install--stabilitymatrix-comfyui-update-fbgemm-dll-reinstall-torch-2-1-2", "torch-dll-failed"),
    # adapters on quantized bases told by structure: a prose line, a path of peft's quantized layers (dev-3, -4, -6)
    ("dora-fp8--hot-step-xl-lora-int8-dit-quantized-merge", "adapter-on-quantized-base"),
    ("dora-fp8--hunyuanvideowrapper-official-scaled-fp8-lora-snowflake-output", "adapter-on-quantized-base"),
    ("dora-fp8--bnb-int8-405b-merge-lora-double-quant", "adapter-on-quantized-base"),
    ("dora-fp8--diffusers-flux-torchao-float8dq-load-lora", "adapter-on-quantized-base"),
    # bitsandbytes' native library refused by Windows, its int8 matmul missing before 0.37; fp16 on the CPU in words (dev-9)
    ("quantized-base--bnb-fb-winerror193-libbitsandbytes-so-windows", "quantized-fails"),
    ("quantized-base--bnb-tesla-p40-int8-matmul-nocublaslt-036", "quantized-fails"),
    ("cpu-half-kernels--few-shot-patch-device-cpu-no-fp16-support", "fp16-missing"),
    # a collective's hang told in words, with no error at all (dev-4, dev-6)
    ("distributed--dsgn2-4x3090-training-freeze-nccl-p2p-deadlock", "collective-fails"),
    ("distributed--rtx5880-ada-allreduce-deadlock-pcie-acs", "collective-fails"),
    # from dev-10: cuDNN's v8 API finding no engine, torch 0.4's dtype wording, torchaudio's own CUDA check, torchvision's
    # CPU-only ops on CUDA tensors, cublasLt refusing fp8 (however the status is spelled), bitsandbytes' CUDA setup and
    # its int8 matmul
    ("cublas--gpt-sovits-linux-cudnn-get-unable-to-find-engine-ld-library-path", "cudnn-failed"),
    ("dtype-mismatch--sparse-learning-fp16-mask-float-vs-half-old-wording", "mixes-rejected"),
    ("extension-abi--sd-wav2lip-uhq-torchaudio-cu117-vs-torch-cu118", "cuda-variant-mismatch"),
    ("extension-abi--ultralytics-nms-cuda-backend-windows-torchvision-cpu-wheel", "import-fails"),
    ("fp8--superbench-cublaslt-gemm-fp8e4m3-rtx4090-cuda121", "no-fp8-hardware"),
    ("fp8--comfyui-flux-fp8-e4m3fn-torch24-cu118-cublaslt-not-supported", "no-fp8-hardware"),
    ("quantized-base--bnb-colab-cuda122-image-no-prebuilt-nocublaslt", "quantized-fails"),
    ("quantized-base--bnb-h100-int8-cublaslt-status-15-col-turing", "quantized-fails"),
    # vLLM's bf16 refusal pasted without its start (dev-3)
    ("bf16-support--llamafactory-3717-v100-vllm-api-qwen-bf16-config-chinese", "bf16-unsupported"),
    # from dev-11: an old apex.amp's patched optimizer.step under torch's LR scheduler, a CUDA runtime error told by its
    # number, a name numpy 2 removed
    ("apex--amp-step-patch-no-self-cosine-annealing-torch13", "apex-stale"),
    ("cuda-compat--nvdiffrast-cuda-error-209-torch16-rtx5000", "no-kernel-image"),
    ("torch-install--llamafactory-numpy2-bufsize-importerror", "numpy-abi"),
    # from dev-12: CTranslate2's fp16 refusal on the CPU, the NVIDIA container toolkit's CUDA requirement, the allocator
    # over a memory fraction, a dtype message retyped with full-width parentheses, a package's _C never built
    ("cpu-half-kernels--whisperx-macos-default-float16-compute-type", "fp16-refused"),
    ("cuda-compat--llm-swarm-tgi-111-container-needs-cuda118-driver", "driver-too-old"),
    ("device-memory--svd-sampler-24gb-25-frames-allocation", "out-of-memory"),
    ("dtype-mismatch--videochat-flash-finetuned-inference-bf16-input-half-bias", "mixes-rejected"),
    ("extension-abi--groundingdino-colab-c-not-defined-extension-not-built", "import-fails"),
    # from dev-13: ROCm without code for the AMD card's gfx target (in words and inside a JSON error), torchvision's old
    # "No such operator", torch's own _C.so with an undefined symbol, a torch without XPU asked for Intel's GPU
    ("cuda-compat--comfyui-stabilitymatrix-7800xt-hip-invalid-device-function-json", "no-kernel-image"),
    ("cuda-compat--koboldai-rx6600-arch-hiperrornobinaryforgpu-hsa-override", "no-kernel-image"),
    ("extension-abi--vision-nightly-wheels-stale-no-such-operator-nms", "import-fails"),
    ("torch-install--pytorch-0112-conda-update-c-so-undefined-thcslongtensor", "torch-import-failed"),
    ("torch-install--sdnext-arc-a750-torch-not-compiled-with-xpu-cpu-torch", "cpu-only-torch"),
    ("torch-install--pytorch-nightly-xpu-a770-is-available-false-cpu-binary", "cpu-only-torch"),  # a REPL's answer
    # from dev-26: macOS's loader on a companion's and on torch's own library, an old torch's libATen, bitsandbytes' slow
    # int8 warning, transformers' older load_in_8bit guard
    ("extension-abi--torchaudio-nightly-stale-macos", "import-fails"),
    ("torch-install--pytorch-1228-macos-symbol-not-found-source-build", "torch-import-failed"),
    ("torch-install--pytorch-2172-libaten-undefined-symbol-stale-build", "torch-import-failed"),
    ("quantized-base--bnb-int8-compute-capability-below-7.5", "quantized-fails"),
    ("quantized-base--bnb-macos-importerror-accelerate", "quantized-fails"),
    # from dev-27: torch's C ABI symbol missing on a Mac, Windows' entry-point dialog, NCCL's SIGBUS under gdb in another
    # framework, an engine's lowercase "cuda: out of memory"
    ("extension-abi--microwakeword-torchaudio-torch-library-impl-mac", "import-fails"),
    ("extension-abi--xformers-c-pyd-entry-point-torch27-portable", "import-fails"),
    ("distributed--jax-toolbox-183-ncclshmopen-sigbus-shm-size", "shm-small"),
    ("device-memory--internvl-342-awq-8xt4-cuda-oom", "out-of-memory"),
    # from dev-28: zope refusing the PyPI apex's Python 2 class advice, a library's "install apex from source", torch's
    # libraries needing a newer glibc, pip refusing a torch wheel for another platform, torch's own `from torch._C import *`
    # as the code line of a bare Windows DLL failure
    ("apex--pypi-impostor-class-advice-colab", "apex-impostor"),
    ("apex--colossalai-fused-rmsnorm-needs-apex", "apex-no-cuda-extensions"),
    ("torch-install--centos6-glibc214-torch10", "torch-import-failed"),
    ("torch-install--pytorch-16633-win-amd64-wheel-on-32bit-python", "torch-missing"),
    ("torch-install--win-dll-load-failed-dup-4518", "torch-dll-failed"),
    # from dev-29: the OOM killer ending a DataLoader worker, DeepSpeed's op builder refusing another CUDA than torch's,
    # a ROCm wheel's own library missing under torch's import
    ("device-memory--visdial-dataloader-worker-killed-host-ram", "out-of-memory"),
    ("extension-abi--mgm-deepspeed-op-builder-cuda-mismatch", "cuda-variant-mismatch"),
    ("torch-install--gfx1151-libmiopen-ld-library-path", "torch-import-failed"),
    # from dev-30: an apex older than torch 2.0 importing torch._six, CTranslate2 not finding cuDNN 9's libraries,
    # CTranslate2's own "cuda failed with error out of memory"
    ("apex--opensora-apex-amp-torch-six-container-abcs", "apex-stale"),
    ("cublas--whisperx-colab-ctranslate2-cudnn9", "cudnn-failed"),
    ("device-memory--whisperx-update-cuda-failed-oom", "out-of-memory"),
    # from dev-28 (stop 38): torch's memory-efficient attention without a bf16 kernel below sm_80, and the same words
    # under an xformers that was never built with CUDA
    ("bf16-support--fishspeech-cutlassf-no-kernel", "bf16-unsupported"),
    ("extension-abi--comfyui-depthanything-v2-rtx5090-xformers-not-built-with-cuda", "extension-not-loaded"),
    # from dev-27 and dev-29: a process ended by SIGBUS (shared memory) and by SIGKILL (the OOM killer), as launchers say it
    ("distributed--tgi-446-download-signal-7-no-shm", "shm-small"),
    ("device-memory--llamafactory-deepspeed-z3-offload-return-code-9-host-ram", "out-of-memory"),
    # from dev-28: a package's private compiled module that Windows cannot load, told in Chinese
    ("extension-abi--lmdeploy-turbomind-dll-load-failed-win", "import-fails"),
    # from dev-31: diffusers refusing an fp16 pipeline on the CPU, an apex older than torch 1.8's torch._six, apex's own
    # warning of a Python-only build, a shell's SIGKILL, macOS's loader on an extension built for the other CPU
    ("cpu-half-kernels--comfyui-hallo-fp16-pipeline-cpu-guard", "fp16-refused"),
    ("apex--pytorch-nightly-torch-six-container-abcs-stale-apex", "apex-stale"),
    ("apex--apex-installed-without-cuda-ext-warning", "apex-no-cuda-extensions"),
    ("device-memory--comfyui-fp8-flux-lora-host-oom-sigkill", "out-of-memory"),
    ("extension-abi--pytorch-sparse-199-m1-x86-64-so-need-arm64e", "import-fails"),
    # from dev-31: Python's own words for a torch DLL that cannot load, no torch wheel for this interpreter (uv's words)
    ("torch-install--c10-dll-vcredist", "torch-dll-failed"),
    ("torch-install--vllm-metal-379-x86-64-python-on-apple-silicon-no-torch-wheel", "torch-missing"),
    # from dev-27 and dev-31: GradScaler refusing gradients of weights loaded in fp16 (the title retyped with a typo)
    ("library-probes--transformers-23165-trainer-unscale-fp16-gradients", "fp16-grads"),
    ("library-probes--d3po-unet-fp16-unscale-grads", "fp16-grads"),
    # from dev-32: cuDNN's own loader naming its sub-library (cuDNN cannot start, whoever loaded it), CTranslate2's loader
    # on cuBLAS, a compiled module by convention missing outright, bitsandbytes older than quant_storage
    ("cublas--faster-whisper-libcudnn-ops-infer-so8-with-cudnn9", "cudnn-failed"),
    ("cublas--gptsovits-fasterwhisper-cublas64-12", "cudnn-failed"),
    ("extension-abi--exllamav2-no-module-ext-prebuilt-cu121", "import-fails"),
    ("quantized-base--nf4-node-forgeparams4bit-quant-storage-upgrade-bnb", "quantized-fails"),
    # from dev-33: a package saying its compiled code has no build for this GPU (tiny-cuda-nn), this torch (DGL's
    # graphbolt), or CUDA at all (mmcv's op registry, DGL's CPU build); the driver refusing
    # the kernels Triton's newer ptxas compiled
    ("extension-abi--tcnn-no-extension-for-cc87-jetson-orin", "import-fails"),
    ("extension-abi--dgl-graphbolt-dll-torch241-windows", "import-fails"),
    ("extension-abi--mmdet3d-hard-voxelize-no-cuda-impl-wrong-mmcv", "import-fails"),
    ("extension-abi--graphmae-dgl-cpu-build-device-api-gpu", "import-fails"),
    ("cuda-compat--inductor-kernel-image-invalid-driver470", "driver-too-old"),
    ("apex--swin-det-apex-not-defined-amp-c-windows", "apex-no-cuda-extensions"),  # a guarded `import apex` that failed
    # from dev-34: DataLoader's workers out of shared memory, in torch's words: host memory's, /dev/shm confirming
    ("device-memory--simplerecon-docker-shm-title", "shm-small"),
    ("cuda-compat--melotts-cufft-internal-error-rtx4090", "cufft-too-old-for-gpu"),  # cuFFT of CUDA 11.7 on an RTX 4090
    ("cuda-compat--vllm-awq-v100-min-capability-75", "no-kernel-image"),  # vLLM's AWQ kernels gated at Turing (dev-32)
    ("fp8--vllm-4327-ray-workers-fp8-quant-cc86", "no-fp8-hardware"),  # the same gate for fp8 stays fp8's (dev-3)
    # torch 1.8-1.13's split libtorch_cuda_cpp looked for by torchaudio's library under a newer torch (dev-24)
    ("extension-abi--audacitorch-colab-torchaudio-libtorch-cuda-cpp-missing", "import-fails"),
    # from dev-32: torch-directml's own out-of-memory words, and its native module that will not load on Windows
    ("device-memory--krita-directml-alloc", "out-of-memory"),
    ("extension-abi--krita-torch-directml-dll", "import-fails"),
])
def test_wordings_of_other_tools(name: str, code: str) -> None:
    [case] = [c for c in CASES if c.name == name]
    diagnoses = match(read_text(case.body), CHECKS).diagnoses
    assert (diagnoses[0].check, diagnoses[0].code) == (case.expect, code)


def test_what_the_readings_and_reviews_of_stop_46_found() -> None:
    """Batch 68's dev part and four reviews (inputs written to break the readings, per family): each was read wrongly
    before, and is read right now; with the look-alikes each reading must still refuse."""
    # torch.cuda.nvtx's own words in a build without CUDA
    assert code_of("RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?\n") == (
        "torch-install", "cpu-only-torch")
    # torch turning CUDA off, where the run stopped on it; not where another error came after it
    autocast = ("C:\\py\\site-packages\\torch\\amp\\autocast_mode.py:202: UserWarning: User provided device_type of 'cuda', but "
                "CUDA is not available. Disabling\n  warnings.warn('User provided device_type of \\'cuda\\', but CUDA is not "
                "available. Disabling')\n100%|####| 8/8 [00:31<00:00,  3.89s/it]\nGenerating 1 candidates took 51.85 seconds\n")
    assert code_of(autocast) == ("torch-install", "cpu-only-torch")
    assert top(autocast + _traceback("KeyError: 'labels'", "/x/t.py")) == "none"
    # a driver too old, said by torch before the job found no GPU: cuda-compat's alone
    old = ("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11020). Please update "
           "your GPU driver\n")
    nccl = "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n"
    assert [d.check for d in explained(old + _traceback(nccl, "/x/t.py")).diagnoses] == ["cuda-compat"]
    assert top(_traceback(nccl, "/x/t.py")) == "torch-install"
    # a CUDA build's warning that the GPU is not among its architectures, before a web UI's GPU test
    sm120 = ("UserWarning: \nNVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is not compatible with the current PyTorch "
             "installation.\n")
    webui = "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check\n"
    assert top(sm120 + _traceback(webui, "C:/sd/webui/modules/launch_utils.py")) == "cuda-compat"
    assert top(_traceback(webui, "C:/sd/webui/modules/launch_utils.py")) == "torch-install"
    # the OOM class's name missing from an older torch is no out of memory
    assert top("AttributeError: module 'torch.cuda' has no attribute 'OutOfMemoryError'\n") == "none"
    assert top("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n") == "device-memory"
    # Lightning 1.3-1.4 refusing AMP on the CPU; Lightning 2.x falling back to bf16 on its own
    assert code_of("pytorch_lightning.utilities.exceptions.MisconfigurationException: You have asked for native AMP on CPU, "
                   "but AMP is only available on GPU.\n") == ("cpu-half-kernels", "fp16-refused")
    fallback = ("/env/lightning/pytorch/trainer/connectors/accelerator_connector.py:556: You passed `Trainer(accelerator='cpu', "
                "precision='16-mixed')` but AMP with fp16 is not supported on CPU. Using `precision='bf16-mixed'` instead.\n")
    assert top(fallback + _traceback("FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'", "/x/dm.py")) == "none"
    assert top("ERROR: --device cpu doesn't work due to missing fp16 support\n") == "cpu-half-kernels"
    # accelerate refusing P2P/IB on RTX 40xx
    p2p = ("NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via P2P or IB. Please "
           "set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE=\"1\" or use `accelerate launch` which will do this automatically.\n")
    diagnosis = explained(p2p).diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("distributed", "collective-fails")
    assert any(r.id == "nccl-p2p-ib-disable" for r in diagnosis.remedies)
    # bitsandbytes' warning of a setup that went on to load its library is no setup failure; a setup that failed still is
    benign = (SITE + "bitsandbytes/cuda_setup/main.py:149: UserWarning: WARNING: The following directories listed in your path "
              "were found to be non-existent: {PosixPath('/usr/local/nvidia/lib')}\n  warn(msg)\nCUDA SETUP: Loading binary "
              + SITE + "bitsandbytes/libbitsandbytes_cuda118.so...\n")
    pad = "ValueError: Asking to pad but the tokenizer does not have a padding token."
    assert top(benign + _traceback(pad, SITE + "transformers/tokenization_utils_base.py")) == "none"
    assert top(_traceback("NameError: name 'cuda_setup' is not defined", SITE + "bitsandbytes/cuda_setup/main.py")) == "quantized-base"
    # ... and its catch-all is no near miss of every other error
    assert not [n for n in explained(_traceback(pad, "/x/t.py")).near if n.check == "quantized-base"]


def test_a_rank_that_failed_first_of_its_own_error_is_the_cause_not_the_peers_that_lost_it() -> None:
    """rank0 dies of its code's KeyError; rank1 then loses it in the job's collectives: its words follow the cause, they
    are not one. Where rank0's own failure is one a family reads (out of memory), that reading leads."""
    keyerror = ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"/srv/train.py\", line 33, in <module>\n"
                "[rank0]:     tokenizer = TOKENIZERS[cfg[\"tokenizer\"]]\n[rank0]: KeyError: 'tokenizer'\n")
    lost = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/srv/train.py\", line 41, in <module>\n"
            "[rank1]:     dist.barrier()\n[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and "
            "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection "
            "reset by peer\n")
    matching = explained(keyerror + lost)
    assert not matching.diagnoses
    assert any("another rank failed first" in n.why for n in matching.near)
    assert top(lost) == "distributed"  # alone, the ranks could not meet
    oom = keyerror.replace("KeyError: 'tokenizer'", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert top(oom + lost) == "device-memory"


def test_what_the_second_round_of_reviews_of_stop_46_found() -> None:
    """Six more reviews (fp16 overflow, adapters on fp8 and quantized image models, apex and cuBLAS, GPU and driver
    wordings, issue templates, healthy logs): each was read wrongly before, and is read right now."""
    # fp16 overflow as a Trainer's metrics and loss scalers show it; not a normal skipped step, not a run said to be fp32
    trainer = ("$ python run_summarization.py --model_name_or_path t5-large --do_train --fp16\n"
               "{'loss': 2.1432, 'grad_norm': 1.8342, 'learning_rate': 4.988e-05, 'epoch': 0.01}\n"
               "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.977e-05, 'epoch': 0.01}\n")
    assert code_of(trainer) == ("library-probes", "fp16-overflow")
    scaler = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %s, reducing to %s\n"
    assert top(scaler % (1, 1) * 3) == "library-probes"
    assert top(scaler % (65536, 32768)) == "none"
    assert top("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.0\n") == "library-probes"
    fp32 = ("Loss becomes nan after ~2k steps, training in fp32 (no --fp16, no autocast), AdamW lr 1e-3.\n"
            "step 2100 loss nan\n")
    assert top(fp32) == "none"
    assert top(fp32.replace("(no --fp16, no autocast)", "with --fp16")) == "library-probes"
    assert top("model.half()\ntensor([[nan, nan, nan,  ..., nan, nan, nan]], device='cuda:0', dtype=torch.float16)\n") == \
        "library-probes"
    assert top("Since I started ComfyUI with --force-fp16 every image from my SDXL workflow is pure black.\n") == "library-probes"
    assert top("All outputs are black. There is no NSFW checker in this pipeline, the vae is float16.\n") == "library-probes"
    assert top("Potential NSFW content was detected in one or more images. A black image will be returned instead.\n") == "none"
    # out of memory denied or over is none; said is still memory's
    for said in ("peak mem 20.44 GiB, no OOM this time :)", "did not run out of memory this time",
                 "OOM gone after enabling gradient checkpointing", "(prev run OOM'd at bs8, this one uses grad accumulation)"):
        assert top(said + "\n") == "none", said
    for said in ("it OOMs at bs 8 on my 3090", "training OOM'd at step 300", "ran out of memory on the 4090"):
        assert top(said + "\n") == "device-memory", said
    # bitsandbytes without its GPU library, however its functions then fail
    missing = "Could not find the bitsandbytes CUDA binary at PosixPath('%sbitsandbytes/libbitsandbytes_cuda124.so')\n" % SITE
    nf4 = _traceback("AttributeError: 'NoneType' object has no attribute 'cquantize_blockwise_fp16_nf4'",
                     SITE + "bitsandbytes/functional.py")
    assert code_of(missing + nf4) == ("quantized-base", "quantized-fails")
    assert code_of(missing) == ("quantized-base", "quantized-fails")
    assert top(_traceback("AttributeError: 'NoneType' object has no attribute 'cpu'", "/x/t.py")) == "none"
    # float8 weights against bf16 activations in a matmul: fp8's, and the adapter's where its frames are
    mix = "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::BFloat16 != c10::Float8_e4m3fn"
    assert top(mix + "\n") == "fp8"
    assert top(_traceback(mix, "/x/musubi-tuner/networks/lora.py")) == "dora-fp8"
    promote = "RuntimeError: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half"
    assert top(_traceback(promote, "D:/sd/webui/extensions-builtin/Lora/networks.py")) == "dora-fp8"
    assert top(_traceback(promote, "/x/modules/lora/network_lokr.py")) == "dora-fp8"
    assert top(_traceback(promote, "/x/models/networks.py")) == "fp8"
    assert top("RuntimeError: mat1 and mat2 must have the same dtype, but got Half and Float\n") == "dtype-mismatch"
    # a CUDA build's warning that the GPU is not among its architectures, before a cuBLAS or cuDNN failure
    sm86 = ("UserWarning: \nNVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch "
            "installation.\n")
    gemm = "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k)`"
    assert top(sm86 + _traceback(gemm, "/x/t.py")) == "cuda-compat"
    assert top(_traceback(gemm, "/x/t.py")) == "cublas"
    # a user's own apex.py shadowing apex
    shadow = "ModuleNotFoundError: No module named 'apex.normalization'%s"
    assert top(_traceback(shadow % "; 'apex' is not a package", "/x/train.py")) == "none"
    assert top(_traceback(shadow % "", "/x/train.py")) == "apex"
    # the CUDA runtime's driver words before a program's "no GPU": the driver's
    llama = ("ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version\n"
             "warning: no usable GPU found, --gpu-layers option will be ignored\n")
    assert top(llama) == "cuda-compat"
    # a CPU build's version printed beside is_available()'s answer
    assert code_of("$ python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"\n"
                   "2.4.1+cpu None False\n") == ("torch-install", "cpu-only-torch")
    assert top("2.4.1+cu121 12.1 True\n") == "none"
    # cuDNN's frontend without a plan for the graph (torch 2.5+'s cuDNN attention); a module straight under site-packages
    # missing a symbol the paste cut off
    assert code_of("RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.\n") == (
        "cublas", "cudnn-failed")
    assert code_of("ImportError: /usr/local/lib/python3.7/dist-packages/_XLAC.cpython-37m-x86_64-linux-gnu.so: undefined "
                   "symbol:\n") == ("extension-abi", "import-fails")
    assert top("ImportError: /usr/local/lib/python3.7/dist-packages/torch/lib/libtorch_cpu.so: undefined symbol:\n") != \
        "extension-abi"


def test_what_the_third_round_of_reviews_of_stop_46_found() -> None:
    """Reviews of this stop's readings, of compiled extensions and of Macs: each was read wrongly before, and is read right
    now."""
    # MPSGraph's element-type refusal with its operands cut off: fp16 and fp32 on the Macs' image apps; not integers shown
    mps = "error: 'mps.add' op requires the same element type for all operands and results\n"
    assert top(mps + "LLVM ERROR: Failed to infer result type(s).\n") == "dtype-mismatch"
    assert top(mps + "note: see current operation: %5 = \"mps.add\"(%4, %3) : (tensor<1x77xi64>, tensor<1x77xf32>)\n") != \
        "dtype-mismatch"
    # the driver or the build said not to fit the machine, before a web UI's GPU test or cuBLAS/cuDNN not starting
    insufficient = "UserWarning: CUDA initialization: CUDA driver version is insufficient for CUDA runtime version\n"
    webui = "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check"
    assert top(insufficient + _traceback(webui, "/sd/webui/modules/launch_utils.py")) == "cuda-compat"
    old = "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11020).\n"
    for failure in ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
                    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"):
        assert top(old + _traceback(failure, "/x/t.py")) == "cuda-compat", failure
    assert top(_traceback("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
                          "/x/t.py")) == "device-memory"
    # the out-of-memory class named in code a traceback shows is no out of memory
    code = ('  File "/x/t.py", line 9, in step\n    except torch.cuda.OutOfMemoryError:\n'
            "AttributeError: module 'torch.cuda' has no attribute 'OutOfMemoryError'\n")
    assert top(code) == "none"
    assert top('  File "/x/t.py", line 9, in f\n    return isinstance(exc, torch.OutOfMemoryError)\n'
               "RuntimeError: shape '[8, -1, 10]' is invalid for input of size 7\n") == "none"
    # two launchers' prefixes on one line still make ranks: the first to fail of its own error is the cause
    first = ("[default0]:[rank0]: Traceback (most recent call last):\n"
             "[default0]:[rank0]:   File \"/job/finetune.py\", line 120, in evaluate\n"
             "[default0]:[rank0]:     scores.append(float(pred.split(\":\")[1]))\n"
             "[default0]:[rank0]: IndexError: list index out of range\n"
             "[default1]:[rank1]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, remote process exited "
             "or there was a network error, NCCL version 2.21.5\n")
    assert not explained(first).diagnoses
    # bitsandbytes' search going on past a path without libcudart is no setup failure
    search = (SITE + "bitsandbytes/cuda_setup/main.py:149: UserWarning: /usr/local/cuda/lib64 did not contain "
              "['libcudart.so', 'libcudart.so.11.0'] as expected! Searching further paths...\n  warn(msg)\n")
    assert top(search + _traceback("KeyError: 'instruction'", "/content/train.py")) == "none"
    # a CPU build's printed answer is read only where the paste stops on it
    assert top("2.4.1+cpu None False\n" + _traceback("AssertionError: assert 'hello' == 'héllo'", "/x/test_text.py")) == "none"
    # pip's isolated build environment has no torch, whatever the user's has
    build = ("  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n" +
             _traceback("ModuleNotFoundError: No module named 'torch'",
                        "/tmp/pip-build-env-3v7x/overlay/lib/python3.10/site-packages/setuptools/build_meta.py"))
    found = explained(build).diagnoses[0]
    assert (found.check, found.code) == ("torch-install", "torch-missing-in-build")
    assert any(r.id == "no-build-isolation" for r in found.remedies)
    assert code_of(_traceback("ModuleNotFoundError: No module named 'torch'", "/x/t.py")) == ("torch-install", "torch-missing")
    # pybind11's check of the Python a module was built for; a package's module built per GPU architecture
    assert top("ImportError: Python version mismatch: module was compiled for Python 3.10, but the interpreter version is "
               "incompatible: 3.11.6.\n") == "extension-abi"
    assert top(_traceback("ModuleNotFoundError: No module named 'sageattention._qattn_sm89'", SITE + "sageattention/core.py")) == \
        "extension-abi"
    assert top("ModuleNotFoundError: No module named 'sageattention'\n") == "none"
    # uv's and pixi's resolvers finding no torch wheel for this Python or platform; vLLM 0.8+'s KV cache too small
    assert top("  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==2.5.1 has no wheels with a matching "
               "Python ABI tag (e.g., `cp313t`), we can conclude that torch==2.5.1 cannot be used.\n") == "torch-install"
    assert top("  × failed to solve the pypi requirements of 'default' 'osx-64'\n  ╰─▶ Because only torch<=2.2.2 is available "
               "and you require torch>=2.7, we can conclude that your requirements are unsatisfiable.\n") == "torch-install"
    assert top("Because only numpy<=1.26.4 is available and you require numpy>=2, we can conclude that your requirements are "
               "unsatisfiable.\n") == "none"
    assert top("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
               "needed, which is larger than the available KV cache memory (9.53 GiB). Based on the available memory, the "
               "estimated maximum model length is 77968.\n") == "device-memory"
    # a line glued longer than the reader keeps (progress bars, a log pasted without its newlines) keeps its end
    glued = "100%|" + "#" * 5400 + "| 50/50 RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    assert top(glued) == "cuda-compat"
    assert top("#" * 1000 + " RuntimeError: CUDA error: no kernel image is available for execution on the device " +
               "#" * 6000 + "\n") == "cuda-compat"
    # xformers' version lines retold without its warning's head
    assert top("xFormers was built for: PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu118)\n") == "extension-abi"
    # the terminal's near miss is a sentence; its pattern is --json's
    near = explained("RuntimeError: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 1800000 ms\n").near
    assert near and all("(?" not in n.why and "\\b" not in n.why for n in near) and any(n.needs for n in near)


def test_what_the_fourth_round_of_reviews_of_stop_46_found() -> None:
    """Reviews of adapters and quantized bases in LLM fine-tuning, of memory in every form, and of torch's install across
    operating systems: each was read wrongly before, and is read right now."""
    # what any forward meets inside peft's layers for quantized bases is not the adapter's: out of memory, a Ctrl-C
    bnb = SITE + "peft/tuners/lora/bnb.py"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of 14.75 GiB"
    assert top(_traceback(oom, "/x/train.py", bnb)) == "device-memory"
    assert top(_traceback("KeyboardInterrupt", "/x/train.py", bnb)) == "none"
    assert top(_traceback("RuntimeError: Cannot merge LORA layers when the model is loaded in 8-bit mode", bnb)) == "dora-fp8"
    # memory as other front-ends and runtimes say it; an allocation no GPU has is a shape bug
    for said in ("RuntimeError: Not enough memory, use lower resolution (max approx. 1216x1216). Need: 0.5GB free, Have:0.3GB free",
                 "RuntimeError: Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
                 "1.63 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
                 "Your session crashed after using all available RAM."):
        assert top(said + "\n") == "device-memory", said
    assert top("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3725.29 GiB. GPU 0 has a total capacity of "
               "79.15 GiB of which 77.80 GiB is free.\n") == "none"
    assert top("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 372.53 GiB. GPU 0 has a total capacity of "
               "79.15 GiB\n") == "device-memory"
    # torch's wheel without the nvidia-* packages it preloads; conda's and pixi's solvers without a pytorch for this machine
    assert code_of(_traceback("ValueError: libcublas.so.*[0-9] not found in the system path ['/x', '/y']",
                              SITE + "torch/__init__.py")) == ("torch-install", "torch-import-failed")
    assert top("  └─ pytorch ==1.13.1 * is not installable because it requires\n     └─ python >=3.10,<3.11.0a0, which "
               "conflicts with any installable versions previously reported.\n") == "torch-install"
    assert top("  ╰─▶ Cannot solve the request because of: No candidates were found for pytorch-cuda 12.1.*.\n") == "torch-install"
    assert top("  ╰─▶ Cannot solve the request because of: No candidates were found for gradio 6.1.*.\n") == "none"
    # ROCm's MIOpen failing a convolution; a torch without XPU, as the device parser says it; bitsandbytes' loader looking
    # for the CUDA runtime its library was built for is bitsandbytes', not torch's install
    assert code_of("MIOpen(HIP): Error [Compile] 'hiprtcCompileProgram(...)' naive_conv.cpp: HIPRTC_ERROR_COMPILATION (6)\n"
                   "RuntimeError: miopenStatusUnknownError\n") == ("cublas", "cudnn-failed")
    assert code_of("RuntimeError: PyTorch is not linked with support for xpu devices\n") == ("torch-install", "cpu-only-torch")
    cudart = "OSError: libcudart.so.12: cannot open shared object file: No such file or directory"
    assert top(_traceback(cudart, SITE + "bitsandbytes/cextension.py")) == "quantized-base"
    assert top(_traceback(cudart, SITE + "torch/__init__.py")) == "torch-install"
    # bitsandbytes' warnings at set-up are no failure of it; its set-up failing on Windows is, backslashes and all
    welcome = (SITE + "bitsandbytes/cuda_setup/main.py:166: UserWarning: Welcome to bitsandbytes. For bug reports, please run\n"
               "  warn(msg)\nCUDA SETUP: Loading binary " + SITE + "bitsandbytes/libbitsandbytes_cuda118.so...\n")
    assert top(welcome + _traceback("KeyError: 'train'", SITE + "datasets/dataset_dict.py")) == "none"
    win = ('  File "D:\\venv\\lib\\site-packages\\bitsandbytes\\cuda_setup\\main.py", line 392, in load_library\n'
           "    self.lib = ct.cdll.LoadLibrary(binary_path)\nOSError: [WinError 193] %1 is not a valid Win32 application\n")
    assert top(_traceback("ImportError: x", SITE + "peft/tuners/lora/bnb.py").replace("ImportError: x\n", "") + win) == \
        "quantized-base"
    assert top("FileNotFoundError: Could not find module 'C:\\tgw\\env\\lib\\site-packages\\bitsandbytes\\"
               "libbitsandbytes_cuda118.dll' (or one of its dependencies). Try using the full path with constructor syntax.\n") == \
        "quantized-base"
    # zope.interface refusing Twisted's Python 2 interfaces is not apex's impostor
    advice = "TypeError: Class advice impossible in Python3.  Use the @implementer class decorator instead."
    assert top(_traceback(advice, SITE + "twisted/internet/_threadedselect.py", SITE + "zope/interface/declarations.py")) == "none"
    assert top(_traceback(advice, SITE + "apex/interfaces.py", SITE + "zope/interface/declarations.py")) == "apex"
    # Ray's out-of-memory killer names the class its own way: still out of memory
    assert top("ray.exceptions.RayTaskError(OutOfMemoryError): ray::_Inner.train() (pid=20931)\n"
               "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n") == "device-memory"
    # the container toolkit retelling NVML's driver/library mismatch in lowercase
    assert code_of("nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.\n") == (
        "cuda-compat", "driver-library-mismatch")
    # an app's advice that memory may run out is no out of memory
    assert top("[Low VRAM Warning] This means you will have 0% GPU memory (0.00 MB) to do matrix computation. Computations "
               "may fallback to CPU or go Out of Memory.\n") == "none"
    assert top("Computations went out of memory on the second image.\n") == "device-memory"


def test_what_batch_73_and_the_reviews_of_stop_47_found() -> None:
    """Batch 73's dev part (real threads) and stop 47's review: each was read wrongly before, and is read right now; with
    the look-alikes each reading must still refuse."""
    # a script's call with its answer written under it as a comment (github.com/Lordog/dive-into-llms issue): the CPU build
    script = "import torch\nprint(torch.cuda.is_available())\n# False\nprint(torch.__version__)\n# 2.3.1+cpu\n"
    assert code_of(script) == ("torch-install", "cpu-only-torch")
    assert code_of("print(torch.cuda.is_available())\n# -> False\n") == ("torch-install", "cpu-only-torch")
    assert top("print(torch.cuda.is_available())\n# True\n") == "none"
    # torch.lerp_'s own operand check (an EMA copy in fp32 beside DeepSpeed's bf16 weights; ema-pytorch)
    lerp = _traceback("RuntimeError: expected dtype float for `end` but got dtype c10::BFloat16",
                      "path/python3.10/site-packages/ema_pytorch/ema_pytorch.py")
    assert code_of(lerp) == ("dtype-mismatch", "mixes-rejected")
    assert top("RuntimeError: expected dtype long int for `end` but got dtype float\n") != "dtype-mismatch"
    # torch's Windows build without NCCL, as a title retypes it
    assert code_of("RuntimeError: Distributed package doesn't have NCCL bulit in\n") == ("distributed", "no-nccl")
    assert code_of("Distributed package doesnt have NCCL built in\n") == ("distributed", "no-nccl")
    # a title naming only the compiled package and the symptom
    assert code_of("flash_attn_2 undefined symbol\n") == ("extension-abi", "import-fails")
    assert code_of("selective_scan_cuda undefined symbol error\n") == ("extension-abi", "import-fails")
    assert top("torch undefined symbol\n") != "extension-abi"
    assert top("The flash_attn_2 undefined symbol error went away after I restarted the kernel and it trained fine.\n") != \
        "extension-abi"
    # NCCL's failure named and nothing else (titles, a one-line summary), also straight after CJK text
    for title in ("NCCL-ERROR ！！！It's been bothering me for days", "多机多卡微调报错ncclInternalError",
                  "GPU only works with --num_workers=1, with more workers NCCL Error occurs."):
        assert code_of(title + "\n") == ("distributed", "collective-fails"), title
    # ... but not NCCL's own internal error with its exception (a script's misuse raises it as often: metaseq's device
    # never set), nor where the log says it was a shared-memory segment (that reading names the fix)
    internal = _traceback("RuntimeError: NCCL error in: /opt/conda/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
                          "internal error, NCCL version 2.14.3\nncclInternalError: Internal check failed.",
                          "/x/metaseq/distributed/utils.py")
    assert top(internal) == "none"
    shm = ("(Runner pid=868697) Error while creating shared memory segment /dev/shm/nccl-UmqSM9 (size 7340384)\n\n"
           "I was trying to run grpo on qwen7b-instruct. But I still get nccl error. BTW, I have 4 A100 GPU.\n")
    assert code_of(shm) == ("distributed", "shm-small")
    # a program (or the user) saying the CPU build of torch is installed; not on a machine whose GPU is AMD's
    rwkv = ("Failed to enable custom CUDA kernel, ninja is required to load C++ extensions. You may be using the CPU version "
            "of PyTorch, please reinstall PyTorch with CUDA.\n")
    assert code_of(rwkv) == ("torch-install", "cpu-only-torch")
    assert code_of("I installed the CPU version of PyTorch on purpose; my Radeon RX 6800 runs with ROCm under Linux.\n")[1] != \
        "cpu-only-torch"
    # torch 0.4-1.0's wording for an argument of another float dtype (review of old wordings); not Double against Float,
    # nor a CPU tensor against a CUDA one
    assert code_of("RuntimeError: Expected object of type torch.cuda.FloatTensor but found type torch.cuda.HalfTensor for "
                   "argument #2 'weight'\n") == ("dtype-mismatch", "mixes-rejected")
    assert top("RuntimeError: Expected object of type torch.DoubleTensor but found type torch.FloatTensor for argument #2 "
               "'mat2'\n") == "none"
    assert top("RuntimeError: Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor for argument "
               "#2 'weight'\n") != "dtype-mismatch"
    # TensorFlow's own runtime that cannot load its CUDA runtime is no torch extension's and no torch's
    tensorflow = (_traceback("ImportError: libcudart.so.10.0: cannot open shared object file: No such file or directory",
                             "/usr/local/lib/python3.6/dist-packages/tensorflow/python/pywrap_tensorflow.py",
                             "/usr/local/lib/python3.6/dist-packages/tensorflow/python/pywrap_tensorflow_internal.py")
                  + "\nFailed to load the native TensorFlow runtime.\n")
    assert top(tensorflow) == "none"
    assert top(_traceback("ImportError: libcudart.so.10.0: cannot open shared object file: No such file or directory",
                          "/usr/local/lib/python3.6/dist-packages/spconv/__init__.py")) == "extension-abi"


def test_what_batch_74_found() -> None:
    """Batch 74's dev part (real threads, a commit-quoted error among them): each was read wrongly before, and is read
    right now; with the look-alikes each reading must still refuse."""
    # out of memory in Russian, Japanese and Korean words (github.com/serpotapov/stable-diffusion-portable)
    for words in ("нехватка памяти", "Недостаточно видеопамяти при генерации", "生成中にメモリ不足で落ちる", "메모리 부족 오류"):
        assert code_of(words + "\n") == ("device-memory", "out-of-memory"), words
    # a dtype mix as a user retyped it (DCN under torch.cuda.amp)
    assert code_of('the error "RuntimeError:expect scalar type Float but Half "\n') == ("dtype-mismatch", "mixes-rejected")
    # k2's own build check of torch's CUDA against the toolkit's
    k2 = "AssertionError: PyTorch is built with CUDA version: 11.3.\nThe current running CUDA version is: 11.4.120\n"
    assert code_of(k2) == ("extension-abi", "cuda-variant-mismatch")
    # a compiled module named alone by its convention's suffix; torch's own libraries stay torch-install's
    assert code_of("How to fix `_version_cpu.so: undefined symbol`\n") == ("extension-abi", "import-fails")
    assert top("ImportError: /env/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
               "cudaGraphInstantiateWithFlags, version libcudart.so.11.0\n") == "torch-install"
    # torch that cannot use the Mac's GPU, in its own words; not a Mac whose MPS ran out of memory
    mps = "RuntimeError: The MPS backend is supported on MacOS 12.3+.\nCurrent OS version can be queried using `sw_vers`.\n"
    assert code_of(mps) == ("torch-install", "device-missing")
    assert top("RuntimeError: MPS backend out of memory (MPS allocated: 17.9 GB, other allocations: 40 KB, max allowed: "
               "18.1 GB). Tried to allocate 256.00 MB on private pool.\n") == "device-memory"


def test_what_the_review_of_issue_titles_found() -> None:
    """A review of titles and one-sentence reports (88/136 before, 96/136 after): the words of a failure beside its
    subject, in the languages users write; a title that only names the subject, a question, stays unread. Readings of prose
    that cost real negatives of the corpus were left out (an extension and "undefined symbol" anywhere in a sentence, a
    Blackwell GPU and "not supported", a thank-you for a fix read as no failure)."""
    for title in ("bf16 not supported on T4", "Ошибка bf16 на RTX 2080 при обучении", "bf16=True não funciona no Colab com T4",
                  "Error con bfloat16 en GTX 1080 Ti"):
        assert code_of(title + "\n") == ("bf16-support", "bf16-unsupported"), title
    assert top("How do I enable bf16 on a T4?\n") == "none"
    assert top("bf16 training works fine on my A100\n") == "none"
    for title in ("Flux fp8 モデルが RTX 2080 Ti で動かない", "fp8 training fails on A100 with torchao"):
        assert code_of(title + "\n") == ("fp8", "no-fp8-hardware"), title
    assert top("fp8 training fails on H100 with torchao\n") != "fp8"  # Hopper has fp8: another cause
    assert code_of("Erro: Torch não foi compilado com CUDA habilitado\n")[0] == "torch-install"
    assert code_of("cuda out of memmory on colab T4 w/ batch 8\n") == ("device-memory", "out-of-memory")
    assert code_of("erro de memória insuficiente na GPU ao treinar com batch 16\n") == ("device-memory", "out-of-memory")
    assert top("memória insuficiente no disco ao salvar o checkpoint\n") == "none"  # the disk, not the GPU
    assert code_of("torch.cuda.is_available() 返回 False，已经装了 CUDA 12.1 和 4070\n")[0] == "torch-install"


def test_what_batch_75_found() -> None:
    """Batch 75's dev part (errors quoted in fix commits, PR bodies and FAQs): each was read wrongly before, and is read
    right now; with the look-alikes each reading must still refuse."""
    # a message the paste wrapped, read again as one line (a commit message's 72 columns)
    index_put = ("  RuntimeError: Index put requires the source and destination dtypes match,\n"
                 "  got BFloat16 for the destination and Float for the source.\n")
    assert code_of(index_put) == ("dtype-mismatch", "mixes-rejected")
    bias = "  RuntimeError: Input type (struct c10::BFloat16) and bias type\n  (struct c10::Half) should be the same\n"
    assert code_of(bias)[0] == "dtype-mismatch"
    assert top("  RuntimeError: Input type (struct c10::Half) and bias type\n  (struct c10::Half) should be the same\n") != \
        "dtype-mismatch"
    # Megatron's layers asking for apex's fused kernels
    megatron = ("RuntimeError: ColumnParallelLinear was called with gradient_accumulation_fusion set to True but the custom CUDA "
                "extension fused_weight_gradient_mlp_cuda module is not found. To use gradient_accumulation_fusion you must "
                "install APEX with --cpp_ext and --cuda_ext.\n")
    diagnosis = explained(megatron).diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("apex", "apex-no-cuda-extensions")
    assert "gradient-accumulation-fusion-off" in {r.id for r in diagnosis.remedies}
    # an MPS kernel without bf16 is the Mac's bf16, not a CPU's half kernels; PyG's "_" dispatch lacking a dtype is the
    # extension's release
    assert code_of("RuntimeError: \"arange_mps\" not implemented for 'BFloat16'\n") == ("bf16-support", "bf16-mps")
    assert top("RuntimeError: \"_\" not implemented for 'BFloat16'\n") == "none"
    assert code_of("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n")[0] == "cpu-half-kernels"
    # Intel's XPU runtime out of memory
    assert code_of("RuntimeError: Allocation is out of device memory on current platform.\n") == ("device-memory", "out-of-memory")
    # a torch symbol whose head the paste elided
    fbgemm = "  fbgemm_gpu_config.so: undefined symbol: ..._ZNR5torch7Library4_defE...\n  (torch::Library::_def)\n"
    assert code_of(fbgemm) == ("extension-abi", "import-fails")


def test_what_batch_76_found() -> None:
    """Batch 76's dev part (errors quoted in fix commits and FAQs): each was read wrongly before, and is read right now;
    with the look-alikes each reading must still refuse."""
    # xformers' attention checking its operands' dtypes (an IP-Adapter's fp32 keys beside fp16 queries)
    qkv = ("ValueError: Query/Key/Value should either all have the same dtype, or (in the quantized case) Key/Value should "
           "have dtype torch.int32\n      query.dtype: torch.float16\n      key.dtype  : torch.float32\n")
    assert code_of(qkv) == ("dtype-mismatch", "mixes-rejected")
    # transformers' own overflow detector
    detector = ("Detected inf/nan during batch_number=0\nLast 21 forward frames:\nabs min  abs max  metadata\n"
                "                  encoder.block.2.layer.1.layer_norm T5LayerNorm\n8.69e-02 4.18e-01 weight\n")
    assert code_of(detector) == ("library-probes", "fp16-overflow")
    # xformers' listing of a kernel refusing fp32 names the bf16 it supports: no bf16 failure; its "bf16 is only supported
    # on A100+ GPUs" still is
    listing = ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
               "     query       : torch.Size([1, 4096, 160, 128]) (torch.float32)\n"
               "`cutlassF` is not supported because:\n    (value.shape[-1] % 4) != 0\n"
               "`flshattF` is not supported because:\n    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})\n"
               "    query.shape[-1] != value.shape[-1]\n")
    assert top(listing) != "bf16-support"
    assert top(listing.replace("    (value.shape[-1] % 4) != 0\n", "    bf16 is only supported on A100+ GPUs\n")) == "bf16-support"


def test_what_batch_77_found() -> None:
    """Batch 77's dev part: each was read wrongly before, and is read right now; with the look-alikes each reading must
    still refuse."""
    # torchvision's missing operator, cut where a commit's subject ends
    assert code_of("RuntimeError: operator torchvision::nms\n") == ("extension-abi", "import-fails")
    assert top("RuntimeError: operator torchvision::nms is the bottleneck of our detector\n") != "extension-abi"
    # numpy's ABI warning as people shorten it
    assert code_of("numpy.dtype size changed... binary incompatibility\n") == ("torch-install", "numpy-abi")
    # an older bitsandbytes' layout that a trainer's patch still imports
    assert code_of("ModuleNotFoundError: No module named 'bitsandbytes.cuda_setup.paths'\n") == ("quantized-base", "quantized-fails")


def test_what_batch_78_found() -> None:
    """Batch 78's dev part (installers' and Windows builds' troubleshooting sections): each was read wrongly before, and
    is read right now; with the look-alikes each reading must still refuse."""
    # a bitsandbytes older than the Triton beside it, said alone
    assert code_of("No module named 'triton.ops'\n") == ("quantized-base", "quantized-fails")
    assert top("No module named 'triton.tools'\n") != "quantized-base"
    # Triton's compiled launcher in its cache
    diagnosis = explained("ImportError: DLL load failed while importing cuda_utils\n").diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("extension-abi", "import-fails")
    assert "triton-cache-clear" in {r.id for r in diagnosis.remedies}


def test_what_batch_80_found() -> None:
    """Batch 80's dev part (projects' docs and commit history): each was read wrongly before, and is read right now;
    with the look-alikes each reading must still refuse."""
    # the driver's own library missing (no driver, a container started without the NVIDIA runtime); not the toolkit's
    driver = "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    assert code_of(driver) == ("cuda-compat", "no-cuda-device")
    assert code_of("OSError: libcuda.so: cannot open shared object file: No such file or directory\n") == ("cuda-compat", "no-cuda-device")
    assert code_of("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n")[1] != "no-cuda-device"
    # NCCL's own allocation on a device torch's caching allocator had filled
    assert code_of("Failed to CUDA calloc async 4194304 bytes\n") == ("device-memory", "out-of-memory")
    assert code_of("Failed to CUDA calloc async N bytes\n") == ("device-memory", "out-of-memory")
    # bitsandbytes' native functions on a library it could not load, named without a frame
    title = "我添加了load_in_4bit=True运行出现了AttributeError: 'NoneType' object has no attribute 'cquantize_blockwise_bf16_fp4'\n"
    assert code_of(title) == ("quantized-base", "quantized-fails")
    assert code_of("AttributeError: 'NoneType' object has no attribute 'cint8_vector_quant'\n") == ("quantized-base", "quantized-fails")
    assert top("AttributeError: 'NoneType' object has no attribute 'config'\n") == "none"
    assert top("AttributeError: 'NoneType' object has no attribute 'crs'\n") == "none"


def test_what_batches_81_to_83_found() -> None:
    """Batch 83's dev part: torch's own host allocator refusing is the host's RAM (device-memory owns the host's memory
    too), in Windows' and Linux's wordings; a request of a terabyte or more is a program's size gone wrong. And a package
    that loads the CUDA runtime itself says which library it could not load."""
    windows = ("RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. DefaultCPUAllocator: not enough "
               "memory: you tried to allocate 268435456 bytes.\n")
    linux = ("RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
             "to allocate 34359738368 bytes. Error code 12 (Cannot allocate memory)\n")
    for text in (windows, linux, "DefaultCPUAllocator: not enough memory: you tried to allocate 6291456000 bytes.\n"):
        diagnosis = explained(text).diagnoses[0]
        assert (diagnosis.check, diagnosis.code) == ("device-memory", "out-of-memory"), text
        assert "host" in diagnosis.cause
    assert top("DefaultCPUAllocator: can't allocate memory: you tried to allocate 2305843009213693952 bytes.\n") == "none"
    # a package loading the CUDA runtime itself (cpm_kernels) and naming what it could not load, inside a sentence
    diagnosis = explained("执行infer.py(python infer.py)遇到错误：RuntimeError: Library cudart is not initialized，是怎么回事啊？\n").diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("extension-abi", "import-fails")
    assert "cuda-runtime-for-extension" in {r.id for r in diagnosis.remedies}
    assert top("RuntimeError: Library foo is not initialized\n") == "none"


def test_what_batch_84_found() -> None:
    """Batch 84's dev part: CUDA's "invalid device function" (no code for this GPU) in CUDA 10.1's numbering and in an
    extension's own check macro, as torch 0.x's THC wrote it; not where a FAQ merely names the error."""
    thc = "THCudaCheck FAIL file=/home/u/SSD/csrc/random_horiz_flip.cu line=158 error=98 : invalid device function\n"
    assert code_of(thc) == ("cuda-compat", "no-kernel-image")
    assert code_of("> `cudaCheckError() failed : invalid device function`\n> `Process finished with exit code 139`\n") == (
        "cuda-compat", "no-kernel-image")
    assert top("If you get `CUDA error: invalid device function` errors, make sure only one libcudart is on the path.\n") != "cuda-compat"


def test_what_the_review_of_stop_48s_readings_found() -> None:
    """A helper wrote 48 inputs to break this stop's readings (as torch, NCCL, peft and bitsandbytes print them). Two
    readings lost to an older one in a real log: NCCL's failed allocation under torch's own 'unhandled cuda error'
    exception, and bitsandbytes' None library under a paste whose only frame is peft's layer for it."""
    ddp = ("[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
           "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
           "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank1]: Last error:\n"
           "[rank1]: Failed to CUDA calloc async 4194304 bytes\n")
    assert code_of(ddp) == ("device-memory", "out-of-memory")
    other = ddp.replace("Failed to CUDA calloc async 4194304 bytes", "Cuda failure 'peer access is not supported between these two devices'")
    assert code_of(other) == ("distributed", "collective-fails")
    peft = ("  File \"/home/u/.venv/lib/python3.11/site-packages/peft/tuners/lora/bnb.py\", line 452, in forward\n"
            "    result = self.base_layer(x, *args, **kwargs)\n"
            "  File \"/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1511, in _wrapped_call_impl\n"
            "    return self._call_impl(*args, **kwargs)\n"
            "AttributeError: 'NoneType' object has no attribute 'cgemm_4bit_inference_naive_bf16'\n")
    assert code_of("Traceback (most recent call last):\n" + peft) == ("quantized-base", "quantized-fails")
    shapes = peft.replace("AttributeError: 'NoneType' object has no attribute 'cgemm_4bit_inference_naive_bf16'",
                          "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4096x3072 and 1x1179648)")
    assert top("Traceback (most recent call last):\n" + shapes) == "dora-fp8"
    # where the log's real error is unexplained, a line that tells an error as past is history, not the failure read instead
    statedict = ("I first got `DefaultCPUAllocator: not enough memory: you tried to allocate 52428800 bytes` and fixed it by "
                 "raising the page file.\nNow loading fails with:\nTraceback (most recent call last):\n"
                 "  File \"/home/u/app/load.py\", line 12, in <module>\n    model.load_state_dict(sd)\n"
                 "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"fc.weight\".\n")
    assert top(statedict) == "none"
    assert top("更新：之前那个 NCCL 报错（Last error: Failed to CUDA calloc async 4194304 bytes）是因为 0 号卡被占满了。\n"
               "现在的错误：\nRuntimeError: Expected to have finished reduction in the prior iteration\n") != "device-memory"
    assert top('Fixed "expected scalar type Half but found Float" on txt2vid.\n') == "none"
    # the same lines, told as what happens now, are read
    assert top("DefaultCPUAllocator: not enough memory: you tried to allocate 52428800 bytes\n") == "device-memory"


def test_what_batch_85_found() -> None:
    """Batch 85's dev part: cuDNN's own sub-library missing a symbol of cuDNN's own namespace is one cuDNN against
    another (a system cuDNN shadowing torch's), not an extension built for another torch; a cuDNN function the loaded
    libcudnn lacks is the same cause."""
    shadowed = ("Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda-12.3/lib64/libcudnn_cnn_train.so.8: "
                "undefined symbol: _ZN5cudnn3cnn34layerNormFwd_execute_internal_implERKNS_7backend11VariantPackEP11CUstream_st, "
                "version libcudnn_cnn_infer.so.8\n")
    assert code_of(shadowed) == ("cublas", "cudnn-failed")
    assert code_of("undefined symbol: cudnnSetConvolutionGroupCount while running with cuDNN 7.0.3 and CUDA 9\n") == ("cublas", "cudnn-failed")
    # an extension's own symbol is still the extension's
    ext = ("  File \"/usr/lib/python3/site-packages/xformers/ops/fmha/__init__.py\", line 4, in <module>\n"
           "ImportError: /usr/lib/python3/site-packages/xformers/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    assert top("Traceback (most recent call last):\n" + ext) == "extension-abi"


def test_what_batch_86_found() -> None:
    """Batch 86's dev part: torch 0.x-1.x's static-TLS failure at `from torch._C import *` is torch's import failing (an
    old glibc, other native libraries loaded first); rocBLAS without Tensile kernels where it names no GPU arch."""
    tls = ("  File \"/home/u/anaconda3/envs/e/lib/python3.7/site-packages/torch/__init__.py\", line 81, in <module>\n"
           "    from torch._C import *\nImportError: dlopen: cannot load any more object with static TLS\n")
    diagnosis = explained("Traceback (most recent call last):\n" + tls).diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("torch-install", "torch-import-failed")
    assert "torch-first-static-tls" in {r.id for r in diagnosis.remedies}
    rocblas = ("rocBLAS error: Cannot read /home/k/miniconda3/envs/p/lib/python3.9/site-packages/torch/lib/rocblas/library/"
               "TensileLibrary.dat: No such file or directory\n")
    assert code_of(rocblas) == ("cuda-compat", "no-kernel-image")
    assert code_of("Error: TensileLibrary.dat not found\n") == ("cuda-compat", "no-kernel-image")
    # torch._C without its GPU bindings, seen from another of them (a CPU wheel where a ROCm one was wanted)
    assert code_of("AttributeError: module 'torch._C' has no attribute '_CudaDeviceProperties'\n") == ("torch-install", "cpu-only-torch")
    # torch's CUDA or ROCm library named by a ctypes loader (an OSError): a package built for another torch build loading
    # it, not torch's own import, which fails on it as an ImportError
    assert code_of("OSError: libtorch_hip.so: cannot open shared object file: no such file or directory\n") == ("extension-abi", "import-fails")
    own = ("  File \"/usr/lib/python3/site-packages/torch/__init__.py\", line 229, in <module>\n    from torch._C import *\n"
           "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n")
    assert top("Traceback (most recent call last):\n" + own) == "torch-install"


def test_what_batch_88_found() -> None:
    """Package managers' own words for finding no torch that fits: pubgrub's (uv's, pixi's) "there is no version of
    torch==X and you require", read from a dev thread; Poetry's "Unable to find installation candidates for torch" and
    "depends on torch (X) which doesn't match any versions", added after batch 88's arrival showed Poetry threads
    unread (its gatherer's report named them; their texts were not read): holdout-88 is reported apart for that."""
    pixi = ("Because there is no version of torch==2.5.1+cu121 and you require torch==2.5.1+cu121, we can conclude that your "
            "requirements are unsatisfiable.\n")
    assert code_of(pixi) == ("torch-install", "torch-missing")
    assert code_of("  Unable to find installation candidates for torch (2.3.1)\n") == ("torch-install", "torch-missing")
    assert code_of("Because app depends on torch (2.1.0+cu121) which doesn't match any versions, version solving failed.\n") == (
        "torch-install", "torch-missing")
    # another package's, or the index unreachable, is not a missing torch wheel
    assert top("Unable to find installation candidates for torchmetrics (1.4.0)\n") != "torch-install"
    assert top("Because there is no version of numpy==3.0 and you require numpy==3.0, we can conclude that your "
               "requirements are unsatisfiable.\n") == "none"


def test_what_batch_90_found() -> None:
    """Batch 90's dev part: torch's count of the GPUs failing with no error number said is CUDA that cannot start
    (an NVSwitch system's fabric manager, a container, an enclave); its numbered errors keep their own readings."""
    count = ("  File \"/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py\", line 314, in _lazy_init\n"
             "    torch._C._cuda_init()\nRuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
             "functions before calling NumCudaDevices() that might have already set an error?\n")
    diagnosis = explained("Traceback (most recent call last):\n" + count).diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("cuda-compat", "cuda-init-failed")
    assert "cuda-device-count" in {r.id for r in diagnosis.remedies}
    numbered = count.replace("set an error?", "set an error? Error 804: forward compatibility was attempted on non supported HW")
    assert code_of("Traceback (most recent call last):\n" + numbered) == ("cuda-compat", "driver-too-old")


def test_what_batch_91_found() -> None:
    """Batch 91's dev part: the container layer's own words for a container given no GPU, for NVML cut off inside one,
    and nvidia-docker 1.0's refusal of an image newer than the driver."""
    docker = ("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].\n")
    diagnosis = explained(docker).diagnoses[0]
    assert (diagnosis.check, diagnosis.code) == ("cuda-compat", "no-cuda-device")
    assert "container-toolkit" in {r.id for r in diagnosis.remedies}
    wsl = "nvidia-container-cli: initialization error: WSL environment detected but no adapters were found: unknown\n"
    assert code_of(wsl) == ("cuda-compat", "no-cuda-device")
    assert code_of("INFO 05-20 20:12:25 [__init__.py:252] No platform detected, vLLM is running on UnspecifiedPlatform\n") == (
        "cuda-compat", "no-cuda-device")
    nvml = explained("# nvidia-smi\nFailed to initialize NVML: Unknown Error\n").diagnoses[0]
    assert (nvml.check, nvml.code) == ("cuda-compat", "cuda-init-failed")
    assert "container-cgroups" in {r.id for r in nvml.remedies}
    assert code_of("Error: unsupported CUDA version: driver 8.0 < image 9.0.176\n") == ("cuda-compat", "driver-too-old")
    # NVML's other words keep their own reading
    assert code_of("Failed to initialize NVML: Driver/library version mismatch\n") == ("cuda-compat", "driver-library-mismatch")


def test_what_batch_93_found() -> None:
    """Batch 93's dev part: the rendezvous error's message said without its name, and gloo's ranks on different address
    families (IPv4 on one, IPv6 on another), are the ranks not meeting."""
    assert code_of("Error message in training: The connection to the C10d store has failed.\n") == ("distributed", "ranks-missing")
    gloo = ("[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:276] "
            "ss1.ss_family == ss2.ss_family. 2 vs 10\n")
    assert code_of(gloo) == ("distributed", "ranks-missing")


def test_what_batch_95_found() -> None:
    """Batch 95's dev part: a refusal that says the adapter "does not yet support" a 4-bit base, old peft's unbound
    `new_module` for a layer class it cannot wrap, green images (the GTX 16xx half-precision picture), and Lightning's
    accelerator refusal with its class name quoted in backticks."""
    assert code_of("getting a error LoRA training does not yet support 4bit. Please use --load-in-8bit for now.\n") == (
        "dora-fp8", "adapter-on-quantized-base")
    unbound = ('  File "C:\\envs\\textgen\\lib\\site-packages\\peft\\tuners\\lora.py", line 191, in _find_and_replace\n'
               "    self._replace_module(parent, target_name, new_module, target)\n"
               "UnboundLocalError: local variable 'new_module' referenced before assignment\n")
    assert code_of(unbound) == ("dora-fp8", "adapter-on-quantized-base")
    # (the same error in the user's own code is not peft's)
    assert code_of(unbound.replace("peft\\tuners\\lora.py", "myproject\\build.py")) == ("none", "")
    assert code_of("If I don't set `--precision full`, I get after the computation a plain green image (a constant color).\n") == (
        "library-probes", "fp16-overflow")
    assert code_of("The output is green when I run it on my card.\n") == ("library-probes", "fp16-overflow")
    lightning = ('gives an error in 8-bit mode: "ValueError: Quantization is only supported on the GPU."\n'
                 "`CUDAAccelerator` can not run on your system since the accelerator is not available. The following "
                 "accelerator(s) is available and can be passed into `accelerator` argument of `Fabric`: ['cpu'].\n")
    assert code_of(lightning) == ("torch-install", "cpu-only-torch")


def test_what_batch_96_found() -> None:
    """Batch 96's dev part: a package missing from the interpreter, as importlib.metadata says it (the version look-up a
    library makes before importing): bitsandbytes is quantized-base's, torch torch-install's."""
    assert code_of("importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes\n") == (
        "quantized-base", "quantized-fails")
    assert code_of("ModuleNotFoundError: No module named 'bitsandbytes'\n") == ("quantized-base", "quantized-fails")
    assert code_of("importlib.metadata.PackageNotFoundError: No package metadata was found for torch\n") == (
        "torch-install", "torch-missing")
    # (another package of that name's family is not torch: torchvision, torch-tensorrt)
    assert code_of("importlib.metadata.PackageNotFoundError: No package metadata was found for torch-tensorrt\n") == ("none", "")


def test_what_batch_97_found() -> None:
    """Batch 97's dev part: Metal's own out-of-memory status, as any engine on a Mac reports it (llama.cpp's Metal backend)."""
    metal = ("ggml_metal_graph_compute: command buffer 1 failed with status 5\n"
             "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
             "graph_compute: ggml_backend_sched_graph_compute_async failed with error -1\n")
    assert code_of(metal) == ("device-memory", "out-of-memory")


def test_what_the_older_dev_sets_distributed_misses_found() -> None:
    """The older dev sets' distributed misses, read by structure: a serving engine's custom all-reduce kernel failing
    between the GPUs (its own source file named), and nccl-tests' report of an NCCL call that failed."""
    allreduce = "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'\n"
    assert code_of(allreduce) == ("distributed", "collective-fails")
    assert "custom-all-reduce-off" in {r.id for r in explained(allreduce).diagnoses[0].remedies}
    tests = ("fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '\n"
             " .. fengyun pid 3164639: Test failure common.cu:844\n")
    assert code_of(tests) == ("distributed", "collective-fails")
    # (its allocation failing is the GPU's memory, not the transport)
    assert code_of("host1: Test NCCL failure common.cu:959 'out of memory'\n") != ("distributed", "collective-fails")


def test_a_module_windows_cannot_load_is_an_extension_unless_it_is_an_everyday_packages() -> None:
    """The older dev sets' misses: a compiled module named without an extension's suffix (KNN_CUDA's `knn`, TensorRT's
    `tensorrt`) that Windows cannot load is read as a compiled package's; Python's own, torch's _C and Pillow's are not."""
    assert code_of("ImportError: DLL load failed while importing knn\n") == ("extension-abi", "import-fails")
    assert code_of("ImportError: DLL load failed while importing tensorrt: The specified module could not be found.\n") == (
        "extension-abi", "import-fails")
    assert code_of("ImportError: DLL load failed while importing _lzma: The specified module could not be found.\n") == ("none", "")
    assert code_of("ImportError: DLL load failed while importing _imaging: The specified module could not be found.\n") == ("none", "")


def test_what_the_older_dev_sets_extension_misses_found() -> None:
    """The older dev sets' extension-abi misses: SageAttention's wheel without a kernel for this GPU's architecture, and
    NATTEN's own words for its compiled library not loading."""
    sage = "WanVideoSampler\nSM89 kernel is not available. Make sure you GPUs with compute capability 8.9.\n"
    assert code_of(sage) == ("extension-abi", "extension-other-arch")
    assert "build-extension-for-gpu" in {r.id for r in explained(sage).diagnoses[0].remedies}
    natten = ("ImportError: Failed to import libnatten. This could be due to an invalid/incomplete install. Please make sure "
              "you built NATTEN correctly, or refer to https://shi-labs.com/natten for more information.\n")
    assert code_of(natten) == ("extension-abi", "import-fails")


def test_torchs_core_libraries_not_found_are_an_extension_imported_first_unless_torchs_import_is_in_view() -> None:
    """The older dev sets' look-alikes: libc10.so or libtorch_cpu.so not found with no frame in view is a module that links
    them by name imported before torch (torch's own modules find them through their rpath); under torch's own import, its
    install lost them."""
    bare = "ImportError: libc10.so: cannot open shared object file: No such file or directory\n"
    assert code_of(bare) == ("extension-abi", "import-fails")
    assert "import-torch-first" in {r.id for r in explained(bare).diagnoses[0].remedies}
    own = ("Traceback (most recent call last):\n"
           '  File "<stdin>", line 1, in <module>\n'
           '  File "/env/lib/python3.10/site-packages/torch/__init__.py", line 237, in <module>\n'
           "    from torch._C import *  # noqa: F403\n"
           "ImportError: libtorch_cpu.so: cannot open shared object file: No such file or directory\n")
    assert code_of(own) == ("torch-install", "torch-import-failed")
    # (its other libraries, and a symbol missing from the core ones, stay torch's)
    assert code_of("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n")[0] != "extension-abi"
    assert code_of("ImportError: /env/lib/python3.10/site-packages/torch/lib/libc10.so: undefined symbol: _ZN3c10\n") == (
        "torch-install", "torch-import-failed")


def test_what_batch_99_found() -> None:
    """Batch 99's dev part: torch's store raising EADDRINUSE as a RuntimeError with no other word beside it is the master
    port taken; a server's own bind failing (Python's OSError) is not the ranks'."""
    assert code_of("RuntimeError: Address already in use\n") == ("distributed", "port-in-use")
    assert code_of("OSError: [Errno 98] Address already in use\n") == ("none", "")


def test_the_kernel_refusing_memory_is_the_hosts_ram() -> None:
    """The older dev sets' misses: ENOMEM as Python raises it when a DataLoader worker forks (a Jetson without swap) is the
    host's RAM; InfiniBand's memory registration failing the same way stays distributed's."""
    fork = ('  File "/usr/lib/python3.6/multiprocessing/popen_fork.py", line 66, in _launch\n'
            "    self.pid = os.fork()\n"
            "OSError: [Errno 12] Cannot allocate memory\n")
    assert code_of(fork) == ("device-memory", "out-of-memory")
    assert "host-ram" in {r.id for r in explained(fork).diagnoses[0].remedies}
    ib = "misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n"
    assert code_of(ib)[0] == "distributed"


def test_what_batch_100_found() -> None:
    """Batch 100's dev part: vLLM refusing to start with less GPU memory free than its share asks, and an extension built
    for architectures older than its code supports (libcu++'s own #error)."""
    vllm = ("ValueError: Free memory on device (70.82/79.25 GiB) on startup is less than desired GPU memory utilization (0.9, "
            "71.33 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n")
    assert code_of(vllm) == ("device-memory", "out-of-memory")
    assert "engine-memory-share" in {r.id for r in explained(vllm).diagnoses[0].remedies}
    build = '"cuda/std/barrier:15:4: error: #error "CUDA synchronization primitives are only supported for sm_70 and up."\n'
    assert code_of(build) == ("extension-abi", "extension-other-arch")
    assert "arch-list-for-build" in {r.id for r in explained(build).diagnoses[0].remedies}


def test_sampling_nans_beside_a_gpu_without_bf16_are_the_fp16_overflow() -> None:
    """An older dev set's miss: sampling refusing NaN probabilities beside a GPU without bf16 (a V100, a T4), where a model
    trained in bf16 runs in fp16, is the fp16 overflow; said alone it stays unread."""
    faq = ("### Q7: v100显卡，在python虚拟环境中完成环境准备，在测试推理命令时报错 RuntimeError: probability tensor contains "
           "either `inf`, `nan` or element < 0\n")
    assert code_of(faq) == ("library-probes", "fp16-overflow")
    assert code_of("RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n") == ("none", "")


def test_what_batch_103_found() -> None:
    """Batch 103's dev part: a torch release "not available" as people retell pip's refusal, and an x86_64 Python under
    Rosetta shown by what it runs beside the Mac's arm64 (an Intel Mac's own x86_64 wheels are not read so)."""
    assert code_of("Unable to install Comfyui, Torch 2.5.1 not available (MacOS)\n") == ("torch-install", "torch-missing")
    rosetta = ("$ file -b $(command -v python3)\n"
               "Mach-O universal binary with 2 architectures: [x86_64:Mach-O 64-bit executable x86_64] "
               "[arm64:Mach-O 64-bit executable arm64]\n"
               "$ python3 -c 'import platform; print(platform.machine())'\n"
               "x86_64\n"
               "Downloading numpy-1.26.4-cp311-cp311-macosx_10_9_x86_64.whl.metadata (61 kB)\n")
    assert code_of(rosetta) == ("torch-install", "torch-missing")
    assert "arm64-python" in {r.id for r in explained(rosetta).diagnoses[0].remedies}
    assert code_of("Downloading numpy-1.26.4-cp311-cp311-macosx_10_9_x86_64.whl.metadata (61 kB)\n") == ("none", "")


def test_what_batch_104_found() -> None:
    """Batch 104's dev part: the container toolkit's last unsatisfied alternative of an image's CUDA requirement (a Tesla
    driver branch) is the driver too old for the image; torch's ROCm build finding no AMD GPU is the machine's GPU not
    reachable, told with ROCm's remedies."""
    brand = "nvidia-container-cli: requirement error: unsatisfied condition: brand = tesla: unknown.\n"
    assert code_of(brand) == ("cuda-compat", "driver-too-old")
    hip = "RuntimeError: No HIP GPUs are available\n"
    assert code_of(hip) == ("cuda-compat", "no-cuda-device")
    assert "rocm-gpu-visible" in {r.id for r in explained(hip).diagnoses[0].remedies}
    # (and the toolkit's hook finding no NVIDIA driver on the host at all: `--gpus all` on a Mac, cog's PR #1038)
    toolkit = ("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object "
               "file: no such file or directory: unknown.\n")
    assert code_of(toolkit) == ("cuda-compat", "no-cuda-device")


def test_what_batch_106_found() -> None:
    """Batch 106's dev part: a package's compiled module without its CUDA functions (built where no fitting CUDA was
    found) is the extension's build; torch's own _C without CUDA stays the CPU build of torch."""
    mcubes = ("AttributeError: module 'torchmcubes_module' has no attribute 'mcubes_cuda'. Did you mean: 'mcubes_cpu'?\n")
    assert code_of(mcubes) == ("extension-abi", "extension-not-loaded")
    assert code_of("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'\n")[0] == "torch-install"


def test_what_batch_107_found() -> None:
    """Batch 107's dev part: tensor types named after their device in torch's legacy spelling (CUDAComplexHalfType,
    CPUBFloat16Type) read as their scalar types, and a complex half/float mix is a dtype mix; a device mix of one dtype is
    not."""
    assert canonical("Input type (CUDAComplexHalfType) and weight type (CUDAComplexFloatType) should be the same") == (
        "Input type (ComplexHalf) and weight type (ComplexFloat) should be the same")
    assert code_of("Input type (CUDAComplexHalfType) and weight type (CUDAComplexFloatType) should be the same\n") == (
        "dtype-mismatch", "mixes-rejected")
    assert code_of("RuntimeError: Input type (CPUBFloat16Type) and weight type (CPUFloatType) should be the same\n") == (
        "dtype-mismatch", "mixes-rejected")
    assert code_of("RuntimeError: Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same\n")[0] != (
        "dtype-mismatch")


def test_what_batch_112_found() -> None:
    """Batch 112's dev part: numpy's warning as NaN pixels are cast to bytes is an fp16 overflow with or without fp16 words
    beside it (an upscaler under autocast); "mix precision" said without its -ed is half precision."""
    dat = ("WARNING:py.warnings:D:\\SDWebUI\\modules\\upscaler_utils.py:33: RuntimeWarning: invalid value encountered in cast\n"
           "  arr = arr.round().astype(np.uint8)\n")
    assert code_of(dat) == ("library-probes", "fp16-overflow")
    assert code_of("RuntimeWarning:: invalid value encountered in cast\n") == ("library-probes", "fp16-overflow")
    # (not a cast the log shows to another type than bytes, with or without numpy's prefix)
    assert top("RuntimeWarning: invalid value encountered in cast\n  ids = scores.astype('int32')\n") != "library-probes"
    assert code_of("Mix precision training failed for Pointpillars on Waymo dataset. Got nan output all the time.\n") == (
        "library-probes", "fp16-overflow")


def test_what_batch_119_found() -> None:
    """Batch 119's dev part: bash's job report for a pipeline's member killed (the OOM killer's SIGKILL), a backward
    through torch._scaled_mm (a float8 inference base trained under an adapter), Triton's tl.dot given two float dtypes."""
    killed = ("test.sh: line 2:   133 Broken pipe             yes\n"
              "       134 Killed                  | python3 /workspace/examples/llm/glem.py --num_runs 1\n")
    assert code_of(killed) == ("device-memory", "out-of-memory")
    assert code_of("RuntimeError: derivative for aten::_scaled_mm is not implemented\n") == ("dora-fp8", "adapter-on-quantized-base")
    assert code_of("AssertionError: Both operands must be same dtype. Got bf16 and fp16\n") == ("dtype-mismatch", "mixes-rejected")
    # (one dtype twice is no mix; Triton's float8 names are not ours to read here)
    assert top("AssertionError: Both operands must be same dtype. Got fp16 and fp16\n") != "dtype-mismatch"
    assert top("AssertionError: Both operands must be same dtype. Got fp8e4nv and bf16\n") != "dtype-mismatch"



def test_what_batch_121_found() -> None:
    """Batch 121's dev part: Intel's oneCCL raising its own exception in a job's collectives (the distributed family's,
    as NCCL's errors are), in whatever file and function it names."""
    assert code_of("RuntimeError: oneCCL: comm_selector.cpp:57 create_comm_impl: EXCEPTION: ze_data was not initialized\n") == (
        "distributed", "collective-fails")
    assert code_of("RuntimeError: oneCCL: atl_ofi_helper.cpp:1013 atl_ofi_get_prov_list: EXCEPTION: fi_getinfo error\n") == (
        "distributed", "collective-fails")
    # (the word alone, in a package's name or a log's setup line, is no failure)
    assert top("Successfully installed oneccl_bind_pt-2.1.100+xpu\n") != "distributed"



def test_what_batch_122_found() -> None:
    """Batch 122's dev part: any package's operator without a CUDA kernel, as torchvision's is read (fbgemm-gpu built for
    another CUDA than torch's); torch's own namespaces stay out of it."""
    fbgemm = "NotImplementedError: Could not run 'fbgemm::permute_2D_sparse_data'' with arguments from the 'CUDA' backend\n"
    assert code_of(fbgemm) == ("extension-abi", "import-fails")
    assert top("NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend\n") != "extension-abi"
    assert top("NotImplementedError: Could not run 'quantized::linear_prepack' with arguments from the 'CUDA' backend\n") != (
        "extension-abi")



def test_what_batch_124_found() -> None:
    """Batch 124's dev part (errors the troubleshooting pages quote): ROCm's no-binary error as its docs spell it, or its
    message alone; the container toolkit's CSV mode refusing Docker's --gpus; TensorRT-LLM's paged KV cache full."""
    assert code_of("hipErrorNoBinaryForGPU: Unable to find code object for all current devices!\n") == (
        "cuda-compat", "no-kernel-image")
    assert code_of("Unable to find code object for all current devices!\n") == ("cuda-compat", "no-kernel-image")
    hook = ("docker: Error response from daemon: failed to create shim: OCI runtime create failed: container_linux.go:380: "
            "starting container process caused: process_linux.go:545: container init caused: Running hook #0:: error running "
            "hook: exit status 1, stdout: , stderr: invoking the NVIDIA Container Runtime Hook directly (e.g. specifying the "
            "docker --gpus flag) is not supported. Please use the NVIDIA Container Runtime instead.: unknown.\n")
    assert code_of(hook) == ("cuda-compat", "no-cuda-device")
    assert code_of("Can't allocate new blocks. No free blocks left\n") == ("device-memory", "out-of-memory")



def test_what_batch_125_found() -> None:
    """Batch 125's dev part (errors the install and FAQ pages quote): one of cuDNN 8's sub-libraries not found, said without
    the loader's own words, is cuDNN's (cublas), not torch's install; mmcv's whole `ops` package missing is mmcv without its
    compiled ops, as its `_ext` missing is."""
    assert code_of("libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n") == (
        "cublas", "cudnn-failed")
    # (torch's own libraries stay torch's install)
    assert code_of("OSError: libcudnn.so.8: cannot open shared object file: No such file or directory\n")[0] != "cublas"
    assert code_of("ModuleNotFoundError: No module named 'mmcv.ops'\n") == ("extension-abi", "import-fails")



def test_what_batch_127_found() -> None:
    """Batch 127's dev part (errors the install docs quote): Docker's refusal with its capabilities bracketed once, NCCL's
    INFO line as it retries a refused connection, the MPI library NVIDIA's Jetson wheels of torch link."""
    assert code_of('docker: Error response from daemon: could not select device driver "" with capabilities: [gpu].\n') == (
        "cuda-compat", "no-cuda-device")
    assert code_of("NCCL INFO Call to connect returned Connection refused, retrying\n") == ("distributed", "socket-ifname")
    assert code_of("libmpi_cxx.so.20: cannot open shared object file: No such file or directory\n") == (
        "torch-install", "torch-import-failed")


def test_what_the_older_dev_sets_later_misses_found() -> None:
    """The dev sets' misses read at the stop's end: torch's NumPy warning said alone, a build's own C++ ABI mismatch check,
    and a 4-bit base's packed (N, 1) weight reaching a plain matmul."""
    assert code_of("ComfyUI Failed to initialize NumPy\n") == ("torch-install", "numpy-abi")
    assert code_of("UserWarning: Failed to initialize NumPy: No module named 'numpy'\n")[1] != "numpy-abi"
    assert code_of("-- PyTorch CXX11 ABI: 0\nCMake Error at CMakeLists.txt:162 (message):\n  PyTorch CXX11 ABI mismatch TensorFlow: "
                   "0 != 1\n") == ("extension-abi", "import-fails")
    assert code_of("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8160x64 and 1x98304)\n") == (
        "quantized-base", "quantized-fails")
    # (a shape mismatch of two plain weights is the code's)
    assert code_of("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8160x64 and 128x98304)\n") == ("none", "")


def test_what_batch_129_found() -> None:
    """Batch 129's dev part (fix commits and troubleshooting docs) and two older dev misses read beside it: torch's check on
    the graph it built for cuDNN attention, a package's own words for its compiled module that would not import, a
    program's guard that bitsandbytes runs only on CUDA, ggml's located "invalid device function", nvcc's refusal quoted
    without the architecture it refused."""
    assert code_of("RuntimeError: Expected mha_graph->execute(handle, variant_pack, workspace_ptr.get()).is_good() to be true, "
                   "but got false.\n") == ("cublas", "cudnn-failed")
    assert code_of("ImportError: Cannot import 'detrex._C', therefore 'MultiscaleDeformableAttention' is not available\n") == (
        "extension-abi", "import-fails")
    assert code_of("ImportError: Cannot import 'torch._C'\n")[0] != "extension-abi"  # torch's own is torch-install's
    assert code_of("ValueError: BNB quantization only supported on CUDA\n") == ("quantized-base", "quantized-fails")
    assert code_of("CUDA error 98 at /source/llama.cpp/ggml-cuda.cu:7788: invalid device function\n") == (
        "cuda-compat", "no-kernel-image")
    assert code_of("Unsupported gpu architecture\n") == ("cuda-compat", "no-kernel-image")
    # (the words inside a sentence are not the refusal)
    assert code_of("Unsupported gpu architecture errors are rare here, see the FAQ\n") == ("none", "")


def test_what_batch_130_found() -> None:
    """Batch 130's dev part (docs and threads of Japanese, Russian and Korean projects, inference tools' fixes): a
    library's guard that says torch.cuda.is_available() is False in its own words, the two readings of that fact."""
    text = ("ValueError: torch.cuda.is_available() should be True but is False. xformers' memory efficient attention is only "
            "available for GPU\n")
    assert code_of(text) == ("torch-install", "cpu-only-torch")
    assert {(d.check, d.code) for d in explained(text).diagnoses} >= {("torch-install", "cpu-only-torch"),
                                                                       ("torch-install", "no-cuda-here")}
    assert code_of("assert torch.cuda.is_available() should be True\n") == ("none", "")


def test_what_batch_131_found() -> None:
    """Batch 131's dev part (docs of Japanese, Chinese, Korean and Vietnamese projects): torch's warning that it turned
    CUDA off, followed by a traceback the paste cut before its exception line. What that traceback raised is unknown, so
    the warning is what the run stopped on; a known error after the warning still outranks it."""
    warned = ("C:\\envs\\x\\Lib\\site-packages\\torch\\amp\\autocast_mode.py:265: UserWarning: User provided device_type of "
              "'cuda', but CUDA is not available. Disabling\n  warnings.warn(\nfound vocab_size = 65\n")
    cut = 'Traceback (most recent call last):\n  File "C:\\x\\experiment.py", line 697, in <module>\n    train(dataset)\n'
    assert code_of(warned + cut) == ("torch-install", "cpu-only-torch")
    assert code_of(warned + cut + "KeyError: 'vocab'\n") == ("none", "")


def test_what_batch_132_found() -> None:
    """Batch 132's dev part (LLM training tools' fixes): torch's device parser refusing "npu", which no torch release
    parses (torch_npu registers it), is not a torch too old for the device; "mps" before torch 1.12 still is."""
    devices = "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, ort, xla, lazy, vulkan, %s" \
              "meta, hpu, mtia, privateuseone device type at start of device string: %s\n"
    assert code_of("RuntimeError: " + devices % ("mps, ", "npu"))[1] != "torch-too-old-for-device"
    assert code_of("RuntimeError: Expected one of cpu, cuda, xpu, mkldnn, opengl, opencl, ideep, hip, msnpu device type at "
                   "start of device string: mps\n") == ("torch-install", "torch-too-old-for-device")


def test_what_batch_133_found() -> None:
    """Batch 133's dev part (a Japanese wiki's threads and pages): bitsandbytes' optimizer tables, which it defines only
    where its GPU library loaded, named as undefined."""
    assert code_of("NameError: name 'str2optimizer8bit_blockwise' is not defined\n") == ("quantized-base", "quantized-fails")
    assert code_of("NameError: name 'str2optimizer' is not defined\n") == ("none", "")  # a program's own name


def test_what_batch_134_found() -> None:
    """Batch 134's dev part (5ch threads a Japanese wiki saved, community manuals): an English error written flush
    against Japanese text, where Python's `\\b` sees no word's end; and a forum post saved with its `<br>` line breaks."""
    assert code_of("RTX3080の12GBモデルなんですが、2倍HiresかけようとするとCUDA out of memoryエラーが出てしまいます\n") == (
        "device-memory", "out-of-memory")
    assert code_of("显卡是3060，运行时报CUDA out of memory错误\n") == ("device-memory", "out-of-memory")
    post = ("質問です <br> 起動すると <br> RuntimeError: &quot;LayerNormKernelImpl&quot; not implemented for &#39;Half&#39; <br> "
            "と出ます <br> CPUで動かしています\n")
    assert code_of(post) == ("cpu-half-kernels", "fp16-missing")
    assert [line.text for line in read_text(post).lines][:3] == ["質問です", "起動すると",
                                                                 "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'"]
    assert code_of("PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=11.8. Please reinstall the torchvision that "
                   "matches your PyTorch install.\n") == ("extension-abi", "cuda-variant-mismatch")
    # (and the same post as a page quoting its source shows it: escaped again)
    assert code_of(html.escape(post)) == ("cpu-half-kernels", "fp16-missing")


def test_what_batch_135_found() -> None:
    """Batch 135's dev part (5ch's 2024-2026 threads): Windows' paging file too small in the user's language, told by its
    number as Rust's io::Error prints it (safetensors mapping a checkpoint)."""
    assert code_of("「ページング ファイルが小さすぎるため、この操作を完了できません。 (os error 1455) 」のエラー\n") == (
        "device-memory", "out-of-memory")
    assert code_of("Error while deserializing header: MetadataIncompleteBuffer (os error 1455)\n")[0] == "device-memory"
    assert code_of("OSError: [WinError 1455] Файл подкачки слишком мал для завершения операции\n")[0] == "device-memory"


def test_what_batch_136_found() -> None:
    """Batch 136's dev part (docs and fix commits): a program's bare "Error: invalid device function" (k2's FAQ: built for
    another GPU), CMake's find_package(Torch) finding no TorchConfig.cmake (a C++ build where torch is not installed),
    and stable-diffusion-webui's start-up test read, as torch's own `is_available()` words are, with cuda-compat's
    driver older than torch's CUDA build as its other cause (Forge's README: its CUDA 12.4 package on a driver that
    does not run 12.4)."""
    assert code_of("Error: invalid device function\n") == ("cuda-compat", "no-kernel-image")
    assert code_of("RuntimeError: CUDA error: invalid device function\n") == ("cuda-compat", "no-kernel-image")
    assert code_of("The error: invalid device function is what I get\n") == ("none", "")  # prose, not the message's line
    cmake = ("  CMake Error at cmake/torch.cmake:14 (find_package):\n"
             '    By not providing "FindTorch.cmake" in CMAKE_MODULE_PATH this project has\n'
             '    asked CMake to find a package configuration file provided by "Torch", but\n'
             "    CMake did not find one.\n")
    assert code_of(cmake) == ("torch-install", "torch-missing-in-build")
    assert code_of('Could not find a package configuration file provided by "Torch" with any of\n')[0] == "torch-install"
    assert code_of('Could not find a package configuration file provided by "TorchVision" with any of\n') == ("none", "")
    found = [(d.check, d.code) for d in explained("RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test "
                                                  "to COMMANDLINE_ARGS variable to disable this check\n").diagnoses]
    assert found[0] == ("torch-install", "cpu-only-torch") and ("cuda-compat", "driver-too-old") in found


def test_what_batch_138_found() -> None:
    """Batch 138's dev part (Hugging Face Hub and GitHub discussions): the OOM killer's "Killed" glued to the loading bar
    it cut short (tqdm wrote no newline: host RAM ran out while the checkpoint's shards loaded), and torch's import
    failing on a native library told in words (torch 1.1.0's macOS wheel and Homebrew's libomp)."""
    bar = "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed\n"
    assert code_of(bar) == ("device-memory", "out-of-memory")
    assert code_of("Loading checkpoint shards: 0% Killed\n") == ("device-memory", "out-of-memory")
    assert code_of("Loading checkpoint shards:  38%|██▊   | 3/8 [00:02<00:03,  1.28it/s]Killed\n")[0] == "device-memory"
    assert code_of("The download reached 50% before I Killed it\n") == ("none", "")  # the user's words, not the shell's
    assert code_of("I can't import PyTorch, libomp.dylib can't be loaded.\n") == ("torch-install", "torch-import-failed")
    assert code_of("Unable to import torch: libc10.so not found\n") == ("torch-install", "torch-import-failed")
    assert code_of("I can't import torch, my checkpoint can't be loaded.\n") == ("none", "")  # no library named


def test_what_batch_140_found() -> None:
    """Batch 140's dev part (issue pages with their replies): bitsandbytes' CUDA setup (before 0.43, no Windows build)
    warning on a Windows path, read where the run stopped on it; libcublas and libcublasLt loaded from two installs."""
    setup = ("C:\\ProgramData\\Anaconda3\\envs\\x\\lib\\site-packages\\bitsandbytes\\cuda_setup\\main.py:136: UserWarning: "
             "C:\\ProgramData\\Anaconda3\\envs\\x did not contain libcudart.so as expected! Searching further paths...\n"
             "  warn(msg)\n")
    assert code_of(setup) == ("quantized-base", "quantized-fails")
    linux = setup.replace("C:\\ProgramData\\Anaconda3\\envs\\x\\lib\\site-packages\\", "/opt/conda/lib/python3.10/site-packages/")
    assert code_of(linux.replace("\\bitsandbytes\\cuda_setup\\", "/bitsandbytes/cuda_setup/")) == ("none", "")  # Linux's own
    later = setup + "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'model'\n"
    assert code_of(later)[0] != "quantized-base"  # the run went on past the warning
    mixed = ("OSError: ../../libcublas.so.11: symbol free_gemm_select version libcublasLt.so.11 not defined in file "
             "libcublasLt.so.11 with link time reference\n")
    assert code_of(mixed) == ("torch-install", "torch-import-failed")
    assert code_of("Installation error: symbol cublasLtGetStatusString version libcublasLt.so.11 not defined\n")[0] == "torch-install"
    assert code_of("symbol cudaFreeAsync version libcudart.so.11.0 not defined in file libcudart.so.11.0\n")[0] != "torch-install"


def test_what_batch_141_found() -> None:
    """Batch 141's dev part (issue pages, gists, Spaces): torch's own `from torch._C import *` quoted inside a sentence
    beside Windows' DLL load failure, not only as a traceback's code line."""
    said = ("I also met this same problem.(from torch._C import * (ImportError: DLL load failed: The specified module "
            "could not be found )\n")
    assert code_of(said) == ("torch-install", "torch-dll-failed")
    assert code_of("from mypkg.torch._C import * failed: DLL load failed: The specified module could not be found\n")[0] != (
        "torch-install")  # another package's module named like torch's


def test_what_batch_142_found() -> None:
    """Batch 142's dev part (issue pages with their replies): conda finding no torch for this platform as asked, and
    DGL's own words for its per-torch library missing."""
    win32 = ("Solving environment: failed\n\nPackagesNotFoundError: The following packages are not available from current "
             "channels:\n\n  - pytorch-cuda==11.8=h7e8668a_5\n  - pytorch==2.0.1=py3.10_cuda11.8_cudnn8.7.0_0\n\n"
             "Current channels:\n\n  - https://conda.anaconda.org/pytorch/win-64\n")
    assert code_of(win32) == ("torch-install", "torch-missing")
    other = win32.replace("pytorch-cuda==11.8=h7e8668a_5", "libfoo==1.2").replace("pytorch==2.0.1=py3.10_cuda11.8_cudnn8.7.0_0",
                                                                                  "pytorch-lightning==2.0")
    assert code_of(other)[0] != "torch-install"  # conda missing other packages (pytorch-lightning is not torch)
    # pytorch-cuda asked of a Mac, in a sentence flush against Chinese text
    mac = "我m1芯片用conda安装pytorch-cuda=11.8的时候提示`Could not solve for environment specs\n"
    assert code_of(mac) == ("torch-install", "torch-missing")
    assert code_of(mac.replace("m1芯片", "linux服务器"))[0] != "torch-install"  # no Mac: another cause
    assert code_of("Cannot find DGL C++ sparse library\n") == ("extension-abi", "import-fails")


def test_a_pages_invisible_and_no_break_spaces_read_as_the_words_the_run_printed() -> None:
    """Text copied from a web page, a word processor or a chat app: no-break spaces (`&nbsp;` once unescaped), a CJK
    ideographic space, zero-width spaces and a byte-order mark inside the words."""
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
    assert code_of(oom) == ("device-memory", "out-of-memory")
    for spelled in (oom.replace(" ", "\xa0"), oom.replace("out of", "out\u3000of"), oom.replace("memory", "me\u200bmory"),
                    "\ufeff" + oom.replace("CUDA", "CU\u2060DA"), oom.replace(" ", "&nbsp;")):
        assert code_of(spelled) == ("device-memory", "out-of-memory"), spelled
    assert [ln.text for ln in read_text("a\u200bb\xa0c\n").lines] == ["ab c"]


def test_what_batch_145_found() -> None:
    """Batch 145's dev part (blog posts where the author recorded an error and the fix that worked): a blog's typographic
    quotes around the names torch quotes, torch's own extension builder not knowing the GPU's architecture, and a
    companion's CPU-only operator quoted without the space after its name."""
    assert code_of("2. ModuleNotFoundError: No module named ‘fused_layer_norm_cuda‘\n") == ("apex", "apex-no-cuda-extensions")
    assert code_of("RuntimeError: “addmm_impl_cpu_” not implemented for ‘Half’\n")[0] == "cpu-half-kernels"
    assert code_of("ValueError: Unknown CUDA arch (8.6) or GPU not supported\n") == ("cuda-compat", "no-kernel-image")
    nms = ("NotImplementedError: Could not run 'torchvision::nms'with arguments from the 'CUDA' backend. This could be "
           "because the operator doesn't exist for this backend\n")
    assert code_of(nms) == ("extension-abi", "import-fails")
    assert code_of(nms.replace("'CUDA' backend", "'Meta' backend"))[0] != "extension-abi"  # not the CPU build's CUDA gap


def test_the_report_counts_the_raised_errors_it_read_and_leaves_out_a_count_of_none() -> None:
    """A diagnosis read from a line that raised nothing (bash's "Killed", a sentence) is not printed under "0 errors"."""
    from envdoctor.pipeline.explain import explain_excerpt
    from envdoctor.render.lines import explanation_lines

    def header(text: str) -> str:
        return explanation_lines(explain_excerpt(read_text(text), CHECKS, probe=False).to_dict())[0]
    assert header("Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed\n") == "Read 1 line."
    two = "ValueError: first\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nKeyError: 'b'\n"
    assert header(two) == "Read 4 lines, 2 raised errors."
