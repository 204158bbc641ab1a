import { defineProject } from "vitest/config";
export const project = (name) => defineProject({
    test: {
        name,
        include: ["test/**/*.test.ts"],
        testTimeout: 60_000,
        hookTimeout: 60_000
    }
});
//# sourceMappingURL=vitest.shared.js.map