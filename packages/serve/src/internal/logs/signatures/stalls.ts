/**
 * The launch stopped making progress: SGLang's watchdog (and the py-spy dumps it prints), a
 * warmup or health request that timed out, a launch the user had to interrupt by hand, a vLLM
 * front end still waiting for its engine core when the log ends.
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, reasonOf, type Signature, says, Tier } from "../../../LogSignature.js"

const STALL =
  /[Ww]atchdog timeout|did not become ready|never became ready|not (?:become )?ready after|failed to become (?:healthy|ready)|[Tt]imed out waiting for (?:the )?(?:server|engine|model)|(?:Startup|Readiness|Liveness) probe failed|Pyspy dump for PID|Pyspy failed to dump|Health check failed\. Server couldn't get a response|Timeout while waiting for|Timed out waiting for|TimeoutError|timed out|ReadTimeout|Read timed out|deadline exceeded/

export const stalled: Signature = {
  id: "stalled",
  tag: "StartupStalled",
  tier: Tier.Stall,
  variants: [
    {
      from: "SGLang 0.4-0.5.x",
      text: "[2025-06-26 07:25:31 DP4 TP4] Watchdog timeout (self.watchdog_timeout=300)"
    },
    { from: "SGLang 0.5.x", text: "Pyspy dump for PID 499:" },
    {
      from: "SGLang warmup",
      text: "Initialization failed. warmup error: Traceback ... TimeoutError: timed out"
    },
    {
      from: "SGLang /health",
      text: "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds."
    }
  ],
  match: says(STALL),
  build: (s) =>
    new F.StartupStalled({
      ...base(
        s,
        reasonOf(s, STALL),
        /atchdog|Pyspy/.test(s.flat)
          ? {
              action:
                "a forward pass hung: raise --watchdog-timeout if it is only slow, else look for a stuck collective (NCCL_DEBUG=INFO)"
            }
          : /warmup/i.test(s.flat) || s.record?.header.text.includes("warmup") === true
            ? {
                action:
                  "the first request did not finish: check the scheduler lines above; raise SGLANG_WARMUP_TIMEOUT if the model is only slow"
              }
            : { action: "look at the last lines; if a download or JIT build is running, allow more time" }
      )
    })
}

const INTERRUPTED = /^\s*\^C|^KeyboardInterrupt$/

export const interrupted: Signature = {
  id: "interrupted-by-hand",
  tag: "StartupStalled",
  tier: Tier.Crash,
  variants: [
    { from: "a terminal", text: "^C" },
    { from: "CPython", text: "KeyboardInterrupt" }
  ],
  match: (s) => INTERRUPTED.test(s.final === undefined ? s.text : s.final.type),
  build: (s) =>
    new F.StartupStalled({
      ...base(s, "the launch was interrupted by hand (Ctrl-C): it was stuck or too slow", {
        action: "look at the last lines before the interrupt for the phase that hung"
      })
    })
}
