/**
 * Where things live on the simulated host. Its Python is 3.13, whose tracebacks show every
 * line of a multi-line statement (the bare speculative `assert (...)` in full).
 *
 * @internal
 */

/** The Python environment prefix (`<prefix>/bin/python`). */
export const prefix = "/root/ml-env"

export const pythonVersion = "3.13.3"

/** The installed `sglang` package directory. */
export const sglangDir = `${prefix}/lib/python3.13/site-packages/sglang`
