/**
 * A Python dependency is missing, broken or of the wrong version: import errors, native
 * extensions that do not load (undefined symbols, missing .so files, failed JIT builds), a
 * transformers that is too old for the checkpoint or clashes with the engine's own configs, a
 * package that is required but not installed, and errors raised inside a third-party library
 * while it is imported or called with an API it no longer has.
 * @internal
 */
import * as F from "../../../Failures.js"
import {
  base,
  type Context,
  reasonOf,
  type Signature,
  type Subject,
  says,
  Tier
} from "../../../LogSignature.js"
import type { Frame } from "../records.js"

// a JIT or extension build that failed (nvcc's own errors mention the GPU architecture)
const BUILD =
  /Error building extension|ninja: build stopped|nvcc fatal|CalledProcessError: Command '\['[^']*\b(?:gcc|g\+\+|cc|clang|nvcc|ninja|hipcc)'|Failed to (?:compile|build) (?:the )?(?:extension|kernel|module)/i

export const buildFailure: Signature = {
  id: "extension-build-failed",
  tag: "DependencyError",
  tier: Tier.Root,
  variants: [
    { from: "torch cpp_extension", text: "RuntimeError: Error building extension 'flashinfer_kernels'" },
    { from: "nvcc", text: "nvcc fatal   : Unsupported gpu architecture 'compute_120'" },
    { from: "ninja", text: "ninja: build stopped: subcommand failed." }
  ],
  match: says(BUILD),
  build: (s) => {
    const module = /Error building extension '([^']+)'/.exec(s.flat)?.[1]
    return new F.DependencyError({
      ...base(s, reasonOf(s, BUILD), {
        action:
          "a kernel failed to build for this GPU: install a prebuilt wheel for this CUDA and GPU, or a CUDA toolkit that knows the GPU"
      }),
      ...(module === undefined ? {} : { module })
    })
  }
}

// phrases that name a broken install wherever they appear (never printed by a healthy start)
const BROKEN =
  /undefined symbol|`rope_scaling` must be a dictionary with two fields|cannot open shared object file|Torch not compiled with CUDA enabled|CUDA_HOME environment variable is not set|does not exist or is not currently imported|Could not load any common_ops|Failed to import from vllm\._C|is already used by a Transformers (?:model|config)|does not recognize this architecture|distribution was not found and is required|requires? transformers ?[<>=]=?|please (?:upgrade|update) (?:your )?transformers|module '[\w.]+' has no attribute '[^']+'/i

const IMPORT_TYPES =
  /(?:^|\.)(?:ModuleNotFoundError|ImportError|PackageNotFoundError|DistributionNotFound|VersionConflict)$/

/** The package a frame's file belongs to, when it is not the engine, torch or the standard library. */
const thirdParty = (frame: Frame): string | undefined => {
  const file = frame.file.replaceAll("\\", "/")
  if (file.startsWith("<")) return undefined
  const m =
    /(?:site|dist)-packages\/([\w-]+)\//.exec(file) ?? /^(?:\.\.\.\/)?([\w-]+)\/[\w/]+\.py$/.exec(file)
  const pkg = m?.[1]
  if (pkg === undefined) return undefined
  return /^(sglang|vllm|vllm_ascend|vllm_omni|sgl_kernel|torch|python\d.*|lib|usr|home|root|opt|tmp|data|workspace|sgl-workspace)$/.test(
    pkg
  )
    ? undefined
    : pkg
}

/** An exception raised inside a library while it was imported, or an API the engine expected and it lacks. */
const insideLibrary = (s: Subject): string | undefined => {
  const frames = s.record?.frames ?? []
  const final = s.final
  if (final === undefined || frames.length === 0) return undefined
  const innermost = frames[frames.length - 1]!
  const pkg = thirdParty(innermost)
  if (pkg === undefined) return undefined
  const importing = frames.slice(-3).some((f) => f.func === "<module>")
  // transformers' auto classes raise KeyError for a model type they do not know yet
  if (
    /KeyError$/.test(final.type) &&
    /configuration_auto|modeling_auto|tokenization_auto/.test(innermost.file)
  )
    return pkg
  const apiGap =
    /AttributeError$/.test(final.type) ||
    (/TypeError$/.test(final.type) &&
      /unexpected keyword argument|required positional argument/.test(final.message))
  return importing || apiGap ? pkg : undefined
}

