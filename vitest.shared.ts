import { defineProject } from "vitest/config"

export const project = (name: string) =>
  defineProject({
    test: {
      name,
      include: ["test/**/*.test.ts"],
      testTimeout: 60_000,
      hookTimeout: 60_000
    }
  })
