/**
 * A fleet launch: the same server on several hosts, at most two launches at a time, and a
 * result table. Here the hosts are three simulated ones (`gpu-a`, `gpu-b`, `gpu-c`); one of
 * them is given a memory setting that does not fit, to show a failed row with its fix.
 *
 *   npx tsx examples/fleet.ts
 */

import { pathToFileURL } from "node:url"
import { FakeHost } from "@mlops/core/testing"
import { renderFix } from "@mlops/serve/Failures"
import * as Launch from "@mlops/serve/Launch"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import * as Simulator from "@mlops/sglang/Simulator"
import { Console, Effect, Either } from "effect"

export const fleet = ["gpu-a", "gpu-b", "gpu-c"] as const

/** Simulated hosts named like the fleet. */
export const layer = FakeHost.layer(fleet.map((alias) => Simulator.makeHostSpec({ alias })))

export const argvFor = (host: string): ReadonlyArray<string> => [
  "--model-path",
  Simulator.modelPath,
  "--tp",
  "2",
  "--speculative-algorithm",
  "NEXTN",
  "--mamba-scheduler-strategy",
  "extra_buffer",
  ...(host === "gpu-c" ? ["--mem-fraction-static", "0.99"] : [])
]

export interface Row {
  readonly host: string
  readonly status: "ready" | "failed"
  /** The URL when ready; the failure tag and its fix otherwise. */
  readonly detail: string
}

export const main = Effect.forEach(
  fleet,
  (host) =>
    Launch.launchDeployment({ engine: SglangEngine.engine, host, name: "qwen36", argv: argvFor(host) }).pipe(
      Effect.either,
      Effect.map(
        (result): Row =>
          Either.isRight(result)
            ? { host, status: "ready", detail: result.right.url }
            : {
                host,
                status: "failed",
                detail: `${result.left._tag}${"fix" in result.left && result.left.fix && typeof result.left.fix === "object" ? ` (fix: ${renderFix(result.left.fix)})` : ""}`
              }
      )
    ),
  { concurrency: 2 }
)

export const table = (rows: ReadonlyArray<Row>): string =>
  rows.map((row) => `${row.host.padEnd(8)} ${row.status.padEnd(7)} ${row.detail}`).join("\n")

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main.pipe(
    Effect.tap((rows) => Console.log(table(rows))),
    Effect.provide(layer),
    Effect.runPromise
  )
}
