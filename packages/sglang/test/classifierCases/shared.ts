/** Types and exits shared by the fixture expectation tables. */
import type { ExitStatus } from "@mlops/serve/Classifier"
import type { Fix, LaunchFailure } from "@mlops/serve/Failures"
import type { Phase } from "@mlops/serve/LaunchEvent"

export interface Expected {
  readonly tag: LaunchFailure["_tag"]
  readonly process: string
  readonly phase: Phase
  readonly fix?: Fix
  /** substrings each of which must appear in some evidence line */
  readonly evidence: ReadonlyArray<string>
  readonly exit?: ExitStatus
  /** extra checks on the typed fields */
  readonly fields?: Readonly<Record<string, unknown>>
}

export const killed = { exitCode: 137 }
export const exit1 = { exitCode: 1 }
export const exit2 = { exitCode: 2 }
