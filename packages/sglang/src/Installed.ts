/**
 * The SGLang a host has, found the way a launch finds it (the host's runtime: a Python
 * environment, configured or discovered) with the flags of exactly that install (`HostFlags`):
 * what `mlops flags --host` lists and what the upgrade check starts from, so they agree with
 * `launch` and `check --host` on the interpreter and the version.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Preflight from "@mlops/serve/Preflight"
import type { Spec } from "@mlops/serve/Runtime"
import * as Runtimes from "@mlops/serve/Runtimes"
import { Effect } from "effect"
import * as HostFlags from "./HostFlags.js"
import { engine } from "./SglangEngine.js"

/**
 * Connect to `host`, locate its SGLang with the host's runtime (`runtime`: what `--python`
 * gives, default as a launch's) and read its flags.
 *
 * @category reading
 */
export const onHost = Effect.fn("Installed.onHost")(function* (o: {
  readonly host: string
  readonly runtime?: Spec
  readonly env?: Readonly<Record<string, string>>
  /** Read the host's parser even when mlops ships this version. */
  readonly fromHost?: boolean
}) {
  const conn = yield* (yield* ConnectionPool).get(o.host)
  const runtime = yield* Runtimes.resolve(conn.host, o.runtime)
  const env = o.env ?? {}
  const { located } = yield* runtime.locate(conn, { engines: [engine], env })
  const found = yield* HostFlags.forHost(
    Preflight.flagsRequest(conn, { runtime, located, env, flagsFromHost: o.fromHost === true })
  )
  return { ...found, version: located.engineVersion, located, form: runtime.form }
})
