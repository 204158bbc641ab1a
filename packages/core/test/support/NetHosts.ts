/**
 * Several test hosts with networks of their own: one Linux network namespace per host, each
 * joined to a bridge the test makes by a veth pair, with its own address on a private /24
 * (10.201.N.0/24, N picked per call so test files running at once do not meet). Processes
 * started in a namespace (`ip netns exec`, `Sshd.start({ namespace })`) see only its loopback
 * and its address: ranks that rendezvous really talk across a network. Needs root and
 * iproute2; everything is removed when the scope closes.
 *
 * ```ts
 * const [a, b] = yield* NetHosts.make(2)
 * const sshdA = yield* Sshd.start({ alias: "node-a", namespace: a })
 * ```
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { Data, Effect, type Scope } from "effect"

export class NetHostsError extends Data.TaggedError("NetHostsError")<{ readonly reason: string }> {
  override get message() {
    return `test network namespaces: ${this.reason}`
  }
}

/** One host: its namespace and its address on the bridge. */
export interface NetHost {
  /** The namespace's name (`ip netns exec <name> ...`). */
  readonly name: string
  readonly address: string
}

const ip = (...args: ReadonlyArray<string>) =>
  Effect.async<string, NetHostsError>((resume) => {
    execFile("ip", [...args], { timeout: 10_000 }, (error, stdout, stderr) =>
      error === null
        ? resume(Effect.succeed(stdout))
        : resume(
            Effect.fail(
              new NetHostsError({
                reason: `ip ${args.join(" ")}: ${stderr.trim() || error.message} (root and iproute2 are needed)`
              })
            )
          )
    )
  })

/** `count` namespaces on one bridge, in the scope; the bridge's own address is `.1` (this machine). */
export const make = (count: number): Effect.Effect<ReadonlyArray<NetHost>, NetHostsError, Scope.Scope> =>
  Effect.gen(function* () {
    // interface names are at most 15 characters
    const id = randomBytes(3).toString("hex")
    // a private /24 that exists only on this bridge and the namespaces made here: nothing beyond them is reached
    const subnet = `10.201.${randomBytes(1)[0]! % 250}`
    const bridge = `mlb${id}`
    yield* Effect.acquireRelease(
      Effect.zipRight(ip("link", "add", bridge, "type", "bridge"), ip("link", "set", bridge, "up")),
      () => Effect.ignore(ip("link", "del", bridge))
    )
    yield* ip("addr", "add", `${subnet}.1/24`, "dev", bridge)
    const hosts: Array<NetHost> = []
    for (let i = 0; i < count; i++) {
      const name = `mlops-${id}-${i}`
      const outside = `mlv${id}${i}`
      const inside = `mlp${id}${i}`
      const address = `${subnet}.${10 + i}`
      yield* Effect.acquireRelease(ip("netns", "add", name), () => Effect.ignore(ip("netns", "del", name)))
      yield* Effect.acquireRelease(ip("link", "add", outside, "type", "veth", "peer", "name", inside), () =>
        Effect.ignore(ip("link", "del", outside))
      )
      yield* ip("link", "set", inside, "netns", name)
      yield* ip("link", "set", outside, "master", bridge)
      yield* ip("link", "set", outside, "up")
      yield* ip("netns", "exec", name, "ip", "addr", "add", `${address}/24`, "dev", inside)
      yield* ip("netns", "exec", name, "ip", "link", "set", inside, "up")
      yield* ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
      hosts.push({ name, address })
    }
    return hosts
  })
