/**
 * Every pre-load check mlops knows for vLLM, in the order vLLM meets them: model config,
 * cache, parallel, scheduler, the engine-args cross-checks, features, the GPU count (asserted
 * by the executor), then the KV-cache estimate (which vLLM only finds after loading).
 *
 * @since 0.1.0
 */
import type { Rule } from "./Rule.js"
import * as Features from "./rules/Features.js"
import * as Hardware from "./rules/Hardware.js"
import * as Memory from "./rules/Memory.js"
import * as Model from "./rules/Model.js"
import * as Parallel from "./rules/Parallel.js"
import * as Scheduler from "./rules/Scheduler.js"

/** @category rules */
export const all: ReadonlyArray<Rule> = [
  Model.knownQuantization,
  Model.quantizationMatchesModel,
  Hardware.quantizationOnThisGpu,
  Hardware.bf16NeedsAmpere,
  Model.maxModelLenWithinModel,
  Hardware.memoryFractionInRange,
  Parallel.localDataParallelWithinTotal,
  Parallel.eplbNeedsExpertParallel,
  Parallel.redundantExpertsNeedEplb,
  Parallel.multiNodeBackend,
  Model.headsDivisibleByTp,
  Model.expertsForExpertParallel,
  Scheduler.batchedTokensCoverModelLen,
  Scheduler.batchedTokensCoverSeqs,
  Scheduler.partialPrefillsNeedChunking,
  Scheduler.longPartialsWithinPartials,
  Scheduler.longPrefillWithinModelLen,
  Parallel.tpDivisibleByDcp,
  Parallel.worldSizeDivisibleByNodes,
  Features.captureSizesOnce,
  Features.cpuLorasCoverLoras,
  Features.draftTensorParallel,
  Features.asyncSchedulingWithoutPp,
  Features.draftModelSpeculation,
  // the executor asserts the GPU count when it starts workers, after the config checks
  Parallel.enoughGpus,
  Memory.cacheHoldsOneSequence
]
