/**
 * Where the engine was found, in one phrase, the same for every command that names it (`check
 * --host`, `flags --host`, the upgrade check): its version (and that it is a source checkout),
 * its interpreter, and how it was chosen, with the way to pin it.
 */
import type { Located } from "@mlops/serve/Runtime"

/** How to pin a found environment from this command: `--python` where it has the option, else hosts.json. */
export type Pin = "--python" | "hosts.json"

/** `0.5.11 (a source checkout: version from version.py) at /env/bin/python (found by looking; pin it with --python ~/env)`. */
export const foundAt = (
  located: Pick<Located, "engineVersion" | "versionSource" | "interpreter" | "source" | "setting">,
  pin: Pin
): string => {
  const checkout =
    located.versionSource === "version.py" ? " (a source checkout: version from version.py)" : ""
  const how =
    located.source === "discovered"
      ? `found by looking; pin it with ${pin === "--python" ? `--python ${located.setting}` : `"python": "${located.setting}" in hosts.json`}`
      : `set by ${located.source}`
  return `${located.engineVersion}${checkout} at ${located.interpreter} (${how})`
}
