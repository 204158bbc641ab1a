/**
 * @mlops/vllm: vLLM as an engine of the serving layer.
 *
 * @since 0.1.0
 */
export * as Argv from "./Argv.js"
export * as ArgvErrors from "./ArgvErrors.js"
export * as Catalogue from "./Catalogue.js"
export * as Check from "./Check.js"
export { VllmEngine } from "./Engine.js"
export * as HostFlags from "./HostFlags.js"
export * as Installed from "./Installed.js"
export * as Logs from "./Logs.js"
export * as Rule from "./Rule.js"
export * as Rules from "./Rules.js"
export * as Upgrade from "./Upgrade.js"
