/**
 * When no signature knows an exception, the class comes from its structure (its words, its type,
 * the module that raised it), marked `basis: "fallback"`; an exception none of that describes
 * stays `Unclassified`, and a signature's verdict carries no basis. The exceptions here are
 * written for the rules (wordings no signature holds), not taken from the corpus.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Classifier from "../../../src/Classifier.js"
import type { LaunchFailure } from "../../../src/Failures.js"

const traceback = (file: string, exception: string) =>
  ["Traceback (most recent call last):", `  File "${file}", line 10, in f`, "    x()", exception].join("\n")

const verdict = (text: string): LaunchFailure => {
  const { failure } = Classifier.classifyText(text, { exitCode: 1, signal: null })
  assert.isDefined(failure, text)
  return failure!
}

describe("fallbacks from an exception's structure", () => {
  it("the message's words: memory, the ranks' transport", () => {
    const oom = verdict(
      traceback("/x/pool.py", "RuntimeError: the GPU allocator ran out of memory while growing the pool")
    )
    assert.deepInclude(oom, { _tag: "OOM", basis: "fallback" })
    const ranks = verdict(
      traceback("/x/comm.py", "RuntimeError: ProcessGroup hit a closed socket from rank 3")
    )
    assert.deepInclude(ranks, { _tag: "DistributedError", basis: "fallback" })
  })

  it("a version conflict is a dependency problem; an argument-module TypeError an argument problem", () => {
    const conflict = verdict(
      traceback("/x/z.py", "RuntimeError: flashinfer 0.2 requires torch==2.8 but you have torch 2.9")
    )
    assert.deepInclude(conflict, { _tag: "DependencyError", basis: "fallback" })
    const argument = verdict(
      traceback(
        "/usr/lib/python3/site-packages/sglang/srt/arg_groups/speculative.py",
        "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'"
      )
    )
    assert.deepInclude(argument, { _tag: "InvalidArgument", basis: "fallback" })
  })

  it("a guess never outranks a known failure, and words that only look alike are not taken", () => {
    const both = verdict(
      [
        traceback("/x/z.py", "RuntimeError: flashinfer 0.2 requires torch==2.8 but you have torch 2.9"),
        traceback("/x/y.py", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
      ].join("\n")
    )
    assert.strictEqual(both._tag, "OOM")
    assert.isUndefined(both.basis)
    // host memory, an API missing from this torch: not the GPU OOM, not the ranks' transport
    assert.strictEqual(verdict(traceback("/x/a.py", "MemoryError: out of memory")).basis, undefined)
    const api = verdict(
      traceback("/x/b.py", "AttributeError: 'ProcessGroup' object has no attribute '_set_default_backend'")
    )
    assert.notStrictEqual(api._tag, "DistributedError")
  })

  it("an exception none of that describes stays Unclassified; a signature's verdict has no basis", () => {
    const unknown = verdict(traceback("/x/model_loader.py", "ValueError: shape mismatch in layer 3"))
    assert.strictEqual(unknown._tag, "Unclassified")
    assert.isUndefined(unknown.basis)
    const known = verdict(
      traceback("/x/z.py", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    )
    assert.strictEqual(known._tag, "OOM")
    assert.isUndefined(known.basis)
  })
})
