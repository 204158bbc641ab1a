/**
 * A port the server needs is taken: the HTTP port (uvicorn's bind error, vLLM's socket), the
 * torch.distributed store (`DistNetworkError ... EADDRINUSE`), ZMQ ports (SGLang's
 * `... is not available in 30 seconds`), metrics ports. POSIX errno 98 (Linux), 48 (macOS).
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, engineName, reasonOf, type Signature, says, Tier } from "../../../LogSignature.js"

const IN_USE =
  /Address already in use|address in use|EADDRINUSE|\[Errno (?:98|48)\]|error while attempting to bind on address|is not available in \d+ seconds|port \d+ is (?:already )?in use|Port is already in use/i

const portOf = (text: string): number | undefined => {
  const m =
    /bind on address \('[^']*', (\d{2,5})\)/.exec(text) ??
    /at (\d{2,5}) is not available/.exec(text) ??
    /port[:= ]+(\d{2,5})\b/i.exec(text) ??
    /:(\d{2,5})['")]/.exec(text)
  return m ? Number(m[1]) : undefined
}

const kindOf = (text: string): "http" | "nccl" | "zmq" | "other" =>
  /bind on address|uvicorn|api_server|\bhttp/i.test(text)
    ? "http"
    : /zmq|tcp:\/\/|port_base|is not available in \d+ seconds|scheduler_input_port|detokenizer_port/i.test(
          text
        )
      ? "zmq"
      : /DistNetworkError|TCPStore|dist_init|nccl_port|torch\.distributed|c10d/i.test(text)
        ? "nccl"
        : "other"

export const portInUse: Signature = {
  id: "port-in-use",
  tag: "PortInUse",
  tier: Tier.Root,
  variants: [
    {
      from: "uvicorn (SGLang, vLLM)",
      text: "[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use"
    },
    { from: "Python socket", text: "OSError: [Errno 98] Address already in use" },
    { from: "Python socket, macOS", text: "OSError: [Errno 48] Address already in use" },
    {
      from: "torch 2.x TCPStore",
      text: "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
    },
    {
      from: "SGLang 0.4-0.5.x",
      text: "ValueError: metrics_port at 40290 is not available in 30 seconds. metrics_port is used by a process already."
    },
    {
      from: "vLLM-Ascend mooncake",
      text: "Mooncake KVCacheSendingThread exception: Address already in use (addr='tcp://127.0.0.1:20012')"
    }
  ],
  match: says(IN_USE),
  build: (s, ctx) => {
    const kind = kindOf(s.flat)
    const port = portOf(s.flat)
    return new F.PortInUse({
      ...base(
        s,
        reasonOf(s, IN_USE),
        kind === "nccl"
          ? {
              action: "pass a free --nccl-port (outside the ephemeral range), or stop the process holding it"
            }
          : kind === "http"
            ? {
                action: `stop the process listening on port ${port ?? "(see above)"} (ss -ltnp), or pass another --port`
              }
            : kind === "zmq"
              ? {
                  action: `stop the other ${ctx.engine === undefined ? "" : `${engineName(ctx)} `}server on this host, or change --port / --dist-init-addr`
                }
              : {
                  action:
                    "stop the process holding the port (ss -ltnp shows it), or move this server to other ports"
                }
      ),
      kind,
      ...(port === undefined ? {} : { port })
    })
  }
}
