/**
 * Test helpers for programs on the simulated host: drive the TestClock while an effect runs
 * (real loopback HTTP of the fake host needs event-loop turns between clock steps).
 */
import { Drive } from "@mlops/core/testing"

export const { advance, drive } = Drive
export { fixedArgv, storyArgv } from "./story.js"
