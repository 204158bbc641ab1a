"""Stand-in of vLLM's argument parser class for mlops' tests (newer releases keep it here): vLLM's
FlexibleArgumentParser is an argparse.ArgumentParser (it also takes underscores and --config
files, which the flag dump does not need)."""

import argparse


class FlexibleArgumentParser(argparse.ArgumentParser):
    pass
