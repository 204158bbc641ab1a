/**
 * Which engine wrote a log, and its version when the log shows it: module paths
 * (`sglang/srt/`, `vllm/v1/`), entry points (`sglang.launch_server`, `vllm serve`), worker tags
 * (`(EngineCore_DP0 pid=1)`), banners (`vLLM API server version 0.6.3`), package pins
 * (`sglang==0.4.3.post2`) and image tags (`lmsysorg/sglang:v0.5.6`).
 * @internal
 */
import type { Engine } from "../../LogSignature.js"

const SGLANG = /sglang|sgl_kernel|sgl-workspace|server_args=ServerArgs\(|Scheduler hit an exception/i
const VLLM = /vllm|EngineCore|Engine core initialization/i
const VERSIONS: ReadonlyArray<readonly [Engine, RegExp]> = [
  ["vllm", /vLLM API server version v?(\d+\.\d+\.\d+[\w.+-]*)/],
  ["vllm", /Initializing (?:a V\d |an )?LLM engine \(v(\d+\.\d+\.\d+[\w.+-]*)\)/],
  ["vllm", /\bvllm(?:==|-|\/vllm-openai:v?)(\d+\.\d+\.\d+[\w.+-]*)/i],
  ["sglang", /\bsglang(?:\[all\])?(?:==|-)(\d+\.\d+\.\d+[\w.+-]*)/i],
  ["sglang", /lmsysorg\/sglang:v?(\d+\.\d+\.\d+[\w.+-]*)/],
  ["sglang", /sglang version:? v?(\d+\.\d+\.\d+[\w.+-]*)/i]
]

export interface EngineGuess {
  readonly engine: Engine | undefined
  readonly version: string | undefined
}

// enough evidence: a few thousand lines decide it; later lines are not looked at
const BUDGET = 4000

export class EngineSniffer {
  private sglang = 0
  private vllm = 0
  private seen = 0
  private version: { engine: Engine; value: string } | undefined

  /** Looks at one normalized line; `sglangHeader`: it had SGLang's `[date time TPn]` header. */
  observe(text: string, sglangHeader: boolean): void {
    if (++this.seen > BUDGET) return
    if (sglangHeader) this.sglang++
    if (SGLANG.test(text)) this.sglang += 2
    if (VLLM.test(text)) this.vllm += 2
    if (this.version === undefined && /\d\.\d+\.\d/.test(text)) {
      for (const [engine, re] of VERSIONS) {
        const m = re.exec(text)
        if (m) {
          this.version = { engine, value: m[1]!.replace(/[.,)-]+$/, "") }
          break
        }
      }
    }
  }

  guess(): EngineGuess {
    const engine =
      this.sglang === 0 && this.vllm === 0 ? undefined : this.vllm > this.sglang ? "vllm" : "sglang"
    return {
      engine: engine ?? this.version?.engine,
      version:
        this.version !== undefined && (engine === undefined || this.version.engine === engine)
          ? this.version.value
          : undefined
    }
  }
}
