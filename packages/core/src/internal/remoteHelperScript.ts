/**
 * The remote helper: a small Python 3 program (3.4 or newer, standard library only) that one
 * exec channel per connection starts through the login shell, once. It listens on a Unix
 * socket in a fresh 0700 directory (`tempfile.mkdtemp`), prints `mlops-helper 1 <socket>`, and
 * then serves each socket connection (an ssh `direct-streamlocal` channel) as one exec channel
 * would be served by sshd, minus the login shell:
 *
 * - in: a 4-byte big-endian length and the command line (UTF-8), then the command's stdin
 *   bytes until EOF;
 * - the line runs as `/bin/sh -c LINE` in a new session (its own process group, as sshd's
 *   sessions are), with SIGPIPE and the other Python-ignored signals restored, and the
 *   helper's environment: the one the login shell set up when the helper started;
 * - out: frames of a type byte (1 stdout, 2 stderr, 3 exit), a 4-byte length and the bytes;
 *   the exit frame is `c<code>` or `s<SIGNAL NAME>`, sent once the process has ended and both
 *   pipes reached EOF (as sshd closes a channel), then the socket is closed.
 *
 * A client that goes away (EOF or a closed channel) closes the command's stdin, which is what
 * the lifeline wrapper watches to kill the command's group. The helper exits, removing its
 * directory, when its own channel's stdin ends (the connection closed or dropped). No value
 * ever reaches a command line: the environment travels inside the command's stdin as before.
 *
 * @internal
 */
export const HELPER_PY = `import os, signal, socket, struct, subprocess, sys, tempfile, threading, shutil
d = tempfile.mkdtemp(prefix="mlops-helper-")
p = os.path.join(d, "s")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(p)
os.chmod(p, 0o600)
srv.listen(128)
def gone():
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    shutil.rmtree(d, ignore_errors=True)
    os._exit(0)
threading.Thread(target=gone, daemon=True).start()
def exact(c, n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k:
            return None
        b += k
    return b
def serve(c):
    lock = threading.Lock()
    alive = [True]
    def send(kind, data):
        with lock:
            if not alive[0]:
                return
            try:
                c.sendall(struct.pack(">BI", kind, len(data)) + data)
            except OSError:
                alive[0] = False
    try:
        n = exact(c, 4)
        line = exact(c, struct.unpack(">I", n)[0]) if n else None
        if line is None:
            return
        proc = subprocess.Popen(["/bin/sh", "-c", line.decode("utf-8", "surrogateescape")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, close_fds=True, restore_signals=True)
        def feed():
            try:
                while True:
                    k = c.recv(65536)
                    if not k:
                        break
                    try:
                        proc.stdin.write(k)
                        proc.stdin.flush()
                    except OSError:
                        pass
            except OSError:
                pass
            try:
                proc.stdin.close()
            except OSError:
                pass
        def pump(f, kind):
            while True:
                k = os.read(f.fileno(), 65536)
                if not k:
                    break
                send(kind, k)
        threading.Thread(target=feed, daemon=True).start()
        err = threading.Thread(target=pump, args=(proc.stderr, 2), daemon=True)
        err.start()
        pump(proc.stdout, 1)
        err.join()
        code = proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name[3:]
            except ValueError:
                name = str(-code)
            send(3, ("s" + name).encode())
        else:
            send(3, ("c%d" % code).encode())
    finally:
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.close()
sys.stdout.write("mlops-helper 1 " + p + "\\n")
sys.stdout.flush()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`
