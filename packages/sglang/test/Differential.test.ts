/**
 * The offline check held to what each SGLang release's own argument handling did with the same
 * launch commands (`scripts/differential/sglang.ts`: the release's `prepare_server_args` and
 * `check_server_args`, executed from its public source on an SM86 2 × 48 GiB device, recorded in
 * `differential/outcomes/<version>.json`). Only the development part of the commands is held
 * here; the held-out part is reported by the script and never tuned on.
 *
 * A command agrees when both accept it or both refuse it. Every development command agrees on every
 * release: a rule change that loses one fails here naming it, with what SGLang did and what mlops said.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Check from "../src/Check.js"

const data = path.join(path.dirname(fileURLToPath(import.meta.url)), "differential")

interface Command {
  readonly id: string
  readonly model: string
  readonly argv: ReadonlyArray<string>
  readonly part: "development" | "held-out"
}

type Outcome =
  | { readonly outcome: "accepted" }
  | { readonly outcome: "error"; readonly type: string; readonly message: string }

const commands = (
  JSON.parse(fs.readFileSync(path.join(data, "commands.json"), "utf8")) as ReadonlyArray<Command>
).filter((command) => command.part === "development")
const configs = new Map(
  fs
    .readdirSync(path.join(data, "models"))
    .map((file) => [file.replace(/\.json$/, ""), fs.readFileSync(path.join(data, "models", file), "utf8")])
)

const releases = JSON.parse(
  fs.readFileSync(path.join(data, "..", "fixtures", "versions", "index.json"), "utf8")
) as ReadonlyArray<{ readonly version: string }>

const GPUS = { count: 2, computeCapability: "8.6", memoryGiB: 48 } as const

const disagreements = (version: string, outcomes: Readonly<Record<string, Outcome>>) =>
  commands.flatMap((command) => {
    const outcome = outcomes[command.id]
    if (outcome === undefined) return [`${command.id}: no recorded outcome`]
    const predicted = Effect.runSync(
      Effect.either(
        Check.offline({
          argv: command.argv.map((word) =>
            word.replace("{model}", `/models/${command.model}`).replace("{draft}", "/models/draft")
          ),
          modelConfig: configs.get(command.model),
          gpus: GPUS,
          version
        })
      )
    )
    if (Either.isRight(predicted) === (outcome.outcome === "accepted")) return []
    return [
      `${command.id} ${command.model} ${command.argv.slice(2).join(" ")}: SGLang ${
        outcome.outcome === "accepted" ? "accepted" : `${outcome.type} ${outcome.message.slice(0, 120)}`
      }; mlops ${Either.isRight(predicted) ? "accepted" : predicted.left._tag}`
    ]
  })

describe("the offline check against each release's own argument handling (development commands)", () => {
  for (const { version } of releases) {
    it(`SGLang ${version}: every development command is accepted or refused as the release does`, () => {
      const outcomes = JSON.parse(
        fs.readFileSync(path.join(data, "outcomes", `${version}.json`), "utf8")
      ) as Readonly<Record<string, Outcome>>
      const missed = disagreements(version, outcomes)
      assert.deepStrictEqual(missed, [], `${version}: ${missed.length} of ${commands.length} disagree`)
    })
  }

  it("every shipped release has its recorded outcomes, for every command", () => {
    const recorded = fs.readdirSync(path.join(data, "outcomes")).map((file) => file.replace(/\.json$/, ""))
    assert.sameMembers(
      recorded,
      releases.map((r) => r.version)
    )
    const all = JSON.parse(
      fs.readFileSync(path.join(data, "commands.json"), "utf8")
    ) as ReadonlyArray<Command>
    for (const version of recorded) {
      const outcomes = JSON.parse(fs.readFileSync(path.join(data, "outcomes", `${version}.json`), "utf8"))
      assert.sameMembers(
        Object.keys(outcomes),
        all.map((c) => c.id),
        version
      )
    }
  })
})
