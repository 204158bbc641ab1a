/**
 * R15, shared by the EAGLE, DFLASH and NGRAM branches (each resets at its own place).
 *
 * @internal
 */
import * as Rule from "../../Rule.js"
import { maxRunningRequestsReset } from "../lifecycle/messages.js"
import { rangeOf } from "./ranges.js"

/** max_running_requests -> 48 (a hard-coded literal in 0.5.11) when unset and `when` holds. */
export const resetMaxRunningRequests = (
  id: string,
  sub: number,
  when: (input: Rule.RuleInput) => boolean
): Rule.Rule =>
  Rule.make({
    id,
    title: "max running requests reset to 48 for speculative decoding",
    versions: rangeOf(id),
    order: { step: 17, sub },
    kind: "adjust",
    check: (input) =>
      when(input) && input.args.max_running_requests === null
        ? Rule.adjust(
            { max_running_requests: 48 },
            "speculative decoding caps concurrent requests at 48 unless --max-running-requests is given",
            maxRunningRequestsReset()
          )
        : undefined
  })
