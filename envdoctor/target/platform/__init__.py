"""Where envdoctor runs (Colab and its runtime, Kaggle, a VS Code or Jupyter notebook, a
terminal) and that platform's own menu steps. Read by the checks' rules, in the worker too."""
