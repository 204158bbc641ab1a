/**
 * The container client's command lines and its reading of what docker and podman print. The
 * outputs below were captured from Debian's docker.io 20.10.24 (behind the 28.2.2 client) and
 * podman 4.3.1 on a machine of this project's kind, with the client's own templates; the real
 * daemons themselves are driven in test/integration/containers.test.ts and the serving e2e tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as Containers from "../src/Containers.js"
import * as commands from "../src/internal/containerCommands.js"

const DOCKER_RUNNING = `{"id":"2e2f991fe7480b88d8ecfb69b33f808fe1b4028d8fe878c53b6c38b3c459b4e9","name":"/c1","image":"sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762","labels":{"mlops.deployment":"x"},"state":{"Dead":false,"Error":"","ExitCode":0,"FinishedAt":"0001-01-01T00:00:00Z","OOMKilled":false,"Paused":false,"Pid":2333,"Restarting":false,"Running":true,"StartedAt":"2026-12-02T07:41:47.72025971Z","Status":"running"}}`
const DOCKER_EXITED_AND_REFUSED = `{"id":"2e2f991fe7480b88d8ecfb69b33f808fe1b4028d8fe878c53b6c38b3c459b4e9","name":"/c1","image":"sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762","labels":{"mlops.deployment":"x"},"state":{"Dead":false,"Error":"","ExitCode":3,"FinishedAt":"2026-12-02T07:41:48.959300467Z","OOMKilled":false,"Paused":false,"Pid":0,"Restarting":false,"Running":false,"StartedAt":"2026-12-02T07:41:47.72025971Z","Status":"exited"}}
{"id":"4a2db697130c42492fd6dc75d12fa4dfef19cbb054c155b22ef0fa8a851f7211","name":"/c2","image":"sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762","labels":{},"state":{"Dead":false,"Error":"could not select device driver \\"\\" with capabilities: [[gpu]]","ExitCode":128,"FinishedAt":"0001-01-01T00:00:00Z","OOMKilled":false,"Paused":false,"Pid":0,"Restarting":false,"Running":false,"StartedAt":"0001-01-01T00:00:00Z","Status":"created"}}`
const PODMAN_EXITED = `{"id":"a8359e26614ddae7d4cb92b87902d06968bc0a0eb7b5684109cb7d983d16c856","name":"p1","image":"2d6c874b80786758574c9527dbf67f28c0be0656b06d40723e8ec6cd1fbb48f1","labels":{"mlops.deployment":"y"},"state":{"OciVersion":"1.0.2-dev","Status":"exited","Running":false,"Paused":false,"Restarting":false,"OOMKilled":false,"Dead":false,"Pid":0,"ExitCode":3,"Error":"","StartedAt":"2026-12-02T07:41:55.868577396Z","FinishedAt":"2026-12-02T07:41:57.12821625Z","Health":{"Status":"","FailingStreak":0,"Log":null},"CheckpointedAt":"0001-01-01T00:00:00Z","RestoredAt":"0001-01-01T00:00:00Z"}}`
const DOCKER_IMAGE = `{"id":"sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762","tags":["mk/t:v0.5.14"],"digests":[],"env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470,driver<471","CUDA_VERSION=12.4.1"],"labels":null,"size":2266872}`
const PODMAN_IMAGE = `{"id":"2d6c874b80786758574c9527dbf67f28c0be0656b06d40723e8ec6cd1fbb48f1","tags":["localhost/mk/t:v1"],"digests":["localhost/mk/t@sha256:e99abcac12135fa5dd6f9b8db37ec685ef33d7e5ee1c9e4b3f783562ab1bff53"],"env":["CUDA_VERSION=12.4.1"],"labels":null,"size":2274404}`

const result = (exitCode: number, stderr: string) => ({ exitCode, signal: null, stdout: "", stderr })

describe("Containers: command lines", () => {
  it("a detached run: --pull never first, host network, init, GPUs by id (docker's CSV-quoted device list), private shm, mounts, variables by name only, the command after the image", () => {
    const argv = Containers.runArgv("docker", {
      image: "sha256:abc",
      name: "mlops-qwen-1a2b3c4d",
      detach: true,
      remove: false,
      labels: { "mlops.deployment": "qwen" },
      init: true,
      gpus: ["0", "1"],
      shm: "32g",
      mounts: [
        {
          source: "/home/ml/.mlops/deployments/qwen",
          target: "/home/ml/.mlops/deployments/qwen",
          readOnly: false
        },
        { source: "/models/q", target: "/models/q", readOnly: true }
      ],
      envNames: ["HF_HOME", "MLOPS_SERVER_SECRETS_FILE"],
      workdir: "/home/ml",
      entrypoint: "sh",
      argv: ["-c", 'exec "$@" >>"$0" 2>&1', "/log", "python3", "-m", "sglang.launch_server"]
    })
    assert.deepStrictEqual(argv, [
      "run",
      "--pull",
      "never",
      "-d",
      "--name",
      "mlops-qwen-1a2b3c4d",
      "--label",
      "mlops.deployment=qwen",
      "--network",
      "host",
      "--init",
      "--gpus",
      '"device=0,1"',
      "--shm-size",
      "32g",
      "-v",
      "/home/ml/.mlops/deployments/qwen:/home/ml/.mlops/deployments/qwen",
      "-v",
      "/models/q:/models/q:ro",
      "-e",
      "HF_HOME",
      "-e",
      "MLOPS_SERVER_SECRETS_FILE",
      "-w",
      "/home/ml",
      "--entrypoint",
      "sh",
      "sha256:abc",
      "-c",
      'exec "$@" >>"$0" 2>&1',
      "/log",
      "python3",
      "-m",
      "sglang.launch_server"
    ])
    // no value of any variable on the command line
    assert.isFalse(argv.some((word) => word.startsWith("HF_HOME=")))
  })

  it("podman asks for GPUs through CDI, one device per id; `host` shared memory is the host's IPC namespace", () => {
    const argv = Containers.runArgv("podman", {
      image: "img",
      detach: false,
      remove: true,
      gpus: ["0", "GPU-5tand1n0"],
      shm: "host",
      argv: []
    })
    assert.includeMembers(argv, [
      "--device",
      "nvidia.com/gpu=0",
      "nvidia.com/gpu=GPU-5tand1n0",
      "--ipc",
      "--rm"
    ])
    assert.notInclude(argv, "--gpus")
    assert.notInclude(argv, "--shm-size")
    assert.deepStrictEqual(Containers.gpuArgs("docker", "all"), ["--gpus", "all"])
    assert.deepStrictEqual(Containers.gpuArgs("podman", "all"), ["--device", "nvidia.com/gpu=all"])
  })
})

describe("Containers: what the tools print", () => {
  it("a running container's record (docker), and one that exited beside one created but refused its GPUs", () => {
    const running = Either.getOrThrow(commands.parseContainers(DOCKER_RUNNING))
    assert.strictEqual(running.length, 1)
    assert.deepInclude(running[0]!, {
      name: "c1",
      running: true,
      status: "running",
      pid: 2333,
      imageId: "sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762",
      finishedAt: undefined
    })
    assert.strictEqual(running[0]!.labels["mlops.deployment"], "x")
    assert.isUndefined(Containers.exitStatusOf(running[0]!))
    const [exited, refused] = Either.getOrThrow(commands.parseContainers(DOCKER_EXITED_AND_REFUSED))
    assert.deepStrictEqual(Containers.exitStatusOf(exited!), { exitCode: 3, signal: null })
    assert.strictEqual(refused!.status, "created")
    assert.strictEqual(refused!.error, 'could not select device driver "" with capabilities: [[gpu]]')
    assert.strictEqual(refused!.startedAt, undefined)
    // never started: no exit to report
    assert.isUndefined(Containers.exitStatusOf(refused!))
  })

  it("podman's record reads the same (bare hex image ids become sha256:…)", () => {
    const [p1] = Either.getOrThrow(commands.parseContainers(PODMAN_EXITED))
    assert.deepInclude(p1!, { name: "p1", running: false, exitCode: 3, oomKilled: false })
    assert.strictEqual(p1!.imageId, "sha256:2d6c874b80786758574c9527dbf67f28c0be0656b06d40723e8ec6cd1fbb48f1")
  })

  it("a container killed by a signal reports it as its init does (128 + n); an exit code stays one", () => {
    const base = Either.getOrThrow(commands.parseContainers(PODMAN_EXITED))[0]!
    assert.deepStrictEqual(Containers.exitStatusOf({ ...base, exitCode: 137 }), {
      exitCode: null,
      signal: "KILL"
    })
    assert.deepStrictEqual(Containers.exitStatusOf({ ...base, exitCode: 143 }), {
      exitCode: null,
      signal: "TERM"
    })
    assert.deepStrictEqual(Containers.exitStatusOf({ ...base, exitCode: 1 }), { exitCode: 1, signal: null })
  })

  it("an image's record: its id, tags and ENV as variables (docker and podman)", () => {
    const docker = Either.getOrThrow(commands.parseImage(DOCKER_IMAGE))
    assert.strictEqual(docker.id, "sha256:d3b6a7f5ab3d8171b96e26c65f04edb5cd09b0d3f7dd71f4408af34f85dc3762")
    assert.strictEqual(docker.env.NVIDIA_REQUIRE_CUDA, "cuda>=12.4 brand=tesla,driver>=470,driver<471")
    assert.strictEqual(docker.env.CUDA_VERSION, "12.4.1")
    const podman = Either.getOrThrow(commands.parseImage(PODMAN_IMAGE))
    assert.strictEqual(podman.id, "sha256:2d6c874b80786758574c9527dbf67f28c0be0656b06d40723e8ec6cd1fbb48f1")
    assert.deepStrictEqual(podman.tags, ["localhost/mk/t:v1"])
    assert.isTrue(Either.isLeft(commands.parseImage("[]")))
  })

  it("top's host pids past the header (docker `-o pid`, podman `hpid`)", () => {
    assert.deepStrictEqual(commands.parsePids("PID\n2333\n2351\n"), [2333, 2351])
    assert.deepStrictEqual(commands.parsePids("HPID\n4969\n4979\n"), [4969, 4979])
  })

  it("inspecting what is not there (docker's and podman's words) is no record, not a failure", () => {
    assert.isTrue(commands.isNoSuch(result(1, "Error response from daemon: No such container: nosuch")))
    assert.isTrue(
      commands.isNoSuch(
        result(1, "Error response from daemon: no such image: nosuch:1: No such image: nosuch:1")
      )
    )
    assert.isTrue(commands.isNoSuch(result(125, "Error: inspecting object: no such container nosuch")))
    assert.isTrue(commands.isNoSuch(result(125, "Error: inspecting object: nosuch:1: image not known")))
    assert.isFalse(commands.isNoSuch(result(1, "Got permission denied while trying to connect")))
  })
})

describe("Containers: the tools' refusals, with their fixes", () => {
  it("the tool missing, the socket refused to this user (both clients' wordings), no daemon", () => {
    const missing = commands.unavailable("ct129", "docker", result(127, "sh: 1: exec: docker: not found"))
    assert.strictEqual(missing?.problem, "missing")
    const denied20 = commands.unavailable(
      "ct129",
      "docker",
      result(
        1,
        'Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/version": dial unix /var/run/docker.sock: connect: permission denied'
      )
    )
    assert.strictEqual(denied20?.problem, "access-denied")
    assert.match(
      denied20?.reason ?? "",
      /^permission denied while trying to connect to the Docker daemon socket/
    )
    assert.include(denied20?.fix ?? "", "usermod -aG docker")
    const denied28 = commands.unavailable(
      "ct129",
      "docker",
      result(
        1,
        'permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.49/version": dial unix /var/run/docker.sock: connect: permission denied'
      )
    )
    assert.strictEqual(denied28?.problem, "access-denied")
    const down = commands.unavailable(
      "ct129",
      "docker",
      result(
        1,
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
      )
    )
    assert.strictEqual(down?.problem, "daemon-down")
    assert.isUndefined(
      commands.unavailable("ct129", "docker", result(1, "Error response from daemon: No such container: x"))
    )
  })

  it("a run refused: no GPU toolkit, a CUDA requirement the driver misses, podman without a CDI spec, a name in use", () => {
    const toolkit = Containers.runRefusal(
      "ct129",
      "docker",
      "img",
      "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].\n\nRun 'docker run --help' for more information"
    )
    assert.include(toolkit?.fix ?? "", "nvidia-ctk runtime configure")
    const cuda = Containers.runRefusal(
      "ct129",
      "docker",
      "img",
      "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown."
    )
    assert.include(cuda?.reason ?? "", "cuda>=12.8")
    const cdi = Containers.runRefusal(
      "ct129",
      "podman",
      "img",
      "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=0"
    )
    assert.include(cdi?.fix ?? "", "nvidia-ctk cdi generate")
    const taken = Containers.runRefusal(
      "ct129",
      "docker",
      "img",
      'docker: Error response from daemon: Conflict. The container name "/c1" is already in use by container "2e2f991fe748". You have to remove (or rename) that container to be able to reuse that name.'
    )
    assert.include(taken?.fix ?? "", "rm -f c1")
    assert.isUndefined(Containers.runRefusal("ct129", "docker", "img", "something else"))
  })

  it("a pull: not there (docker's and podman's words), a login, the network, the disk", () => {
    const tag = (stderr: string) => commands.pullFailure("ct129", "docker", "lmsysorg/sglang:v9", stderr)._tag
    assert.strictEqual(
      tag(
        "Error response from daemon: manifest for lmsysorg/sglang:v9 not found: manifest unknown: manifest unknown"
      ),
      "ImageNotFound"
    )
    assert.strictEqual(
      tag(
        "Error response from daemon: pull access denied for nosuch, repository does not exist or may require 'docker login': denied: requested access to the resource is denied"
      ),
      "ImageNotFound"
    )
    assert.strictEqual(
      tag(
        "Error: initializing source docker://127.0.0.1:5000/x:1: reading manifest 1 in 127.0.0.1:5000/x: manifest unknown"
      ),
      "ImageNotFound"
    )
    const network = commands.pullFailure(
      "ct129",
      "docker",
      "lmsysorg/sglang:v9",
      'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host'
    )
    assert.strictEqual(network._tag, "ImagePullFailed")
    assert.include(network.fix, "--pull never")
    assert.include(
      commands.pullFailure("h", "docker", "i", "write /var/lib/docker/tmp/x: no space left on device").fix,
      "docker system df"
    )
  })
})

describe("Containers: a failure the caller does not handle", () => {
  it("names the whole command (cut at 240 characters), the tool's last lines and what to do", () => {
    const argv = [
      "docker",
      "run",
      "-d",
      "--pull",
      "never",
      "--name",
      "mlops-x-1a2b3c4d",
      "lmsysorg/sglang:v0.5.11"
    ]
    const failure = commands.failed("ct129", argv, {
      exitCode: 1,
      signal: null,
      stdout: "",
      stderr: "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nError: something the tool said\n"
    })
    assert.strictEqual(failure.command, argv.join(" "))
    assert.notInclude(failure.stderr, "line 1")
    assert.include(failure.message, "Error: something the tool said")
    assert.include(failure.message, "on ct129")
    assert.include(failure.fix, "docker info")
    const long = commands.failed("ct129", ["docker", "run", "x".repeat(400)], {
      exitCode: 125,
      signal: null,
      stdout: "",
      stderr: ""
    })
    assert.strictEqual(long.command.length, 240)
    assert.isTrue(long.command.endsWith("…"))
  })
})
