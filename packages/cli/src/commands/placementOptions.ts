/**
 * The options of the placements that have some on `launch`'s command line, one entry per
 * placement (their values become its spec in `programs/placementSpec.ts`).
 */
import { containerOptions } from "./containerOptions.js"
import { slurmOptions } from "./slurmOptions.js"

/** @internal */
export const placementOptions = { ...slurmOptions, ...containerOptions }
