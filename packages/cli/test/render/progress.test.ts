import { assert, describe, it } from "@effect/vitest"
import type * as Launch from "@mlops/serve/Launch"
import * as Progress from "../../src/render/progress.js"

const style = { live: true, color: false }
const phase = (name: "weights-loading" | "kv-cache", elapsedMs: number): Launch.LaunchProgress =>
  ({
    _tag: "Log",
    elapsedMs,
    event: { _tag: "PhaseStarted", phase: name, at: elapsedMs, process: "TP0", line: 1 }
  }) as const

/**
 * What a terminal `columns` wide shows after `texts`: `ESC[nF` moves to the start of the row n
 * above, `ESC[J` clears from the cursor down, a long line wraps (without colour, no other escapes).
 */
const screenAfter = (texts: ReadonlyArray<string>, columns = 160): ReadonlyArray<string> => {
  const rows: Array<string> = [""]
  let row = 0
  let col = 0
  for (const part of texts.join("").split(/(\x1b\[\d*F|\x1b\[J|\n)/)) {
    const up = /^\x1b\[(\d*)F$/.exec(part)
    if (up !== null) {
      row = Math.max(0, row - Number(up[1] || 1))
      col = 0
    } else if (part === "\x1b[J") {
      rows[row] = rows[row]!.slice(0, col)
      rows.length = row + 1
    } else if (part === "\n") {
      row++
      col = 0
    } else {
      for (const char of part) {
        if (col === columns) {
          row++
          col = 0
        }
        rows[row] = (rows[row] ?? "").slice(0, col) + char
        col++
      }
    }
    while (rows.length <= row) rows.push("")
  }
  return rows
}

describe("render/progress", () => {
  it("live mode rewrites the phase block in place and keeps permanent lines above it", () => {
    let state = Progress.initial(0)
    const first = Progress.live(style, state, phase("weights-loading", 100), 100)
    assert.notInclude(first.text, "\x1b[") // nothing on screen yet to rewind
    assert.include(first.text, "… weights-loading")
    state = first.state
    const second = Progress.live(style, state, phase("kv-cache", 2100), 2100)
    // rewinds exactly the lines the previous block took, then redraws
    assert.isTrue(second.text.startsWith(`\x1b[${state.blockLines}F\x1b[J`))
    assert.match(second.text, /✓ weights-loading\s+2\.0 s/)
    assert.include(second.text, "… kv-cache")
    const tick = Progress.live(style, second.state, undefined, 3100)
    assert.include(tick.text, "3.1 s elapsed")
  })

  it("plain mode prints one line per phase with its elapsed time", () => {
    const lines = Progress.plain({ live: false, color: false }, phase("kv-cache", 1500))
    assert.deepStrictEqual(lines, ["  · kv-cache +1.5 s"])
  })

  it("live mode: capacity, listening and health lines sit under the phases; at ready the result comes last", () => {
    let state = Progress.initial(0)
    const step = (event: Launch.LaunchProgress | undefined, at: number) => {
      const next = Progress.live(style, state, event, at)
      state = next.state
      return next.text
    }
    step(phase("weights-loading", 100), 100)
    const noted = step(
      {
        _tag: "Log",
        elapsedMs: 200,
        event: { _tag: "Listening", url: "http://127.0.0.1:30000", at: 200, process: "", line: 9 }
      } as Launch.LaunchProgress,
      200
    )
    const rows = noted
      .replace(/^\x1b\[\d+F\x1b\[J/, "")
      .trimEnd()
      .split("\n")
    assert.match(rows[0]!, /… weights-loading/)
    assert.strictEqual(rows[1], "    listening on http://127.0.0.1:30000 (warming up)")
    assert.match(rows[2]!, /elapsed$/)
    assert.strictEqual(state.blockLines, 3)
    // a failure: the block's last drawing has no clock and marks where it ended
    const frozen = Progress.freeze(style, state, 900, "failed")
    assert.isTrue(frozen.text.startsWith("\x1b[3F\x1b[J"))
    assert.notInclude(frozen.text, "elapsed")
    assert.match(frozen.text, /✗ weights-loading/)
    assert.include(frozen.text, "listening on")
    // once final, a tick draws nothing
    assert.strictEqual(Progress.live(style, frozen.state, undefined, 5000).text, "")
  })

  it("a line wider than the terminal takes several rows to rewind", () => {
    assert.strictEqual(Progress.screenRows(["x".repeat(161), "short"], 160), 3)
    assert.strictEqual(Progress.screenRows(["\x1b[32m✓\x1b[39m ok"], 4), 1)
    assert.strictEqual(Progress.screenRows(["x".repeat(500)], undefined), 1)
  })

  it("the last attempt's failure is not printed as an attempt (the command's error says it once)", () => {
    const failure = { _tag: "OOM", message: "Out of GPU memory" }
    const last = { _tag: "AttemptFailed", attempt: 1, failure } as unknown as Launch.LaunchProgress
    assert.deepStrictEqual(Progress.lines(style, last), [])
    const retried = {
      _tag: "AttemptFailed",
      attempt: 1,
      failure,
      nextArgv: ["--tp", "2"]
    } as unknown as Launch.LaunchProgress
    assert.match(Progress.lines(style, retried)[0]!, /attempt 1 failed: Out of GPU memory/)
  })

  it("lines something else prints while the block is on screen go above it; the next rewind erases only the block", () => {
    const connected = { _tag: "Connected", host: "sim", name: "m", elapsedMs: 20 } as Launch.LaunchProgress
    const warning =
      "mlops: ignoring the sim state in /h/sim/state.json (not valid JSON); starting a fresh sim"
    for (const columns of [160, 20]) {
      const narrow = { ...style, columns }
      const written: Array<string> = []
      let state = Progress.initial(0)
      // the first tick, before any event: `connecting · 7 ms elapsed` (two rows when 20 wide)
      const tick = Progress.live(narrow, state, undefined, 7)
      written.push(tick.text)
      state = tick.state
      assert.strictEqual(state.blockLines, columns === 20 ? 2 : 1)
      // the sim's warning on stderr: the block comes off the screen, then is drawn again under it
      const around = Progress.around(narrow, state, 9)
      assert.strictEqual(around.before, `\x1b[${state.blockLines}F\x1b[J`)
      assert.include(around.after, "connecting · 9 ms elapsed")
      written.push(around.before, `${warning}\n`, around.after)
      state = around.state
      const next = Progress.live(narrow, state, connected, 20)
      written.push(next.text)
      const shown = screenAfter(written, columns).join("\n")
      assert.strictEqual(
        shown,
        screenAfter(
          [`${warning}\n`, "✓ connected to sim as deployment m 20 ms\n", "  connecting · 20 ms elapsed\n"],
          columns
        ).join("\n"),
        shown
      )
      // written under the block instead, the warning is what the rewind erases: the old clock stays
      const under = screenAfter(
        [tick.text, `${warning}\n`, Progress.live(narrow, tick.state, connected, 20).text],
        columns
      )
      assert.include(under.join(""), "connecting · 7 ms elapsed")
      assert.notInclude(under.join(""), "starting a fresh sim")
    }
    // once the block is final, nothing is written around the lines
    const done = { ...Progress.initial(0), done: true }
    assert.deepStrictEqual(Progress.around(style, done, 5), { before: "", after: "", state: done })
  })

  it("a server placed elsewhere (a batch job): the preflight line says the placement's checks, never the login node's GPUs; its states are named by what runs it", () => {
    const facts: Launch.PreflightFacts = {
      python: "/env/bin/python",
      pythonVersion: "3.12.3",
      engine: "sglang",
      engineVersion: "0.5.11",
      gpus: undefined,
      port: 30000,
      portChecked: false,
      runtime: { description: "the Python environment /env", summary: undefined },
      placement: {
        description: "a Slurm job from login1 (partition gpu)",
        summary: "Slurm partition gpu: 2 node(s) with 8 gpu GPUs in service for 2, time limit 8:00:00"
      },
      model: { path: "/m", architecture: "Qwen3_5ForConditionalGeneration" },
      busyGpus: [],
      flags: { version: "0.5.11", source: "shipped" },
      rulesVerified: true,
      warnings: []
    }
    const [line] = Progress.lines({ live: false, color: false }, { _tag: "Preflight", facts, elapsedMs: 12 })
    assert.include(line, "Slurm partition gpu: 2 node(s) with 8 gpu GPUs in service")
    assert.notInclude(line, "no GPUs")
    assert.notInclude(line, "port 30000 free")
    const onHost = Progress.lines(
      { live: false, color: false },
      {
        _tag: "Preflight",
        facts: { ...facts, gpus: [], portChecked: true, placement: { description: "", summary: undefined } },
        elapsedMs: 12
      }
    )[0]
    assert.include(onHost, "no GPUs, port 30000 free")
    const server = {
      placement: "slurm",
      label: "Slurm job 12",
      started: "submitted Slurm job 12",
      ids: { job: "12" }
    }
    const [spawned] = Progress.lines(
      { live: false, color: false },
      {
        _tag: "Spawned",
        attempt: 1,
        server,
        runDir: "/r",
        logPath: "/r/log",
        commandLine: "python -m sglang.launch_server"
      }
    )
    assert.include(spawned, "▶ submitted Slurm job 12: python -m sglang.launch_server")
    assert.deepStrictEqual(
      Progress.lines(
        { live: false, color: false },
        { _tag: "PlacementState", server: "Slurm job 12", state: "PENDING (Resources)", elapsedMs: 1500 }
      ),
      ["    Slurm job 12: PENDING (Resources) 1.5 s"]
    )
  })

  it("the host's own check and a rank's pull speak of the deployment's engine and rank", () => {
    const plainStyle = { live: false, color: false }
    const [checked] = Progress.lines(plainStyle, {
      _tag: "RemoteChecked",
      engine: "vLLM",
      elapsedMs: 800,
      reason: "rules-unverified"
    })
    assert.include(checked, "the host's vLLM accepts the flags (its own validation")
    assert.notInclude(checked, "SGLang")
    const [pulling] = Progress.lines(plainStyle, {
      _tag: "Preparing",
      step: "pulling vllm/vllm-openai:v0.13.0",
      detail: "Downloading 12MB/1.2GB",
      elapsedMs: 2000,
      rank: { rank: 1, host: "node-b" }
    })
    assert.include(pulling, "[rank 1 on node-b] pulling vllm/vllm-openai:v0.13.0: Downloading")
  })
})
