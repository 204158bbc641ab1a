"""Stand-in vLLM for mlops' end-to-end tests (see entrypoints/cli/main.py)."""

__version__ = "0.13.0"
