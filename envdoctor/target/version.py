"""envdoctor's version: one place, read by the packaging, the CLI, the reports and the worker."""

__version__ = "0.1.0"
