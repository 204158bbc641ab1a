/**
 * Every signature, in the order they are tried on a subject: the class precedence of the corpus
 * (corpus/logs/README.md): the container's daemon, GPUs, driver and shared memory, then GPU and
 * host memory, ports, the model, remote code, the mamba strategy, what this build or GPU cannot
 * do, CUDA, dependencies, distributed, a job's session hanging up and its loss diverging, the
 * command line and argument checks, stalls, a job's rank killed, crashes, a launcher's word on a
 * rank's exit, consequences, and last the exception no signature knows.
 * @internal
 */
import type { EngineLogs } from "../../../Classifier.js"
import type { Signature } from "../../../LogSignature.js"
import {
  argparse,
  assertion,
  invalidArgument,
  knownInvalidArgument,
  pydanticConfig,
  unsupported
} from "./arguments.js"
import { containers } from "./containers.js"
import { consequence, crash, errorLine, srunTask, unclassified } from "./deaths.js"
import { buildFailure, dependency } from "./dependencies.js"
import { distributed } from "./distributed.js"
import { architecture, backend, cuda, hardware } from "./hardware.js"
import { hangup, hostMemory, lossDiverged, rankEnded, rankKilled } from "./jobs.js"
import { memory } from "./memory.js"
import { modelNotFound, trustRemoteCode } from "./model.js"
import { portInUse } from "./ports.js"
import { interrupted, stalled } from "./stalls.js"

/** The engine-neutral signatures, in order. */
export const signatures: ReadonlyArray<Signature> = [
  ...containers,
  ...memory,
  hostMemory,
  portInUse,
  modelNotFound,
  trustRemoteCode,
  architecture,
  hardware,
  backend,
  argparse,
  knownInvalidArgument,
  buildFailure,
  cuda,
  dependency,
  distributed,
  hangup,
  lossDiverged,
  pydanticConfig,
  unsupported,
  invalidArgument,
  assertion,
  stalled,
  interrupted,
  srunTask,
  rankKilled,
  crash,
  rankEnded,
  consequence,
  errorLine,
  unclassified
]

const merged = new WeakMap<ReadonlyArray<EngineLogs>, ReadonlyArray<Signature>>()

/** The neutral signatures with each engine's own placed before the one it names. */
export const signaturesFor = (engines: ReadonlyArray<EngineLogs>): ReadonlyArray<Signature> => {
  if (engines.length === 0) return signatures
  const known = merged.get(engines)
  if (known !== undefined) return known
  const extra = engines.flatMap((e) => e.signatures)
  const out: Array<Signature> = []
  for (const signature of signatures) {
    for (const e of extra) if (e.before === signature.id) out.push(e.signature)
    out.push(signature)
  }
  for (const e of extra) if (!signatures.some((s) => s.id === e.before)) out.push(e.signature)
  merged.set(engines, out)
  return out
}
