import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, Probes, RemoteCommand, RemoteProcess } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { llama3_8b } from "@mlops/serve/SampleModels"
import { Effect, Either, Option } from "effect"
import * as Argv from "../src/Argv.js"
import * as Resolve from "../src/Resolve.js"
import { engine } from "../src/SglangEngine.js"
import * as Simulator from "../src/Simulator.js"
import * as Classifier from "./support/classifier.js"
import { advance, fixedArgv, storyArgv } from "./support/sim.js"
import { mambaFix, storyContext } from "./support/story.js"

const python = `${Simulator.python}/bin/python`
const connect = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))
const launchServer = (argv: ReadonlyArray<string>) =>
  RemoteCommand.make([python, "-m", "sglang.launch_server", ...argv], { env: { SGLANG_ENABLE_SPEC_V2: "1" } })

const spawn = (name: string, argv: ReadonlyArray<string>) =>
  Effect.flatMap(connect, (conn) =>
    RemoteProcess.spawnDetached(conn, launchServer(argv), { runDir: `/root/runs/${name}` })
  )

const readLog = (name: string) =>
  Effect.flatMap(FakeHost.host("sim"), (h) => h.fs.readText(`/root/runs/${name}/log`)).pipe(
    Effect.map((text) => text ?? "")
  )

