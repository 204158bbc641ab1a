/**
 * The job's waiter (its queue place and GPU pick) run twice on the same tree: by the real
 * /bin/dash on this machine's disk with a stub `nvidia-smi` printing fixed lines, and by a fake
 * host holding the same files with its `nvidia-smi` reporting the same GPUs. Both must pick the
 * same GPUs (or refuse with the same record) and exit the same way: the sim runs what a host runs.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemoteFiles from "@mlops/core/RemoteFiles"
import { FakeHost } from "@mlops/core/testing"
import { Effect } from "effect"
import { REFUSED_STATUS, WAITER } from "../../../src/internal/jobs/scripts.js"

interface Gpu {
  readonly index: number
  readonly usedMiB: number
}

/** The tree under the jobs root: run dirs (relative) → files in them. */
type Tree = Readonly<Record<string, Readonly<Record<string, string>>>>

interface Case {
  readonly title: string
  readonly gpus: ReadonlyArray<Gpu>
  readonly tree: Tree
  /** The run dir (under the root) of the job that runs the waiter. */
  readonly job: string
  readonly want: number
  readonly ids?: string
  readonly mode: "now" | "wait"
  /** What it should do: the CUDA_VISIBLE_DEVICES its command saw, or refuse. */
  readonly expect: { readonly picks: string } | { readonly refused: ReadonlyArray<string> }
}

const ticketOf = (name: string, at: number) => `.queue/${String(at).padStart(15, "0")}-${name}`

/** A job that is starting (no pid yet) or ran (`exit`), with its ticket or its claim. */
const job = (
  name: string,
  o: { readonly at?: number; readonly gpus?: string; readonly ended?: boolean }
) => ({
  [name]: {
    ...(o.gpus === undefined ? {} : { gpus: o.gpus }),
    ...(o.ended === true ? { exit: "0\n" } : {})
  }
})

const withTicket = (tree: Record<string, Record<string, string>>, root: string, name: string, at: number) => {
  tree[name] = { ...(tree[name] ?? {}), ticket: `${root}/${ticketOf(name, at)}` }
  tree[".queue"] = {
    ...(tree[".queue"] ?? {}),
    [ticketOf(name, at).slice(".queue/".length)]: `${root}/${name}`
  }
  return tree
}

const cases = (root: string): ReadonlyArray<Case> => {
  const two = [
    { index: 0, usedMiB: 4 },
    { index: 1, usedMiB: 4 }
  ]
  const queue = (names: ReadonlyArray<string>, base: Tree = {}) => {
    const tree: Record<string, Record<string, string>> = JSON.parse(JSON.stringify(base))
    names.forEach((name, i) => {
      withTicket(tree, root, name, 1000 + i)
    })
    return tree
  }
  return [
    {
      title: "a free host: the first GPU",
      gpus: two,
      tree: queue(["a"]),
      job: "a",
      want: 1,
      mode: "now",
      expect: { picks: "0" }
    },
    {
      title: "two wanted: both",
      gpus: two,
      tree: queue(["a"]),
      job: "a",
      want: 2,
      mode: "now",
      expect: { picks: "0,1" }
    },
    {
      title: "a live job's claim is skipped",
      gpus: two,
      tree: queue(["b"], job("a", { gpus: "0" })),
      job: "b",
      want: 1,
      mode: "now",
      expect: { picks: "1" }
    },
    {
      title: "an ended job's claim is not",
      gpus: two,
      tree: queue(["b"], job("a", { gpus: "0", ended: true })),
      job: "b",
      want: 1,
      mode: "now",
      expect: { picks: "0" }
    },
    {
      title: "memory in use makes a GPU busy",
      gpus: [
        { index: 0, usedMiB: 30000 },
        { index: 1, usedMiB: 4 }
      ],
      tree: queue(["a"]),
      job: "a",
      want: 1,
      mode: "now",
      expect: { picks: "1" }
    },
    {
      title: "asked ids only",
      gpus: two,
      tree: queue(["a"]),
      job: "a",
      want: 1,
      ids: "1",
      mode: "now",
      expect: { picks: "1" }
    },
    {
      title: "not enough: refused with what holds the GPUs",
      gpus: [
        { index: 0, usedMiB: 4 },
        { index: 1, usedMiB: 30000 }
      ],
      tree: queue(["b"], job("a", { gpus: "0" })),
      job: "b",
      want: 1,
      mode: "now",
      expect: { refused: ["gpu 0 4 49140", "gpu 1 30000 49140", "claim a 0"] }
    },
    {
      title: "behind a live ticket: refused, naming it",
      gpus: two,
      tree: queue(["a", "b"]),
      job: "b",
      want: 1,
      mode: "now",
      expect: { refused: [`behind ${ticketOf("a", 1000).slice(7)}`, "gpu 0 4 49140", "gpu 1 4 49140"] }
    },
    {
      title: "a ticket whose job's directory is gone is passed over",
      gpus: two,
      tree: (() => {
        const tree = queue(["a", "b"])
        delete tree.a
        return tree
      })(),
      job: "b",
      want: 1,
      mode: "now",
      expect: { picks: "0" }
    },
    {
      title: "a dead job's ticket is passed over",
      gpus: two,
      tree: queue(["a", "b"], job("a", { ended: true })),
      job: "b",
      want: 1,
      mode: "now",
      expect: { picks: "0" }
    }
  ]
}

const realBase = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-waiter-"))
afterAll(() => fs.rmSync(realBase, { recursive: true, force: true }))

