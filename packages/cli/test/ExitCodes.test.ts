import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ValidationError } from "@effect/cli"
import { assert, describe, it } from "@effect/vitest"
import { HostKeyMismatch } from "@mlops/core/Errors"
import { OOM } from "@mlops/serve/Failures"
import * as ExitCodes from "../src/ExitCodes.js"

const readme = fs.readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "README.md"),
  "utf8"
)

describe("ExitCodes", () => {
  it("maps failures by class", () => {
    const oom = new OOM({
      evidence: [],
      process: "TP1",
      phase: "kv-cache",
      reason: "CUDA out of memory",
      kind: "cuda-alloc"
    })
    assert.strictEqual(ExitCodes.fromFailure(oom), ExitCodes.ExitCode.LaunchFailed)
    const mismatch = new HostKeyMismatch({
      host: "h",
      port: 22,
      knownHostsFile: "/k",
      expectedFingerprints: ["SHA256:a"],
      actualFingerprint: "SHA256:b",
      fix: "ssh-keygen -R h"
    })
    assert.strictEqual(ExitCodes.fromFailure(mismatch), ExitCodes.ExitCode.Connection)
    assert.strictEqual(
      ExitCodes.fromFailure({ _tag: "LaunchRulesViolated" }),
      ExitCodes.ExitCode.RulesViolated
    )
    assert.strictEqual(ExitCodes.fromFailure({ _tag: "SomethingNew" }), ExitCodes.ExitCode.Unexpected)
    assert.strictEqual(ExitCodes.fromFailure("boom"), ExitCodes.ExitCode.Unexpected)
  })

  it("an @effect/cli parse error is usage (2), even where its tag names one of ours", () => {
    // @effect/cli's InvalidArgument shares its tag with the classifier's InvalidArgument (5)
    const cliError = ValidationError.invalidArgument({ _tag: "Empty" })
    assert.strictEqual(cliError._tag, "InvalidArgument")
    assert.strictEqual(ExitCodes.fromFailure(cliError), ExitCodes.ExitCode.Usage)
    assert.strictEqual(ExitCodes.fromFailure({ _tag: "InvalidArgument" }), ExitCodes.ExitCode.LaunchFailed)
  })

  it("every tag with a class is in the README's table, in its code's row", () => {
    const rows = readme.split("\n").filter((line) => /^\|\s*\d+\s*\|/.test(line))
    for (const tag of ExitCodes.knownTags) {
      const code = ExitCodes.fromFailure({ _tag: tag })
      const row = rows.find((line) => new RegExp(`^\\|\\s*${code}\\s*\\|`).test(line))
      assert.isDefined(row, `no README row for exit code ${code}`)
      assert.include(row!, `\`${tag}\``, `README row ${code} misses ${tag}`)
    }
  })
})
