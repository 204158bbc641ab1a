/**
 * What the simulated `launch_server` prints when it refuses to start: argparse's usage error,
 * the ServerArgs ValueError / bare AssertionError tracebacks, the OSError of a missing model.
 * The incident's two messages come verbatim from `lifecycleLines`.
 *
 * @internal
 */
import type { ArgvError } from "@mlops/serve/ArgvErrors"
import type { ViolationRecord } from "../../Rule.js"
import * as L from "../lifecycleLines.js"
import { sglangDir as PKG } from "./paths.js"

/** A traceback from `lifecycleLines` (written for a stock install) as this host's Python prints it. */
const here = (lines: ReadonlyArray<string>): ReadonlyArray<string> =>
  lines.map((l) => l.replaceAll(L.PKG, PKG))

const frame = (file: string, line: number, fn: string, source: string) => [
  `  File "${PKG}/${file}", line ${line}, in ${fn}`,
  `    ${source}`
]

const postInitFrames = (handler: string) => [
  "Traceback (most recent call last):",
  `  File "<frozen runpy>", line 198, in _run_module_as_main`,
  ...frame("launch_server.py", 51, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
  ...frame("srt/server_args.py", 7290, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
  `  File "<string>", line 312, in __init__`,
  ...frame("srt/server_args.py", 902, "__post_init__", `self.${handler}()`)
]

const checkFrames = () => [
  "Traceback (most recent call last):",
  ...frame("launch_server.py", 60, "<module>", "run_server(server_args)"),
  ...frame("srt/entrypoints/engine.py", 673, "_launch_subprocesses", "server_args.check_server_args()")
]

/** argparse: usage + `sglang serve: error: ...` (exit 2). */
export const argparse = (error: ArgvError): ReadonlyArray<string> => {
  const usage = "usage: sglang serve [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] ..."
  const text = (() => {
    switch (error._tag) {
      case "UnknownFlag":
        return `unrecognized arguments: ${error.flag}`
      case "UnexpectedArgument":
        return `unrecognized arguments: ${error.argument}`
      case "AmbiguousFlag":
        return `ambiguous option: ${error.flag} could match ${error.candidates.join(", ")}`
      case "InvalidChoice":
        return `argument ${error.flag}: invalid choice: '${error.value}' (choose from ${error.choices.map((c) => `'${c}'`).join(", ")})`
      case "InvalidValue":
        return `argument ${error.flag}: invalid ${error.expected} value: '${error.value}'`
      case "MissingValue":
        return `argument ${error.flag}: expected one argument`
      case "MissingRequired":
        return "the following arguments are required: --model-path/--model"
      case "UnexpectedValue":
        // `--switch=v` fails at once; `--switch v` leaves `v` over, reported last like any stray word
        return error.inline === false
          ? `unrecognized arguments: ${error.value}`
          : `argument ${error.flag}: ignored explicit argument '${error.value}'`
      default:
        return (error as { readonly message: string }).message
    }
  })()
  return [usage, `sglang serve: error: ${text}`]
}

/** The first fatal rule violation, as SGLang's launcher prints it (exit 1). */
export const violation = (v: ViolationRecord, architecture: string | undefined): ReadonlyArray<string> => {
  if (v.ruleId.startsWith("R24")) return here(L.mambaValueError(architecture))
  if (
    v.errorType === "AssertionError" &&
    v.engineMessage === "" &&
    v.sourceLine?.includes("speculative_eagle_topk")
  )
    return here(L.bareAssertion(true))
  const head = v.stage === "check-server-args" ? checkFrames() : postInitFrames("_handle_other_validations")
  const source = v.sourceLine ?? (v.errorType === "AssertionError" ? "assert ..." : `raise ${v.errorType}(`)
  return [
    ...head,
    ...frame(
      "srt/server_args.py",
      3000,
      v.stage === "check-server-args" ? "check_server_args" : "__post_init__",
      source
    ),
    v.engineMessage === "" ? v.errorType : `${v.errorType}: ${v.engineMessage}`
  ]
}

/** transformers' OSError for a model path that is neither a folder nor a repo id (exit 1). */
export const modelNotFound = (path: string): ReadonlyArray<string> => [
  ...postInitFrames("_handle_piecewise_cuda_graph"),
  ...frame("srt/configs/model_config.py", 214, "from_server_args", "return ModelConfig("),
  `OSError: ${path} is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'`,
  "If this is a private repository, make sure to pass a token having permission to this repo either by logging in with `hf auth login` or by passing `token=<your_token>`"
]

/** A rank asked for a GPU the host does not have. */
export const invalidDevice = (epochMs: number, process: string): ReadonlyArray<string> => [
  L.schedulerException(epochMs, process),
  ...frame("srt/managers/scheduler.py", 3210, "run_scheduler_process", "scheduler = Scheduler("),
  ...frame(
    "srt/model_executor/model_runner.py",
    401,
    "init_torch_distributed",
    "torch.get_device_module(self.device).set_device(self.gpu_id)"
  ),
  "torch.AcceleratorError: CUDA error: invalid device ordinal",
  "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."
]

/** A check SGLang makes while a rank builds the model (attention backend, shapes). */
export const modelInit = (epochMs: number, process: string, v: ViolationRecord): ReadonlyArray<string> => [
  L.schedulerException(epochMs, process),
  ...frame("srt/managers/scheduler.py", 3210, "run_scheduler_process", "scheduler = Scheduler("),
  ...frame("srt/model_executor/model_runner.py", 512, "initialize", "self.init_attention_backend()"),
  ...(v.sourceLine === undefined ? [] : [`    ${v.sourceLine}`]),
  v.engineMessage === "" ? v.errorType : `${v.errorType}: ${v.engineMessage}`
]
