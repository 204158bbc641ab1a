/**
 * A rule violation's fix (field → value) as flags of SGLang's command line, spelled as the
 * catalogue of the version spells them.
 * @internal
 */
import type { Fix } from "@mlops/serve/Failures"
import type { ViolationRecord } from "@mlops/serve/Violations"
import * as Catalogue from "../Catalogue.js"

/** A rule violation's fix (field → value) as a flag fix. */
export const violationFix = (
  violation: ViolationRecord,
  catalogue: Catalogue.Catalogue = Catalogue.latest
): Fix | undefined => {
  const flags: Record<string, string | number | null> = {}
  const removeFlags: Array<string> = []
  for (const [field, value] of Object.entries(violation.fix.set)) {
    const spec = catalogue.byField.get(field)
    if (spec === undefined) continue
    if (value === null || value === false) removeFlags.push(spec.flag)
    else if (value === true) flags[spec.flag] = null
    else flags[spec.flag] = Array.isArray(value) ? value.join(" ") : (value as string | number)
  }
  return Object.keys(flags).length === 0 && removeFlags.length === 0 ? undefined : { flags, removeFlags }
}
