"""envdoctor in a notebook's first cell: where it runs (Colab, Kaggle, VS Code, Jupyter, a
terminal) and that platform's menu steps, what a kernel must restart for, and the display
(progress in the cell, a report shown once).

Stdlib only at import (where.py and menus.py are read by checks' rules in the worker too);
IPython is touched only inside a kernel, where it is already imported.
"""