describe("Simulator", () => {
  it.effect("has two RTX A6000 48 GB (8.6), SGLang 0.5.11 in ~/ml-env and the Qwen3.6-27B config", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const gpus = yield* Probes.gpus(conn)
      assert.deepStrictEqual(
        gpus.map((g) => [g.name, g.memoryTotalMiB, g.computeCapability]),
        [
          ["NVIDIA RTX A6000", 49140, "8.6"],
          ["NVIDIA RTX A6000", 49140, "8.6"]
        ]
      )
      const env = yield* PythonEnvRuntime.choose(conn, { engine, explicit: undefined, env: {} })
      assert.deepStrictEqual(
        [env.interpreter, env.engineVersion],
        [`${Simulator.python}/bin/python`, "0.5.11"]
      )
      const config = yield* conn.files.stat(`${Simulator.modelPath}/config.json`)
      assert.isDefined(config)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("argparse errors exit 2 with SGLang's usage line", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const result = yield* conn.exec(launchServer(["--model-path", Simulator.modelPath, "--tp-sise", "2"]))
      assert.strictEqual(result.exitCode, 2)
      assert.include(result.stderr, "sglang serve: error: unrecognized arguments: --tp-sise")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("the story's command meets only the first problem: the mamba ValueError, exit 1", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const result = yield* conn.exec(launchServer(storyArgv))
      assert.strictEqual(result.exitCode, 1)
      assert.include(result.stderr, "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration")
      assert.notInclude(result.stderr, "AssertionError")
      const fixedOnce = yield* conn.exec(
        launchServer([...storyArgv, "--mamba-scheduler-strategy", "extra_buffer"])
      )
      assert.strictEqual(fixedOnce.exitCode, 1)
      assert.match(fixedOnce.stderr, /\nAssertionError\n?$/)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "the story's second error: the bare assert shown in full, classified with its source and flags",
    () =>
      Effect.gen(function* () {
        const conn = yield* connect
        const result = yield* conn.exec(launchServer([...storyArgv, ...mambaFix]))
        assert.strictEqual(result.exitCode, 1)
        assert.include(
          result.stderr,
          [
            "    assert (",
            "        self.speculative_eagle_topk is None",
            "        and self.speculative_num_draft_tokens is None",
            "    )",
            "AssertionError"
          ].join("\n")
        )
        // the frames name the sim's own install, not a stock one
        assert.include(
          result.stderr,
          `${Simulator.python}/lib/python3.13/site-packages/sglang/srt/server_args.py`
        )
        const failure = Option.getOrThrow(Classifier.diagnose(result.stderr, { exitCode: 1 }).failure)
        assert.strictEqual(failure._tag, "AssertionFailure")
        if (failure._tag !== "AssertionFailure") return
        assert.strictEqual(
          failure.source,
          "assert (self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None)"
        )
        assert.sameMembers(
          [...failure.flags],
          ["--speculative-eagle-topk", "--speculative-num-draft-tokens", "--speculative-num-steps"]
        )
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("argparse: `--switch=v` is an ignored explicit argument, `--switch v` an unrecognized one", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const base = ["--model-path", Simulator.modelPath]
      const inline = yield* conn.exec(launchServer([...base, "--enable-lora=yes"]))
      assert.strictEqual(inline.exitCode, 2)
      assert.include(
        inline.stderr,
        "sglang serve: error: argument --enable-lora: ignored explicit argument 'yes'"
      )
      const separate = yield* conn.exec(launchServer([...base, "--enable-lora", "yes"]))
      assert.strictEqual(separate.exitCode, 2)
      assert.include(separate.stderr, "sglang serve: error: unrecognized arguments: yes")
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("SGLang's adjustment and warning lines come before server_args, in SGLang's order", () =>
    Effect.gen(function* () {
      // no SGLANG_ENABLE_SPEC_V2 in the environment: SGLang warns that it is on by default
      const conn = yield* connect
      yield* RemoteProcess.spawnDetached(
        conn,
        RemoteCommand.make([python, "-m", "sglang.launch_server", ...fixedArgv]),
        { runDir: "/root/runs/notices" }
      )
      yield* advance(3000)
      const log = (yield* readLog("notices")).split("\n")
      const decoded = yield* Argv.decodeArgv(fixedArgv)
      const expected = Either.getOrThrow(
        Resolve.resolveEither(decoded.args, decoded.explicit, storyContext)
      ).logLines
      assert.isTrue(
        expected.some((line) => line.startsWith("Spec v2 is enabled by default")),
        expected.join("\n")
      )
      const argsLine = log.findIndex((line) => line.includes("server_args=ServerArgs("))
      assert.isAbove(argsLine, 0)
      // launcher lines carry no rank prefix: `[time] message`
      const printed = log
        .slice(0, argsLine)
        .map((line) => /^\[[^\]]*\] (.*)$/.exec(line)?.[1])
        .filter((m): m is string => m !== undefined)
      assert.deepStrictEqual(printed, [...expected])
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "a valid launch prints the lifecycle per rank, serves HTTP and shows up in nvidia-smi and ss",
    () =>
      Effect.gen(function* () {
        const conn = yield* connect
        const proc = yield* spawn("ok", fixedArgv)
        yield* advance(6000)
        const log = yield* readLog("ok")
        for (const text of [
          "TP0] Load weight begin.",
          "TP1] Load weight begin.",
          "KV Cache is allocated.",
          "Capture draft cuda graph end.",
          "max_running_requests=48",
          "The server is fired up and ready to roll!"
        ]) {
          assert.include(log, text)
        }
        assert.include(log, "Max running requests is reset to 48 for speculative decoding.")
        assert.isBelow(log.indexOf("Load weight end"), log.indexOf("Capture cuda graph begin"))
        const holder = yield* Probes.portHolder(conn, 30000)
        assert.strictEqual(holder?.pid, proc.pid)
        const apps = yield* Probes.gpuProcesses(conn)
        assert.deepStrictEqual([...new Set(apps.map((a) => a.pid))], [proc.pid])
        assert.isAbove(apps[0]!.usedMemoryMiB ?? 0, 20_000)
        const gpus = yield* Probes.gpus(conn)
        assert.isAbove(gpus[1]!.memoryUsedMiB, 20_000)
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a model that does not fit: child-rank OOM traceback, then the launcher dies by SIGKILL", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const proc = yield* spawn("oom", ["--model-path", Simulator.modelPath, "--tp", "1"])
      yield* advance(6000)
      const log = yield* readLog("oom")
      assert.include(log, "Scheduler hit an exception: Traceback (most recent call last):")
      assert.include(log, "torch.OutOfMemoryError: CUDA out of memory.")
      assert.include(log, "Received sigquit from a child process.")
      assert.isFalse(yield* RemoteProcess.isAlive(conn, proc))
      assert.deepStrictEqual(yield* RemoteProcess.exitStatus(conn, proc), { exitCode: null, signal: "KILL" })
      assert.lengthOf(yield* Probes.gpuProcesses(conn), 0)
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("too small a static pool: the KV pool's 'Not enough memory'", () =>
    Effect.gen(function* () {
      yield* spawn("kv", [...fixedArgv, "--mem-fraction-static", "0.5"])
      yield* advance(6000)
      assert.include(
        yield* readLog("kv"),
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
      )
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a taken HTTP port fails after loading, like uvicorn, with exit 1", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      // a small model on each GPU, so the second one loads fine and only the port is taken
      const small = "/root/models/Llama-3-8B"
      yield* Effect.flatMap(FakeHost.host("sim"), (h) =>
        h.fs.write(`${small}/config.json`, JSON.stringify(llama3_8b))
      )
      yield* spawn("first", ["--model-path", small])
      yield* advance(6000)
      const second = yield* spawn("second", ["--model-path", small, "--base-gpu-id", "1"])
      yield* advance(6000)
      assert.include(yield* readLog("second"), "address already in use")
      assert.deepStrictEqual(yield* RemoteProcess.exitStatus(conn, second), { exitCode: 1, signal: null })
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("MLOPS_SIM_HANG stops progress at that phase", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const proc = yield* RemoteProcess.spawnDetached(
        conn,
        RemoteCommand.make([python, "-m", "sglang.launch_server", ...fixedArgv], {
          env: { MLOPS_SIM_HANG: "kv-cache" }
        }),
        { runDir: "/root/runs/hang" }
      )
      yield* advance(60_000, 1000)
      const log = yield* readLog("hang")
      assert.include(log, "Load weight end")
      assert.notInclude(log, "KV Cache is allocated")
      assert.isTrue(yield* RemoteProcess.isAlive(conn, proc))
    }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("makeHostSpec renames the host for fleets", () =>
    Effect.gen(function* () {
      const pool = yield* ConnectionPool.ConnectionPool
      const conn = yield* pool.get("sim-2")
      assert.lengthOf(yield* Probes.gpus(conn), 2)
    }).pipe(Effect.provide(FakeHost.layer([Simulator.hostSpec, Simulator.makeHostSpec({ alias: "sim-2" })])))
  )

  it.effect("the argument check (`python -c` running prepare_server_args) reports like SGLang", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const check = (argv: ReadonlyArray<string>) =>
        conn.exec(
          RemoteCommand.make([
            python,
            "-c",
            "from sglang.srt.server_args import prepare_server_args",
            ...argv
          ])
        )
      const bad = yield* check(storyArgv)
      assert.strictEqual(bad.exitCode, 1)
      assert.include(bad.stderr, "--mamba-scheduler-strategy extra_buffer")
      const good = yield* check(fixedArgv)
      assert.strictEqual(good.exitCode, 0)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
