# burrow: processes and HTTP for CPython on WASI, through the host's control device.
#
# CPython for WASI preview 1 has no fork/exec and no sockets, and cannot import new host
# functions. burrow's host serves /dev/burrow instead (host/src/runtime/control.rs): the
# interpreter opens it, writes one request (a JSON line, then a body), fsyncs, and reads the
# reply. sitecustomize imports this module, which:
#
# - replaces subprocess.Popen (and so run, call, check_call, check_output, getoutput, os.popen)
#   and adds os.system: the command runs through burrow's shell, in the same transaction, with
#   its cwd, environment, stdin and exit code. The child runs to its end when the parent first
#   needs it to have run (communicate, wait, poll, reading its output, closing its stdin, or at
#   exit): there is no concurrency between them. What cannot be done is refused by name;
# - connects http.client (and so urllib) to a socket that speaks HTTP/1.1 only: the requests
#   written to it are sent, whole, through the call's egress (policy, secrets, audit, the
#   host's TLS), and the responses read back from it. `ssl` is a module of the same kind: a
#   context whose wrap_socket marks such a connection https (verified by the host, as curl's
#   are). Raw sockets stay unavailable. The third-party clients that open their own
#   connections get the same socket where they open one: urllib3 (and so requests) through
#   urllib3.util.connection.create_connection, httpx through httpcore's sync backend;
# - provides concurrent.futures.thread (which the WASI library leaves out): a
#   ThreadPoolExecutor that runs each task when it is submitted, there being no threads.
#
# Nothing here runs at startup beyond defining names and one import hook.
import io as _io
import os as _os
import sys as _sys

_DEVICE = "/dev/burrow"


def _call(head, body=b""):
    """One request to the host: its JSON reply head and the bytes after it."""
    import json

    fd = _os.open(_DEVICE, _os.O_RDWR)
    try:
        data = memoryview(json.dumps(head).encode() + b"\n" + bytes(body))
        while data:
            data = data[_os.write(fd, data) :]
        _os.fsync(fd)
        chunks = []
        while True:
            b = _os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        _os.close(fd)
    reply = b"".join(chunks)
    i = reply.find(b"\n")
    if i < 0:
        raise OSError("burrow: the host gave no reply on " + _DEVICE)
    return json.loads(reply[:i]), reply[i + 1 :]


# ---------------------------------------------------------------------------------------------
# subprocess


def _quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _unsupported(what):
    import errno

    return OSError(errno.ENOTSUP, "burrow: subprocess does not support " + what)


def _find(name, cwd, env):
    """Whether argv[0] names a program burrow's shell runs (as execvp would find it)."""
    if "/" in name:
        return _os.path.isfile(_os.path.join(cwd, name))
    path = env.get("PATH", _os.defpath) if env is not None else _os.defpath
    for d in path.split(":"):
        d = _os.path.join(cwd, d or ".")
        for n in (name, name + ".wasm"):
            if _os.path.isfile(_os.path.join(d, n)):
                return True
    return False


def _drain_fd(fd):
    chunks = []
    while True:
        b = _os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _write_fd(fd, data):
    data = memoryview(data)
    while data:
        data = data[_os.write(fd, data) :]


def _fileno(f):
    if isinstance(f, int):
        return f
    try:
        return f.fileno()
    except (AttributeError, OSError) as e:
        raise _unsupported("a stream without a file descriptor (%r)" % (f,)) from e


_pids = [1000]
_pending = []


class _Output(_io.BufferedIOBase):
    """A pipe from the child: reading it first runs the child."""

    def __init__(self, proc, which):
        self._proc = proc
        self._which = which
        self._buf = None

    def _data(self):
        if self._buf is None:
            self._proc._run()
            self._buf = _io.BytesIO(self._proc._piped[self._which] or b"")
        return self._buf

    def readable(self):
        return True

    def read(self, n=-1):
        return self._data().read(n)

    def read1(self, n=-1):
        return self._data().read(n)

    def readinto(self, b):
        return self._data().readinto(b)

    def readline(self, n=-1):
        return self._data().readline(n)

    def peek(self, n=0):
        d = self._data()
        pos = d.tell()
        b = d.read(max(n, 1))
        d.seek(pos)
        return b

    def fileno(self):
        raise _unsupported("a child's pipe as a file descriptor")


