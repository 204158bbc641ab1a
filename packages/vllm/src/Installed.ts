/**
 * The vLLM a host has, as a launch would find it (the host's runtime: its Python environment or
 * image), with its flags: a shipped snapshot near its version, or its own parser's (cached).
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Preflight from "@mlops/serve/Preflight"
import type { Spec } from "@mlops/serve/Runtime"
import * as Runtimes from "@mlops/serve/Runtimes"
import { Effect } from "effect"
import { VllmEngine } from "./Engine.js"
import * as HostFlags from "./HostFlags.js"

/** The host's vLLM and its flags. @category programs */
export const onHost = Effect.fn("VllmInstalled.onHost")(function* (o: {
  readonly host: string
  readonly runtime?: Spec
  readonly env?: Readonly<Record<string, string>>
  /** Read the host's parser even when a shipped snapshot is near its version. */
  readonly fromHost?: boolean
}) {
  const conn = yield* (yield* ConnectionPool).get(o.host)
  const runtime = yield* Runtimes.resolve(conn.host, o.runtime)
  const env = o.env ?? {}
  const { located } = yield* runtime.locate(conn, { engines: [VllmEngine], env })
  const found = yield* HostFlags.forHost(
    Preflight.flagsRequest(conn, { runtime, located, env, flagsFromHost: o.fromHost === true })
  )
  return { ...found, version: located.engineVersion, located }
})
