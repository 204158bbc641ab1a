import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as StateFile from "../../../src/internal/sim/stateFile.js"

const empty = { version: 1, savedAtMs: 5, nextPid: 1001, files: [], servers: [] }

describe("sim state file", () => {
  it("parse: a valid state, or a one-line reason for what is unusable", () => {
    assert.isTrue(Either.isRight(StateFile.parse(JSON.stringify(empty))))
    assert.deepStrictEqual(StateFile.parse("{not json"), Either.left("not valid JSON"))
    assert.deepStrictEqual(
      StateFile.parse(JSON.stringify({ ...empty, version: 99 })),
      Either.left("unknown version 99 (expected 1)")
    )
    assert.deepStrictEqual(StateFile.parse("[]"), Either.left("unknown version null (expected 1)"))
    const bad = StateFile.parse(JSON.stringify({ ...empty, servers: [{ pid: "x" }] }))
    assert.isTrue(Either.isLeft(bad))
    if (Either.isLeft(bad)) {
      assert.match(bad.left, /^unexpected content at servers\.0/)
      assert.notInclude(bad.left, "\n")
    }
  })

  it.effect("write is atomic (no temp file left) and read gets the state back; missing is Missing", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sim-file-"))
      const file = path.join(dir, "sim", "state.json")
      assert.deepStrictEqual(yield* StateFile.read(file), { _tag: "Missing" })
      const files = [{ path: "/root/a", data: new Uint8Array([1, 2, 3]), mtimeMs: 7, mode: 0o644 }]
      yield* StateFile.write(file, { ...empty, version: 1, files, servers: [] })
      assert.deepStrictEqual(fs.readdirSync(path.dirname(file)), ["state.json"])
      const loaded = yield* StateFile.read(file)
      assert.strictEqual(loaded._tag, "Loaded")
      if (loaded._tag === "Loaded") assert.deepStrictEqual([...loaded.state.files[0]!.data], [1, 2, 3])
      fs.writeFileSync(file, "garbage")
      assert.deepStrictEqual(yield* StateFile.read(file), {
        _tag: "Ignored",
        reason: "not valid JSON",
        text: "garbage"
      })
    })
  )
})
