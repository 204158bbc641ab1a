import { execFileSync } from "node:child_process"
import { createHmac, randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as KnownHosts from "../src/KnownHosts.js"

const tempDir = () => mkdtempSync(join(tmpdir(), "mlops-knownhosts-"))

interface TestKey {
  readonly type: string
  readonly base64: string
  readonly blob: Buffer
  readonly pubFile: string
}

const generateKey = (dir: string, name: string, type = "ed25519"): TestKey => {
  const file = join(dir, name)
  execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", name, "-f", file])
  const [keyType, base64] = readFileSync(`${file}.pub`, "utf8").trim().split(/\s+/)
  return { type: keyType!, base64: base64!, blob: Buffer.from(base64!, "base64"), pubFile: `${file}.pub` }
}

// Two keys shared by every test (key generation is the slow part).
const keyDir = tempDir()
const keyA = generateKey(keyDir, "a")
const keyB = generateKey(keyDir, "b")

const writeKnownHosts = (lines: ReadonlyArray<string>) => {
  const file = join(tempDir(), "known_hosts")
  writeFileSync(file, lines.join("\n") + "\n")
  return file
}

const verifyStrict = (file: string, host: string, port: number, key: TestKey) =>
  KnownHosts.verify({ host, port, key: key.blob, files: [file], policy: "strict" })

describe("KnownHosts", () => {
  it("fingerprint matches ssh-keygen -lf", () => {
    for (const key of [keyA, generateKey(tempDir(), "rsa", "rsa")]) {
      const expected = execFileSync("ssh-keygen", ["-lf", key.pubFile], { encoding: "utf8" }).split(" ")[1]
      assert.strictEqual(KnownHosts.fingerprint(key.blob), expected)
    }
  })

  it("keyType reads the type from the wire-format blob", () => {
    assert.strictEqual(KnownHosts.keyType(keyA.blob), "ssh-ed25519")
    assert.strictEqual(KnownHosts.keyType(new Uint8Array([0, 0])), "unknown")
  })

  it.live("a plain entry for the host is known; comments, blanks and @cert-authority are skipped", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([
        "# comment",
        "",
        `@cert-authority 127.0.0.9 ${keyB.type} ${keyB.base64}`,
        `127.0.0.1 ${keyA.type} ${keyA.base64} a comment`
      ])
      assert.strictEqual(yield* verifyStrict(file, "127.0.0.1", 22, keyA), "known")
      const caOnly = yield* Effect.flip(verifyStrict(file, "127.0.0.9", 22, keyB))
      assert.strictEqual(caOnly._tag, "HostKeyUnknown")
    })
  )

  it.live("[host]:port entries apply only to that port", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([`[127.0.0.1]:2222 ${keyA.type} ${keyA.base64}`])
      assert.strictEqual(yield* verifyStrict(file, "127.0.0.1", 2222, keyA), "known")
      const onPort22 = yield* Effect.flip(verifyStrict(file, "127.0.0.1", 22, keyA))
      assert.strictEqual(onPort22._tag, "HostKeyUnknown")
    })
  )

  it.live("comma lists, globs and case-insensitive names match; a negation vetoes the line", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([`web1,GPU-?.lab,*.farm,!bad.farm ${keyA.type} ${keyA.base64}`])
      assert.strictEqual(yield* verifyStrict(file, "gpu-3.lab", 22, keyA), "known")
      assert.strictEqual(yield* verifyStrict(file, "node7.farm", 22, keyA), "known")
      assert.strictEqual(yield* verifyStrict(file, "WEB1", 22, keyA), "known")
      const vetoed = yield* Effect.flip(verifyStrict(file, "bad.farm", 22, keyA))
      assert.strictEqual(vetoed._tag, "HostKeyUnknown")
      const tooLong = yield* Effect.flip(verifyStrict(file, "gpu-33.lab", 22, keyA))
      assert.strictEqual(tooLong._tag, "HostKeyUnknown")
    })
  )

  it.live("hashed |1|salt|hmac entries match the hashed host token only", () =>
    Effect.gen(function* () {
      const salt = Buffer.alloc(20, 7)
      const hashed = (token: string) =>
        `|1|${salt.toString("base64")}|${createHmac("sha1", salt).update(token).digest("base64")}`
      const file = writeKnownHosts([
        `${hashed("127.0.0.1")} ${keyA.type} ${keyA.base64}`,
        `${hashed("[localhost]:2200")} ${keyB.type} ${keyB.base64}`
      ])
      assert.strictEqual(yield* verifyStrict(file, "127.0.0.1", 22, keyA), "known")
      assert.strictEqual(yield* verifyStrict(file, "localhost", 2200, keyB), "known")
      const other = yield* Effect.flip(verifyStrict(file, "127.0.0.2", 22, keyA))
      assert.strictEqual(other._tag, "HostKeyUnknown")
    })
  )

  it.live("files hashed by ssh-keygen -H still verify", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([
        `127.0.0.1 ${keyA.type} ${keyA.base64}`,
        `[127.0.0.1]:2222 ${keyB.type} ${keyB.base64}`
      ])
      execFileSync("ssh-keygen", ["-H", "-f", file], { stdio: "ignore" })
      const text = readFileSync(file, "utf8")
      assert.isFalse(text.includes("127.0.0.1"), "ssh-keygen -H should have hashed every name")
      assert.strictEqual(yield* verifyStrict(file, "127.0.0.1", 22, keyA), "known")
      assert.strictEqual(yield* verifyStrict(file, "127.0.0.1", 2222, keyB), "known")
    })
  )

  it.live("a changed key fails with both fingerprints and the ssh-keygen -R fix", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([`[127.0.0.1]:2222 ${keyA.type} ${keyA.base64}`])
      const error = yield* Effect.flip(verifyStrict(file, "127.0.0.1", 2222, keyB))
      assert.strictEqual(error._tag, "HostKeyMismatch")
      if (error._tag !== "HostKeyMismatch") return
      assert.deepStrictEqual(error.expectedFingerprints, [KnownHosts.fingerprint(keyA.blob)])
      assert.strictEqual(error.actualFingerprint, KnownHosts.fingerprint(keyB.blob))
      assert.strictEqual(error.knownHostsFile, file)
      assert.include(error.fix, `ssh-keygen -R '[127.0.0.1]:2222' -f ${file}`)
      assert.include(error.message, KnownHosts.fingerprint(keyA.blob))
    })
  )

  it.live("accept-new never accepts a changed key", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([`127.0.0.1 ${keyA.type} ${keyA.base64}`])
      const error = yield* Effect.flip(
        KnownHosts.verify({
          host: "127.0.0.1",
          port: 22,
          key: keyB.blob,
          files: [file],
          policy: "accept-new"
        })
      )
      assert.strictEqual(error._tag, "HostKeyMismatch")
      assert.strictEqual(readFileSync(file, "utf8").split("\n").filter(Boolean).length, 1)
    })
  )

  it.live("a @revoked key is rejected even when also listed as valid", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([
        `@revoked * ${keyA.type} ${keyA.base64}`,
        `127.0.0.1 ${keyA.type} ${keyA.base64}`
      ])
      const error = yield* Effect.flip(verifyStrict(file, "127.0.0.1", 22, keyA))
      assert.strictEqual(error._tag, "HostKeyMismatch")
      if (error._tag === "HostKeyMismatch") assert.include(error.fix, "@revoked")
      // the revocation concerns keyA only
      const fileB = writeKnownHosts([
        `@revoked * ${keyA.type} ${keyA.base64}`,
        `127.0.0.1 ${keyB.type} ${keyB.base64}`
      ])
      assert.strictEqual(yield* verifyStrict(fileB, "127.0.0.1", 22, keyB), "known")
    })
  )

  it.live(
    "an unknown host under strict fails with the fingerprint and the ssh-keyscan fix, writing nothing",
    () =>
      Effect.gen(function* () {
        const file = join(tempDir(), "known_hosts")
        const error = yield* Effect.flip(verifyStrict(file, "127.0.0.1", 2222, keyA))
        assert.strictEqual(error._tag, "HostKeyUnknown")
        if (error._tag !== "HostKeyUnknown") return
        assert.strictEqual(error.actualFingerprint, KnownHosts.fingerprint(keyA.blob))
        assert.include(error.fix, `ssh-keyscan -p 2222 127.0.0.1 >> ${file}`)
        assert.throws(() => statSync(file))
      })
  )

  it.live("accept-new records into the first file (created 0600), then the key is known", () =>
    Effect.gen(function* () {
      const dir = join(tempDir(), "nested", ".ssh")
      const first = join(dir, "known_hosts")
      const second = writeKnownHosts([`other ${keyB.type} ${keyB.base64}`])
      const options = { host: "127.0.0.1", port: 2222, key: keyA.blob, files: [first, second] } as const
      assert.strictEqual(yield* KnownHosts.verify({ ...options, policy: "accept-new" }), "recorded")
      assert.strictEqual(readFileSync(first, "utf8"), `[127.0.0.1]:2222 ${keyA.type} ${keyA.base64}\n`)
      assert.strictEqual(statSync(first).mode & 0o777, 0o600)
      assert.strictEqual(yield* KnownHosts.verify({ ...options, policy: "strict" }), "known")
      // OpenSSH finds the recorded line too
      const found = execFileSync("ssh-keygen", ["-F", "[127.0.0.1]:2222", "-f", first], { encoding: "utf8" })
      assert.include(found, keyA.base64)
    })
  )

  it.live("accept-new appends after a last line without a newline, on port 22 without brackets", () =>
    Effect.gen(function* () {
      const file = join(tempDir(), "known_hosts")
      writeFileSync(file, `other ${keyB.type} ${keyB.base64}`)
      const result = yield* KnownHosts.verify({
        host: "127.0.0.1",
        port: 22,
        key: keyA.blob,
        files: [file],
        policy: "accept-new"
      })
      assert.strictEqual(result, "recorded")
      assert.deepStrictEqual(readFileSync(file, "utf8").split("\n"), [
        `other ${keyB.type} ${keyB.base64}`,
        `127.0.0.1 ${keyA.type} ${keyA.base64}`,
        ""
      ])
    })
  )

  it.live("an unreadable known_hosts path is a ConfigFileError naming it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      mkdirSync(join(dir, "known_hosts"))
      const error = yield* Effect.flip(verifyStrict(join(dir, "known_hosts"), "127.0.0.1", 22, keyA))
      assert.strictEqual(error._tag, "ConfigFileError")
      if (error._tag === "ConfigFileError") assert.strictEqual(error.path, join(dir, "known_hosts"))
    })
  )

  it.live("a known_hosts path under a regular file counts as missing (empty), as ssh does", () =>
    Effect.gen(function* () {
      const file = writeKnownHosts([`127.0.0.1 ${keyA.type} ${keyA.base64}`])
      const underFile = join(file, "known_hosts")
      const error = yield* Effect.flip(verifyStrict(underFile, "127.0.0.1", 22, keyA))
      assert.strictEqual(error._tag, "HostKeyUnknown")
      // the next file is still consulted
      const result = yield* KnownHosts.verify({
        host: "127.0.0.1",
        port: 22,
        key: keyA.blob,
        files: [underFile, file],
        policy: "strict"
      })
      assert.strictEqual(result, "known")
    })
  )

  it.live("knownKeyTypes lists the recorded types for the host", () =>
    Effect.gen(function* () {
      const rsa = generateKey(tempDir(), "rsa", "rsa")
      const salt = randomBytes(20)
      const hashed = `|1|${salt.toString("base64")}|${createHmac("sha1", salt).update("127.0.0.1").digest("base64")}`
      const file = writeKnownHosts([
        `${hashed} ${rsa.type} ${rsa.base64}`,
        `127.0.0.1 ${keyA.type} ${keyA.base64}`,
        `@revoked 127.0.0.1 ${keyB.type} ${keyB.base64}`,
        `127.0.0.2 ${keyB.type} ${keyB.base64}`
      ])
      const types = yield* KnownHosts.knownKeyTypes({ host: "127.0.0.1", port: 22, files: [file] })
      assert.deepStrictEqual(types, ["ssh-rsa", "ssh-ed25519"])
    })
  )
})
