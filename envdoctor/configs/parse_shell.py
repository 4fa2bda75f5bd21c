"""A launch line, or a small shell script holding one -> Document.

    accelerate launch --mixed_precision fp16 train_dreambooth_lora_sdxl.py \\
      --pretrained_vae_model_name_or_path="madebyollin/sdxl-vae-fp16-fix" --mixed_precision="fp16"

The tree: {"launcher": "accelerate", "launcher_flags": {flag: value}, "script": "train.py",
"script_flags": {flag: value}, "arguments": [positional words]}. A flag's Node spans its
value token as written, quotes included (what a fix replaces); its value is the word
the program receives. A flag without a value (`--cpu`, `--use_dora`) is True and spans
the flag itself. The words are split as a POSIX shell splits them (quotes, backslashes,
backslash-newline continuations, comments), with offsets, which shlex does not give.
The first command that runs a training launcher is the one read (a script may
`export` and `cd` first).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from envdoctor.configs.document import ConfigError, Document, Node, line_column

# store_true options of `accelerate launch` (commands/launch.py at github.com/huggingface/accelerate
# @ 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83), plus `--fp16` of accelerate releases before
# `--mixed_precision`; every other option takes a value. It accepts `-` or `_` in names.
ACCELERATE_SWITCHES = frozenset((
    "--quiet", "-q", "--cpu", "--multi_gpu", "--tpu", "--enable_cpu_affinity", "--dynamo_use_fullgraph", "--dynamo_use_dynamic",
    "--dynamo_use_regional_compilation", "--use_deepspeed", "--use_fsdp", "--use_parallelism_config", "--use_megatron_lm",
    "--same_network", "-m", "--module", "--no_python", "--tpu_cluster", "--no_tpu_cluster", "--tpu_use_sudo", "--downcast_bf16",
    "--fp8_use_autocast_during_eval", "--debug", "--fp16",
))
# torchrun's flags without a value (torch/distributed/run.py)
TORCHRUN_SWITCHES = frozenset(("--standalone", "--no_python", "--run_path", "-m", "--module", "--virtual_local_rank"))
# the interpreter's own one-letter switches (`python -u train.py`); -W and -X take a value
PYTHON_SWITCHES = frozenset("-" + c for c in "bBdEhiIOPqsSuvVx")
# `python -m MODULE` that is not a training run
NOT_TRAINING_MODULES = ("pip", "venv", "ensurepip", "virtualenv", "http.server", "site")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# commands that run the rest of their line (`nohup autotrain llm ... &`, `exec accelerate launch ...`)
_PREFIX_COMMANDS = ("nohup", "exec", "time", "env", "command", "nice")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")
_INLINE = re.compile(r"^(['\"]?)(-{1,2}[A-Za-z0-9][\w.-]*)=")  # `--flag=value`, or all of it in quotes


@dataclass
class Word:
    """A shell word: what the program receives, and its span in the text."""

    value: str
    start: int
    end: int


def parse(file: str, text: str) -> Document:
    for words in split_commands(file, text):
        root = _launch(text, words)
        if root is not None:
            return Document(file=file, text=text, syntax="shell", root=root)
    raise ConfigError(file, "no launch command found (accelerate launch, torchrun, python, autotrain)")


def normal_flag(flag: str) -> str:
    """`--mixed-precision` and `--mixed_precision` are the same accelerate option."""
    return "--" + flag.lstrip("-").replace("-", "_") if flag.startswith("--") else flag


# ---- words

def split_commands(file: str, text: str) -> List[List[Word]]:
    """The text's commands (split at newlines, `;`, `&`, `|`), each as its words."""
    commands: List[List[Word]] = []
    current: List[Word] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        skip = _continuation(text, i)
        if skip:
            i += skip
        elif c in " \t\r":
            i += 1
        elif c in "\n;&|":
            if current:
                commands.append(current)
                current = []
            i += 1
        elif c == "#":  # a comment: only where a word would start
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            end = _word_end(file, text, i)
            current.append(Word(_unquote(text, i, end), i, end))
            i = end
    if current:
        commands.append(current)
    return commands


def _continuation(text: str, i: int) -> int:
    """Length of a backslash-newline at i (CRLF files too), else 0."""
    if text.startswith("\\\n", i):
        return 2
    if text.startswith("\\\r\n", i):
        return 3
    return 0


