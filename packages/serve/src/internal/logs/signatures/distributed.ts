/**
 * NCCL, Gloo, torch.distributed and Ray failing: the root cause when nothing else is named, and
 * often only the echo of another rank's failure (hence their own tier, below root causes).
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, reasonOf, type Signature, type Subject, says, Tier } from "../../../LogSignature.js"

const DISTRIBUTED =
  /NCCL error|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|RemoteError)Error|NCCL WARN .*(?:[Ee]rror|failed|failure)|\[c10d\].*(?:failed|[Tt]imed out|[Tt]imeout)|TCPStore.*(?:failed|[Tt]imed out)|waiting for clients\. \d+\/\d+ clients joined|Timed out after \d+ seconds waiting for clients|DistBackendError|DistStoreError|ProcessGroupNCCL.*(?:[Tt]imeout|error|[Ee]xception)|Gloo connectFullMesh failed|collective operation timeout|Watchdog caught collective|dump signal due to a collective timeout|RendezvousTimeoutError|placement group|Current node has no \w+ available|Failed to initialize (?:the )?(?:distributed|process group)/i

// an exception raised inside the GPU-to-GPU communication libraries
const COMMUNICATION_LIBRARY = /nvshmem|NVSHMEM|DeepEP|deep_ep|mooncake|nixl/

// printed at every unclean exit, whatever the cause
const BENIGN = /destroy_process_group\(\) was not called/

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
    }
  ],
  match: (s: Subject) =>
    (says(DISTRIBUTED)(s) || (s.final !== undefined && COMMUNICATION_LIBRARY.test(s.text))) &&
    !BENIGN.test(s.text),
  build: (s) =>
    new F.DistributedError({
      ...base(
        s,
        reasonOf(s, DISTRIBUTED),
        // a segment NCCL cannot create is the shared-memory signature's; these are the rest
        /\/dev\/shm|No space left/i.test(s.flat)
          ? {
              action:
                "NCCL's shared memory failed: check /dev/shm (`df -h /dev/shm`; a container's is small unless given more: mlops --shm-size 64g or hosts.json's \"shm\") and that the ranks share it (one container, or --ipc host)"
            }
          : /timeout/i.test(s.flat)
            ? {
                action:
                  "a collective timed out: look for the rank that failed or hung first; check NCCL_DEBUG=INFO and the interconnect"
              }
            : {
                action:
                  "rerun with NCCL_DEBUG=INFO; check that all GPUs are visible and idle (nvidia-smi topo -m)"
              }
      )
    })
}
