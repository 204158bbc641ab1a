/**
 * What the CLI says when things are not fine: an unreachable host is an error (never "no
 * deployments"), `logs -f` ends with how the deployment ended, Ctrl-C during a launch says
 * what keeps running and how to follow or stop it, and fixed commands never show a secret.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { mlops, session, story, storyFixes } from "./support/run.js"

/** A launch on sim that never gets ready (still starting whenever Ctrl-C comes), Ctrl-C after 5 s. */
const interruptedLaunch = (...options: ReadonlyArray<string>) => {
  const user = session()
  const ran = user.interrupted(
    "5 seconds",
    "launch",
    "--host",
    "sim",
    "--name",
    "q",
    ...options,
    "--env",
    "MLOPS_SIM_HANG=cuda-graph",
    "--",
    ...story,
    ...storyFixes
  )
  return Effect.map(ran, (result) => ({ user, ran: result }))
}

describe("honest output", () => {
  it.live("status of an unknown host: the error on stderr, exit 6", () =>
    Effect.gen(function* () {
      const ran = yield* mlops("status", "--host", "nope")
      assert.strictEqual(ran.code, ExitCode.Connection, ran.text)
      assert.notInclude(ran.text, "no deployments")
      assert.include(ran.stderr.join("\n"), "HostNotFound")
      const json = yield* mlops("status", "--host", "nope", "--json")
      assert.strictEqual(json.code, ExitCode.Connection)
      assert.include(json.stdout.join("\n"), '"_tag":"HostNotFound"')
    })
  )

  it.live(
    "status of every host with one unreachable: the others listed, the unreachable one on stderr, exit 6",
    () =>
      Effect.gen(function* () {
        // lab-box (ssh_config) points at a port nobody listens on
        const ran = yield* mlops("status")
        assert.strictEqual(ran.code, ExitCode.Connection, ran.text)
        assert.include(ran.stderr.join("\n"), "lab-box unreachable")
        assert.include(ran.stdout.join("\n"), "no deployments on the reachable hosts")
      })
  )

  it.live("logs -f of a deployment that crashed ends at once with how it ended", () =>
    Effect.gen(function* () {
      const user = session()
      const argv = ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "1"]
      const launched = yield* user.mlops(
        "launch",
        "--host",
        "sim",
        "--name",
        "oom",
        "--no-preflight",
        "--",
        ...argv
      )
      assert.strictEqual(launched.code, ExitCode.LaunchFailed, launched.text)
      const followed = yield* user.mlops("logs", "--host", "sim", "--name", "oom", "-f", "-n", "5")
      assert.strictEqual(followed.code, ExitCode.Ok, followed.text)
      assert.include(followed.stderr.join("\n"), "oom on sim exited: signal KILL — OOM")
    })
  )

  it.live("Ctrl-C during a launch: stderr says the server keeps running and how to follow or stop it", () =>
    Effect.gen(function* () {
      const { user, ran } = yield* interruptedLaunch()
      const err = ran.stderr.join("\n")
      assert.include(err, "keeps running on sim")
      assert.include(err, "mlops logs --host sim --name q -f")
      assert.include(err, "mlops stop --host sim --name q")
      const status = yield* user.mlops("status", "--host", "sim", "--json")
      assert.include(status.stdout.join("\n"), '"alive":true')
    })
  )

  it.live("Ctrl-C with --stop-on-interrupt: stderr confirms the server was stopped", () =>
    Effect.gen(function* () {
      const { user, ran } = yield* interruptedLaunch("--stop-on-interrupt")
      assert.include(ran.stderr.join("\n"), "was stopped on sim")
      const status = yield* user.mlops("status", "--host", "sim", "--json")
      assert.notInclude(status.stdout.join("\n"), '"alive":true')
    })
  )

  it.live("a fixed command shows --env values and secret flags as ***", () =>
    Effect.gen(function* () {
      const ran = yield* mlops(
        "launch",
        "--host",
        "sim",
        "--env",
        "HF_TOKEN=hf_cliSecretValue1",
        "--",
        ...story,
        "--api-key",
        "sk-cliSecretValue2"
      )
      assert.strictEqual(ran.code, ExitCode.RulesViolated, ran.text)
      assert.include(ran.text, "--env 'HF_TOKEN=***'")
      assert.include(ran.text, "--api-key '***'")
      assert.notInclude(ran.text, "hf_cliSecretValue1")
      assert.notInclude(ran.text, "sk-cliSecretValue2")
    })
  )

  it.live("after --auto-fix, the relaunch command it prints is already running when pasted", () =>
    Effect.gen(function* () {
      const user = session()
      const fixed = yield* user.mlops("launch", "--host", "sim", "--name", "q", "--auto-fix", "--", ...story)
      assert.strictEqual(fixed.code, ExitCode.Ok, fixed.text)
      const line = fixed.stdout.find((l) => l.includes("the same launch next time:"))
      assert.isDefined(line, fixed.text)
      const pasted = line!.slice(line!.indexOf("mlops ") + "mlops ".length).split(" ")
      assert.notInclude(pasted, "--auto-fix")
      const again = yield* user.mlops(...pasted)
      assert.strictEqual(again.code, ExitCode.Ok, again.text)
      assert.include(again.text, "already running with the same flags")
    })
  )
})
