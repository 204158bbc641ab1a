/**
 * One deployment across hosts, every rank from an image: each host a network namespace with its
 * own sshd and its own Docker Engine started inside that namespace (so a `--network host`
 * container lives on that host's network, as on two machines), the stand-in SGLang in an image
 * copied from node-a's engine to node-b's (`docker save` / `docker load`: the same image id), and
 * each host's stand-in `nvidia-smi` seeing only its own engine's containers.
 *
 * Ready on two hosts (each rank a container on its own host's engine, meeting at node-a's
 * address); stop leaves no container and no GPU memory on either. The same with podman, which
 * has no daemon: the container runs in the namespace of the ssh session that starts it, with
 * the host's own storage and CDI GPUs. node-b's image under the same
 * name but another id: refused before anything starts, naming both ids. The image missing on
 * node-b (pull `never` there): refused by node-b's own preparation, nothing started on node-a.
 * Each daemon lives in a namespace whose only route is the test's bridge: nothing it does can
 * leave this machine (its guard proxy, on 127.0.0.1 of the root namespace, is not reachable from
 * there, so a pull would fail at once). Needs root, iproute2 and `docker.io runc`.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as ContainerPlacement from "@mlops/serve/ContainerPlacement"
import type * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import { Effect, Exit, Stream } from "effect"
import * as CoreCluster from "../../../core/test/support/Cluster.js"
import * as Containers from "../../../core/test/support/Containers.js"
import * as Serving from "../support/serving.js"
import { installInImage } from "./standin/image.js"
import * as Standin from "./standin/install.js"

const IMAGE = "mlops-test/sglang:v0.5.11"
const env = { STANDIN_PHASE_SECONDS: "0.02" }

/** node-b's image: the same as node-a's (saved and loaded), another build under the same name, or none. */
type NodeBImage = "same" | "other" | "none"

/** A host's container engine: a Docker Engine started in its namespace, or podman (daemonless: it runs where the session runs) with its own storage. */
type Tool = "docker" | "podman"
type Engine = Containers.Target & { readonly dir: string }

/**
 * Two hosts, each with a container engine of its own; node-a's image built there, node-b's
 * as asked. hosts.json runs every launch on them from the image (node-b never pulls).
 */
const containerCluster = (nodeB: NodeBImage, tool: Tool = "docker") =>
  Effect.gen(function* () {
    const standin = yield* Standin.install
    const contents = yield* installInImage()
    const engines: Array<Engine> = []
    const images: Array<string> = []
    const cluster = yield* CoreCluster.on(2, standin, (host, index, gpuDir) =>
      Effect.gen(function* () {
        const docker: Engine =
          tool === "docker"
            ? yield* Containers.startDocker({ gpuHook: true, namespace: host.name })
            : yield* Containers.podmanEnv()
        engines.push(docker)
        if (index === 0) {
          const image = yield* Containers.buildImage(docker, {
            name: IMAGE,
            packages: contents.packages,
            env: contents.env,
            labels: contents.labels
          })
          images.push(image.id)
        } else if (nodeB === "same") {
          const tar = path.join(engines[0]!.dir, "image.tar")
          yield* Containers.runOk(engines[0]!, ["save", "-o", tar, IMAGE])
          yield* Containers.runOk(docker, ["load", "-i", tar])
          fs.rmSync(tar, { force: true })
        } else if (nodeB === "other") {
          const image = yield* Containers.buildImage(docker, {
            name: IMAGE,
            packages: contents.packages,
            // another build of the "same" release: its id differs
            env: { ...contents.env, STANDIN_BUILD: "node-b" },
            labels: contents.labels
          })
          images.push(image.id)
        }
        // this host's nvidia-smi counts this host's engine's containers only
        fs.writeFileSync(path.join(gpuDir, "containers"), `${docker.dir}\n`)
        return {
          entry: { image: IMAGE, runtime: tool, ...(index === 1 ? { pull: "never" } : {}) },
          env: docker.env
        }
      })
    )
    return { cluster, engines, images }
  })

/** The containers of a deployment (any state) on one host's engine, by mlops' label. */
const containersOf = (engine: Engine, name: string) =>
  Effect.map(
    Containers.runOk(engine, [
      "ps",
      "-a",
      "--filter",
      `label=${ContainerPlacement.deploymentLabel}=${name}`,
      "--format",
      "{{.ID}}"
    ]),
    (out) => out.split("\n").filter((line) => line.trim() !== "")
  )

/**
 * What host `index`'s stand-in nvidia-smi says processes hold, as that host sees it: in its
 * namespace, with its GPU registry mounted where the venv's is (as its sshd has it).
 */
const gpuApps = (cluster: CoreCluster.Cluster<Standin.Standin>, index: number): ReadonlyArray<string> =>
  execFileSync(
    "ip",
    [
      "netns",
      "exec",
      cluster.hosts[index]!.name,
      "unshare",
      "-m",
      "--propagation",
      "private",
      "sh",
      "-c",
      'mount --bind "$1" "$2" && exec "$3" --query-compute-apps=pid,used_memory --format=csv,noheader,nounits',
      "sh",
      cluster.gpuDirs[index]!,
      path.join(cluster.standin.venv, "standin-gpu"),
      path.join(cluster.standin.bin, "nvidia-smi")
    ],
    { encoding: "utf8" }
  )
    .split("\n")
    .filter((line) => line.trim() !== "")

