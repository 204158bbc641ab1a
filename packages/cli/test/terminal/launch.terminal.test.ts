/**
 * `mlops launch` on `sim` in a real terminal (tmux, 160×50), read off the screen as a person
 * sees it: while loading, at ready, after a failure (preflight and runtime), with the
 * colours on and off, and piped.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import {
  clockLine,
  clockSeconds,
  count,
  fast,
  lastOutputLine,
  lineIndex,
  linesOf,
  mlops,
  readyFlags,
  storyFlags,
  terminals
} from "./support.js"

const use = terminals()

describe("launch in a terminal", () => {
  it("while loading: one live block under the permanent lines, its clock running", async () => {
    const term = use()
    mlops(term, `launch --host sim --env MLOPS_SIM_HANG=cuda-graph -- ${readyFlags}`)
    // the sim hangs when CUDA graph capture would start: KV cache stays the running phase
    const loading = await term.waitFor("the kv-cache phase running", (s) => /… kv-cache/.test(s))
    assert.strictEqual(count(loading, clockLine), 1, loading)
    // the block is the last thing on screen: phases, then the clock line
    assert.match(lastOutputLine(loading), clockLine, loading)
    assert.isBelow(lineIndex(loading, /UserWarning/), lineIndex(loading, /✓ weights-loading/), loading)
    assert.strictEqual(count(loading, /^ {4}… /), 1, "one phase is running")
    const first = clockSeconds(loading)!
    const later = await term.waitFor("the clock moving on", (s) => (clockSeconds(s) ?? 0) >= first + 1)
    assert.strictEqual(count(later, clockLine), 1, later)
    term.keys("C-c")
    await term.finished()
  })

  it("at ready: the phases, then the server's notes, then the result last; no clock left", async () => {
    const term = use()
    mlops(term, `launch --host sim -- ${readyFlags}`)
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 0, transcript)
    assert.strictEqual(count(transcript, clockLine), 0, transcript)
    assert.strictEqual(count(transcript, /^ {4}… /), 0, transcript)
    const lastPhase = lineIndex(transcript, /✓ ready\s/)
    const capacity = lineIndex(transcript, /capacity: \d+ tokens/)
    const listening = lineIndex(transcript, /listening on http/)
    const health = lineIndex(transcript, /✓ GET \/health 200/)
    const result = lineIndex(transcript, /qwen3\.6-27b is ready on sim/)
    assert.isAbove(lastPhase, 0, transcript)
    assert.isTrue(
      lastPhase < capacity && capacity < listening && listening < health && health < result,
      transcript
    )
    assert.strictEqual(count(transcript, /✓ starting\s/), 1, "each phase once")
    assert.match(lastOutputLine(transcript), /stop: mlops stop --host sim --name qwen3\.6-27b/)
  })

  it("--no-preflight with a warning from the sim: the first live line is not left above the result", async () => {
    const term = use()
    // a sim state written by another mlops version: the sim says on stderr that it starts fresh,
    // while the first live line (`connecting · 7 ms elapsed`) is on screen
    term.run(`mkdir -p "$MLOPS_HOME/sim" && echo '{"version":0}' > "$MLOPS_HOME/sim/state.json"`)
    await term.finished()
    await term.clear()
    mlops(term, `launch --host sim --no-preflight -- ${readyFlags}`)
    const { code } = await term.finished()
    const screen = term.screen()
    assert.strictEqual(code, 0, screen)
    assert.strictEqual(count(screen, /elapsed/), 0, `no live status line left:\n${screen}`)
    assert.strictEqual(count(screen, /^ {4}… /), 0, screen)
    // the warning stays, once, above the launch
    const warning = lineIndex(screen, /^mlops: ignoring the sim state in .* starting a fresh sim$/)
    const connected = lineIndex(screen, /^✓ connected to sim as deployment qwen3\.6-27b/)
    const started = lineIndex(screen, /^▶ started pid \d+/)
    const result = lineIndex(screen, /^✓ qwen3\.6-27b is ready on sim/)
    assert.strictEqual(count(screen, /ignoring the sim state/), 1, screen)
    assert.isTrue(0 < warning && warning < connected && connected < started && started < result, screen)
    assert.match(linesOf(screen)[result + 1]!, /^ {4}url: http:\/\/127\.0\.0\.1:30000$/, screen)
    assert.match(lastOutputLine(screen), /stop: mlops stop --host sim --name qwen3\.6-27b/, screen)
  })

  it("a preflight failure: the error once, last, no stale block", async () => {
    const term = use()
    mlops(term, `launch --host sim -- ${storyFlags}`)
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 3, transcript)
    assert.strictEqual(count(transcript, clockLine), 0, transcript)
    assert.strictEqual(count(transcript, /would refuse this launch/), 1, transcript)
    assert.match(lastOutputLine(transcript), /^ {4}mlops launch --host sim -- .*--speculative-num-steps 1/)
  })

  it("a runtime failure (--no-preflight): the phases reached, the error once, last", async () => {
    const term = use()
    mlops(term, `launch --host sim --no-preflight -- ${storyFlags}`)
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 5, transcript)
    assert.strictEqual(count(transcript, clockLine), 0, transcript)
    assert.strictEqual(count(transcript, /^ {4}… /), 0, "no phase left running")
    assert.strictEqual(count(transcript, /mamba scheduler strategy does not allow/), 1, transcript)
    assert.strictEqual(
      count(transcript, /fix: use --mamba-scheduler-strategy extra_buffer/i),
      1,
      "the fix once"
    )
    assert.isBelow(
      lineIndex(transcript, /✗ starting\s/),
      lineIndex(transcript, /^✗ .*MissingSchedulerStrategy/)
    )
    assert.match(lastOutputLine(transcript), /--mamba-scheduler-strategy extra_buffer$/)
  })

  it("colour on a terminal; none with NO_COLOR=1 or when piped", async () => {
    const coloured = use()
    mlops(coloured, `launch --host sim ${fast} -- ${readyFlags}`)
    await coloured.finished()
    assert.include(coloured.screenWithEscapes(), "\x1b[")
    coloured.close()

    const plain = use({ NO_COLOR: "1" })
    mlops(plain, `launch --host sim ${fast} -- ${readyFlags}`)
    const { code } = await plain.finished()
    assert.strictEqual(code, 0)
    assert.notInclude(plain.screenWithEscapes(), "\x1b[", plain.screenWithEscapes())
    plain.close()

    const piped = use()
    const saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-term-piped-")), "out.txt")
    mlops(piped, `launch --host sim ${fast} -- ${readyFlags} 2>&1 | tee ${saved}`)
    const ran = await piped.finished()
    const text = fs.readFileSync(saved, "utf8")
    assert.notInclude(text, "\x1b", text)
    assert.notInclude(piped.screenWithEscapes(), "\x1b[")
    assert.include(text, "qwen3.6-27b is ready on sim")
    assert.strictEqual(count(text, /^ {2}· weights-loading \+/), 1, "plain mode: one line per phase")
    assert.strictEqual(count(ran.transcript, /^ {2}· weights-loading \+/), 1, ran.transcript)
    fs.rmSync(path.dirname(saved), { recursive: true, force: true })
  })
})
