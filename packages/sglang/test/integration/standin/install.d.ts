/**
 * Installs the stand-in SGLang (the Python files next to this module) into a throwaway venv
 * on this machine, which the test sshd serves as the remote host: `python3 -m venv` (no pip,
 * no network), the package and its dist-info copied into site-packages, the stand-in
 * `nvidia-smi` into the venv's bin, a Qwen3.6-27B-like model directory, and an mlops home whose
 * hosts.json points the test host at the venv and at a state directory inside the temp dir (so
 * deployments never touch this machine's real `~/.mlops`).
 */
import { Effect, type Scope } from "effect"

declare const StandinError_base: new <A extends Record<string, any> = {}>(
  args: import("effect/Types").VoidIfEmpty<{ readonly [P in keyof A as P extends "_tag" ? never : P]: A[P] }>
) => import("effect/Cause").YieldableError & {
  readonly _tag: "StandinError"
} & Readonly<A>
export declare class StandinError extends StandinError_base<{
  readonly reason: string
}> {
  get message(): string
}
export interface Standin {
  readonly dir: string
  /** The venv prefix (what hosts.json `python` names). */
  readonly venv: string
  readonly bin: string
  /** A model directory holding a Qwen3.6-27B-like config.json. */
  readonly modelPath: string
  /** `MLOPS_HOME` for the client: holds hosts.json. */
  readonly mlopsHome: string
  /** The test host's `stateDir` (hosts.json): deployments go to `<stateDir>/deployments/<name>`. */
  readonly stateDir: string
  /** Where the stand-in appends `{"event","ms"}` stamps when `STANDIN_STAMP_FILE` points here. */
  readonly stampFile: string
  /** sshd_config lines that put the venv's bin (the stand-in nvidia-smi) first on the remote PATH (and bound a pyenv rehash). */
  readonly sshdConfig: ReadonlyArray<string>
  /** Write `$MLOPS_HOME/hosts.json` giving `alias` this venv as its Python environment and `stateDir`. */
  readonly writeHostsFile: (alias: string) => void
  /** The `{"event","ms"}` records written so far. */
  readonly stamps: () => ReadonlyArray<{
    readonly event: string
    readonly ms: number
    readonly pid: number
  }>
}
/** Build the stand-in environment in a temp dir; removed when the scope closes. */
export declare const install: Effect.Effect<Standin, StandinError, Scope.Scope>
//# sourceMappingURL=install.d.ts.map
