import { writeFileSync } from "node:fs"
import { modelConfigs } from "/work/main/packages/sglang/src/internal/fixtures/models.ts"
import { Effect } from "effect"
import * as MT from "/work/main/packages/sglang/src/ModelTraits.ts"
for (const [name, cfg] of Object.entries(modelConfigs)) {
  writeFileSync(`/work/main/packages/sglang/test/fixtures/models/${name}.json`, JSON.stringify(cfg, null, 2) + "\n")
  const t = Effect.runSync(MT.fromConfig(cfg))
  console.log(name, (t.estimatedParameters/1e9).toFixed(2), (t.estimatedWeightBytes/1e9).toFixed(1), t.contextLength, t.hybridLinearAttention?.layers.length, t.mtp, t.isMoe, t.isMla, t.isMultimodal)
}
