/**
 * `launch`'s container option: the shared memory of the container (overrides hosts.json `shm`).
 */
import { Options } from "@effect/cli"

/** @internal */
export const containerOptions = {
  shmSize: Options.text("shm-size").pipe(
    Options.optional,
    Options.withDescription(
      "Container: a private /dev/shm of this size (default 32g), or `host` for the host's IPC namespace"
    )
  )
}
