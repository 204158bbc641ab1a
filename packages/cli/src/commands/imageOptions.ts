/**
 * The options of the image runtime on `launch` and `check`: the image, the container tool and
 * when to pull (their values become its spec in `programs/runtimeSpec.ts`; each overrides the
 * host's hosts.json `image`, `runtime`, `pull`). The container placement's own option, the
 * shared memory, is `--shm-size` (`containerOptions`).
 */
import { Options } from "@effect/cli"
import { namedChoice } from "./shared.js"

/** @internal */
export const imageOptions = {
  image: Options.text("image").pipe(
    Options.optional,
    Options.withDescription(
      "Run the engine from this container image (e.g. lmsysorg/sglang:v0.5.11); its engine and version are read from inside it (default: hosts.json `image`)"
    )
  ),
  containerRuntime: namedChoice("runtime", ["docker", "podman"]).pipe(
    Options.optional,
    Options.withDescription("The container tool for --image (default: hosts.json `runtime`, else docker)")
  ),
  pull: namedChoice("pull", ["never", "missing", "always"]).pipe(
    Options.optional,
    Options.withDescription("When to pull the image: never, missing (default) or always")
  )
}
