"""envdoctor's work in its own process: the check run (`check/`), fix and undo (`fix/`), explain
and run (`explain/`), and `flows`, the functions the command line and the Python API call."""
