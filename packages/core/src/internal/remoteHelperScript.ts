/**
 * The remote helper: a small Python 3 program (3.5 or newer, checked; standard library only) started
 * through the login shell by one exec channel, which then serves each socket connection (an
 * ssh `direct-streamlocal` channel) as sshd would serve an exec channel, minus the login shell.
 *
 * Two ways to live (the first argument):
 * - `persistent KEY IDLE`: the socket is `~/.mlops/run/h-KEY-HOSTNAME.sock` (the directories
 *   the user's own and not writable by others, `run` 0700; the host name in the name because
 *   homes are shared over NFS), it prints `mlops-helper 2 persistent <socket>`, then leaves the
 *   exec channel (forks, `setsid`, stdio on /dev/null) and stays until no connection has held
 *   it for IDLE seconds (commands do not count: each runs for a connection that holds), its
 *   socket was removed or replaced, or a hold found the rc files changed. Starts are one at a
 *   time (`flock` on `h-KEY-HOSTNAME.lock`); a helper already on the socket that answers a hold
 *   `ok` within 2 s is reused (its path printed, this one exits), one that does not (stopped,
 *   hung) loses its socket to this one. When the directory cannot be trusted or the path is too
 *   long for a Unix socket, it runs attached instead;
 * - `attached` (or no argument): the socket is in a fresh 0700 `tempfile.mkdtemp` directory, it
 *   prints `mlops-helper 2 attached <socket>` and exits, removing the directory, when its
 *   channel's stdin ends (the connection closed or dropped).
 *
 * The framing of one socket connection:
 * - in: a 4-byte big-endian length and the command line (UTF-8), then the command's stdin
 *   bytes until EOF. A length of 0 is a hold instead: the helper answers with one frame of
 *   type 4, `ok`, or `stale` when an rc file (`~/.bashrc`, `/etc/profile`, ...) changed since
 *   it started (then it retires: removes its socket and exits once idle), and counts the
 *   client as connected until it closes;
 * - the line runs as `/bin/sh -c LINE` in a new session (its own process group, as sshd's
 *   sessions are), with SIGPIPE and the other Python-ignored signals restored, and the
 *   helper's environment and umask: the ones the login shell set up when the helper started;
 * - out: frames of a type byte (1 stdout, 2 stderr, 3 exit), a 4-byte length and the bytes;
 *   the exit frame is `c<code>` or `s<SIGNAL NAME>`, sent once the process has ended and both
 *   pipes reached EOF (as sshd closes a channel), then the socket is closed.
 *
 * A client that goes away (EOF or a closed channel) closes the command's stdin, which is what
 * the lifeline wrapper watches to kill the command's group. No value ever reaches a command
 * line: the environment travels inside the command's stdin as before.
 *
 * @internal
 */