/** A call with a keyword the installed library no longer (or not yet) takes: versions that do not match. */
const keywordMismatch = (s: Subject): boolean =>
  s.final !== undefined &&
  /TypeError$/.test(s.final.type) &&
  /got an unexpected keyword argument|missing \d+ required positional arguments?|takes \d+ positional arguments? but \d+ (?:was|were) given/.test(
    s.final.message
  ) &&
  !/ServerArgs|EngineArgs|server_args|engine_args/.test(s.final.message)

/** A compiled extension that did not load leaves its name undefined (`vllm_cache_ops`, `ops._C`). */
const compiledOpsMissing = (s: Subject): boolean =>
  s.final !== undefined &&
  /NameError$/.test(s.final.type) &&
  /name '\w*(?:_ops|_C|_kernels?)' is not defined/.test(s.final.message)

const moduleOf = (s: Subject): string | undefined => {
  const m =
    /No module named '([^']+)'/.exec(s.flat) ??
    /cannot import name '([^']+)'/.exec(s.flat) ??
    /undefined symbol: (\S+)/.exec(s.flat) ??
    /Error building extension '([^']+)'/.exec(s.flat) ??
    /The '([^']+)' distribution was not found/.exec(s.flat) ??
    /model type `?(\w+)`? but Transformers/.exec(s.flat)
  return m?.[1] ?? insideLibrary(s)
}

const fixOf = (s: Subject, ctx: Context): F.Fix =>
  /does not recognize this architecture|requires? transformers|upgrade (?:your )?transformers/i.test(s.flat)
    ? {
        action:
          "upgrade transformers to a release that knows this model type (pip install -U transformers), within the engine's pins"
      }
    : /is already used by a Transformers/i.test(s.flat)
      ? {
          action:
            "the installed transformers clashes with the engine's own model configs: install the transformers version the engine release pins"
        }
      : ctx.engine === "vllm"
        ? {
            action:
              "install the missing package or the versions this vLLM release pins (pip install 'vllm==<version>')"
          }
        : {
            action:
              "install the missing package or the versions this SGLang release pins (pip install 'sglang[all]==<version>')"
          }

export const dependency: Signature = {
  id: "broken-dependency",
  tag: "DependencyError",
  tier: Tier.Root,
  variants: [
    { from: "CPython", text: "ModuleNotFoundError: No module named 'flashinfer'" },
    {
      from: "CPython",
      text: "ImportError: cannot import name 'build_regex_from_object' from 'outlines.fsm.json_schema'"
    },
    {
      from: "native extensions",
      text: "ImportError: /usr/local/lib/python3.10/dist-packages/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZNK3c106SymInt6sym_neERKS0_"
    },
    {
      from: "vLLM 0.5",
      text: "Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"
    },
    {
      from: "transformers 4.4x",
      text: "ValueError: The checkpoint you are trying to load has model type `glm4v_moe` but Transformers does not recognize this architecture."
    },
    {
      from: "transformers + SGLang 0.4",
      text: "ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is already used by a Transformers model."
    },
    {
      from: "importlib",
      text: "importlib.metadata.PackageNotFoundError: No package metadata was found for The 'sglang>=0.4.5' distribution was not found and is required by this application."
    },
    { from: "torch cpp_extension", text: "RuntimeError: Error building extension 'flashinfer_kernels'" }
  ],
  match: (s) =>
    says(BROKEN)(s) ||
    (s.record?.exceptions.some((e) => IMPORT_TYPES.test(e.type)) ?? false) ||
    (s.final !== undefined && /No module named '|cannot import name '/.test(s.final.message)) ||
    compiledOpsMissing(s) ||
    keywordMismatch(s) ||
    insideLibrary(s) !== undefined,
  build: (s, ctx) => {
    const module = moduleOf(s)
    return new F.DependencyError({
      ...base(s, reasonOf(s, BROKEN), fixOf(s, ctx)),
      ...(module === undefined ? {} : { module })
    })
  }
}
