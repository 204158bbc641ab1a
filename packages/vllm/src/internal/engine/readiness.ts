/**
 * vLLM's readiness (reference §3): `/health` answers 200 (it is 503 while starting and once the
 * engine is dead), then `/v1/models` lists the model, then one real completion succeeds:
 * `/version` and even `/health` can answer while the engine hangs (vllm issue 39863).
 *
 * @internal
 */
import type { ReadinessRequest } from "@mlops/serve/Engine"

interface ModelList {
  readonly data?: ReadonlyArray<{ readonly id?: string; readonly root?: string }>
}

/** Whether a `/v1/models` body lists `model` by its served name or its path (`root`). */
export const lists = (body: string, model: string): boolean => {
  try {
    const parsed = JSON.parse(body) as ModelList
    return (parsed.data ?? []).some((m) => m.id === model || m.root === model)
  } catch {
    return false
  }
}

export const readiness = (o: { readonly model: string }): ReadonlyArray<ReadinessRequest> => [
  { method: "GET", path: "/health", authorized: false, retry: true, passes: (status) => status === 200 },
  {
    method: "GET",
    path: "/v1/models",
    authorized: true,
    retry: true,
    passes: (status, body) => status === 200 && lists(body, o.model)
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: JSON.stringify({ model: o.model, prompt: "Hello", max_tokens: 1 }),
    authorized: true,
    retry: false,
    passes: (status, body) => status === 200 && body.includes('"choices"')
  }
]
