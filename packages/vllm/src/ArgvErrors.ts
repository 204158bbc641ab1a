/**
 * Why `vllm serve`'s parser would refuse a command line, beyond the argparse errors every
 * engine shares (`@mlops/serve/ArgvErrors`).
 *
 * @since 0.1.0
 */
import { ArgvError } from "@mlops/serve/ArgvErrors"
import { Schema } from "effect"

/** `--config file.yaml`: vLLM would read flags from the file; mlops cannot see them. @category errors */
export class ConfigFileUnsupported extends Schema.TaggedError<ConfigFileUnsupported>()(
  "ConfigFileUnsupported",
  {
    file: Schema.NullOr(Schema.String)
  }
) {
  override get message() {
    const which = this.file === null ? "" : ` ${this.file}`
    return `--config${which} is not supported by mlops: it checks flags before launching and cannot read a YAML file on the host; write its keys as flags after \`--\` (\`port: 8001\` is \`--port 8001\`)`
  }
}

/** No model: `vllm serve` would quietly serve its built-in default. @category errors */
export class MissingModel extends Schema.TaggedError<MissingModel>()("MissingModel", {
  defaultModel: Schema.String
}) {
  override get message() {
    const fallback =
      this.defaultModel === "" ? "" : ` (vLLM would otherwise load its default, ${this.defaultModel})`
    return `no model: name it first, \`vllm serve <Hugging Face repo id or local dir> [flags]\`${fallback}`
  }
}

/** Everything `Argv.decode` can fail with. @category errors */
export type VllmArgvError = ArgvError | ConfigFileUnsupported | MissingModel

/** @category schemas */
export const VllmArgvError = Schema.Union(ArgvError, ConfigFileUnsupported, MissingModel)