def _word_end(file: str, text: str, i: int) -> int:
    start, n = i, len(text)
    while i < n and text[i] not in " \t\r\n;&|":
        c = text[i]
        if c == "\\":
            i += _continuation(text, i) or 2
        elif c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise _unterminated(file, text, i)
            i = close + 1
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                raise _unterminated(file, text, start)
            i += 1
        else:
            i += 1
    while True:  # a continuation that ends the word belongs to the line, not to the value
        if text.startswith("\\\n", i - 2) and i - 2 >= start:
            i -= 2
        elif text.startswith("\\\r\n", i - 3) and i - 3 >= start:
            i -= 3
        else:
            return min(i, n)


def _unquote(text: str, start: int, end: int) -> str:
    """The word as the program receives it: quotes removed, escapes applied."""
    out: List[str] = []
    i = start
    while i < end:
        c = text[i]
        if c == "\\":
            skip = _continuation(text, i)
            if not skip:
                out.append(text[i + 1:i + 2])
            i += skip or 2
        elif c == "'":
            close = text.index("'", i + 1)
            out.append(text[i + 1:close])
            i = close + 1
        elif c == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\" and text[i + 1] in '$`"\\\n':  # the only escapes inside double quotes
                    if text[i + 1] != "\n":
                        out.append(text[i + 1])
                    i += 2
                else:
                    out.append(text[i])
                    i += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _unterminated(file: str, text: str, offset: int) -> ConfigError:
    line, column = line_column(text, offset)
    return ConfigError(file, "a quote that is never closed", line, column)


# ---- the launch command

def _launch(text: str, words: List[Word]) -> Optional[Node]:
    """The tree of a command that starts a training run, None for any other command."""
    i = 0
    # CUDA_VISIBLE_DEVICES=0 accelerate launch ..., nohup python train.py ...
    while i < len(words) and (_ASSIGNMENT.match(words[i].value) or words[i].value in _PREFIX_COMMANDS):
        i += 1
    if i == len(words):
        return None
    first, rest = words[i], words[i + 1:]
    program = os.path.basename(first.value.lstrip("!%"))  # `!accelerate launch` in a notebook cell
    if program == "accelerate" and rest and rest[0].value == "launch":
        return _tree(text, "accelerate", [first, rest[0]], rest[1:], ACCELERATE_SWITCHES)
    if program == "accelerate-launch":
        return _tree(text, "accelerate", [first], rest, ACCELERATE_SWITCHES)
    if program == "torchrun":
        return _tree(text, "torchrun", [first], rest, TORCHRUN_SWITCHES)
    if program == "autotrain":
        return _tree(text, "autotrain", [first], rest, frozenset())
    if _PYTHON.match(program):
        return _python(text, first, rest)
    if program.endswith(".py"):  # ./train.py --flags
        return _tree(text, None, [], words[i:], frozenset())
    return None


def _python(text: str, first: Word, rest: List[Word]) -> Optional[Node]:
    """`python [switches] script.py ...` or `python -m module ...`; `python -m
    accelerate.commands.launch` and `python -m torch.distributed.run` are those launchers."""
    index = 0
    while index < len(rest):
        value = rest[index].value
        if value in PYTHON_SWITCHES:
            index += 1
        elif value in ("-W", "-X"):  # each takes a value
            index += 2
        elif value == "-m" and index + 1 < len(rest):
            module = rest[index + 1].value
            if module == "accelerate.commands.launch":
                return _tree(text, "accelerate", [first, *rest[:index + 2]], rest[index + 2:], ACCELERATE_SWITCHES)
            if module in ("torch.distributed.run", "torch.distributed.launch"):
                return _tree(text, "torchrun", [first, *rest[:index + 2]], rest[index + 2:], TORCHRUN_SWITCHES)
            if module.split(".")[0] in NOT_TRAINING_MODULES or module in NOT_TRAINING_MODULES:
                return None
            return _tree(text, "python", [first], rest, PYTHON_SWITCHES, module_flag="-m")
        elif value.startswith("-"):  # -c CODE and the like: no script to read
            return None
        else:
            return _tree(text, "python", [first], rest, PYTHON_SWITCHES)
    return None


