"""The one thing pyproject.toml cannot say: the repository's top-level checks/ folder is the
package envdoctor.checks, in the wheel and in an editable install alike (setuptools'
package_dir mapping). A new check package under checks/ is found here without an edit."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["envdoctor", "envdoctor.*"])
    + ["envdoctor.checks"]
    + ["envdoctor.checks." + name for name in find_packages("checks")],
    package_dir={"envdoctor.checks": "checks"},
)
