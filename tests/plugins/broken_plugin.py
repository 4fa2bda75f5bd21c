"""Test-only plug-in that fails at import."""

raise ImportError("this plug-in needs a library that is not installed")
