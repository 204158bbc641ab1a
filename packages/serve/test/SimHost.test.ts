/**
 * The sim's interpreters print JSON as Python's `json.dumps` does, checked against the real
 * python3: the discovery script matches on Python's spacing.
 */
import { execFileSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { pythonJson } from "../src/SimHost.js"

const dumpsOf = (value: unknown): string =>
  execFileSync(
    "python3",
    ["-c", "import json, sys; print(json.dumps(json.loads(sys.argv[1])))", JSON.stringify(value)],
    {
      encoding: "utf8"
    }
  ).trimEnd()

describe("SimHost.pythonJson", () => {
  it("writes what Python's json.dumps writes", () => {
    const values: ReadonlyArray<unknown> = [
      {
        executable: "/root/ml-env/bin/python",
        version: "3.12.3",
        found: true,
        packageVersion: "0.5.11",
        versionSource: "metadata",
        location: null,
        fileHashes: { "srt/server_args.py": "ab".repeat(32) }
      },
      { nested: [1, 2.5, { a: [] }], empty: {}, quote: 'say "hi"\n', unicode: "naïve ☃ 😀" },
      [],
      "x"
    ]
    for (const value of values) assert.strictEqual(pythonJson(value), dumpsOf(value))
  })
})
