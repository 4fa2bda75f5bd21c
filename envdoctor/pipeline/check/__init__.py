"""The check run: validated input (`request`), the workers (`engine`, `runner`), the checks
(`registry`), the run's Target (`target`), and the rules or the worker's fate judged (`judge`)."""
