"""How people say in a title or a sentence that something failed, in the languages the corpus's threads are written in.

A reading of prose needs these beside its subject ("bf16 not supported on T4", "NCCL 에러", "bitsandbytes no funciona"),
so that a question or a request that only names the subject ("how do I enable bf16 on a T4?") is not read as a failure.
Regex text for the checks' signatures; stdlib only, nothing compiled here.
"""

from __future__ import annotations

from typing import Tuple

# English, then Chinese, Japanese, Korean, Russian, Spanish, Portuguese, German and French words for "error", "fails",
# "not supported", "does not work", "crashes"
FAILED = (r"(?i:\berror(s|es)?\b|\bfail(s|ed|ing|ure)?\b|\bnot (supported|working|work(s|ing)?|available)\b|"
          r"\b(does|do|did|is)(n'?t| not) (work|supported)\b|\bcrash(es|ed|ing)?\b|\bbroken\b|\bunsupported\b|"
          r"\bcan'?t (run|load|use|import)\b|\bcannot (run|load|use|import)\b|"
          r"报错|错误|失败|不支持|无法(运行|使用|加载)|エラー|失敗|動かない|使えない|오류|에러|실패|"
          r"ошибк|не работает|не поддерживает|no funciona|não funciona|\berro\b|\bfehler\b|\berreur\b|"
          r"no (es|está) (compatible|soportad)|não (é )?(compatível|suportad))")


def said_with(subjects: Tuple[str, ...], *conditions: str) -> str:
    """A pattern for one line that names one of `subjects` (plain words: "bf16", "bfloat16") and matches every one of
    `conditions` (regexes) anywhere in it. One top-level branch per subject, the word outside any group, so that explain's
    needles (envdoctor.pipeline.explain.needles) leave the pattern uncompiled where the text holds none of the words."""
    ahead = "".join("(?=.*?(?:%s))" % condition for condition in conditions)
    return "(?i)" + "|".join(r"^(?=[^\n]{0,200}$)%s.*?\b%s" % (ahead, subject) for subject in subjects)
