/**
 * What the seams share: a registry of kinds, each turning a spec (its kind and settings, plain
 * JSON) into an implementation for a host; one chosen per launch from what was asked, else the
 * first kind that applies to the host; made again from a deployment's record.
 *
 * @internal
 */
import type { HostConfig } from "@mlops/core/HostConfig"
import { Either, Schema } from "effect"

/** A seam's choice for one launch: a kind and the kind's own settings. */
export interface Spec {
  readonly kind: string
  readonly [setting: string]: unknown
}

export const Spec: Schema.Schema<Spec> = Schema.Struct(
  { kind: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/**
 * One kind of a seam (a placement, a runtime). `C` is what else the choice depends on (a
 * placement's: the form of what the runtime makes).
 */
export interface KindOf<Impl, E, C = undefined> {
  readonly kind: string
  /** This kind's spec for `host` when it applies (`asked`: this kind's spec from the request). */
  readonly resolve: (
    host: HostConfig,
    asked: Spec | undefined,
    context: C
  ) => Either.Either<Spec | undefined, E>
  readonly make: (spec: Spec, host: HostConfig) => Either.Either<Impl, E>
}

/** How a seam names what went wrong. */
export type Invalid<E> = (kind: string, reason: string, fix: string) => E

/** The kind `asked` names, or the first of the registry that applies to the host. */
export const resolve = <Impl, E, C>(
  registry: ReadonlyArray<KindOf<Impl, E, C>>,
  host: HostConfig,
  asked: Spec | undefined,
  invalid: Invalid<E>,
  context: C
): Either.Either<Impl, E> => {
  const known = registry.map((k) => k.kind).join(", ") || "none"
  if (asked !== undefined) {
    const kind = registry.find((k) => k.kind === asked.kind)
    if (kind === undefined) return Either.left(invalid(asked.kind, "no such kind", `use one of ${known}`))
    return Either.flatMap(kind.resolve(host, asked, context), (spec) =>
      spec === undefined
        ? Either.left(invalid(asked.kind, `it does not apply to ${host.alias}`, `use one of ${known}`))
        : kind.make(spec, host)
    )
  }
  for (const kind of registry) {
    const spec = kind.resolve(host, undefined, context)
    if (Either.isLeft(spec)) return Either.left(spec.left)
    if (spec.right !== undefined) return kind.make(spec.right, host)
  }
  return Either.left(
    invalid("(none)", `nothing applies to ${host.alias}`, `register a kind for plain hosts (known: ${known})`)
  )
}

/** The implementation a deployment's recorded spec describes. */
export const fromRecord = <Impl, E, C>(
  registry: ReadonlyArray<KindOf<Impl, E, C>>,
  spec: Spec,
  host: HostConfig,
  invalid: Invalid<E>
): Either.Either<Impl, E> => {
  const kind = registry.find((k) => k.kind === spec.kind)
  return kind === undefined
    ? Either.left(
        invalid(
          spec.kind,
          "the deployment's record names a kind this mlops does not know",
          "use the mlops that launched it"
        )
      )
    : kind.make(spec, host)
}

/** A recorded spec, or the bare kind name records stored before specs were. */
export const RecordedSpec = Schema.Union(Spec, Schema.String)

/** The spec a record holds. */
export const specOf = (recorded: Spec | string): Spec =>
  typeof recorded === "string" ? { kind: recorded } : recorded