class _Input(_io.BufferedIOBase):
    """The pipe to the child's stdin: what is written is its whole input, at close."""

    def __init__(self, proc):
        self._proc = proc
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        if self.closed:
            raise ValueError("write to closed file")
        self.data += b
        return len(b)

    def fileno(self):
        raise _unsupported("a child's pipe as a file descriptor")

    def close(self):
        if not self.closed:
            super().close()
            if not self._proc._waiting:
                self._proc._run()


class Popen:
    """subprocess.Popen, run through burrow's shell (see the module's comment)."""

    def __init__(
        self,
        args,
        bufsize=-1,
        executable=None,
        stdin=None,
        stdout=None,
        stderr=None,
        preexec_fn=None,
        close_fds=True,
        shell=False,
        cwd=None,
        env=None,
        universal_newlines=None,
        startupinfo=None,
        creationflags=0,
        restore_signals=True,
        start_new_session=False,
        pass_fds=(),
        *,
        user=None,
        group=None,
        extra_groups=None,
        encoding=None,
        errors=None,
        text=None,
        umask=-1,
        pipesize=-1,
        process_group=None,
    ):
        import subprocess as sp

        self._started = False
        self._waiting = False
        self._pipe = None
        self.returncode = None
        self.stdin = self.stdout = self.stderr = None
        if startupinfo is not None:
            raise ValueError("startupinfo is only supported on Windows platforms")
        if creationflags != 0:
            raise ValueError("creationflags is only supported on Windows platforms")
        for name, given in (
            ("preexec_fn", preexec_fn is not None),
            ("start_new_session", start_new_session),
            ("pass_fds", bool(pass_fds)),
            ("user", user is not None),
            ("group", group is not None),
            ("extra_groups", extra_groups is not None),
            ("umask", umask != -1),
            ("process_group", process_group not in (None, -1)),
        ):
            if given:
                raise _unsupported(name + " (a child is not an operating-system process)")
        if (
            universal_newlines is not None
            and text is not None
            and bool(universal_newlines) != bool(text)
        ):
            raise sp.SubprocessError(
                "Cannot disambiguate when both text and universal_newlines are supplied but different. Pass one or the other."
            )
        self.args = args
        self.encoding = encoding
        self.errors = errors
        self.text_mode = bool(encoding or errors or text or universal_newlines)
        self.universal_newlines = universal_newlines
        if isinstance(args, (str, bytes)):
            argv = [args]
        elif isinstance(args, _os.PathLike):
            if shell:
                raise TypeError("path-like args is not allowed when shell is true")
            argv = [args]
        else:
            argv = list(args)
        argv = [_os.fsdecode(a) for a in argv]
        given_cwd = cwd
        cwd = _os.path.abspath(_os.fsdecode(cwd)) if cwd is not None else _os.getcwd()
        if env is not None:
            env = {_os.fsdecode(k): _os.fsdecode(v) for k, v in env.items()}
        if shell:
            if executable is not None and _os.path.basename(_os.fsdecode(executable)) not in (
                "sh",
                "bash",
                "dash",
            ):
                raise _unsupported("a shell other than sh or bash (%s)" % executable)
            if not argv:
                raise IndexError("list index out of range")
            script = argv[0]
            arg0 = argv[1] if len(argv) > 1 else "/bin/sh"
            if len(argv) > 2:
                script = "set -- " + " ".join(map(_quote, argv[2:])) + "\n" + script
        else:
            if executable is not None:
                raise _unsupported("executable= (the program is found as argv[0])")
            if not argv:
                raise IndexError("list index out of range")
            if argv[0] == "" and _sys.executable == "":
                argv[0] = "python3"  # [sys.executable, ...]: this interpreter has no path
            arg0 = None
            script = " ".join(map(_quote, argv))
        import errno

        if not _os.path.isdir(cwd):
            raise FileNotFoundError(errno.ENOENT, _os.strerror(errno.ENOENT), given_cwd)
        if not shell and not _find(argv[0], cwd, env if env is not None else _os.environ):
            raise FileNotFoundError(errno.ENOENT, _os.strerror(errno.ENOENT), argv[0])
        self._script, self._arg0, self._cwd = script, arg0, cwd
        self._env = dict(env if env is not None else _os.environ)
        self._timed_out = False
        self._killed = False
        # Where each stream goes: ("pipe"), ("fd", n), ("null"), ("stdout") for stderr.
        self._piped = {1: None, 2: None}

        def dest(x, which):
            if x is None:
                return ("fd", which)
            if x == sp.PIPE:
                return ("pipe",)
            if x == sp.DEVNULL:
                return ("null",)
            if x == sp.STDOUT and which == 2:
                return ("stdout",)
            return ("fd", _fileno(x))

        self._out = dest(stdout, 1)
        self._err = dest(stderr, 2)
        if stdin is None:
            self._stdin = lambda: _drain_fd(0)
        elif stdin == sp.PIPE:
            self.stdin = self._pipe = _Input(self)
            self._stdin = lambda: bytes(self._pipe.data)
        elif stdin == sp.DEVNULL:
            self._stdin = lambda: b""
        elif isinstance(getattr(stdin, "buffer", stdin), _Output):
            self._stdin = getattr(stdin, "buffer", stdin).read
        else:
            fd = _fileno(stdin)
            self._stdin = lambda: _drain_fd(fd)
        if self._out == ("pipe",):
            self.stdout = _Output(self, 1)
            if self.text_mode:
                self.stdout = _io.TextIOWrapper(self.stdout, encoding, errors)
        if self._err == ("pipe",):
            self.stderr = _Output(self, 2)
            if self.text_mode:
                self.stderr = _io.TextIOWrapper(self.stderr, encoding, errors)
        if self.stdin is not None and self.text_mode:
            self.stdin = _io.TextIOWrapper(self.stdin, encoding, errors, write_through=True)
        _pids[0] += 1
        self.pid = _pids[0]
        _pending.append(self)

    def __repr__(self):
        return f"<Popen: returncode: {self.returncode} args: {self.args!r}>"

    def _run(self, timeout=None):
        """Runs the child to its end (once)."""
        import subprocess as sp

        if self._started:
            return
        self._started = True
        if self in _pending:
            _pending.remove(self)
        stdin = self._stdin()
        head = {
            "op": "spawn",
            "script": self._script,
            "cwd": self._cwd,
            "env": list(self._env.items()),
        }
        if self._arg0 is not None:
            head["arg0"] = self._arg0
        if timeout is not None:
            head["timeout"] = timeout
        reply, rest = _call(head, stdin)
        if "error" in reply:
            if reply.get("kind") == "timeout":
                self._timed_out = True
                self.returncode = -9
                raise sp.TimeoutExpired(self.args, timeout)
            raise OSError("burrow: cannot run %r: %s" % (self.args, reply["error"]))
        out = rest[: reply["stdout"]]
        err = rest[reply["stdout"] : reply["stdout"] + reply["stderr"]]
        self.returncode = reply["exit"]
        pipes = {1: bytearray(), 2: bytearray()}
        if self._err == ("stdout",):
            # Interleaved as written, into stdout's destination.
            merged = bytearray()
            pos = {1: 0, 2: 0}
            src = {1: out, 2: err}
            for stream, n in reply["order"]:
                merged += src[stream][pos[stream] : pos[stream] + n]
                pos[stream] += n
            plan = [(self._out, bytes(merged), 1)]
        else:
            plan = [(self._out, out, 1), (self._err, err, 2)]
        for d, data, which in plan:
            if d == ("pipe",):
                pipes[which] += data
            elif d[0] == "fd" and data:
                _write_fd(d[1], data)
        self._piped = {k: bytes(v) for k, v in pipes.items()}

    def _decode(self, data):
        import locale

        data = data.decode(self.encoding or locale.getencoding(), self.errors or "strict")
        return data.replace("\r\n", "\n").replace("\r", "\n")

    def _close_stdin(self):
        """Ends the child's input without running it (the caller runs it next)."""
        if self._pipe is not None and not self._pipe.closed:
            self._waiting = True
            try:
                if self.stdin is not self._pipe and not self.stdin.closed:
                    self.stdin.close()
                self._pipe.close()
            finally:
                self._waiting = False

    def communicate(self, input=None, timeout=None):
        if self._pipe is not None and not self._pipe.closed and input:
            if self.text_mode:
                import locale

                input = input.encode(self.encoding or locale.getencoding(), self.errors or "strict")
            self._pipe.data += input
        self._close_stdin()
        self._run(timeout)
        out = err = None
        if self._out == ("pipe",):
            out = self.stdout.read()
            self.stdout.close()
        if self._err == ("pipe",):
            err = self.stderr.read()
            self.stderr.close()
        return out, err

    def poll(self):
        if self._pipe is not None and not self._pipe.closed:
            return None  # still waiting for its input
        self._run()
        return self.returncode

    def wait(self, timeout=None):
        self._close_stdin()
        self._run(timeout)
        return self.returncode

    def send_signal(self, sig):
        if self._started:
            # It has ended (or was stopped at its timeout): nothing to signal, as on Linux.
            if self._timed_out and not self._killed:
                self._killed = True
                self.returncode = -int(sig)
            return
        raise _unsupported("signals to a child that has not run (it runs when waited for)")

    def terminate(self):
        import signal

        self.send_signal(signal.SIGTERM)

    def kill(self):
        import signal

        self.send_signal(signal.SIGKILL)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, value, traceback):
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        try:
            if self.stdin is not None:
                self.stdin.close()
        finally:
            if not self._started:
                self.wait()


