# burrow: what CPython for WASI needs to behave as on Linux inside a session.
#
# - wasi-libc starts every wasip1 program in "/" and reads no PWD: the shell's working
#   directory arrives in PWD, so the interpreter moves there before the script runs. (The
#   shell passes a relative script by its absolute path, since CPython resolves it before
#   this file runs, and the name as typed in BURROW_PYTHON_ARGV0 for sys.argv[0].)
# - The session's own packages (what `pip install` puts in ~/.local) are a site directory,
#   persisted, forked and undone with the session.
# - `_burrow` (next to this file) gives `subprocess`, `os.system` and HTTP(S) through
#   `http.client`/`urllib` a way out through the host's `/dev/burrow`.
import os as _os
import site as _site
import sys as _sys

_pwd = _os.environ.get("PWD")
if _pwd:
    try:
        _os.chdir(_pwd)
    except OSError:
        pass
_argv0 = _os.environ.pop("BURROW_PYTHON_ARGV0", None)
if _argv0 is not None and _sys.argv and _sys.argv[0].endswith(_argv0.lstrip("./")):
    _sys.argv[0] = _argv0
_site.addsitedir(
    _os.path.join(
        _os.environ.get("HOME", "/home/agent"), ".local/lib/python3.12/site-packages"
    )
)
del _os, _site, _sys, _pwd, _argv0
import _burrow  # noqa: E402,F401
