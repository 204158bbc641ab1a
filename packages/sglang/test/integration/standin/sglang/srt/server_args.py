"""Stand-in for sglang.srt.server_args: a subset of the flags, and the two checks of the
Qwen3.6 story raised exactly where SGLang 0.5.11 raises them (so the tracebacks have the
real shape): the mamba radix-cache ValueError (R24) and the bare speculative assertion (R12).
Flags this stand-in does not model are accepted and ignored.
"""

import argparse
import dataclasses
import json
import logging
import os
from typing import List, Optional

logger = logging.getLogger(__name__)

HYBRID_GDN_ARCHS = (
    "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
)
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "STANDALONE")


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tokenizer_path: Optional[str] = None
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: Optional[str] = None
    mem_fraction_static: Optional[float] = None
    max_running_requests: Optional[int] = None
    context_length: Optional[int] = None
    chunked_prefill_size: Optional[int] = None
    page_size: Optional[int] = None
    attention_backend: Optional[str] = None
    disable_radix_cache: bool = False
    disable_cuda_graph: bool = False
    skip_server_warmup: bool = False
    served_model_name: Optional[str] = None
    trust_remote_code: bool = False
    mamba_scheduler_strategy: str = "auto"
    speculative_algorithm: Optional[str] = None
    speculative_num_steps: Optional[int] = None
    speculative_eagle_topk: Optional[int] = None
    speculative_num_draft_tokens: Optional[int] = None
    api_key: Optional[str] = None
    admin_api_key: Optional[str] = None
    enable_metrics: bool = False

    def __post_init__(self):
        self._handle_missing_default_values()
        self._handle_model_specific_adjustments()
        self._handle_speculative_decoding()

    def _handle_missing_default_values(self):
        if self.tokenizer_path is None:
            self.tokenizer_path = self.model_path
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        if self.mamba_scheduler_strategy == "auto":
            self.mamba_scheduler_strategy = "no_buffer"
        if self.mem_fraction_static is None:
            self.mem_fraction_static = 0.835
        if self.chunked_prefill_size is None:
            self.chunked_prefill_size = 8192
        if self.attention_backend is None:
            logger.warning("Attention backend not specified. Use flashinfer backend by default.")
            self.attention_backend = "flashinfer"

    def get_architecture(self) -> str:
        config_path = os.path.join(self.model_path, "config.json")
        if not os.path.isdir(self.model_path):
            raise OSError(
                f"{self.model_path} is not a local folder and is not a valid model identifier listed on "
                "'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token "
                "having permission to this repo either by logging in with `hf auth login` or by passing "
                "`token=<your_token>`"
            )
        with open(config_path) as f:
            config = json.load(f)
        return (config.get("architectures") or ["LlamaForCausalLM"])[0]

    def _handle_model_specific_adjustments(self):
        model_arch = self.get_architecture()
        if model_arch in HYBRID_GDN_ARCHS:
            self._handle_mamba_radix_cache(model_arch)

    def _handle_mamba_radix_cache(self, model_arch: str):
        if self.mamba_scheduler_strategy == "extra_buffer":
            if self.disable_radix_cache:
                raise ValueError(
                    "mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling is "
                    "already supported with no_buffer + disable_radix_cache. Please use "
                    "--mamba-scheduler-strategy no_buffer instead."
                )
            return
        if self.disable_radix_cache:
            return
        if self.speculative_algorithm is not None:
            raise ValueError(
                f"Speculative decoding for {model_arch} is not compatible with radix cache when using "
                "--mamba-scheduler-strategy no_buffer."
                "To use radix cache with speculative decoding, please use "
                "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
            )

    def _handle_speculative_decoding(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_algorithm not in EAGLE_FAMILY:
            return
        if self.max_running_requests is None:
            self.max_running_requests = 48
            logger.warning(
                "Max running requests is reset to 48 for speculative decoding. You can override this by "
                "explicitly setting --max-running-requests."
            )
        logger.warning("Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding.")
        if self.speculative_num_steps is None:
            assert (self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None)
            (
                self.speculative_num_steps,
                self.speculative_eagle_topk,
                self.speculative_num_draft_tokens,
            ) = (3, 1, 4)
        if (
            self.speculative_eagle_topk == 1
            and self.speculative_num_draft_tokens != self.speculative_num_steps + 1
        ):
            logger.warning(
                "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                "speculative_eagle_topk == 1"
            )
            self.speculative_num_draft_tokens = self.speculative_num_steps + 1

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", "--model", type=str, required=True, dest="model_path")
        parser.add_argument("--tokenizer-path", type=str)
        parser.add_argument("--host", type=str, default="127.0.0.1")
        parser.add_argument("--port", type=int, default=30000)
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1, dest="tp_size")
        parser.add_argument("--nnodes", type=int, default=1)
        parser.add_argument("--node-rank", type=int, default=0)
        parser.add_argument("--dist-init-addr", "--nccl-init-addr", type=str)
        parser.add_argument("--mem-fraction-static", type=float)
        parser.add_argument("--max-running-requests", type=int)
        parser.add_argument("--context-length", type=int)
        parser.add_argument("--chunked-prefill-size", type=int)
        parser.add_argument("--page-size", type=int)
        parser.add_argument("--attention-backend", type=str)
        parser.add_argument("--disable-radix-cache", action="store_true")
        parser.add_argument("--disable-cuda-graph", action="store_true")
        parser.add_argument("--skip-server-warmup", action="store_true")
        parser.add_argument("--served-model-name", type=str)
        parser.add_argument("--trust-remote-code", action="store_true")
        parser.add_argument(
            "--mamba-scheduler-strategy", type=str, default="auto", choices=["auto", "no_buffer", "extra_buffer"]
        )
        parser.add_argument(
            "--speculative-algorithm",
            type=str,
            choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH"],
        )
        parser.add_argument("--speculative-num-steps", type=int)
        parser.add_argument("--speculative-eagle-topk", type=int)
        parser.add_argument("--speculative-num-draft-tokens", type=int)
        parser.add_argument("--api-key", type=str)
        parser.add_argument("--admin-api-key", type=str)
        parser.add_argument("--enable-metrics", action="store_true")

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        attrs = [field.name for field in dataclasses.fields(cls)]
        return cls(**{attr: getattr(args, attr) for attr in attrs})

    def describe(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in dataclasses.asdict(self).items())
        return f"ServerArgs({fields})"


def prepare_server_args(argv: List[str]) -> ServerArgs:
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S", force=True
    )
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    # Flags the stand-in does not model are real SGLang flags in the tests: accept them.
    raw_args, _unmodelled = parser.parse_known_args(argv)
    return ServerArgs.from_cli_args(raw_args)
