/**
 * `mlops run` in a real terminal (tmux, 160×50) on the sim: the job's own output between
 * mlops' lines, its end last; a crash shown with its classified failure and fix once, last; Ctrl-C
 * leaves the job running with the commands to follow and stop it, which paste and work; `pull`
 * brings back what a job wrote, then only what changed.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { count, lastOutputLine, lineIndex, linesOf, mlops, terminals } from "./support.js"

const use = terminals()

describe("mlops run in a terminal", () => {
  it("the job's output between mlops' lines, its GPU, its end last", async () => {
    const term = use()
    mlops(term, "run --host sim --gpus 1 -- torchrun train.py --steps 3")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 0, transcript)
    const started = lineIndex(transcript, /^✓ running on GPU 0 /)
    const firstStep = lineIndex(transcript, /^\{'loss': /)
    assert.isAbove(
      started,
      lineIndex(transcript, /^✓ started pid \d+ in .*\/jobs\/train: torchrun train\.py --steps 3$/)
    )
    assert.isAbove(firstStep, started)
    assert.strictEqual(count(transcript, /^\{'loss': /), 3)
    assert.match(lastOutputLine(transcript), /^✓ train succeeded \d+\.\d s$/)
  })

  it("a crash: the failure with its evidence and fix, once, last", async () => {
    const term = use()
    mlops(term, "run --host sim --gpus 1 --name oom -- torchrun train.py --steps 4 --fail oom --fail-at 2")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 5, transcript)
    assert.strictEqual(count(transcript, /\[JobFailed\]/), 1, transcript)
    assert.strictEqual(count(transcript, /\[OOM\]/), 1, transcript)
    assert.isAbove(lineIndex(transcript, /\[OOM\]/), lineIndex(transcript, /ChildFailedError/))
    assert.isAbove(lineIndex(transcript, /^ {2}fix: /), lineIndex(transcript, /\[OOM\]/))
    assert.strictEqual(lastOutputLine(transcript), "  log: mlops logs --host sim --name oom")
  })

  it("Ctrl-C: the job keeps running; the commands printed paste and work", async () => {
    const term = use()
    mlops(term, "run --host sim --gpus 1 --name long -- torchrun train.py --steps 400")
    await term.waitFor("a training step", (s) => /\{'loss': /.test(s))
    term.keys("C-c")
    const { code, transcript } = await term.finished()
    assert.strictEqual(code, 130, transcript)
    const said = lineIndex(transcript, /^interrupted: job long \(pid \d+\) keeps running on sim$/)
    assert.isAtLeast(said, 0, transcript)
    const stop = linesOf(transcript)[said + 2]!
    assert.strictEqual(linesOf(transcript)[said + 1], "  follow it: mlops logs --host sim --name long -f")
    assert.strictEqual(stop, "  stop it:   mlops stop --host sim --name long")
    await term.clear()
    term.run("mlops status --host sim")
    const status = await term.finished()
    assert.match(status.transcript, /long\s+running\s+0\s/)
    await term.clear()
    term.run(stop.replace(/^ {2}stop it: +/, ""))
    const stopped = await term.finished()
    assert.strictEqual(stopped.code, 0, stopped.transcript)
    assert.match(lastOutputLine(stopped.transcript), /^✓ job long stopped on sim \(terminated\); GPU 0 free$/)
  })

  it("pull: what the job wrote comes back under its name, then nothing twice", async () => {
    const into = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-pull-term-"))
    try {
      const term = use()
      mlops(
        term,
        "run --host sim --gpus 1 --name drafter -- torchrun train.py --steps 2 --output-dir out/drafter"
      )
      const ran = await term.finished()
      assert.strictEqual(ran.code, 0, ran.transcript)
      await term.clear()
      mlops(term, `pull --host sim --name drafter --to ${into} out`)
      const first = await term.finished()
      assert.strictEqual(first.code, 0, first.transcript)
      assert.match(
        lastOutputLine(first.transcript),
        /^✓ sim:\/root\/out → .*\/out: 2 of 2 file\(s\) fetched \(\d+ bytes\), 0 up to date$/
      )
      assert.isTrue(fs.existsSync(path.join(into, "out", "drafter", "config.json")))
      await term.clear()
      mlops(term, `pull --host sim --name drafter --to ${into} out`)
      const again = await term.finished()
      assert.match(lastOutputLine(again.transcript), /: 0 of 2 file\(s\) fetched \(0 bytes\), 2 up to date$/)
      await term.clear()
      mlops(term, `pull --host sim --name drafter --to ${into} checkpoints`)
      const missing = await term.finished()
      assert.strictEqual(missing.code, 2, missing.transcript)
      assert.strictEqual(count(missing.transcript, /\[PullSourceMissing\]/), 1, missing.transcript)
    } finally {
      fs.rmSync(into, { recursive: true, force: true })
    }
  })
})
