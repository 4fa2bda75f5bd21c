"""The micro-op helpers under their original name, for check plug-ins written
against it (README "Adding a check"). Built-in checks import envdoctor.target.probekit."""

from envdoctor.target.probekit.ops import max_rel_err, randn, round_err, run_op, seeded_generator, synchronize
from envdoctor.target.probekit.text import dtype_name, error_text

__all__ = ["dtype_name", "error_text", "max_rel_err", "randn", "round_err", "run_op", "seeded_generator", "synchronize"]
