"""envdoctor's built-in checks: one module per failure family, each exporting CHECK.

Ships inside the wheel as `envdoctor.checks`; stdlib + envdoctor.target.model only,
torch only inside probe().
"""
