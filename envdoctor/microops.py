"""The micro-op helpers under their original name, for check plug-ins written
against it (README "Adding a check"). Built-in checks import envdoctor.probekit."""

from envdoctor.probekit.ops import max_rel_err, randn, round_err, run_op, seeded_generator, synchronize
from envdoctor.probekit.text import dtype_name, error_text

__all__ = ["dtype_name", "error_text", "max_rel_err", "randn", "round_err", "run_op", "seeded_generator", "synchronize"]
