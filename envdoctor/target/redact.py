"""Secrets never leave envdoctor: values of secret-looking environment variables,
credentials in URLs and well-known token shapes are replaced before any output.

Stdlib only, Python 3.8+: the worker redacts at the source too.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

MASK = "***"

# Whole components of a variable's name (HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASS),
# never substrings: NOX_CURRENT_SESSION or GIT_AUTHOR_NAME are not secrets.
_SECRET_PARTS = frozenset(
    ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
     "KEY", "APIKEY", "AUTH", "COOKIE")
)
_SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "APIKEY")  # HFTOKEN, GITHUBTOKEN
# A scheme starts where no scheme character precedes it: without that, a long run of letters
# (a 9 MB value in a config) is scanned again from each of its characters.
_URL_CREDENTIALS = re.compile(r"(?<![a-zA-Z0-9+.-])(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<cred>[^/\s:@]+(?::[^/\s@]*)?)@")
_TOKEN_SHAPES = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|wandb_v1_[A-Za-z0-9_]{20,})\b"
)
_MIN_SECRET_LEN = 4  # shorter values ("1", "no") would mask innocent text
# A secret written as a setting: `huggingface_token: hf_...`, `"wandb_key": "0123..."`, `api_key=sk-...`,
# `--hub-token abc` is not covered (no separator), `HF_TOKEN=...` is. The key decides (is_secret_name).
_KEY_SEPARATOR = re.compile(r"""(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z][A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?""")
_VALUE = re.compile(r"""[^\s"',;}\]]+""")
_TENSOR_ATTRIBUTE = re.compile(r"\.(dtype|shape|device|size|ndim|stride|numel|is_cuda|requires_grad)$", re.IGNORECASE)
_NOT_SECRET_VALUES = frozenset(("true", "false", "null", "none", "~", "yes", "no", "0", "1"))
# An HTTP Authorization header or a bearer token quoted in a log or an error.
_AUTHORIZATION = re.compile(r"(?i)\b(authorization\s*[:=]\s*|bearer\s+|basic\s+|token\s+)(?=[A-Za-z0-9._~+/-]{12,})[A-Za-z0-9._~+/=-]+")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(part in _SECRET_PARTS for part in re.split(r"[_.-]", upper)) or upper.endswith(_SECRET_SUFFIXES)


def secret_values(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)  # longest first: a secret may contain another


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = [s for s in secrets if len(s) >= _MIN_SECRET_LEN]

    @classmethod
    def from_environ(cls, environ: Optional[Mapping[str, str]] = None) -> Redactor:
        return cls(secret_values(environ))

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        value = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + MASK + "@", value)
        value = _TOKEN_SHAPES.sub(MASK, value)
        value = _AUTHORIZATION.sub(lambda m: m.group(1) + MASK, value)
        return _mask_assignments(value) if _maybe_assignment(value) else value

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like structure (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value


def _maybe_assignment(value: str) -> bool:
    return (":" in value or "=" in value) and any(part.lower() in value.lower() for part in _SECRET_PARTS)


def _mask_assignments(text: str) -> str:
    """Each `key: value` / `key=value` whose key names a secret, with the value masked."""
    out: List[str] = []
    done = 0
    for found in _KEY_SEPARATOR.finditer(text):
        key = found.group("key")
        value = _VALUE.match(text, found.end())
        # a bare `key:` or `pass:` in a log is structure more often than a secret; `api_key:`, `hub_token:` are secrets;
        # a tensor's attribute is no secret either (attention's "key.dtype: double", "key.shape: [2, 8]")
        if (value is None or found.start() < done or key.lower() in ("key", "pass", "auth") or not is_secret_name(key)
                or _TENSOR_ATTRIBUTE.search(key)):
            continue
        if value.group(0) == MASK or value.group(0).lower() in _NOT_SECRET_VALUES:
            continue
        out += [text[done:value.start()], MASK]
        done = value.end()
    return "".join(out) + text[done:]


def environment_variables(names_or_prefixes: Iterable[str], environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The variables worth reporting, secret-named ones shown as set-but-hidden."""
    env = os.environ if environ is None else environ
    wanted = tuple(names_or_prefixes)
    out: Dict[str, str] = {}
    for name in sorted(env):
        if any(name == w or (w.endswith("_") and name.startswith(w)) for w in wanted):
            out[name] = MASK if is_secret_name(name) else env[name]
    return out
