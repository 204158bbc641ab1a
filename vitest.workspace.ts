// The single list of test projects. vitest 3.2 deprecates workspace files, so the root
// vitest.config.ts feeds this list to `test.projects` instead of vitest reading it.
export const projects = [
  "packages/core",
  "packages/serve",
  "packages/sglang",
  "packages/cli",
  "examples",
  "corpus"
]
