/**
 * What mlops knows about one host after resolving its alias: the ssh_config facts plus the
 * mlops hosts file (python environment, tags, remote state directory).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ContainerSettings } from "./ContainerSettings.js"
import { SlurmSettings } from "./SlurmSettings.js"

/** How unknown host keys are treated. Keys are always verified; there is no "off". @category models */
export const HostKeyPolicy = Schema.Literal("strict", "accept-new")
export type HostKeyPolicy = typeof HostKeyPolicy.Type

/** One hop of a ProxyJump chain, already resolved. @category models */
export interface JumpHost {
  readonly alias: string
  readonly hostname: string
  readonly port: number
  readonly user: string
  readonly identityFiles: ReadonlyArray<string>
}

/** @category models */
export const JumpHost: Schema.Schema<JumpHost> = Schema.Struct({
  alias: Schema.String,
  hostname: Schema.String,
  port: Schema.Number,
  user: Schema.String,
  identityFiles: Schema.Array(Schema.String)
})

/**
 * Where mlops keeps its state on a host when the hosts file says nothing (`stateDir`).
 *
 * @category constants
 */
export const defaultStateDir = "~/.mlops"

/** @category models */
export class HostConfig extends Schema.Class<HostConfig>("HostConfig")({
  /** The name the user typed (`ct129`). */
  alias: Schema.String,
  hostname: Schema.String,
  port: Schema.Number,
  user: Schema.String,
  /** Key files in the order ssh would try them, `~` expanded. */
  identityFiles: Schema.Array(Schema.String),
  /** ssh-agent socket, when one is configured or `SSH_AUTH_SOCK` is set. */
  agent: Schema.optional(Schema.String),
  /** ProxyJump hops, outermost first. */
  proxyJump: Schema.Array(JumpHost),
  knownHostsFiles: Schema.Array(Schema.String),
  hostKeyPolicy: HostKeyPolicy,
  /** Milliseconds; 0 disables keepalive. */
  keepaliveIntervalMs: Schema.Number,
  keepaliveCountMax: Schema.Number,
  connectTimeoutMs: Schema.Number,
  /** From the mlops hosts file: the Python environment (a venv/conda prefix or an interpreter). */
  python: Schema.optional(Schema.String),
  tags: Schema.Array(Schema.String),
  /**
   * From the mlops hosts file: the directory on the host where mlops keeps its state
   * (deployments live in `<stateDir>/deployments/<name>/`). Absolute or `~/`-relative;
   * default `~/.mlops` (`defaultStateDir`).
   */
  stateDir: Schema.optionalWith(Schema.String, { default: () => defaultStateDir }),
  /** From the mlops hosts file: the host is a Slurm cluster's login node, submitting with these settings. */
  slurm: Schema.optional(SlurmSettings),
  /**
   * From the mlops hosts file (`image`, `runtime`, `pull`, `shm`): how the host runs servers
   * from container images; set when any of those fields is.
   */
  container: Schema.optional(ContainerSettings),
  /** Where the host came from, for messages: a file path, or "built-in". */
  source: Schema.String
}) {}

/**
 * The configuration of an in-memory host (a `FakeHost`, the CLI's `sim`): no keys, no jump
 * hosts, the default timeouts, `source` "FakeHost". @category constructors
 */
export const inMemory = (spec: {
  readonly alias: string
  readonly hostname?: string | undefined
  readonly user: string
  readonly python?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly stateDir?: string | undefined
  readonly container?: ContainerSettings | undefined
}): HostConfig =>
  HostConfig.make({
    alias: spec.alias,
    hostname: spec.hostname ?? spec.alias,
    port: 22,
    user: spec.user,
    identityFiles: [],
    proxyJump: [],
    knownHostsFiles: [],
    hostKeyPolicy: "strict",
    keepaliveIntervalMs: 15_000,
    keepaliveCountMax: 3,
    connectTimeoutMs: 10_000,
    ...(spec.python === undefined ? {} : { python: spec.python }),
    tags: spec.tags ?? [],
    ...(spec.stateDir === undefined ? {} : { stateDir: spec.stateDir }),
    ...(spec.container === undefined ? {} : { container: spec.container }),
    source: "FakeHost"
  })
