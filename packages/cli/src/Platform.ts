/**
 * Node's platform services as the `mlops` process uses them: files, paths, and a terminal that
 * is opened only when something reads from it (@effect/cli's prompts). Node's terminal layer
 * opens standard input as it is built, a tenth of a start for commands that never read it; and
 * no command has a use for child processes or workers from here, so neither is built.
 *
 * @since 0.1.0
 */

import type { FileSystem } from "@effect/platform/FileSystem"
import type { Path } from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { Effect, Layer, Scope } from "effect"

/** A `Terminal` whose Node terminal is made on first use and lives as long as the layer. @category layers */
export const lazyTerminal: Layer.Layer<Terminal.Terminal> = Layer.scoped(
  Terminal.Terminal,
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const opened = yield* Effect.cached(Effect.provideService(NodeTerminal.make(), Scope.Scope, scope))
    return Terminal.Terminal.of({
      columns: Effect.flatMap(opened, (terminal) => terminal.columns),
      rows: Effect.flatMap(opened, (terminal) => terminal.rows),
      isTTY: Effect.flatMap(opened, (terminal) => terminal.isTTY),
      readInput: Effect.flatMap(opened, (terminal) => terminal.readInput),
      readLine: Effect.flatMap(opened, (terminal) => terminal.readLine),
      display: (text) => Effect.flatMap(opened, (terminal) => terminal.display(text))
    })
  })
)

/** Files, paths and the lazy terminal: what @effect/cli and the commands need. @category layers */
export const layer: Layer.Layer<FileSystem | Path | Terminal.Terminal> = Layer.mergeAll(
  NodeFileSystem.layer,
  NodePath.layer,
  lazyTerminal
)
