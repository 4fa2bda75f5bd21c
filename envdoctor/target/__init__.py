"""The wall: everything that is loaded inside the *target* interpreter.

The probe worker runs in the interpreter being diagnosed, which may be an old environment
with nothing but torch (or not even that). So every module in this package is Python 3.8+,
imports only the standard library and this package at module level, and survives any torch:
torch reaches the probes as an argument, never through an import here. Nothing in this
package imports from the rest of envdoctor; tests/test_worker_side.py derives that from the
folder itself.

- `model`: checks, facts, findings, remedies, signatures, reports, and the Target.
- `intent`: what a training config asks for, each value with where it is written.
- `remedies/`: the remedy kinds and the command lines built from a remedy's action.
- `probekit/`: what every probe uses (guarded steps, micro-ops, dtype names, GPU identity).
- `platform/`: where envdoctor runs (Colab, Kaggle, a notebook, a terminal) and its menus.
- `versions`, `cuda_tables`: version arithmetic and the CUDA/driver/arch tables.
- `redact`, `sysinfo`: secrets kept out of every output; the target's system facts.
- `worker`: the probe worker's main loop and its protocol.
"""