def _tree(text: str, launcher: Optional[str], launcher_words: Sequence[Word], rest: Sequence[Word],
          switches: FrozenSet[str], module_flag: str = "") -> Node:
    """Flags up to the first positional word belong to the launcher; that word is the
    script (or module, or autotrain's subcommand); the flags after it are the script's."""
    launcher_flags, index = _flags(text, rest, 0, switches, module_flag=module_flag)
    script: Optional[Word] = rest[index] if index < len(rest) else None
    script_flags: Dict[str, Node] = {}
    arguments: List[Node] = []
    if script is not None:
        script_flags, arguments = _script_flags(text, rest, index + 1)
    words = [*launcher_words, *rest]
    root: Dict[str, Node] = {}
    if launcher is not None:
        root["launcher"] = _node(text, launcher, launcher_words[0].start, launcher_words[-1].end)
    root["launcher_flags"] = _mapping(text, launcher_flags, launcher_words[-1].end if launcher_words else words[0].start)
    if script is not None:
        root["script"] = _node(text, script.value, script.start, script.end)
        root["script_flags"] = _mapping(text, script_flags, script.end)
        root["arguments"] = _node(text, arguments, arguments[0].start if arguments else script.end,
                                  arguments[-1].end if arguments else script.end, kind="sequence")
    return _node(text, root, words[0].start, words[-1].end, kind="mapping")


def _flags(text: str, words: Sequence[Word], index: int, switches: FrozenSet[str], module_flag: str = "") -> Tuple[Dict[str, Node], int]:
    """Launcher flags from `index` to the first positional word (returned as the index)."""
    found: Dict[str, Node] = {}
    while index < len(words):
        word = words[index]
        if word.value == "--":  # the end of the launcher's options: the script follows
            return found, index + 1
        if not _is_flag(word.value):
            break
        if word.value == module_flag:  # `python -m module`: the module is the script
            found[word.value] = _node(text, True, word.start, word.end, key=word)
            return found, index + 1
        name, node, index = _one_flag(text, words, index, lambda flag: normal_flag(flag) in switches or flag in switches)
        found[name] = node
    return found, index


def _script_flags(text: str, words: Sequence[Word], index: int) -> Tuple[Dict[str, Node], List[Node]]:
    """The script's own flags: argparse is unknown here, so a flag followed by a word that
    is not a flag takes it as its value; otherwise it is a switch."""
    found: Dict[str, Node] = {}
    positional: List[Node] = []
    while index < len(words):
        word = words[index]
        if word.value == "--":
            positional += [_node(text, w.value, w.start, w.end) for w in words[index + 1:]]
            break
        if not _is_flag(word.value):
            positional.append(_node(text, word.value, word.start, word.end))
            index += 1
            continue
        name, node, index = _one_flag(text, words, index, lambda flag: False)
        found[name] = node
    return found, positional


def _one_flag(text: str, words: Sequence[Word], index: int, is_switch: Callable[[str], bool]) -> Tuple[str, Node, int]:
    """One flag and its value: `--flag=value`, `--flag value`, or a switch (True)."""
    word = words[index]
    raw = text[word.start:word.end]
    inline = _INLINE.match(raw)
    if inline:  # --flag=value: the span is the value part (inside the quotes when the whole word is quoted)
        quote, name = inline.group(1), inline.group(2)
        start, end = word.start + inline.end(), word.end
        if quote and raw.endswith(quote) and len(raw) > inline.end():
            end -= 1
        return name, _node(text, word.value.split("=", 1)[1], start, end, key=word), index + 1
    following = words[index + 1] if index + 1 < len(words) else None
    if is_switch(word.value) or following is None or _is_flag(following.value):
        return word.value, _node(text, True, word.start, word.end, key=word), index + 1
    return word.value, _node(text, following.value, following.start, following.end, key=word), index + 2


def _is_flag(value: str) -> bool:
    """`-x`/`--x`; a negative number (`--seed -1`), `-` and `--` are not flags."""
    return value.startswith("-") and value not in ("-", "--") and not re.match(r"^-\.?\d", value)


def _node(text: str, value: object, start: int, end: int, kind: str = "scalar", key: Optional[Word] = None) -> Node:
    line, column = line_column(text, start)
    key_line = line_column(text, key.start)[0] if key is not None else None
    return Node(value=value, kind=kind, start=start, end=end, line=line, column=column,
                key_start=key.start if key is not None else None, key_line=key_line)


def _mapping(text: str, flags: Dict[str, Node], at: int) -> Node:
    nodes = list(flags.values())
    if not nodes:
        return _node(text, flags, at, at, kind="mapping")
    start = min(n.key_start if n.key_start is not None else n.start for n in nodes)
    return _node(text, flags, start, max(n.end for n in nodes), kind="mapping")
