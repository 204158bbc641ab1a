/**
 * SGLang logs `Ignore import error when loading sglang.srt.models.X: ...` for every model module
 * that fails to import, and starts anyway: harmless, unless the model asked for is one of them.
 * A later "architecture not supported" or unrecognised failure that names such a module is
 * really that import error.
 * @internal
 */
import type { EvidenceLine, LaunchFailure } from "../../../Failures.js"
import * as F from "../../../Failures.js"

const normalizeName = (n: string) => n.toLowerCase().replace(/[^a-z0-9]/g, "")

/** An earlier ignored import error that explains `text` (which names `names`), if any. */
export const linkedImportError = (
  importErrors: ReadonlyArray<EvidenceLine>,
  text: string,
  names: ReadonlyArray<string>
): EvidenceLine | undefined => {
  if (importErrors.length === 0) return undefined
  const wanted = names.map(normalizeName)
  let weak: EvidenceLine | undefined
  for (const entry of importErrors) {
    const m = /loading ([\w.]+)[:.] (.*)$/.exec(entry.text)
    if (!m) continue
    const module = m[1]!.slice(m[1]!.lastIndexOf(".") + 1)
    const key = normalizeName(module)
    const stem = module.split("_")[0]!.toLowerCase()
    if (wanted.some((n) => n.startsWith(key))) return entry
    const missing = /named '([^']+)'|import name '([^']+)'/.exec(m[2]!)
    const missingName = missing ? (missing[1] ?? missing[2]) : undefined
    if (missingName && text.includes(missingName)) return entry
    if (!weak && stem.length >= 3 && wanted.some((n) => n.startsWith(stem))) weak = entry
  }
  return weak
}

/** `failure` re-read as the import error that caused it. */
export const asImportFailure = (failure: LaunchFailure, linked: EvidenceLine): F.DependencyError => {
  const early = /loading ([\w.]+)[:.] (.*)$/.exec(linked.text)
  return new F.DependencyError({
    evidence: [linked, ...failure.evidence],
    process: failure.process,
    phase: failure.phase,
    reason: early
      ? `${early[2]} (SGLang ignored this import error at line ${linked.line}; later: ${failure.reason})`
      : failure.reason,
    ...(early?.[1] === undefined ? {} : { module: early[1] }),
    fix: {
      action:
        "install the missing package or the versions this SGLang release pins (pip install 'sglang[all]==<version>')"
    }
  })
}
