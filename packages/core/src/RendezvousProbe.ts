/**
 * Whether the ranks of a multi-node launch can meet, asked of the hosts themselves before any
 * engine starts: the head binds the rendezvous address and port for a few seconds (proving
 * the port free there), and every other host connects to it from its own network (not from
 * the laptop), each reporting what it saw. Every problem is returned at once, as data, for a
 * preflight to name: the port taken on the head (by whom, when `ss` can tell), or a host that
 * cannot reach it (refused: a firewall's reject or nothing listening on that address; timed
 * out: a firewall's drop; no route: a wrong address or interface).
 *
 * Needs `python3` on each host (every engine host has it).
 *
 * ```ts
 * const problems = yield* RendezvousProbe.probe({ head: connA, address: "192.0.2.1", port: 29500, others: [connB] })
 * ```
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import type { Connection } from "./Connection.js"
import type { CommandError } from "./Errors.js"
import * as RemoteCommand from "./RemoteCommand.js"

/** @category models */
export interface RendezvousCheck {
  /** The host rank 0 runs on. */
  readonly head: Connection
  /** The address the other hosts reach the head by. */
  readonly address: string
  readonly port: number
  /** The hosts of the other ranks. */
  readonly others: ReadonlyArray<Connection>
  /** How long each host tries to connect (default 5 s). */
  readonly timeout?: Duration.DurationInput
}

/** One thing that would keep the ranks from meeting. @category models */
export type RendezvousProblem =
  | {
      readonly _tag: "PortTaken"
      readonly host: string
      readonly address: string
      readonly port: number
      /** What binding said (`[Errno 98] Address already in use`). */
      readonly detail: string
    }
  | {
      readonly _tag: "Unreachable"
      /** The host that could not reach the head. */
      readonly from: string
      readonly address: string
      readonly port: number
      readonly how: "refused" | "timed out" | "no route" | "error"
      readonly detail: string
    }

// the head: bind, then accept until every other host came or `seconds` passed (each connection
// gets "ok"); says "bound" or "taken: ..." and frees the port at once when all came. It waits
// for each peer to close first, so the closed connections' TIME_WAIT stays on the peers and
// the engine can bind the port right after
const listener = [
  "import socket, sys, time",
  "s = socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET)",
  // as torch's TCP store binds: a previous run's connections in TIME_WAIT do not hold the port
  "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
  "try:",
  "    s.bind((sys.argv[1], int(sys.argv[2])))",
  "    s.listen(64)",
  "except OSError as e:",
  "    print('taken: ' + str(e), flush=True)",
  "    sys.exit(0)",
  "print('bound', flush=True)",
  "end = time.time() + float(sys.argv[3])",
  "came = 0",
  "while came < int(sys.argv[4]) and time.time() < end:",
  "    s.settimeout(max(0.05, end - time.time()))",
  "    try:",
  "        c, _ = s.accept()",
  "        c.sendall(b'ok')",
  "        c.settimeout(2)",
  "        try:",
  "            c.recv(1)",
  "        except OSError:",
  "            pass",
  "        c.close()",
  "        came += 1",
  "    except OSError:",
  "        pass",
  "s.close()"
].join("\n")

// another host: connect until it answers or the time is up; says "ok" or "<how>: detail"
const connector = [
  "import errno, socket, sys, time",
  "end = time.time() + float(sys.argv[3])",
  "last = 'timed out: no answer'",
  "while time.time() < end:",
  "    try:",
  "        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=max(0.2, end - time.time()))",
  "        print('ok' if c.recv(2) == b'ok' else 'error: another service answered', flush=True)",
  "        sys.exit(0)",
  "    except socket.timeout as e:",
  "        last = 'timed out: ' + str(e)",
  "        break",
  "    except OSError as e:",
  "        how = {errno.ECONNREFUSED: 'refused', errno.EHOSTUNREACH: 'no route', errno.ENETUNREACH: 'no route'}.get(e.errno, 'error')",
  "        last = how + ': ' + str(e)",
  "        if how != 'refused':",
  "            break",
  "        time.sleep(0.05)",
  "print(last, flush=True)"
].join("\n")

const howOf = (word: string): "refused" | "timed out" | "no route" | "error" =>
  word === "refused" || word === "timed out" || word === "no route" ? word : "error"

/**
 * Every problem that would keep the other hosts from meeting the head at `address:port`
 * (empty when all of them reached it).
 *
 * @category probes
 */
export const probe = Effect.fn("RendezvousProbe.probe")(function* (
  check: RendezvousCheck
): Effect.fn.Return<ReadonlyArray<RendezvousProblem>, CommandError> {
  const seconds = Duration.toSeconds(check.timeout ?? Duration.seconds(5))
  const { address, port } = check
  const python = (code: string, args: ReadonlyArray<string | number>) =>
    RemoteCommand.make(["python3", "-c", code, ...args.map(String)])
  // the head listens a little longer than the others try, so a late starter still finds it
  const head = check.head.exec(python(listener, [address, port, seconds + 2, check.others.length]), {
    timeout: Duration.seconds(seconds + 15)
  })
  const tries = Effect.forEach(
    check.others,
    (conn) =>
      Effect.map(
        conn.exec(python(connector, [address, port, seconds]), { timeout: Duration.seconds(seconds + 15) }),
        (result) => ({
          conn,
          said: result.stdout.trim() || `error: ${result.stderr.trim().split("\n").pop() ?? ""}`
        })
      ),
    { concurrency: "unbounded" }
  )
  const [headResult, results] = yield* Effect.all([head, tries], { concurrency: 2 })
  const headSaid = headResult.stdout.trim().split("\n")[0] ?? ""
  if (headSaid.startsWith("taken: "))
    return [{ _tag: "PortTaken", host: check.head.host.alias, address, port, detail: headSaid.slice(7) }]
  if (headSaid !== "bound")
    return [
      {
        _tag: "PortTaken",
        host: check.head.host.alias,
        address,
        port,
        detail: `the probe could not listen: ${headResult.stderr.trim().split("\n").pop() ?? headSaid}`
      }
    ]
  return results.flatMap(({ conn, said }): ReadonlyArray<RendezvousProblem> => {
    if (said === "ok") return []
    const colon = said.indexOf(": ")
    const word = colon === -1 ? said : said.slice(0, colon)
    const how = howOf(word)
    return [
      {
        _tag: "Unreachable",
        from: conn.host.alias,
        address,
        port,
        how,
        detail: colon === -1 ? said : said.slice(colon + 2)
      }
    ]
  })
})