def _run_pending():
    # Children nobody waited for run at exit, in the order they were made.
    while _pending:
        p = _pending[0]
        try:
            p._run()
        except Exception:
            if p in _pending:
                _pending.remove(p)


def _system(command):
    """os.system: the command through the shell, its output on ours; the wait status."""
    import subprocess as sp

    p = sp.Popen(command, shell=True)
    code = p.wait()
    return code << 8 if code >= 0 else -code


def _patch_subprocess(m):
    import atexit

    m.Popen = Popen
    m._can_fork_exec = True
    atexit.register(_run_pending)


# ---------------------------------------------------------------------------------------------
# HTTP: a socket that carries HTTP/1.1 through the host, and the ssl module that marks it https


class _HttpSocket:
    """An HTTP connection: the HTTP/1.1 requests written to it are made by the host."""

    family = 2
    type = 1
    proto = 6

    def __init__(self, address, timeout=None):
        self._host, self._port = address[0], int(address[1])
        self._timeout = timeout
        self._tls = False
        self.server_hostname = None
        self._out = bytearray()
        self._in = bytearray()
        self._closed = False
        self._error = None

    # -- the socket API clients use
    def sendall(self, data, flags=0):
        if self._closed:
            import errno

            raise OSError(errno.EBADF, "Bad file descriptor")
        self._out += data
        # A whole request is made at once, so a failure is the sender's (urllib wraps the
        # errors of sending in URLError, as it does a refused connection's). It is kept for
        # the reader too: clients that ignore an error while sending and read the response
        # anyway (httpcore) see it there instead of an empty reply.
        try:
            while self._exchange():
                pass
        except Exception as e:
            self._error = e
            raise

    def send(self, data, flags=0):
        self.sendall(data)
        return len(data)

    def recv(self, n, flags=0):
        if not self._in and self._error is not None:
            raise self._error
        b = bytes(self._in[:n])
        del self._in[:n]
        return b

    def recv_into(self, buf, nbytes=0, flags=0):
        b = self.recv(nbytes or len(buf))
        buf[: len(b)] = b
        return len(b)

    def makefile(self, mode="r", buffering=None, *, encoding=None, errors=None, newline=None):
        f = _io.BufferedReader(_SocketReader(self))
        if "b" not in mode:
            return _io.TextIOWrapper(f, encoding, errors, newline)
        return f

    def settimeout(self, t):
        self._timeout = t

    def gettimeout(self):
        return self._timeout

    def setblocking(self, flag):
        pass

    def setsockopt(self, *a):
        pass

    def getsockopt(self, *a):
        return 0

    def getpeername(self):
        return (self._host, self._port)

    def getsockname(self):
        return ("127.0.0.1", 0)

    def fileno(self):
        return -1

    def shutdown(self, how):
        pass

    def close(self):
        self._closed = True

    def detach(self):
        return -1

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # -- TLS, as ssl.SSLContext.wrap_socket leaves it
    def version(self):
        return "TLSv1.3" if self._tls else None

    def cipher(self):
        return ("TLS_AES_128_GCM_SHA256", "TLSv1.3", 128) if self._tls else None

    def selected_alpn_protocol(self):
        return "http/1.1" if self._tls else None

    def getpeercert(self, binary_form=False):
        # The host verifies the server's certificate for this name on every request it makes
        # here (a request whose certificate does not verify fails), so the name is what the
        # certificate is for; nothing else of it is passed on (clients that match the name
        # themselves, as urllib3 does for an IP address, find it).
        if binary_form:
            return b""
        if not self._tls:
            return {}
        name = (self.server_hostname or self._host).strip("[]")
        import ipaddress

        try:
            ipaddress.ip_address(name)
            kind = "IP Address"
        except ValueError:
            kind = "DNS"
        return {"subject": ((("commonName", name),),), "subjectAltName": ((kind, name),)}

    def do_handshake(self):
        pass

    # -- the exchange
    def _exchange(self):
        """Makes the first whole request written, if any: whether there was one."""
        if not self._out:
            return False
        req = _parse_request(self._out)
        if req is None:
            return False
        method, target, headers, body, used = req
        del self._out[:used]
        scheme = "https" if self._tls else "http"
        host = self._host
        if ":" in host and not host.startswith("["):
            host = "[" + host + "]"
        url = target if "://" in target else "%s://%s:%d%s" % (scheme, host, self._port, target)
        head = {"op": "http", "method": method, "url": url, "headers": headers}
        if self._timeout is not None:
            head["timeout"] = self._timeout
        reply, rest = _call(head, body)
        if "error" in reply:
            raise _http_error(reply, self._host, self._port)
        self._in += _response_bytes(reply, rest, method)
        return True


class _SocketReader(_io.RawIOBase):
    """The raw stream makefile() buffers."""

    def __init__(self, sock):
        self._sock = sock

    def readable(self):
        return True

    def readinto(self, b):
        return self._sock.recv_into(b, len(b))


_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


def _parse_request(buf):
    """(method, target, headers, body, bytes used) of the first whole request in buf, or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    headers = []
    length = 0
    chunked = False
    for line in lines[1:]:
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        lk = k.lower()
        if lk == "content-length":
            length = int(v)
        elif lk == "transfer-encoding" and "chunked" in v.lower():
            chunked = True
        if lk in _HOP or lk == "content-length":
            continue
        headers.append([k, v])
    pos = end + 4
    if chunked:
        body = bytearray()
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                return None
            size = int(bytes(buf[pos:nl]).split(b";")[0], 16)
            pos = nl + 2
            if size == 0:
                # Trailers, then the blank line.
                t = buf.find(b"\r\n", pos)
                while t > pos:
                    pos = t + 2
                    t = buf.find(b"\r\n", pos)
                if t < 0:
                    return None
                pos = t + 2
                break
            if len(buf) < pos + size + 2:
                return None
            body += buf[pos : pos + size]
            pos += size + 2
        body = bytes(body)
    else:
        if len(buf) < pos + length:
            return None
        body = bytes(buf[pos : pos + length])
        pos += length
    if body or method in ("POST", "PUT", "PATCH"):
        headers.append(["Content-Length", str(len(body))])
    return method, target, headers, body, pos


def _response_bytes(reply, rest, method):
    """The response as the server would have sent it, framed by Content-Length."""
    status = reply["status"]
    body = rest[: reply["body"]]
    lines = ["HTTP/1.1 %d %s" % (status, reply.get("reason", ""))]
    framed = False
    for k, v in reply["headers"]:
        lk = k.lower()
        if lk == "transfer-encoding":
            continue
        if lk == "content-length":
            if method == "HEAD":
                framed = True
                lines.append("%s: %s" % (k, v))
            continue
        lines.append("%s: %s" % (k, v))
    if not framed and method != "HEAD" and status not in (204, 304) and status >= 200:
        lines.append("Content-Length: %d" % len(body))
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (body if method != "HEAD" else b"")


def _http_error(reply, host, port):
    import errno

    why, kind = reply.get("error", ""), reply.get("kind")
    if kind == "dns":
        import socket

        return socket.gaierror(-2, "Name or service not known (%s)" % why)
    if kind == "refused":
        return ConnectionRefusedError(errno.ECONNREFUSED, why)
    if kind == "timeout":
        return TimeoutError(errno.ETIMEDOUT, why)
    if kind == "tls":
        import ssl

        return ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] " + why)
    if kind == "denied":
        return PermissionError(errno.EACCES, "burrow: " + why)
    return OSError(errno.EIO, "burrow: " + why)


def _http_connect(self):
    """http.client.HTTPConnection.connect: a connection the host carries."""
    _sys.audit("http.client.connect", self, self.host, self.port)
    if self._tunnel_host:
        raise _unsupported_http("proxy tunnels (the operator's proxy, if any, is the host's)")
    t = self.timeout if isinstance(self.timeout, (int, float)) else None
    self.sock = _HttpSocket((self.host, self.port), t)


def _unsupported_http(what):
    import errno

    return OSError(errno.ENOTSUP, "burrow: http.client does not support " + what)


def _patch_http(m):
    m.HTTPConnection.connect = _http_connect


def _http_create_connection(address, timeout=None, source_address=None, *args, **kwargs):
    """socket.create_connection, as HTTP clients use it: a connection the host carries."""
    t = timeout if isinstance(timeout, (int, float)) else None
    return _HttpSocket(address, t)


def _patch_urllib3_util_connection(m):
    m.create_connection = _http_create_connection


def _patch_urllib3_connection(m):
    # A pooled connection is reused while it is open (each request on it is made whole by
    # the host); urllib3 would otherwise poll its descriptor, which it does not have.
    def is_connected(self):
        return self.sock is not None and not getattr(self.sock, "_closed", True)

    m.HTTPConnection.is_connected = property(is_connected)


class _SocketModule:
    """The socket module as httpcore's sync backend sees it: create_connection gives the
    host's HTTP connection, TCP constants WASI's socket lacks are there, the rest is socket's."""

    _constants = {"IPPROTO_TCP": 6, "TCP_NODELAY": 1, "SOL_SOCKET": 1, "SO_KEEPALIVE": 9}

    def __init__(self, real):
        self._real = real
        self.create_connection = _http_create_connection

    def __getattr__(self, name):
        try:
            return getattr(self._real, name)
        except AttributeError:
            if name in self._constants:
                return self._constants[name]
            raise


def _patch_httpcore_sync(m):
    m.socket = _SocketModule(m.socket)


_SSL = r'''
"""burrow's ssl: TLS is the host's (rustls, the web's roots plus BURROW_CA_FILE, as curl's).
A context wraps only burrow's HTTP sockets; certificates are verified by the host, always."""
import enum as _enum

OPENSSL_VERSION = "burrow (TLS by the host: rustls)"
OPENSSL_VERSION_INFO = (3, 0, 0, 0, 0)
OPENSSL_VERSION_NUMBER = 0x30000000
HAS_SNI = True
HAS_ALPN = True
HAS_NEVER_CHECK_COMMON_NAME = True
HAS_TLSv1_3 = True
HAS_TLSv1_2 = True
HAS_ECDH = True
HAS_NPN = False
CHANNEL_BINDING_TYPES = []


class _IntEnum(_enum.IntEnum):
    pass


class VerifyMode(_enum.IntEnum):
    CERT_NONE = 0
    CERT_OPTIONAL = 1
    CERT_REQUIRED = 2


CERT_NONE, CERT_OPTIONAL, CERT_REQUIRED = VerifyMode


class VerifyFlags(_enum.IntFlag):
    VERIFY_DEFAULT = 0
    VERIFY_CRL_CHECK_LEAF = 4
    VERIFY_CRL_CHECK_CHAIN = 12
    VERIFY_X509_STRICT = 32
    VERIFY_X509_PARTIAL_CHAIN = 0x80000
    VERIFY_X509_TRUSTED_FIRST = 0x8000
    VERIFY_ALLOW_PROXY_CERTS = 0x40


globals().update(VerifyFlags.__members__)


class Options(_enum.IntFlag):
    OP_ALL = 0x80000054
    OP_NO_SSLv2 = 0
    OP_NO_SSLv3 = 0x2000000
    OP_NO_TLSv1 = 0x4000000
    OP_NO_TLSv1_1 = 0x10000000
    OP_NO_TLSv1_2 = 0x8000000
    OP_NO_TLSv1_3 = 0x20000000
    OP_NO_COMPRESSION = 0x20000
    OP_NO_TICKET = 0x4000
    OP_NO_RENEGOTIATION = 0x40000000
    OP_CIPHER_SERVER_PREFERENCE = 0x400000
    OP_SINGLE_DH_USE = 0
    OP_SINGLE_ECDH_USE = 0
    OP_ENABLE_MIDDLEBOX_COMPAT = 0x100000
    OP_IGNORE_UNEXPECTED_EOF = 0x80


globals().update(Options.__members__)


class _SSLMethod(_enum.IntEnum):
    PROTOCOL_SSLv23 = 2
    PROTOCOL_TLS = 2
    PROTOCOL_TLS_CLIENT = 16
    PROTOCOL_TLS_SERVER = 17


globals().update(_SSLMethod.__members__)
PROTOCOL_SSLv23 = PROTOCOL_TLS


class TLSVersion(_enum.IntEnum):
    MINIMUM_SUPPORTED = -2
    SSLv3 = 768
    TLSv1 = 769
    TLSv1_1 = 770
    TLSv1_2 = 771
    TLSv1_3 = 772
    MAXIMUM_SUPPORTED = -1


class Purpose(_enum.Enum):
    SERVER_AUTH = "1.3.6.1.5.5.7.3.1"
    CLIENT_AUTH = "1.3.6.1.5.5.7.3.2"


class SSLError(OSError):
    library = None
    reason = None


class SSLZeroReturnError(SSLError):
    pass


class SSLWantReadError(SSLError):
    pass


class SSLWantWriteError(SSLError):
    pass


class SSLSyscallError(SSLError):
    pass


class SSLEOFError(SSLError):
    pass


class SSLCertVerificationError(SSLError, ValueError):
    verify_code = 0
    verify_message = ""


CertificateError = SSLCertVerificationError


def _refuse(what):
    import errno

    return OSError(errno.ENOTSUP, "burrow: ssl does not support " + what + " (TLS is the host's)")


class SSLContext:
    sslsocket_class = None

    def __init__(self, protocol=PROTOCOL_TLS_CLIENT, *args, **kwargs):
        self.protocol = protocol
        self.check_hostname = protocol == PROTOCOL_TLS_CLIENT
        self.verify_mode = CERT_REQUIRED if protocol == PROTOCOL_TLS_CLIENT else CERT_NONE
        self.verify_flags = VERIFY_X509_TRUSTED_FIRST
        self.options = OP_ALL
        self.minimum_version = TLSVersion.MINIMUM_SUPPORTED
        self.maximum_version = TLSVersion.MAXIMUM_SUPPORTED
        self.post_handshake_auth = False
        self.keylog_filename = None
        self.hostname_checks_common_name = False
        self.security_level = 2

    def wrap_socket(self, sock, server_side=False, do_handshake_on_connect=True,
                    suppress_ragged_eofs=True, server_hostname=None, session=None):
        import _burrow

        if server_side:
            raise _refuse("server sockets")
        if not isinstance(sock, _burrow._HttpSocket):
            raise _refuse("wrapping a socket other than burrow's HTTP connections")
        if self.verify_mode == CERT_NONE:
            # Never silently unverified: the host always checks the certificate.
            import warnings

            warnings.warn("burrow: the host verifies every certificate; CERT_NONE is not honoured",
                          RuntimeWarning, stacklevel=2)
        sock._tls = True
        sock.server_hostname = server_hostname
        sock.context = self
        return sock

    def wrap_bio(self, *a, **k):
        raise _refuse("memory BIOs")

    def load_verify_locations(self, cafile=None, capath=None, cadata=None):
        # The host's roots (and BURROW_CA_FILE) decide; a guest's CA is not trusted.
        pass

    def load_default_certs(self, purpose=Purpose.SERVER_AUTH):
        pass

    def set_default_verify_paths(self):
        pass

    def load_cert_chain(self, certfile, keyfile=None, password=None):
        raise _refuse("client certificates")

    def set_ciphers(self, ciphers):
        pass

    def get_ciphers(self):
        return []

    def set_alpn_protocols(self, protocols):
        pass

    def set_npn_protocols(self, protocols):
        pass

    def set_servername_callback(self, cb):
        raise _refuse("servername callbacks")

    def set_ecdh_curve(self, name):
        pass

    def cert_store_stats(self):
        return {"x509": 0, "crl": 0, "x509_ca": 0}

    def get_ca_certs(self, binary_form=False):
        return []

    def session_stats(self):
        return {}


SSLSocket = type("SSLSocket", (), {})
SSLObject = type("SSLObject", (), {})
MemoryBIO = type("MemoryBIO", (), {})
SSLSession = type("SSLSession", (), {})


def create_default_context(purpose=Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
    ctx = SSLContext(PROTOCOL_TLS_CLIENT if purpose == Purpose.SERVER_AUTH else PROTOCOL_TLS_SERVER)
    return ctx


def _create_unverified_context(*a, **k):
    ctx = SSLContext(PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = CERT_NONE
    return ctx


_create_default_https_context = create_default_context
_create_stdlib_context = _create_unverified_context


def match_hostname(cert, hostname):
    pass


def get_default_verify_paths():
    import collections

    P = collections.namedtuple("DefaultVerifyPaths", "cafile capath openssl_cafile_env openssl_cafile openssl_capath_env openssl_capath")
    return P(None, None, "SSL_CERT_FILE", "", "SSL_CERT_DIR", "")


def RAND_bytes(n):
    import os

    return os.urandom(n)


def RAND_status():
    return True


def DER_cert_to_PEM_cert(der):
    import base64, textwrap

    f = str(base64.standard_b64encode(der), "ASCII", "strict")
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(textwrap.wrap(f, 64)) + "\n-----END CERTIFICATE-----\n"


def PEM_cert_to_DER_cert(pem):
    import base64

    body = pem.strip()[len("-----BEGIN CERTIFICATE-----"):-len("-----END CERTIFICATE-----")]
    return base64.decodebytes(body.encode("ASCII", "strict"))
'''


_THREAD_POOL = r'''
"""burrow's concurrent.futures.thread. CPython for WASI has no threads (and its library
leaves this module out), so a ThreadPoolExecutor runs each submitted call to its end when it
is submitted, in the caller, and the future is done when submit returns: independent tasks
(fetches, file work, CPU work) give the results they give with threads, in submission order.
Tasks that wait for one another (one blocks on a queue a later one fills) would wait
forever, and the call's timeout ends them."""
import itertools as _itertools
from concurrent.futures import _base


class BrokenThreadPool(_base.BrokenExecutor):
    """Raised when a worker thread in a ThreadPoolExecutor failed initializing."""


class ThreadPoolExecutor(_base.Executor):
    _counter = _itertools.count().__next__

    def __init__(self, max_workers=None, thread_name_prefix="", initializer=None, initargs=()):
        if max_workers is None:
            max_workers = 5
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        self._max_workers = max_workers
        self._thread_name_prefix = thread_name_prefix or (
            "ThreadPoolExecutor-%d" % self._counter())
        self._initializer = initializer
        self._initargs = initargs
        self._initialized = False
        self._broken = False
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs):
        if self._broken:
            raise BrokenThreadPool(self._broken)
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        if not self._initialized:
            self._initialized = True
            if self._initializer is not None:
                try:
                    self._initializer(*self._initargs)
                except BaseException:
                    _base.LOGGER.critical("Exception in initializer:", exc_info=True)
                    self._broken = ("A thread initializer failed, the thread pool is not "
                                    "usable anymore")
                    raise BrokenThreadPool(self._broken)
        f = _base.Future()
        f.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            f.set_exception(exc)
        else:
            f.set_result(result)
        return f

    submit.__doc__ = _base.Executor.submit.__doc__

    def shutdown(self, wait=True, *, cancel_futures=False):
        self._shutdown = True

    shutdown.__doc__ = _base.Executor.shutdown.__doc__
'''


class _SourceLoader:
    """A module of burrow's own, from source held here."""

    def __init__(self, source, label):
        self._source = source
        self._label = label

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(self._source, self._label, "exec"), module.__dict__)


class _Finder:
    """Patches subprocess, http.client and the HTTP clients after they load, and provides
    ssl and concurrent.futures.thread."""

    _after = {
        "subprocess": _patch_subprocess,
        "http.client": _patch_http,
        "urllib3.util.connection": _patch_urllib3_util_connection,
        "urllib3.connection": _patch_urllib3_connection,
        "httpcore._backends.sync": _patch_httpcore_sync,
    }

    def find_spec(self, name, path=None, target=None):
        if name == "ssl":
            from importlib.machinery import ModuleSpec

            return ModuleSpec("ssl", _SslLoader(), origin="burrow")
        if name == "concurrent.futures.thread":
            from importlib.machinery import ModuleSpec

            loader = _SourceLoader(_THREAD_POOL, "<burrow concurrent.futures.thread>")
            return ModuleSpec(name, loader, origin="burrow")
        patch = self._after.get(name)
        if patch is None:
            return None
        for f in _sys.meta_path:
            if f is self or not hasattr(f, "find_spec"):
                continue
            spec = f.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        class Patched:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                run(module)
                patch(module)

        spec.loader = Patched()
        return spec


class _SslLoader:
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = __file__
        exec(compile(_SSL, "<burrow ssl>", "exec"), module.__dict__)


def _install():
    _sys.meta_path.insert(0, _Finder())
    _os.system = _system
    for name, patch in _Finder._after.items():
        m = _sys.modules.get(name)
        if m is not None:
            patch(m)


_install()
