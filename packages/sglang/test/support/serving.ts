/**
 * The serving layer's programs with SGLang as the engine: what SGLang's tests drive (the
 * programs themselves live in @mlops/serve and take the engine as an argument).
 */
import * as Diagnose from "@mlops/serve/Diagnose"
import * as Launch from "@mlops/serve/Launch"
import * as Logs from "@mlops/serve/Logs"
import type { ServerRef } from "@mlops/serve/Placement"
import * as Status from "@mlops/serve/Status"
import type { Stream } from "effect"
import { engine } from "../../src/SglangEngine.js"

export { engine }
export const engines = [engine]

export type Request = Omit<Launch.LaunchRequest, "engine"> & {
  readonly engine?: Launch.LaunchRequest["engine"]
}
const withEngine = (request: Request): Launch.LaunchRequest => ({ engine, ...request })

export const launch = (request: Request) => Launch.launch(withEngine(request))
export const launchDeployment = (request: Request) => Launch.launchDeployment(withEngine(request))
export const defaultName = (argv: ReadonlyArray<string>) => Launch.defaultName(engine, argv)

export const statusOfHost = (host: string, options: { readonly name?: string } = {}) =>
  Status.ofHost(host, engines, options)
export const statusOfHosts = (hosts?: ReadonlyArray<string>) => Status.ofHosts(engines, hosts)

export const followLogs = (host: string, name: string, options: { readonly lines?: number } = {}) =>
  Logs.follow(host, name, engines, options)

const logs = [engine.logs]
export const diagnoseText = (source: string, log: string, exit?: Parameters<typeof Diagnose.text>[3]) =>
  Diagnose.text(source, log, logs, exit)
export const diagnoseBytes = <E, R>(source: string, chunks: Stream.Stream<Uint8Array, E, R>) =>
  Diagnose.bytes(source, chunks, logs)
export const diagnoseLocalFile = (path: string) => Diagnose.localFile(path, logs)
export const diagnoseRemoteFile = (host: string, path: string) => Diagnose.remoteFile(host, path, logs)
export const diagnoseDeployment = (host: string, name: string) => Diagnose.deployment(host, name, logs)

/** The pid of a server placed as a detached process group (its `ids`). */
export const pidOf = (placed: { readonly server: ServerRef }): number => {
  const pid = placed.server.ids.pid
  if (typeof pid !== "number") throw new Error(`${placed.server.label} has no pid`)
  return pid
}
