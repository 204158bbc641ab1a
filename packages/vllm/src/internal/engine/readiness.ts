/**
 * vLLM's readiness (reference §3): `/health` answers 200 (it is 503 while starting and once the
 * engine is dead), then `/v1/models` lists the model, then one real completion succeeds:
 * `/version` and even `/health` can answer while the engine hangs (vllm issue 39863).
 *
 * @internal
 */
import type { ReadinessRequest } from "@mlops/serve/Engine"
import { modelOf, servedNameOf } from "./argvFacts.js"

interface ModelList {
  readonly data?: ReadonlyArray<{ readonly id?: string; readonly root?: string }>
}

/** Whether a `/v1/models` body lists the model by its served name or its path (`root`). */
export const lists = (body: string, served: string, path: string = served): boolean => {
  try {
    const parsed = JSON.parse(body) as ModelList
    return (parsed.data ?? []).some((m) => m.id === served || m.root === path)
  } catch {
    return false
  }
}

/** The requests for an argv: clients name the model by its first `--served-model-name`, else its path. */
export const readiness = (argv: ReadonlyArray<string>): ReadonlyArray<ReadinessRequest> => {
  const path = modelOf(argv) ?? "model"
  const served = servedNameOf(argv) ?? path
  return requests(served, path)
}

const requests = (served: string, path: string): ReadonlyArray<ReadinessRequest> => [
  { method: "GET", path: "/health", authorized: false, retry: true, passes: (status) => status === 200 },
  {
    method: "GET",
    path: "/v1/models",
    authorized: true,
    retry: true,
    passes: (status, body) => status === 200 && lists(body, served, path)
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: JSON.stringify({ model: served, prompt: "Hello", max_tokens: 1 }),
    authorized: true,
    retry: false,
    passes: (status, body) => status === 200 && body.includes('"choices"')
  }
]
