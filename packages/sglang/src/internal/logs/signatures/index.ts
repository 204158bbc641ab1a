/**
 * Every signature, in the order they are tried on a subject: the class precedence of the corpus
 * (corpus/logs/README.md): memory, ports, the model, remote code, the mamba strategy, what this
 * build or GPU cannot do, CUDA, dependencies, distributed, the command line and argument checks,
 * stalls, crashes, consequences, and last the exception no signature knows.
 * @internal
 */
import type { Signature } from "../signature.js"
import {
  argparse,
  assertion,
  invalidArgument,
  knownInvalidArgument,
  mambaStrategy,
  pydanticConfig,
  unsupported
} from "./arguments.js"
import { consequence, crash, errorLine, unclassified } from "./deaths.js"
import { buildFailure, dependency } from "./dependencies.js"
import { distributed } from "./distributed.js"
import { architecture, backend, cuda, hardware } from "./hardware.js"
import { memory } from "./memory.js"
import { modelNotFound, trustRemoteCode } from "./model.js"
import { portInUse } from "./ports.js"
import { interrupted, stalled } from "./stalls.js"

export const signatures: ReadonlyArray<Signature> = [
  ...memory,
  portInUse,
  modelNotFound,
  trustRemoteCode,
  mambaStrategy,
  architecture,
  hardware,
  backend,
  argparse,
  knownInvalidArgument,
  buildFailure,
  cuda,
  dependency,
  distributed,
  pydanticConfig,
  unsupported,
  invalidArgument,
  assertion,
  stalled,
  interrupted,
  crash,
  consequence,
  errorLine,
  unclassified
]
