/**
 * The in-memory host and its programs, for tests and for simulated hosts (`sim`): not part
 * of core's main entry point, so production code that talks to real hosts never pulls it in.
 *
 * @since 0.1.0
 */
export * as Drive from "./Drive.js"
export * as FakeHost from "./FakeHost.js"
export * as FakeProgram from "./FakeProgram.js"
