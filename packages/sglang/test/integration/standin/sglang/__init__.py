"""Stand-in for the SGLang package, used by mlops' end-to-end tests over a real sshd.

It reproduces what mlops observes from outside: the command line, the log lines of a launch,
the real-shaped tracebacks of the launch failures mlops classifies, the HTTP endpoints, and the
process tree (a launcher plus one scheduler process per TP rank). It loads no model.
"""

from sglang.version import __version__  # noqa: F401  (SGLang keeps its version in version.py)
