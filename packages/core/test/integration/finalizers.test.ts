/**
 * A pool used inside a finalizer (a program's clean-up stopping what it launched): the commands
 * run and the pool's connections close. A finalizer runs uninterruptibly, and fibers forked
 * there inherit that, so a connection whose background fibers could not be interrupted would
 * hang the scope's close for ever.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { acquire } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as LivePool from "../support/LivePool.js"
import * as Sshd from "../support/Sshd.js"
import { launcherOf } from "../support/transports.js"

layer(Sshd.layer(), { excludeTestServices: true, timeout: "60 seconds" })("pool inside a finalizer", (it) => {
  for (const persist of ["10 minutes", 0] as const)
    it.scoped(`commands run and the connections close (helper persist ${persist})`, () =>
      Effect.gen(function* () {
        const outputs: Array<string> = []
        const started = performance.now()
        yield* Effect.scoped(
          Effect.addFinalizer(() =>
            Effect.gen(function* () {
              const conn = yield* acquire("testhost")
              outputs.push((yield* conn.exec(cmd(["echo", "from a finalizer"]))).stdout)
              // through the helper: its start and hold ran inside the finalizer too
              outputs.push(yield* launcherOf(conn))
            }).pipe(Effect.provide(LivePool.layer(persist)), Effect.orDie)
          )
        )
        assert.strictEqual(outputs[0], "from a finalizer\n")
        assert.match(outputs[1] ?? "", /^python3/)
        // closing took about a connection's set-up, not the test's timeout
        assert.isBelow(performance.now() - started, 20_000)
      })
    )
})
