/**
 * Host key verification against OpenSSH known_hosts files. ssh2 never reads known_hosts,
 * so the live connection calls `verify` from its `hostVerifier`.
 *
 * Supported: plain patterns (comma lists, `*` / `?` globs, `!negation`, case-insensitive),
 * `[host]:port` for ports other than 22, hashed `|1|salt|hmac` entries, `@revoked`
 * (`@cert-authority` lines are skipped: ssh2 does not negotiate host certificates),
 * comments and blank lines. Missing files count as empty.
 *
 * Decisions, in order: the offered key is `@revoked` → `HostKeyMismatch`; it is listed for
 * the host → `"known"`; the host is listed with other keys (of any type) → `HostKeyMismatch`
 * (a different key type is never treated as "new": restrict the server host key algorithms
 * with `knownKeyTypes` instead); the host is absent → `HostKeyUnknown` under `strict`, or
 * the key is appended to the first file under `accept-new` → `"recorded"`.
 *
 * @since 0.1.0
 */

import { appendFile, mkdir } from "node:fs/promises"
import { dirname } from "node:path"
import { Effect } from "effect"
import { ConfigFileError, HostKeyMismatch, HostKeyUnknown } from "./Errors.js"
import type { HostKeyPolicy } from "./HostConfig.js"
import * as internal from "./internal/knownHosts.js"
import { readTextIfExists } from "./LocalFiles.js"
import { quote } from "./RemoteCommand.js"

/** @category models */
export interface VerifyOptions {
  /** The name connected to (the resolved HostName), as ssh records it. */
  readonly host: string
  readonly port: number
  /** The server's public key in SSH wire format (what ssh2's `hostVerifier` receives). */
  readonly key: Uint8Array
  /** known_hosts files in lookup order; `accept-new` records into the first one. */
  readonly files: ReadonlyArray<string>
  readonly policy: HostKeyPolicy
}

/** @category models */
export type VerifyResult = "known" | "recorded"

/**
 * `SHA256:` + unpadded base64 of the blob's SHA-256, exactly as `ssh-keygen -lf` prints it.
 *
 * @category utils
 */
export const fingerprint: (key: Uint8Array) => string = internal.fingerprint

/**
 * The key type written in the blob (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`, ...),
 * or `"unknown"` for a malformed blob.
 *
 * @category utils
 */
export const keyType: (key: Uint8Array) => string = internal.keyTypeOf

/**
 * The name looked up in known_hosts: `host` on port 22, `[host]:port` otherwise.
 *
 * @category utils
 */
export const hostToken: (host: string, port: number) => string = internal.hostToken

const readKnownHosts = (file: string) =>
  readTextIfExists(file).pipe(
    Effect.map((text) => text ?? ""),
    Effect.mapError(
      (error) =>
        new ConfigFileError({
          path: error.path,
          reason: error.reason,
          fix: `check the file's permissions (chmod 600 ${quote(file)})`
        })
    )
  )

const loadAll = (files: ReadonlyArray<string>) =>
  Effect.forEach(files, (file) =>
    Effect.map(readKnownHosts(file), (text) => ({ file, text, entries: internal.parse(text) }))
  )

const record = (file: string, existing: string, line: string) =>
  Effect.tryPromise({
    try: async () => {
      await mkdir(dirname(file), { recursive: true, mode: 0o700 })
      const separator = existing.length > 0 && !existing.endsWith("\n") ? "\n" : ""
      // One O_APPEND write of a whole line: concurrent writers never interleave within it.
      await appendFile(file, `${separator}${line}\n`, { mode: 0o600, flag: "a" })
    },
    catch: (error) =>
      new ConfigFileError({
        path: file,
        reason: `cannot record the new host key: ${(error as Error).message}`,
        fix: `make ${quote(dirname(file))} writable, or add the key yourself with ssh-keyscan`
      })
  })

/**
 * Check a server's host key against known_hosts files, applying `policy` to unknown hosts.
 *
 * @category verification
 */
export const verify = Effect.fn("KnownHosts.verify")(function* (options: VerifyOptions) {
  const loaded = yield* loadAll(options.files)
  const decision = internal.decide(loaded, options.host, options.port, options.key)
  const actualFingerprint = internal.fingerprint(options.key)
  const token = internal.hostToken(options.host, options.port)
  switch (decision._tag) {
    case "Known":
      return "known" as VerifyResult
    case "Revoked":
      return yield* new HostKeyMismatch({
        host: options.host,
        port: options.port,
        knownHostsFile: decision.match.file,
        expectedFingerprints: [],
        actualFingerprint,
        fix: `the offered key is marked @revoked (${decision.match.file} line ${decision.match.entry.line}); the server must be given a new host key`
      })
    case "Changed": {
      const file = decision.expected[0]!.file
      return yield* new HostKeyMismatch({
        host: options.host,
        port: options.port,
        knownHostsFile: file,
        expectedFingerprints: decision.expected.map((m) => internal.fingerprint(m.entry.keyBlob)),
        actualFingerprint,
        fix: `verify the new key (${internal.keyTypeOf(options.key)} ${actualFingerprint}) with the host's admin, then remove the old one: ssh-keygen -R ${quote(token)} -f ${quote(file)}`
      })
    }
    case "Unknown": {
      const first = loaded[0]
      if (options.policy === "strict" || first === undefined) {
        const target = options.files[0] ?? "~/.ssh/known_hosts"
        return yield* new HostKeyUnknown({
          host: options.host,
          port: options.port,
          knownHostsFiles: [...options.files],
          actualFingerprint,
          fix: `check that ${actualFingerprint} is the host's key, then add it: ssh-keyscan -p ${options.port} ${quote(options.host)} >> ${quote(target)} (or use StrictHostKeyChecking accept-new for this host)`
        })
      }
      yield* record(first.file, first.text, internal.formatEntry(options.host, options.port, options.key))
      return "recorded" as VerifyResult
    }
  }
})

/**
 * Key types recorded for a host (revoked and CA lines excluded), in file order without
 * duplicates. The live connection uses them to ask the server for a key type it already
 * knows, as OpenSSH does, instead of failing on a different-but-valid key type.
 *
 * @category verification
 */
export const knownKeyTypes = Effect.fn("KnownHosts.knownKeyTypes")(function* (options: {
  readonly host: string
  readonly port: number
  readonly files: ReadonlyArray<string>
}) {
  const loaded = yield* loadAll(options.files)
  const types = new Set<string>()
  for (const { entries } of loaded) {
    for (const entry of entries) {
      if (entry.marker === null && internal.matchesHost(entry, options.host, options.port))
        types.add(entry.keyType)
    }
  }
  return [...types] as ReadonlyArray<string>
})
