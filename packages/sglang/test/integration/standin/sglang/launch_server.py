"""`python -m sglang.launch_server <flags>`: the stand-in launcher entry point."""

import sys
import warnings

from sglang.srt.server_args import prepare_server_args
from sglang.srt.standin_launcher import launch_server

warnings.warn(
    "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.\n"
    "  Example: sglang serve --model-path <model> [options]",
    UserWarning,
)

if __name__ == "__main__":
    server_args = prepare_server_args(sys.argv[1:])
    launch_server(server_args)
