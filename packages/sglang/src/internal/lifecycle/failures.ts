/**
 * Literal failure output: rank exception records and launcher tracebacks, as whole lines
 * (the first one prefixed when a rank prints it, continuation lines bare as SGLang logs them).
 * @internal
 */
import { line, PKG } from "./messages.js"

// ---- failures ------------------------------------------------------------------------------

export const sigquitFromChild = () =>
  "Received sigquit from a child process. It usually means the child failed."

/** The first line of a rank's exception record, to be followed by `frames` and the exception. */
export const schedulerException = (epochMs: number, process: string): string =>
  line(epochMs, process, "Scheduler hit an exception: Traceback (most recent call last):")

export const frame = (file: string, lineNo: number, fn: string, source: string) => [
  `  File "${PKG}/${file}", line ${lineNo}, in ${fn}`,
  `    ${source}`
]
const schedulerFrames = () => [
  ...frame("srt/managers/scheduler.py", 3210, "run_scheduler_process", "scheduler = Scheduler("),
  ...frame("srt/managers/scheduler.py", 368, "__init__", "self.init_model_worker()"),
  ...frame("srt/managers/tp_worker.py", 247, "__init__", "self._model_runner = ModelRunner(")
]
const serverArgsFrames = (handler: string, lineNo: number, source: string) => [
  "Traceback (most recent call last):",
  `  File "<frozen runpy>", line 198, in _run_module_as_main`,
  ...frame("launch_server.py", 51, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
  ...frame("srt/server_args.py", 7290, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
  ...frame(
    "srt/server_args.py",
    6720,
    "from_cli_args",
    "return cls(**{attr: getattr(args, attr) for attr in attrs})"
  ),
  `  File "<string>", line 312, in __init__`,
  ...frame("srt/server_args.py", 902, "__post_init__", `self.${handler}()`),
  ...frame("srt/server_args.py", lineNo, handler, source)
]

/** CUDA allocation failure in a rank (`phase` decides the frames: weights or KV cache). */
export const oomTraceback = (o: {
  epochMs: number
  process: string
  gpu: number
  triedGiB: number
  totalGiB: number
  freeMiB: number
}): ReadonlyArray<string> => [
  schedulerException(o.epochMs, o.process),
  ...schedulerFrames(),
  ...frame("srt/model_executor/model_runner.py", 512, "initialize", "self.load_model()"),
  ...frame("srt/model_loader/loader.py", 690, "load_model", "model = _initialize_model("),
  `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ${o.triedGiB.toFixed(2)} GiB. GPU ${o.gpu} has a total capacity of ${o.totalGiB.toFixed(2)} GiB of which ${o.freeMiB.toFixed(2)} MiB is free. Including non-PyTorch memory, this process has ${(o.totalGiB - 0.5).toFixed(2)} GiB memory in use. Of the allocated memory ${(o.totalGiB - 1.5).toFixed(2)} GiB is allocated by PyTorch, and 311.52 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`
]

/** Free memory differs between ranks at distributed init (another process holds one GPU). */
export const unbalancedTraceback = (
  epochMs: number,
  process: string,
  o: { readonly minFreeGB: number; readonly localFreeGB: number }
) => [
  schedulerException(epochMs, process),
  ...schedulerFrames(),
  ...frame(
    "srt/model_executor/model_runner.py",
    470,
    "initialize",
    "min_per_gpu_memory = self.init_torch_distributed()"
  ),
  ...frame("srt/model_executor/model_runner.py", 735, "init_torch_distributed", "raise RuntimeError("),
  `RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. pre_model_load_memory=${o.minFreeGB.toFixed(2)}, local_gpu_memory=${o.localFreeGB.toFixed(2)}, local_gpu_memory * 0.9=${(o.localFreeGB * 0.9).toFixed(2)}`
]

/** The KV pool does not fit (`Not enough memory`). */
export const kvPoolTraceback = (epochMs: number, process: string, memFractionStatic: number) => [
  schedulerException(epochMs, process),
  ...schedulerFrames(),
  ...frame(
    "srt/model_executor/model_runner.py",
    530,
    "initialize",
    "self.init_memory_pool(min_per_gpu_memory)"
  ),
  ...frame("srt/mem_cache/pool_configurator.py", 141, "__post_init__", "raise RuntimeError("),
  `RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=${memFractionStatic}`
]

/** The hybrid-model radix-cache ValueError (launcher, no prefix). */
export const mambaValueError = (arch = "Qwen3_5ForConditionalGeneration"): ReadonlyArray<string> => [
  ...serverArgsFrames("_handle_mamba_radix_cache", 2453, "raise ValueError("),
  `ValueError: Speculative decoding for ${arch} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`
]

/** The bare speculative assert (`multiline` shows it the way Python 3.13 prints it). */
export const bareAssertion = (multiline = false): ReadonlyArray<string> => [
  ...serverArgsFrames("_handle_speculative_decoding", 3518, "assert ("),
  ...(multiline
    ? [
        "        self.speculative_eagle_topk is None",
        "        and self.speculative_num_draft_tokens is None",
        "    )"
      ]
    : []),
  "AssertionError"
]

/** uvicorn cannot bind the HTTP port (after the model is loaded). */
export const portInUse = (epochMs: number, host: string, port: number) =>
  line(
    epochMs,
    "",
    `ERROR:    [Errno 98] error while attempting to bind on address ('${host}', ${port}): address already in use`
  )
