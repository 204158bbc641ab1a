/**
 * The engines' own failure vocabulary (corpus/inventory: every message SGLang and vLLM can raise
 * or log at ERROR while they start, read from their sources at sampled releases, each with the
 * class mlops should name) against the classifier, as the corpus is scored (`predict`). Each
 * message is pasted in three forms (bare, with a rank or process prefix on every line, quoted in
 * a GitHub comment) and must be named its class in all three. The floors are the coverage measured
 * when the inventory was made, rounded down to the percent: a change to the classifier that names
 * fewer of these messages fails here. `npx tsx corpus/scripts/inventory.ts` lists the misses.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  coverage,
  type Entry,
  engines,
  forms,
  judge,
  loadInventory,
  missGroups,
  paste,
  releasesOf
} from "../scripts/inventory.js"
import { labels } from "../scripts/score.js"

// the current share of messages named in all three forms, rounded down (measured 87.4% and 91.3%)
const FLOORS = { sglang: 0.87, vllm: 0.91 } as const

describe("the engines' failure inventory", () => {
  for (const engine of engines) {
    it(`${engine}: every message is well formed, once, with a known class and a release range`, () => {
      const entries = loadInventory(engine)
      const order = releasesOf(engine)
      assert.isAtLeast(entries.length, 300)
      assert.isAtLeast(order.length, 10)
      const keys = new Set<string>()
      for (const e of entries) {
        const where = `${e.file}: ${e.template.slice(0, 80)}`
        assert.strictEqual(e.engine, engine, where)
        assert.match(e.file, engine === "sglang" ? /^python\/sglang\// : /^vllm\//, where)
        assert.isTrue(labels.has(e.class), `${where}: class ${e.class}`)
        assert.isString(e.why, where)
        assert.isAbove(e.template.trim().length, 0, where)
        const [first, last] = e.releases
        assert.isAtLeast(order.indexOf(first), 0, `${where}: release ${first}`)
        assert.isAtLeast(order.indexOf(last), order.indexOf(first), `${where}: releases ${first}..${last}`)
        if (e.exceptionType.startsWith("logger.") || e.exceptionType === "ArgumentTypeError")
          assert.notMatch(e.example, /^\w+Error: /, where)
        else assert.isTrue(e.example.startsWith(`${e.exceptionType}: `), where)
        const key = `${e.file}\u0000${e.exceptionType}\u0000${e.template}`
        assert.isFalse(keys.has(key), `${where}: listed twice`)
        keys.add(key)
      }
    })
  }

  it("pastes each message in the three forms the normaliser handles", () => {
    const sample: ReadonlyArray<Entry> = engines.flatMap((engine) => {
      const entries = loadInventory(engine)
      return [
        entries.find((e) => e.exceptionType === "ValueError")!,
        entries.find((e) => e.exceptionType === "logger.error")!
      ]
    })
    for (const e of sample) {
      const bare = paste(e, "bare")
      const message = e.exceptionType.startsWith("logger.") ? e.example : e.example.split("\n")[0]!
      assert.include(bare, message)
      if (!e.exceptionType.startsWith("logger.")) {
        assert.match(
          bare,
          /^Traceback \(most recent call last\):\n {2}File "\/usr\/lib\/python3\/dist-packages\//
        )
        assert.include(bare, e.file.replace(/^python\//, ""))
      }
      const prefix = e.engine === "vllm" ? "(EngineCore_0 pid=123) " : "[2026-01-01 00:00:00 TP0] "
      for (const line of paste(e, "prefixed").split("\n")) assert.isTrue(line.startsWith(prefix), line)
      assert.deepStrictEqual(
        paste(e, "quoted").split("\n"),
        bare.split("\n").map((l) => `> ${l}`)
      )
    }
  })

  it("the check can fail: a message given another class is not covered", () => {
    const named = loadInventory("vllm")
      .map(judge)
      .find((v) => v.covered && v.entry.class === "OOM")!
    assert.isDefined(named)
    const wrong = judge({ ...named.entry, class: "PortInUse" })
    assert.isFalse(wrong.covered)
    for (const form of forms) assert.strictEqual(wrong.named[form], "OOM")
  })

  for (const engine of engines) {
    it(`${engine}: the classifier names the class of at least ${FLOORS[engine] * 100}% of the messages, in every form`, () => {
      const c = coverage(engine)
      const misses = missGroups(c)
        .slice(0, 12)
        .map(([key, vs]) => `${vs.length} ${key}: ${vs[0]!.entry.template.slice(0, 100)}`)
        .join("\n")
      assert.isAtLeast(c.all.covered / c.all.total, FLOORS[engine], misses)
      for (const form of forms)
        assert.isAtLeast(
          c.perForm[form].covered / c.perForm[form].total,
          FLOORS[engine],
          `${form}\n${misses}`
        )
    })
  }
})
