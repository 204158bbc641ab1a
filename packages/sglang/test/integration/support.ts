/**
 * The real-sshd setup shared by the end-to-end test and `bench/launch.ts`: the stand-in SGLang
 * installed in a throwaway venv, a test sshd on 127.0.0.1 serving it as host `testhost`, the
 * live connection layer, and the story's command lines.
 */
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import { Effect, Layer } from "effect"
import * as TestSlurm from "../../../core/test/support/Slurm.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import { mambaFix, storyArgv, storyModelPath, tripleFix } from "../support/story.js"
import * as Standin from "./standin/install.js"

/** The host alias the test sshd answers to. */
export const alias = "testhost"

/** The stand-in installed and served by a test sshd, for the scope. */
export const startHost = Effect.gen(function* () {
  const standin = yield* Standin.install
  standin.writeHostsFile(alias)
  const sshd = yield* Sshd.start({ extraConfig: standin.sshdConfig })
  return { standin, sshd }
})

/** A real Slurm cluster whose login node is a test sshd serving the stand-in (its hosts.json written for `alias`, without Slurm settings). */
export const startCluster = Effect.gen(function* () {
  const standin = yield* Standin.install
  standin.writeHostsFile(alias)
  const slurm = yield* TestSlurm.start({ minJobAge: 30 })
  const sshd = yield* Sshd.start({
    extraConfig: TestSlurm.withSetEnv(standin.sshdConfig, [`SLURM_CONF=${slurm.confPath}`])
  })
  return { standin, sshd, slurm }
})

/** The live ssh layer (pool + hosts) for that sshd and the stand-in's hosts.json. */
export const liveLayer = (host: { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd }) =>
  ConnectionPool.layer().pipe(
    Layer.provideMerge(Hosts.layer({ sshConfig: host.sshd.sshConfigPath, mlopsHome: host.standin.mlopsHome }))
  )

/** A port nothing listens on right now. */
export const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** The story's command (both problems) for the stand-in's model directory. */
export const story = (modelPath: string): Array<string> =>
  storyArgv.map((word) => (word === storyModelPath ? modelPath : word))

/** The story's command with both fixes, on `port`. */
export const fixedStory = (modelPath: string, port: number): Array<string> => [
  ...story(modelPath),
  "--port",
  String(port),
  ...mambaFix,
  ...tripleFix
]

/** The stand-in's environment: phase pacing and the timing stamps benches read. */
export const standinEnv = (standin: Standin.Standin, phaseSeconds = "0.02") => ({
  STANDIN_PHASE_SECONDS: phaseSeconds,
  STANDIN_STAMP_FILE: standin.stampFile
})

/** Where a deployment of this name keeps its files (the test host is this machine; its stateDir is the stand-in's). */
export const deploymentDir = (standin: Standin.Standin, name: string): string =>
  path.join(standin.stateDir, "deployments", name)

/** Remove a deployment's on-host directory. */
export const removeDeployment = (standin: Standin.Standin, name: string): void =>
  fs.rmSync(deploymentDir(standin, name), { recursive: true, force: true })
