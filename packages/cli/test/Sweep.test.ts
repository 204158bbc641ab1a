/**
 * `mlops sweep` on the sim: three variants × two concurrencies, one refused by the checks
 * before anything starts; the table, the deployments it left, and the chart as a person sees
 * it: rendered by headless Chromium, every measured point a disc where its figure puts it.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { palette } from "../src/render/sweepChart.js"
import * as Browser from "./support/Browser.js"
import { session } from "./support/run.js"

const base = ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "2", "--enable-metrics"]
const mtp =
  "mtp-1=--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2 --mamba-scheduler-strategy extra_buffer"
// the incident's command: SGLang would refuse it (two problems)
const broken = "broken=--speculative-algorithm NEXTN --speculative-num-draft-tokens 1"

interface Level {
  readonly concurrency: number
  readonly completed: number
  readonly outputTokensPerS: number
  readonly acceptLength?: number
}
interface Outcome {
  readonly _tag: string
  readonly variant: { readonly label: string }
  readonly name?: string
  readonly result?: { readonly levels: ReadonlyArray<Level> }
}

describe("mlops sweep", () => {
  it.live(
    "checks every variant first, measures the others at each concurrency, and draws every point",
    () =>
      Effect.gen(function* () {
        const user = session()
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sweep-"))
        const chart = path.join(dir, "chart.html")
        const common = [
          "sweep",
          "--host",
          "sim",
          "--name",
          "sw",
          "--concurrency",
          "1,4",
          "--requests",
          "8",
          "--output-len",
          "24",
          "--env",
          "MLOPS_SIM_TIME_SCALE=0.01",
          "--variant",
          "off=",
          "--variant",
          mtp,
          "--variant",
          broken,
          "--chart",
          chart
        ]
        const ran = yield* user.mlops(...common, "--json", "--", ...base)
        // a point it could not measure shows in the exit code; the others were measured
        assert.strictEqual(ran.code, ExitCode.LaunchFailed, ran.text)
        const result = JSON.parse(ran.stdout.join("\n")) as {
          outcomes: ReadonlyArray<Outcome>
          chart: string
        }
        assert.deepStrictEqual(
          result.outcomes.map((o) => [o.variant.label, o._tag, o.name]),
          [
            ["off", "Measured", "sw-1"],
            ["mtp-1", "Measured", "sw-2"],
            ["broken", "Refused", undefined]
          ]
        )
        const [off, spec] = result.outcomes
        for (const outcome of [off!, spec!])
          assert.deepStrictEqual(
            outcome.result?.levels.map((l) => [l.concurrency, l.completed]),
            [
              [1, 8],
              [4, 8]
            ]
          )
        // speculative decoding pays off on the sim: more tokens a second, accepted drafts
        assert.isAbove(spec!.result!.levels[0]!.outputTokensPerS, off!.result!.levels[0]!.outputTokensPerS)
        assert.isAbove(spec!.result!.levels[0]!.acceptLength ?? 0, 1.4)
        assert.isUndefined(off!.result!.levels[0]!.acceptLength)
        // nothing of the refused variant ever ran; the measured ones were stopped
        const status = yield* user.mlops("status", "--host", "sim", "--json")
        const deployments = (
          JSON.parse(status.stdout.join("\n")) as {
            deployments: ReadonlyArray<{ name: string; alive: boolean }>
          }
        ).deployments
        assert.deepStrictEqual(deployments.map((d) => [d.name, d.alive]).sort(), [
          ["sw-1", false],
          ["sw-2", false]
        ])

        // the chart, as Chromium draws it: 3 panels × 2 concurrencies = 6 discs per measured variant
        assert.strictEqual(result.chart, chart)
        const image = Browser.decodePng(yield* Browser.screenshot(chart, 1200, 420))
        const offDiscs = Browser.blobs(image, palette[0]!)
        const specDiscs = Browser.blobs(image, palette[1]!)
        assert.strictEqual(offDiscs.length, 6, JSON.stringify(offDiscs))
        assert.strictEqual(specDiscs.length, 6, JSON.stringify(specDiscs))
        assert.strictEqual(Browser.blobs(image, palette[2]!).length, 0)
        // in the throughput panel (the leftmost two discs of each), 4 at once is higher on the
        // page than 1, and speculative decoding's disc higher than the other's at each
        const [off1, off4] = offDiscs
        const [spec1, spec4] = specDiscs
        assert.isBelow(off4!.y, off1!.y)
        assert.isBelow(spec4!.y, spec1!.y)
        assert.isBelow(spec1!.y, off1!.y)
        assert.isBelow(spec4!.y, off4!.y)
        // a whole disc each (r = 6: about 113 pixels of its exact colour)
        for (const disc of [...offDiscs, ...specDiscs]) assert.isAbove(disc.size, 60)
      }),
    90_000
  )

  it.live("the human form: the refusal at once, then each variant, one table, the chart's path", () =>
    Effect.gen(function* () {
      const user = session()
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sweep-"))
      const ran = yield* user.mlops(
        "sweep",
        "--host",
        "sim",
        "--name",
        "sw",
        "--requests",
        "2",
        "--output-len",
        "4",
        "--env",
        "MLOPS_SIM_TIME_SCALE=0.01",
        "--variant",
        "off=",
        "--variant",
        broken,
        "--chart",
        path.join(dir, "c.html"),
        "--",
        ...base
      )
      assert.strictEqual(ran.code, ExitCode.LaunchFailed, ran.text)
      const refusedAt = ran.stderr.findIndex((l) =>
        /✗ broken refused before launch: SGLang 0\.5\.11 would refuse this launch/.test(l)
      )
      const launchingAt = ran.stderr.findIndex((l) => l.includes("off: launching sw-1"))
      assert.isAbove(refusedAt, -1, ran.text)
      assert.isAbove(launchingAt, refusedAt)
      assert.match(ran.stdout[0] ?? "", /^variant\s+conc\s+tok\/s/)
      assert.match(ran.stdout.find((l) => l.startsWith("broken")) ?? "", /broken\s+-\s+refused/)
      assert.strictEqual(ran.stdout.at(-1), `chart: ${path.join(dir, "c.html")}`)
      assert.strictEqual(fs.statSync(path.join(dir, "c.html")).mode & 0o777, 0o600)
    })
  )

  it.live("a server launched with an API key is benchmarked with it; the key is in no output", () =>
    Effect.gen(function* () {
      const user = session()
      const key = "sk-sweep-secret-0123456789"
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sweep-"))
      const ran = yield* user.mlops(
        "sweep",
        "--host",
        "sim",
        "--name",
        "keyed",
        "--requests",
        "2",
        "--output-len",
        "4",
        "--env",
        "MLOPS_SIM_TIME_SCALE=0.01",
        "--variant",
        `--served-model-name qwen`,
        "--chart",
        path.join(dir, "c.html"),
        "--json",
        "--",
        ...base,
        "--api-key",
        key
      )
      assert.strictEqual(ran.code, 0, ran.text)
      assert.notInclude(ran.text, key)
      assert.notInclude(fs.readFileSync(path.join(dir, "c.html"), "utf8"), key)
      const result = JSON.parse(ran.stdout.join("\n")) as {
        argv: ReadonlyArray<string>
        outcomes: ReadonlyArray<Outcome>
      }
      assert.deepStrictEqual(result.argv.slice(-2), ["--api-key", "***"])
      // a variant without a label is named by its flags
      assert.deepStrictEqual(
        result.outcomes.map((o) => [o.variant.label, o._tag, o.result?.levels[0]?.completed]),
        [["--served-model-name qwen", "Measured", 2]]
      )
    })
  )

  it.live("refuses a sweep with no variants or two of one label, naming the option", () =>
    Effect.gen(function* () {
      const user = session()
      const none = yield* user.mlops("sweep", "--host", "sim", "--", ...base)
      assert.strictEqual(none.code, ExitCode.Usage)
      assert.match(none.text, /no variants: give at least one --variant LABEL=FLAGS/)
      const twice = yield* user.mlops(
        "sweep",
        "--host",
        "sim",
        "--variant",
        "a=",
        "--variant",
        "a=--tp 1",
        "--",
        ...base
      )
      assert.strictEqual(twice.code, ExitCode.Usage)
      assert.match(twice.text, /two variants are labelled a/)
      const quoted = yield* user.mlops(
        "sweep",
        "--host",
        "sim",
        "--variant",
        "q=--served-model-name 'my model'",
        "--",
        ...base
      )
      assert.strictEqual(quoted.code, ExitCode.Usage)
      assert.match(
        quoted.text,
        /--variant q: 'my is quoted, but a variant's flags are split on spaces with no shell quoting/
      )
      const levels = yield* user.mlops(
        "sweep",
        "--host",
        "sim",
        "--variant",
        "a=",
        "--concurrency",
        "1,4,1",
        "--",
        ...base
      )
      assert.strictEqual(levels.code, ExitCode.Usage)
      assert.match(levels.text, /--concurrency 1,4,1 gives 1 twice/)
    })
  )
})