export const HELPER_PY = `import errno, fcntl, os, signal, socket, stat, struct, subprocess, sys, tempfile, threading, shutil, time
if sys.version_info < (3, 5):
    sys.exit("the mlops helper needs python3 >= 3.5")
mode = sys.argv[1] if len(sys.argv) > 1 else "attached"
RC = ["/etc/environment", "/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/bashrc",
      "/etc/zshenv", "/etc/zprofile", "/etc/zshrc", "/etc/zsh/zshenv", "/etc/zsh/zprofile",
      "/etc/zsh/zshrc", "/etc/ssh/sshd_config", "~/.bashrc", "~/.bashrc.d", "~/.bash_profile",
      "~/.bash_login", "~/.profile", "~/.zshenv", "~/.zprofile", "~/.zshrc", "~/.zlogin",
      "~/.pam_environment", "~/.ssh/environment"]
def rc_files():
    out = []
    for f in RC:
        f = os.path.expanduser(f)
        try:
            names = sorted(os.listdir(f)) if os.path.isdir(f) else []
        except OSError:
            names = []
        for g in [f] + [os.path.join(f, n) for n in names]:
            try:
                s = os.stat(g)
                out.append((g, s.st_ino, s.st_size, s.st_mtime_ns))
            except OSError:
                out.append((g, None))
    return out
def private_run_dir():
    uid = os.getuid()
    def trusted(p, mask):
        s = os.stat(p)
        return stat.S_ISDIR(s.st_mode) and s.st_uid == uid and not (s.st_mode & mask)
    try:
        home = os.path.expanduser("~")
        if not os.path.isabs(home) or not trusted(home, 0o022):
            return None
        d = home
        for name, mask in ((".mlops", 0o022), ("run", 0o077)):
            d = os.path.join(d, name)
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            if os.path.islink(d) and name == "run" or not trusted(d, mask):
                return None
        return d
    except OSError:
        return None
def listen_at(p):
    # one starter at a time: a probe between another's bind and listen would unlink a live socket
    lock = os.open(p[:-5] + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return bind_or_probe(p)
    finally:
        os.close(lock)
def answers(p):
    # a hold answered "ok" within 2 s: a live, fresh helper (not a dead socket, a stopped process)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2)
    try:
        probe.connect(p)
        probe.sendall(b"\\0\\0\\0\\0")
        got = b""
        while len(got) < 7:
            k = probe.recv(7 - len(got))
            if not k:
                break
            got += k
        return got == b"\\x04\\0\\0\\0\\x02ok"
    except OSError:
        return False
    finally:
        probe.close()
def bind_or_probe(p):
    for _ in range(2):
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            srv.bind(p)
            os.chmod(p, 0o600)
            srv.listen(128)
            return srv
        except OSError as e:
            srv.close()
            if e.errno != errno.EADDRINUSE:
                return None
            if answers(p):
                return "live"
            try:
                os.unlink(p)  # dead, hung or retired: take its place
            except OSError:
                pass
        finally:
            os.umask(old)
    return None
def ready(kind, p):
    try:
        sys.stdout.write("mlops-helper 2 %s %s\\n" % (kind, p))
        sys.stdout.flush()
        return True
    except OSError:
        return False
srv = None
p = None
if mode == "persistent":
    key = "".join(ch for ch in sys.argv[2] if ch in "0123456789abcdef")[:32]
    idle = max(float(sys.argv[3]), 1.0)
    host = "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in socket.gethostname())[:40]
    run = private_run_dir()
    if run is not None and key:
        p = os.path.join(run, "h-%s-%s.sock" % (key, host))
        srv = listen_at(p) if len(p.encode()) <= 100 else None
    if srv == "live":
        ready("persistent", p)
        os._exit(0)
    if srv is None:
        mode = "attached"
if mode == "persistent":
    sig = rc_files()
    ino = os.stat(p).st_ino
    if not ready("persistent", p):
        os.unlink(p)
        os._exit(0)
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
else:
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
state = {"active": 0, "last": time.monotonic(), "retired": False}
state_lock = threading.Lock()
def ours():
    try:
        return os.stat(p).st_ino == ino
    except OSError:
        return False
def retire():
    with state_lock:
        if not state["retired"]:
            state["retired"] = True
            if ours():
                os.unlink(p)
def exact(c, n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k:
            return None
        b += k
    return b
def hold(c, send):
    fresh = mode == "attached" or rc_files() == sig
    if not fresh:
        # off its path before the answer: the client's next start must not find this one live
        retire()
        return send(4, b"stale")
    # only holds count: a connection holds while it is open, and a command without one has no
    # client left to wait for it (a command's escaped child keeping its pipes must not pin us)
    with state_lock:
        state["active"] += 1
    try:
        send(4, b"ok")
        while c.recv(65536):
            pass
    except OSError:
        pass
    finally:
        with state_lock:
            state["active"] -= 1
            state["last"] = time.monotonic()
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
        if n is None:
            return
        length = struct.unpack(">I", n)[0]
        if length == 0:
            return hold(c, send)
        line = exact(c, length)
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
    except OSError:
        pass
    finally:
        with state_lock:
            state["last"] = time.monotonic()
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.close()
if mode == "attached":
    ready("attached", p)
else:
    srv.settimeout(min(5.0, idle / 2))
while True:
    try:
        c, _ = srv.accept()
        with state_lock:
            state["last"] = time.monotonic()
    except socket.timeout:
        with state_lock:
            quiet = state["active"] == 0
            idle_for = time.monotonic() - state["last"]
        if quiet and (state["retired"] or idle_for >= idle or not ours()):
            if ours():
                os.unlink(p)
            os._exit(0)
        continue
    except OSError:
        time.sleep(0.1)  # out of descriptors, an aborted connection: serve the next one
        continue
    c.settimeout(None)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`
