/**
 * Literal SGLang log lines (v0.5.11 wording) for each lifecycle step, for common failure
 * tracebacks, and whole successful launches, as pure functions. Shared by the classifier's
 * fixtures, the simulator and the real-ssh stand-in, so that all of them print what SGLang
 * prints. Use as a namespace: `import * as lifecycleLines from ".../internal/lifecycleLines.js"`.
 * @internal
 */
export * from "./lifecycle/failures.js"
export * from "./lifecycle/launch.js"
export * from "./lifecycle/messages.js"
