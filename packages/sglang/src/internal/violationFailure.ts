/**
 * A rule violation found offline as the typed failure SGLang's exception would be at runtime:
 * the same class, SGLang's own words as the reason, the rule's fix as flags, and `ruleId`
 * saying that preflight found it (no log lines: nothing ran).
 * @internal
 */

import * as F from "@mlops/serve/Failures"
import type { Catalogue } from "../Catalogue.js"
import type { ViolationRecord } from "../Rule.js"
import { flagOf } from "./rules/helpers.js"
import { violationFix } from "./violationFix.js"

const reasonOf = (v: ViolationRecord): string =>
  v.engineMessage === ""
    ? `${v.errorType} (bare assert${v.sourceLine ? `: ${v.sourceLine}` : ""})`
    : `${v.errorType}: ${v.engineMessage}`

const STAGE_FUNCTION: Readonly<Record<string, string>> = {
  "server-args": "__post_init__",
  "check-server-args": "check_server_args",
  "model-init": ""
}

/** The failure the first run of SGLang would report for this violation. */
export const violationFailure = (
  v: ViolationRecord,
  context: { readonly architecture?: string | undefined; readonly catalogue?: Catalogue | undefined } = {}
): F.LaunchFailure => {
  const fix = violationFix(v, context.catalogue)
  const base = {
    evidence: [],
    process: "launcher",
    phase: "starting" as const,
    reason: reasonOf(v),
    ruleId: v.ruleId,
    ...(fix === undefined ? {} : { fix })
  }
  const flags = v.fields.map((field) => flagOf(field))
  switch (v._tag) {
    case "MissingSchedulerStrategy":
      return new F.MissingSchedulerStrategy({
        ...base,
        ...(context.architecture === undefined ? {} : { architecture: context.architecture })
      })
    case "UnsupportedConfig":
      return new F.UnsupportedConfig({ ...base, kind: "combination", flags })
    case "AssertionFailure":
      return new F.AssertionFailure({
        ...base,
        // where SGLang raises it; a model-init assert's file depends on the model, so none is named
        file: v.stage === "model-init" ? "" : "sglang/srt/server_args.py",
        line: 0,
        function: STAGE_FUNCTION[v.stage] ?? "",
        source: v.sourceLine ?? "",
        flags
      })
    case "InvalidArgument":
      return new F.InvalidArgument({ ...base, flags })
  }
}
