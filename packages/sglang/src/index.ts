export * as Argv from "./Argv.js"
export * as ArgvErrors from "./ArgvErrors.js"
export * as Catalogue from "./Catalogue.js"
export * as ServerArgs from "./ServerArgs.js"
