/**
 * known_hosts parsing and matching (OpenSSH format), pure functions only.
 *
 * @internal
 */
import { createHash, createHmac } from "node:crypto"

/** @internal */
export type HostPatterns =
  | { readonly _tag: "Plain"; readonly patterns: ReadonlyArray<string> }
  | { readonly _tag: "Hashed"; readonly salt: Buffer; readonly hash: Buffer }

/** @internal */
export interface KnownHostsEntry {
  readonly marker: "revoked" | "cert-authority" | null
  readonly hosts: HostPatterns
  readonly keyType: string
  readonly keyBlob: Buffer
  /** 1-based line number in its file. */
  readonly line: number
}

/** OpenSSH fingerprint: `SHA256:` + unpadded base64 of the key blob's SHA-256. @internal */
export const fingerprint = (keyBlob: Uint8Array): string =>
  "SHA256:" + createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")

/** The key type is the first length-prefixed string of the wire-format blob. @internal */
export const keyTypeOf = (keyBlob: Uint8Array): string => {
  if (keyBlob.length < 4) return "unknown"
  const length = Buffer.from(keyBlob.buffer, keyBlob.byteOffset, keyBlob.byteLength).readUInt32BE(0)
  if (length === 0 || length > 64 || 4 + length > keyBlob.length) return "unknown"
  return Buffer.from(keyBlob.subarray(4, 4 + length)).toString("latin1")
}

/** The name ssh looks up: `host` on port 22, `[host]:port` otherwise. @internal */
export const hostToken = (host: string, port: number): string => {
  const name = host.toLowerCase()
  return port === 22 ? name : `[${name}]:${port}`
}

const parseHosts = (field: string): HostPatterns | undefined => {
  if (field.startsWith("|1|")) {
    const [salt, hash] = field.slice(3).split("|")
    if (salt === undefined || hash === undefined) return undefined
    const saltBytes = Buffer.from(salt, "base64")
    const hashBytes = Buffer.from(hash, "base64")
    // HMAC-SHA1: 20-byte digest; salt is 20 bytes in OpenSSH but any length works for HMAC.
    if (saltBytes.length === 0 || hashBytes.length !== 20) return undefined
    return { _tag: "Hashed", salt: saltBytes, hash: hashBytes }
  }
  const patterns = field.split(",").filter((p) => p.length > 0)
  return patterns.length > 0 ? { _tag: "Plain", patterns } : undefined
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Parse one file's text. Malformed lines are skipped, as ssh does. @internal */
export const parse = (text: string): ReadonlyArray<KnownHostsEntry> => {
  const entries: Array<KnownHostsEntry> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i]!.trim()
    if (trimmed === "" || trimmed.startsWith("#")) continue
    const fields = trimmed.split(/\s+/)
    let marker: KnownHostsEntry["marker"] = null
    if (fields[0] === "@revoked") marker = "revoked"
    else if (fields[0] === "@cert-authority") marker = "cert-authority"
    else if (fields[0]!.startsWith("@")) continue
    const rest = marker === null ? fields : fields.slice(1)
    const [hostField, keyType, keyBase64] = rest
    if (hostField === undefined || keyType === undefined || keyBase64 === undefined) continue
    if (!BASE64.test(keyBase64)) continue
    const hosts = parseHosts(hostField)
    if (hosts === undefined) continue
    entries.push({ marker, hosts, keyType, keyBlob: Buffer.from(keyBase64, "base64"), line: i + 1 })
  }
  return entries
}

const globToRegExp = (pattern: string): RegExp => {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".")
  return new RegExp(`^${body}$`, "i")
}

/**
 * ssh's pattern-list rule: a matching negated pattern vetoes the line, otherwise any
 * positive match wins.
 *
 * @internal
 */
export const matchPatternList = (patterns: ReadonlyArray<string>, name: string): boolean => {
  let matched = false
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) {
      if (globToRegExp(pattern.slice(1)).test(name)) return false
    } else if (globToRegExp(pattern).test(name)) {
      matched = true
    }
  }
  return matched
}

const hashHost = (salt: Uint8Array, token: string): Buffer => createHmac("sha1", salt).update(token).digest()

/** @internal */
export const matchesHost = (entry: KnownHostsEntry, host: string, port: number): boolean => {
  const token = hostToken(host, port)
  if (entry.hosts._tag === "Hashed") return hashHost(entry.hosts.salt, token).equals(entry.hosts.hash)
  return matchPatternList(entry.hosts.patterns, token)
}

/** One known_hosts line that concerns the host being checked. @internal */
export interface FileMatch {
  readonly file: string
  readonly entry: KnownHostsEntry
}

/** @internal */
export type Decision =
  | { readonly _tag: "Known"; readonly match: FileMatch }
  | { readonly _tag: "Revoked"; readonly match: FileMatch }
  | { readonly _tag: "Changed"; readonly expected: ReadonlyArray<FileMatch> }
  | { readonly _tag: "Unknown" }

/**
 * Decide from every file's entries, in order. A revoked key is rejected even when it is
 * also listed as valid; a host listed only with other keys (of any type) counts as
 * changed, never as new, so a man in the middle cannot pass by offering another key type.
 *
 * @internal
 */
export const decide = (
  files: ReadonlyArray<{ readonly file: string; readonly entries: ReadonlyArray<KnownHostsEntry> }>,
  host: string,
  port: number,
  keyBlob: Uint8Array
): Decision => {
  const offered = Buffer.from(keyBlob)
  let known: FileMatch | undefined
  const others: Array<FileMatch> = []
  for (const { file, entries } of files) {
    for (const entry of entries) {
      if (entry.marker === "cert-authority" || !matchesHost(entry, host, port)) continue
      const same = entry.keyBlob.equals(offered)
      if (entry.marker === "revoked") {
        if (same) return { _tag: "Revoked", match: { file, entry } }
        continue
      }
      if (same) known ??= { file, entry }
      else others.push({ file, entry })
    }
  }
  if (known !== undefined) return { _tag: "Known", match: known }
  if (others.length > 0) return { _tag: "Changed", expected: others }
  return { _tag: "Unknown" }
}

/** The line `accept-new` appends (never hashed, so `ssh-keygen -F` and people can read it). @internal */
export const formatEntry = (host: string, port: number, keyBlob: Uint8Array): string =>
  `${hostToken(host, port)} ${keyTypeOf(keyBlob)} ${Buffer.from(keyBlob).toString("base64")}`