const COMMAND = ["sh", "-c", 'printf "%s" "$CUDA_VISIBLE_DEVICES" > "$0/saw"']

interface Outcome {
  readonly status: number | null
  readonly saw: string | undefined
  readonly refused: ReadonlyArray<string> | undefined
  readonly gpusFile: string | undefined
  readonly ticketLeft: boolean
}

const argvOf = (c: Case, root: string): readonly [string, ...Array<string>] => [
  "sh",
  "-c",
  WAITER,
  "mlops-job",
  root,
  `${root}/${c.job}`,
  String(c.want),
  c.ids ?? "-",
  c.mode,
  ...COMMAND,
  `${root}/${c.job}`
]

const lines = (text: string | undefined) =>
  text === undefined ? undefined : text.split("\n").filter((line) => line !== "")

/** The tree with the tested job's own ticket still aside (`.new`), as the client leaves it for its waiter. */
const asStarted = (tree: Tree, job: string): Tree => {
  const queue = tree[".queue"] ?? {}
  const own = Object.keys(queue).find((name) => name.endsWith(`-${job}`))
  if (own === undefined) return tree
  const { [own]: text, ...others } = queue
  return { ...tree, ".queue": { ...others, [`${own}.new`]: text ?? "" } }
}

const onDash = (c: Case, index: number): Outcome => {
  const home = path.join(realBase, String(index))
  const root = path.join(home, "jobs")
  const bin = path.join(home, "bin")
  fs.mkdirSync(bin, { recursive: true })
  const smi = c.gpus.map((g) => `${g.index}, ${g.usedMiB}, 49140`).join("\n")
  fs.writeFileSync(
    path.join(bin, "nvidia-smi"),
    `#!/bin/sh\nprintf '%s\\n' '${smi.split("\n").join("' '")}'\n`,
    {
      mode: 0o755
    }
  )
  for (const [dir, files] of Object.entries(asStarted(cases(root)[index]!.tree, c.job))) {
    fs.mkdirSync(path.join(root, dir), { recursive: true })
    for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(root, dir, file), text)
  }
  fs.mkdirSync(path.join(root, c.job), { recursive: true })
  const [, , script, ...args] = argvOf(cases(root)[index]!, root)
  const out = spawnSync("/bin/dash", ["-c", script!, ...args], {
    cwd: home,
    encoding: "utf8",
    env: { HOME: home, PATH: `${bin}:/usr/bin:/bin` }
  })
  const read = (file: string) => {
    const at = path.join(root, c.job, file)
    return fs.existsSync(at) ? fs.readFileSync(at, "utf8") : undefined
  }
  return {
    status: out.status,
    saw: read("saw"),
    refused: lines(read("refused")),
    gpusFile: read("gpus"),
    ticketLeft: fs.readdirSync(path.join(root, ".queue")).some((t) => t.includes(`-${c.job}`))
  }
}

const FAKE_HOME = "/home/tester"

const onFake = (c: Case, index: number) => {
  const root = `${FAKE_HOME}/jobs`
  const tree = asStarted(cases(root)[index]!.tree, c.job)
  const files: Record<string, string> = { [`${root}/${c.job}/.keep`]: "" }
  for (const [dir, entries] of Object.entries(tree))
    for (const [file, text] of Object.entries(entries)) files[`${root}/${dir}/${file}`] = text
  const gpus = c.gpus.map((g) => ({
    index: g.index,
    name: "NVIDIA RTX A6000",
    memoryTotalMiB: 49140,
    memoryUsedMiB: g.usedMiB,
    uuid: `GPU-${g.index}`
  }))
  return Effect.gen(function* () {
    const pool = yield* ConnectionPool
    const conn = yield* pool.get("h")
    const result = yield* conn.exec(RemoteCommand.make(argvOf(cases(root)[index]!, root)))
    const text = (file: string) => RemoteFiles.readTextIfExists(conn, `${root}/${c.job}/${file}`)
    const queue = yield* conn.exec(
      RemoteCommand.make(["sh", "-c", `for t in ${root}/.queue/*; do [ -e "$t" ] && echo "$t"; done; true`])
    )
    const left = queue.stdout.split("\n").filter((t) => t !== "")
    return {
      status: result.exitCode,
      saw: yield* text("saw"),
      refused: lines(yield* text("refused")),
      gpusFile: yield* text("gpus"),
      ticketLeft: left.some((t) => t.includes(`-${c.job}`))
    } satisfies Outcome
  }).pipe(
    Effect.provide(
      FakeHost.layer([
        {
          alias: "h",
          user: "tester",
          home: FAKE_HOME,
          files,
          programs: [FakeHost.nvidiaSmi(gpus), ...FakeHost.fileTools]
        }
      ])
    )
  )
}

describe("the job waiter, on dash and on the fake host", () => {
  cases("/root").forEach((c, index) => {
    it.effect(c.title, () =>
      Effect.gen(function* () {
        const real = onDash(c, index)
        const fake = yield* onFake(c, index)
        if ("picks" in c.expect) {
          assert.strictEqual(real.status, 0, JSON.stringify(real))
          assert.strictEqual(real.saw, c.expect.picks)
          assert.strictEqual(real.gpusFile, c.expect.picks)
        } else {
          assert.strictEqual(real.status, REFUSED_STATUS, JSON.stringify(real))
          assert.deepStrictEqual(real.refused, c.expect.refused)
          assert.strictEqual(real.saw, undefined)
        }
        assert.isFalse(real.ticketLeft)
        assert.deepStrictEqual(fake, real)
      })
    )
  })
})
