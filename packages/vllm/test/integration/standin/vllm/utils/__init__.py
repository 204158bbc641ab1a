"""Stand-in of vLLM's utils for mlops' tests: older releases export the parser class here."""

from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: F401
