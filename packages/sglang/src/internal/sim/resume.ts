/**
 * A simulated server brought back by the persistent sim (`Simulator.layerPersistent`): it was
 * ready when the last `mlops` run ended, so it is ready again at once. It listens on its port
 * with the same answers, keeps the GPU memory the restorer recorded for its pid, and prints
 * nothing (a steady-state server is quiet). The restorer marks it with `resumeEnv=<port>`.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import * as Gpus from "@mlops/serve/SimGpus"
import { Effect, Either, Ref } from "effect"
import * as Argv from "../../Argv.js"
import * as Catalogue from "../../Catalogue.js"
import * as Resolve from "../../Resolve.js"
import * as Rule from "../../Rule.js"
import * as Rules from "../../Rules.js"
import { handler, speculationOf } from "./http.js"

export { resumeEnv } from "@mlops/serve/SimHost"

const giveUp = (ctx: FakeHost.ProgramContext, why: string) =>
  Effect.as(ctx.stderr.line(`simulator: cannot resume this server: ${why}`), 1)

export const run = (
  ctx: FakeHost.ProgramContext,
  argv: ReadonlyArray<string>,
  o: { readonly port: number; readonly version: string }
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const decoded = yield* Effect.either(Argv.decodeArgv(argv, Catalogue.get(o.version) ?? Catalogue.latest))
    if (Either.isLeft(decoded)) return yield* giveUp(ctx, decoded.left.message)
    const { args, explicit } = decoded.right
    const configText = yield* ctx.fs.readText(`${args.model_path}/config.json`)
    if (configText === undefined) return yield* giveUp(ctx, `no ${args.model_path}/config.json`)
    const traits = yield* Effect.orDie(ModelTraits.fromJson(configText, `${args.model_path}/config.json`))
    // what the launcher resolved (model-init checks would have stopped it before it was ready)
    const rules = Rules.forVersion(o.version).rules.filter((r) => Rule.stageOf(r.order) !== "model-init")
    const resolved = Resolve.resolveEither(
      args,
      explicit,
      { traits, gpus: Gpus.forRules, env: ctx.env, version: o.version },
      rules
    )
    if (Either.isLeft(resolved)) return yield* giveUp(ctx, "its arguments no longer resolve")
    const effective = resolved.right.effective
    const self = (yield* ctx.processes).find((p) => p.pid === ctx.pid)
    const bound = yield* Effect.either(
      ctx.listen(
        o.port,
        handler({
          args: effective,
          architecture: traits.architecture,
          contextLength: effective.context_length ?? traits.contextLength,
          version: o.version,
          ready: yield* Ref.make(true),
          startedAtMs: self?.startedAtMs ?? 0,
          decoder: yield* SimDecoding.make(SimDecoding.settingsFromEnv(ctx.env), speculationOf(effective))
        })
      )
    )
    if (Either.isLeft(bound)) return yield* giveUp(ctx, bound.left.message)
    return yield* Effect.never
  }).pipe(Effect.ensuring(Gpus.release(ctx.fs, ctx.pid)))
