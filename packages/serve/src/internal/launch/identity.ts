/**
 * What a launch request names once its engine is known, the same on one host or several: the
 * deployment's name (checked), the argv as shown with its secrets apart, their digest, the API
 * key readiness sends, the port, and the host paths a server of it reads.
 *
 * @internal
 */
import { Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import type { Engine } from "../../Engine.js"
import type { ServerPaths } from "../../Runtime.js"
import * as Secrets from "../../Secrets.js"
import { InvalidDeploymentName, type LaunchRequest } from "./types.js"

/** A model given as a path on the host (not a Hugging Face repo id). */
const localModel = (model: string | undefined) =>
  model !== undefined && /^(?:\/|~|\.)/.test(model) ? model : undefined

/** What a server of this argv reads on the host (a container mounts it), its argument check too. */
export const pathsOfEngine =
  (engine: Engine) =>
  (argv: ReadonlyArray<string>): ServerPaths => ({
    model: localModel(engine.modelOf(argv)),
    caches: engine.caches
  })

/** The engines a request asks for, in order of preference. */
export const candidates = (request: LaunchRequest): ReadonlyArray<Engine> => {
  const engines: ReadonlyArray<Engine> = Array.isArray(request.engine) ? request.engine : [request.engine]
  return engines
}

export const identify = (request: LaunchRequest, engine: Engine, env: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const name = request.name ?? Deployment.defaultName(engine.modelOf(request.argv), engine.name)
    if (!Deployment.isValidName(name)) {
      return yield* new InvalidDeploymentName({ name, fix: "use 1-64 letters, digits, '.', '_' or '-'" })
    }
    const { shown: requested, secrets } = Secrets.split(request.argv, engine.latestFlags)
    return {
      name,
      requested,
      secrets,
      digest: Secrets.digest(env, secrets),
      apiKey:
        engine.apiKeyFlag === undefined
          ? undefined
          : secrets.find((s) => s.flag === engine.apiKeyFlag)?.value,
      port: engine.portOf(requested)
    }
  })
