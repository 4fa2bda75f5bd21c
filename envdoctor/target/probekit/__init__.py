"""The probe kit: what every probe uses inside the worker, written once.

Stdlib only, Python 3.8+: these modules run in the *target* interpreter.

- `steps`: announce a risky step (an import, a GPU op, an extension call) so that a
  crash or hang is pinned on it and the probe resumes past it in a fresh worker.
- `ops`: run one tiny torch operation and record what happened (`run_op`).
- `text`: exception texts and dtype names, spelled one way.
- `gpus`: the identity of a CUDA device (name, capability) as every check records it.
- `distributions`: installed distributions read from metadata, never imported.
- `imports`: import a module and record everything it did (errors, warnings, logs, output).
- `capture`: what a library prints and logs while a probe runs it (imported only where one runs: the parent,
  which imports the checks for their declarations, never pays for logging and tempfile).
- `commands`: run a program of the machine (nvidia-smi, nvcc) and record what happened.
- `files`: small system files read as text, None when absent.
- `links`: a GPU's PCIe link and NVLinks, the machine's network ports (a job's bandwidth bound).
- `fatbin`: the GPU architectures a compiled library carries CUDA code for, read from its file.
"""
