export * as Cli from "./Cli.js"
export * as ExitCodes from "./ExitCodes.js"
export * as Layers from "./Layers.js"
