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


def test_a_tensors_attributes_are_no_secrets_but_a_key_setting_is() -> None:
    """Attention's dtype error names `key.dtype: double`: the tensor's attribute, not a secret (it was masked, hiding the
    dtype the diagnosis turns on); a setting named after a key keeps its value hidden."""
    r = Redactor()
    text = "Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: double instead."
    assert r.text(text) == text
    assert r.text("key.shape: [2, 8, 64]") == "key.shape: [2, 8, 64]"
    assert r.text("api_key: abcd1234efgh") == "api_key: " + MASK
    assert r.text("hub.key: abcd1234efgh") == "hub.key: " + MASK


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


def test_secrets_written_as_settings_are_masked_by_their_key() -> None:
    redactor = Redactor()
    assert redactor.text("  huggingface_token: hf_abcdefghijklmnopqrstuv") == "  huggingface_token: ***"
    assert redactor.text('{"wandb_key": "0123456789abcdef0123456789abcdef01234567"}') == '{"wandb_key": "***"}'
    assert redactor.text("openai.AuthenticationError: api_key=sk-proj-abc123 is invalid") == (
        "openai.AuthenticationError: api_key=*** is invalid")
    assert redactor.text("HF_TOKEN=abcd1234 accelerate launch train.py") == "HF_TOKEN=*** accelerate launch train.py"
    assert redactor.text("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9x") == "Authorization: Bearer ***"
    # what is not a secret stays: training settings, booleans, the words "key" and "pass" on their own
    for text in ("max_tokens: 512", "tokenizer_name: gpt2", "use_auth_token: true", "hub_token=None", "mixed_precision: fp16",
                 "lost step key: 3:importing torch", "pass: 3/3"):
        assert redactor.text(text) == text


def test_explain_masks_the_secrets_a_log_quotes() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "train.py", line 3, in <module>\n'
           "    login(token=hf_%s)\n"
           "requests.exceptions.HTTPError: 401 Client Error for url: https://user:p4ssw0rd@huggingface.co/api api_key=sk-%s\n"
           % ("S" * 30, "K" * 30))
    for args in (("explain", "--no-probe", "-"), ("explain", "--no-probe", "--json", "-")):
        proc = run_envdoctor(*args, input=log)
        assert proc.returncode in (0, 1), proc.stderr
        for secret in ("hf_" + "S" * 30, "p4ssw0rd", "sk-" + "K" * 30):
            assert secret not in proc.stdout and secret not in proc.stderr
        assert "401 Client Error" in proc.stdout  # the error itself is still said