const argvOf = (cluster: CoreCluster.Cluster<Standin.Standin>) => [
  "--model-path",
  cluster.standin.modelPath,
  "--tp",
  "4"
]

describe("a deployment across hosts from one image (a container engine of its own on each host)", () => {
  const readyOnTwoHosts = (tool: Tool) =>
    Effect.gen(function* () {
      const { cluster, engines } = yield* containerCluster("same", tool)
      yield* Effect.gen(function* () {
        const name = "imaged"
        const events: Array<Launch.LaunchProgress> = []
        yield* Serving.launch({
          host: "node-a",
          hosts: cluster.aliases,
          name,
          argv: argvOf(cluster),
          env
        }).pipe(Stream.runForEach((e) => Effect.sync(() => events.push(e))))
        const launched = events.at(-1)
        assert.strictEqual(launched?._tag, "Launched", JSON.stringify(events.at(-1)))
        const planned = events.find((e) => e._tag === "RanksPlanned")
        assert.strictEqual(
          planned?._tag === "RanksPlanned" ? planned.rendezvous.address : "",
          cluster.hosts[0]!.address
        )
        // one container per host, on that host's own engine, on that host's network
        for (const engine of engines) {
          const ids = yield* containersOf(engine, name)
          assert.lengthOf(ids, 1)
          const [inspected] = JSON.parse(yield* Containers.runOk(engine, ["inspect", ids[0]!])) as Array<{
            readonly State: { readonly Status: string }
            readonly HostConfig: { readonly NetworkMode: string }
            readonly Config: { readonly Cmd: ReadonlyArray<string> }
          }>
          assert.strictEqual(inspected?.State.Status, "running")
          assert.strictEqual(inspected?.HostConfig.NetworkMode, "host")
        }
        // each host's nvidia-smi sees its own rank's two GPU processes
        assert.lengthOf(gpuApps(cluster, 0), 2)
        assert.lengthOf(gpuApps(cluster, 1), 2)
        // both ranks' records name the image id they run
        for (const dir of cluster.stateDirs) {
          const meta = JSON.parse(fs.readFileSync(path.join(dir, "deployments", name, "meta.json"), "utf8"))
          assert.match(String(meta.install), /^sha256:[0-9a-f]{64}$/)
        }

        const stopped = yield* Stop.stop("node-a", name)
        assert.lengthOf(stopped.ranks, 2)
        for (const engine of engines) assert.deepStrictEqual(yield* containersOf(engine, name), [])
        assert.deepStrictEqual([gpuApps(cluster, 0), gpuApps(cluster, 1)], [[], []])
      }).pipe(Effect.provide(cluster.layer))
    }).pipe(Effect.scoped)

  it.live(
    "docker: ready on two hosts, each rank a container on its own host's engine meeting at node-a's address; stop leaves no container and no GPU memory on either",
    () => readyOnTwoHosts("docker"),
    240_000
  )

  it.live(
    "podman: ready on two hosts, each rank a container in its host's namespace (CDI GPUs) meeting at node-a's address; stop leaves no container and no GPU memory on either",
    () => readyOnTwoHosts("podman"),
    240_000
  )

  it.live(
    "another image id on node-b under the same name: refused before anything starts, naming both ids; the image missing on node-b: node-b's preparation refuses, nothing started on node-a",
    () =>
      Effect.gen(function* () {
        const { cluster, engines, images } = yield* containerCluster("other")
        yield* Effect.gen(function* () {
          const name = "mixed"
          const exit = yield* Effect.exit(
            Serving.launchDeployment({
              host: "node-a",
              hosts: cluster.aliases,
              name,
              argv: argvOf(cluster),
              env
            })
          )
          if (!Exit.isFailure(exit) || exit.cause._tag !== "Fail") return assert.fail(String(exit))
          const error = exit.cause.error
          assert.strictEqual(error._tag, "CrossNodeProblems", error.message)
          if (error._tag !== "CrossNodeProblems") return
          const differ = error.problems.find((p) => p.kind === "InstallsDiffer")
          assert.isDefined(differ, error.message)
          assert.notStrictEqual(images[0], images[1])
          for (const id of images) assert.include(differ?.text ?? "", id)
          for (const engine of engines) assert.deepStrictEqual(yield* containersOf(engine, name), [])

          // node-b without the image, and told never to pull
          yield* Containers.runOk(engines[1]!, ["rmi", IMAGE])
          const missing = yield* Effect.exit(
            Serving.launchDeployment({
              host: "node-a",
              hosts: cluster.aliases,
              name,
              argv: argvOf(cluster),
              env
            })
          )
          if (!Exit.isFailure(missing) || missing.cause._tag !== "Fail") return assert.fail(String(missing))
          assert.strictEqual(missing.cause.error._tag, "ImageNotFound", missing.cause.error.message)
          assert.include(missing.cause.error.message, "node-b")
          for (const [i, engine] of engines.entries()) {
            assert.deepStrictEqual(yield* containersOf(engine, name), [])
            assert.isFalse(fs.existsSync(path.join(cluster.stateDirs[i]!, "deployments", name)))
          }
        }).pipe(Effect.provide(cluster.layer))
      }).pipe(Effect.scoped),
    240_000
  )
})
