"""envdoctor: finds the dtype, device and build failures of a PyTorch stack
before the run, by running tiny operations on the real installed stack."""

__version__ = "0.1.0"
