/**
 * The last line of defence for secrets: everything a command prints goes through a console
 * that replaces the secret values of this command line (secret SGLang flag values, values of
 * `--env` variables whose names say secret) with `***`. The programs already never print them;
 * this guards what they do not control (a message quoting a remote error, a defect).
 */
import * as Secrets from "@mlops/serve/Secrets"
import { Console, Effect } from "effect"

/** The values to hide for a command line: mlops words (for `--env`) and SGLang's flags. */
export const secretsOf = (
  mlops: ReadonlyArray<string>,
  sglang: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const env: Record<string, string> = {}
  mlops.forEach((word, i) => {
    const entry = word.startsWith("--env=") ? word.slice(6) : mlops[i - 1] === "--env" ? word : undefined
    if (entry !== undefined && entry.indexOf("=") > 0)
      env[entry.slice(0, entry.indexOf("="))] = entry.slice(entry.indexOf("=") + 1)
  })
  return Secrets.hiddenValues(Secrets.split(sglang).secrets, env)
}

/** Run `effect` with a console that scrubs `values` from every line it prints. */
export const scrubbing =
  (values: ReadonlyArray<string>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (values.length === 0) return effect
    const clean = (args: ReadonlyArray<unknown>) =>
      args.map((a) => (typeof a === "string" ? Secrets.scrub(a, values) : a))
    return Effect.flatMap(Effect.console, (base) =>
      Console.withConsole(effect, {
        ...base,
        log: (...a) => base.log(...clean(a)),
        info: (...a) => base.info(...clean(a)),
        warn: (...a) => base.warn(...clean(a)),
        error: (...a) => base.error(...clean(a)),
        debug: (...a) => base.debug(...clean(a)),
        unsafe: {
          ...base.unsafe,
          log: (...a) => base.unsafe.log(...clean(a)),
          info: (...a) => base.unsafe.info(...clean(a)),
          warn: (...a) => base.unsafe.warn(...clean(a)),
          error: (...a) => base.unsafe.error(...clean(a)),
          debug: (...a) => base.unsafe.debug(...clean(a))
        }
      })
    )
  }
