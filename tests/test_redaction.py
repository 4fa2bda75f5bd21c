"""Secrets in the environment never reach any output."""

from __future__ import annotations

import os

import pytest
from conftest import PLUGINS, run_envdoctor

from envdoctor.target.redact import MASK, Redactor, environment_variables, is_secret_name

SECRET = "hf_" + "Q" * 34


def test_redactor_masks_env_values_urls_and_token_shapes() -> None:
    r = Redactor.from_environ({"MY_API_KEY": "s3cr3t-value", "PATH": "/usr/bin"})
    assert r.text("key=s3cr3t-value path=/usr/bin") == "key=%s path=/usr/bin" % MASK
    assert r.text("https://bob:pa55@host/x") == "https://%s@host/x" % MASK
    assert r.text("token ghp_" + "a" * 30) == "token " + MASK
    assert r.data({"k": ["x s3cr3t-value"]}) == {"k": ["x " + MASK]}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("WANDB_API_KEY", True),
        ("DB_PASS", True), ("GITHUBTOKEN", True), ("http_auth", True),
        # caught by CI: nox's NOX_CURRENT_SESSION=tests masked every "tests" in paths
        ("NOX_CURRENT_SESSION", False), ("GIT_AUTHOR_NAME", False), ("PWD", False), ("KEYBOARD_LAYOUT", False),
        ("CUDA_VISIBLE_DEVICES", False), ("PASSENGER", False),
    ],
)
def test_secret_names_are_whole_components(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_innocent_variables_do_not_mask_text() -> None:
    r = Redactor.from_environ({"NOX_CURRENT_SESSION": "tests", "HF_TOKEN": "hf_abcdefghijk"})
    assert r.text("/repo/.nox/tests/bin/python hf_abcdefghijk") == "/repo/.nox/tests/bin/python ***"


def test_environment_variables_hide_secret_names() -> None:
    env = {"HF_TOKEN": "abc123", "HF_HOME": "/data/hf", "CUDA_VISIBLE_DEVICES": "0", "OTHER": "x"}
    assert environment_variables(("HF_", "CUDA_VISIBLE_DEVICES"), env) == {
        "CUDA_VISIBLE_DEVICES": "0",
        "HF_HOME": "/data/hf",
        "HF_TOKEN": MASK,
    }


def test_planted_token_never_reaches_json_markdown_or_terminal() -> None:
    env = {"HF_TOKEN": SECRET, "ENVDOCTOR_CHECKS_PATH": str(PLUGINS / "secret_check.py")}
    for fmt in ("--json", "--markdown", "-v"):
        proc = run_envdoctor("check", fmt, "--only", "torch-install,test-secret", env=env)
        assert SECRET not in proc.stdout, fmt
        assert SECRET not in proc.stderr, fmt
        assert "HF_TOKEN" in proc.stdout or fmt == "-v"  # the variable is listed, its value is not
    assert SECRET not in os.environ.get("HF_TOKEN", "")
