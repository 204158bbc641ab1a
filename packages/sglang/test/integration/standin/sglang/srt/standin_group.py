"""The nodes of a multi-node stand-in meeting as torch.distributed's TCP store and NCCL do, written
from the reference facts (SGLang `--nnodes N --node-rank i --dist-init-addr head:port`; the same
command on every node; only node 0 serves HTTP), not from mlops.

Node 0 listens on the rendezvous port (every address, as the TCP store does); the other nodes
connect to the head's address, retrying every 100 ms for as long as it takes (a store client
retries until its whole timeout is spent), and send the arguments that shape the model. When every node has
come and every node's arguments equal node 0's, node 0 says `go` and the ranks initialise. After
loading, each node says `loaded`; node 0 serves only once all have.

What NCCL does when something is wrong is reproduced on purpose: nothing. Arguments that differ,
a node that never comes, or a node that goes away before it has loaded leave the others waiting
forever, with no error and no new line in the log. A rendezvous port the head cannot bind is the
one loud failure (torch's store raises at once).
"""

import json
import logging
import os
import signal
import socket
import threading
import time
import traceback

import sglang
from sglang.srt.standin_common import DistBackendError

logger = logging.getLogger(__name__)

# what may differ between the nodes of one deployment: where a node listens, which node it is,
# and secrets (not part of the model's shape)
NOT_SHAPING = ("host", "port", "node_rank", "dist_init_addr", "api_key", "admin_api_key")


class DistNetworkError(RuntimeError):
    pass


# Printed by tracebacks as `torch.distributed.DistNetworkError`, like PyTorch's own error.
DistNetworkError.__module__ = "torch.distributed"


def shape_of(args: dict) -> dict:
    shape = {k: v for k, v in args.items() if k not in NOT_SHAPING}
    shape["sglang_version"] = sglang.__version__
    return shape


def hang() -> None:
    while True:
        time.sleep(3600)


def peer_lost() -> None:
    """NCCL noticing a peer gone, on this node's rank 0, as a scheduler fails: its traceback in the
    log, then SIGQUIT to the launcher, which ends the tree."""
    try:
        raise DistBackendError(
            "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or "
            "there was a network error, NCCL version 2.21.5\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."
        )
    except DistBackendError:
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
    os.kill(os.getpid(), signal.SIGQUIT)
    hang()


def shut(conn: socket.socket) -> None:
    """Closed at once for the other side, whatever file objects still refer to it."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


def split_addr(addr: str):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


class Head:
    """Node 0: the store's server."""

    def __init__(self, args: dict):
        self.nnodes = args["nnodes"]
        self.shape = shape_of(args)
        _, port = split_addr(args["dist_init_addr"])
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("0.0.0.0", port))
        except OSError as e:
            raise DistNetworkError(
                f"The server socket has failed to listen on any local network address. port: {port}, "
                f"useIpv6: false, code: -{e.errno}, name: EADDRINUSE, message: address already in use"
            ) from None
        self.listener.listen(64)
        self.peers = []

    def meet(self) -> None:
        """Wait for every other node; go only when all shapes agree (else wait forever)."""
        while len(self.peers) < self.nnodes - 1:
            conn, _ = self.listener.accept()
            hello = json.loads(conn.makefile("r").readline() or "null")
            if hello is None:
                conn.close()
                continue
            self.peers.append((conn, hello))
        if any(hello["shape"] != self.shape for _, hello in self.peers):
            hang()
        for conn, _ in self.peers:
            conn.sendall(b"go\n")

    def close(self) -> None:
        for conn, _ in self.peers:
            shut(conn)
        self.listener.close()

    def loaded(self) -> None:
        """Every other node has loaded; a node gone before it did leaves node 0 waiting, or, with
        STANDIN_PEER_LOSS=error, failing as NCCL does when it notices a peer gone (ncclRemoteError,
        its message as NCCL words it): the consequence of the other node's failure, not a cause."""
        for conn, _ in self.peers:
            line = conn.makefile("r").readline()
            if line.strip() != "loaded":
                if os.environ.get("STANDIN_PEER_LOSS") == "error":
                    peer_lost()
                hang()


class Peer:
    """Nodes 1..N-1: the store's clients."""

    def __init__(self, args: dict):
        self.args = args
        self.conn = None

    def meet(self) -> None:
        host, port = split_addr(self.args["dist_init_addr"])
        while self.conn is None:
            try:
                self.conn = socket.create_connection((host, port), timeout=5)
                self.conn.settimeout(None)
            except OSError:
                time.sleep(0.1)
        hello = {"node_rank": self.args["node_rank"], "shape": shape_of(self.args)}
        self.conn.sendall((json.dumps(hello) + "\n").encode())
        if self.conn.makefile("r").readline().strip() != "go":
            hang()

    def loaded(self) -> None:
        self.conn.sendall(b"loaded\n")

    def close(self) -> None:
        if self.conn is not None:
            shut(self.conn)


def make(args: dict):
    """The node's part of the group, or None for a single node."""
    if args.get("nnodes", 1) <= 1:
        return None
    return Head(args) if args["node_rank"] == 0 else Peer(args)


def in_background(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread
