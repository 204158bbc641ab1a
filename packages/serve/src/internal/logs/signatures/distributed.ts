/**
 * NCCL, Gloo, torch.distributed and Ray failing: the root cause when nothing else is named, and
 * often only the echo of another rank's failure (hence their own tier, below root causes).
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, reasonOf, type Signature, type Subject, says, Tier } from "../../../LogSignature.js"

const DISTRIBUTED =
  /NCCL error|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|RemoteError)Error|NCCL WARN .*(?:[Ee]rror|failed|failure)|\[c10d\].*(?:failed|[Tt]imed out|[Tt]imeout)|TCPStore.*(?:failed|[Tt]imed out)|waiting for clients\. \d+\/\d+ clients joined|Timed out after \d+ seconds waiting for clients|DistBackendError|DistStoreError|ProcessGroupNCCL.*(?:[Tt]imeout|error|[Ee]xception)|Gloo connectFullMesh failed|collective operation timeout|Watchdog caught collective|watchdog got stuck|dump signal due to a collective timeout|RendezvousTimeoutError|placement group|Current node has no \w+ available|Failed to initialize (?:the )?(?:distributed|process group)/i

// an exception raised inside the GPU-to-GPU communication libraries
const COMMUNICATION_LIBRARY = /nvshmem|NVSHMEM|DeepEP|deep_ep|mooncake|nixl/

// printed at every unclean exit, whatever the cause
const BENIGN = /destroy_process_group\(\) was not called/

// what the watchdog says of the collective it timed out, and of itself when it hangs
const TIMED_OUT =
  /\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)[^)]*?Timeout\(ms\)=(\d+)\)(?: ran for (\d+) milliseconds)?/
const STUCK = /watchdog got stuck for \d+ seconds/
const RANK = /\[(?:PG (?:ID )?\d+ (?:PG GUID \S+ )?)?Rank (\d+)\]/

/** The typed details of a NCCL failure: its kind, the rank, the collective and its timeout, where the log states them. */
const detailsOf = (
  text: string
): Partial<Pick<F.DistributedError, "kind" | "rank" | "op" | "seqNum" | "timeoutMs" | "ranForMs">> => {
  const timedOut = TIMED_OUT.exec(text)
  if (timedOut)
    return {
      kind: "collective-timeout",
      rank: Number(timedOut[1]),
      seqNum: Number(timedOut[2]),
      op: timedOut[3]!,
      timeoutMs: Number(timedOut[4]),
      ...(timedOut[5] === undefined ? {} : { ranForMs: Number(timedOut[5]) })
    }
  const rank = RANK.exec(text)
  const who = rank === null ? {} : { rank: Number(rank[1]) }
  if (STUCK.test(text)) return { kind: "watchdog-stuck", ...who }
  if (/Watchdog caught collective|collective operation timeout|Timeout\(ms\)=/.test(text))
    return { kind: "collective-timeout", ...who }
  return /NCCL error|nccl\w+Error|NCCL WARN/.test(text) ? { kind: "nccl-error", ...who } : who
}

export const distributed: Signature = {
  id: "distributed-failure",
  tag: "DistributedError",
  tier: Tier.Distributed,
  variants: [
    {
      from: "SGLang/vLLM pynccl",
      text: "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    },
    {
      from: "torch 2.x",
      text: "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error"
    },
    {
      from: "torch 2.x gloo",
      text: "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"
    },
    {
      from: "torch 2.4+",
      text: "[PG ID 0 PG GUID 0 Rank 6] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info."
    },
    {
      from: "torch 2.x",
      text: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out."
    },
    {
      from: "torch 2.4+ (the heartbeat monitor)",
      text: "[rank2]:[E419 10:53:25.421620797 ProcessGroupNCCL.cpp:1484] [PG ID 2 PG GUID 9 Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives."
    }
  ],
  match: (s: Subject) =>
    (says(DISTRIBUTED)(s) || (s.final !== undefined && COMMUNICATION_LIBRARY.test(s.text))) &&
    !BENIGN.test(s.text),
  build: (s) =>
    new F.DistributedError({
      ...detailsOf(s.flat),
      ...base(
        s,
        reasonOf(s, DISTRIBUTED),
        // a segment NCCL cannot create is the shared-memory signature's; these are the rest
        /\/dev\/shm|No space left/i.test(s.flat)
          ? {
              action:
                "NCCL's shared memory failed: check /dev/shm (`df -h /dev/shm`; a container's is small unless given more: mlops --shm-size 64g or hosts.json's \"shm\") and that the ranks share it (one container, or --ipc host)"
            }
          : STUCK.test(s.flat)
            ? {
                action:
                  "NCCL's watchdog itself hung in a NCCL/CUDA call (a collective that never completes, often one rank stuck or dead): look for the rank that failed or hung first; rerun with NCCL_DEBUG=INFO (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only delays the abort)"
              }
            : /timeout/i.test(s.flat)
              ? {
                  action:
                    "a collective timed out: look for the rank that failed or hung first; check NCCL_DEBUG=INFO and the interconnect; if one rank is legitimately slow (evaluation or a checkpoint on rank 0) raise the process group's timeout (init_process_group(timeout=...), the Trainer's ddp_timeout)"
                }
              : {
                  action:
                    "rerun with NCCL_DEBUG=INFO; check that all GPUs are visible and idle (nvidia-smi topo -m)"
                }
      )
    })
}
