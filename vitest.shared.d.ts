export declare const project: (name: string) => import("vitest/config").UserWorkspaceConfig;
//# sourceMappingURL=vitest.shared.d.ts.map