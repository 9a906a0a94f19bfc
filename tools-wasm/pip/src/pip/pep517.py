# burrow's pip: the PEP 517 side of building a source distribution, run by the session's
# python3 (pip itself runs in the shell; see build.rs). One step per run, its answer written
# as JSON to the file named last; what the backend prints is pip's to show on failure.
#
#   prepare SRC_OR_ARCHIVE DEST RESULT
#       unpack an sdist (tar with the 'data' filter, or zip) into DEST, or take a project
#       directory as it is; answer its source tree and [build-system] (PEP 518 defaults).
#   hook NAME SRC ENV_SITE ISOLATE_FROM BACKEND BACKEND_PATH OUT CONFIG RESULT
#       call the backend's hook NAME (get_requires_for_build_wheel, build_wheel,
#       build_editable, ...) in SRC with ENV_SITE (the build environment, or "") first on the
#       path and ISOLATE_FROM (the session's site-packages, or "") taken off it; CONFIG is
#       the config_settings as a JSON object.
import json
import os
import sys


def answer(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


def prepare(source, dest, result):
    if os.path.isdir(source):
        src = source
    else:
        os.makedirs(dest, exist_ok=True)
        if source.endswith(".zip"):
            import zipfile

            with zipfile.ZipFile(source) as z:
                z.extractall(dest)
        else:
            import tarfile

            with tarfile.open(source) as t:
                t.extractall(dest, filter="data")
        entries = [e for e in os.listdir(dest) if not e.startswith(".")]
        if len(entries) == 1 and os.path.isdir(os.path.join(dest, entries[0])):
            src = os.path.join(dest, entries[0])
        else:
            src = dest
    pyproject = os.path.join(src, "pyproject.toml")
    system = None
    if os.path.isfile(pyproject):
        import tomllib

        with open(pyproject, "rb") as f:
            system = tomllib.load(f).get("build-system")
    if system is None:
        # PEP 517's fallback: setuptools' legacy backend, as pip uses it.
        info = {
            "requires": ["setuptools>=40.8.0"],
            "backend": "setuptools.build_meta:__legacy__",
            "backend_path": [],
            "pyproject": os.path.isfile(pyproject),
        }
    else:
        if "requires" not in system:
            raise SystemExit(
                "pyproject.toml's [build-system] table is missing the 'requires' key"
            )
        info = {
            "requires": list(system["requires"]),
            "backend": system.get("build-backend") or "setuptools.build_meta:__legacy__",
            "backend_path": list(system.get("backend-path") or []),
            "pyproject": True,
        }
    has_setup = os.path.isfile(os.path.join(src, "setup.py"))
    if not info["pyproject"] and not has_setup:
        raise SystemExit(
            f"{source} does not appear to be a Python project: neither 'setup.py' nor "
            "'pyproject.toml' found."
        )
    info["src"] = src
    answer(result, info)


def hook(name, src, env_site, isolate_from, backend, backend_path, out, config, result):
    settings = json.loads(config) or None
    os.chdir(src)
    if isolate_from:
        sys.path[:] = [p for p in sys.path if os.path.normpath(p) != isolate_from]
    if env_site:
        import site

        site.addsitedir(env_site)
        sys.path.remove(env_site)
        sys.path.insert(0, env_site)
    paths = [os.path.normpath(os.path.join(src, p)) for p in json.loads(backend_path)]
    sys.path[:0] = paths
    module, _, attrs = backend.partition(":")
    import importlib

    obj = importlib.import_module(module)
    if paths:
        origin = os.path.normpath(getattr(obj, "__file__", "") or "")
        if not any(origin.startswith(p + os.sep) or origin == p for p in paths):
            raise SystemExit(
                f"backend {backend!r} was not loaded from backend-path {paths}"
            )
    for a in filter(None, attrs.split(".")):
        obj = getattr(obj, a)
    fn = getattr(obj, name, None)
    if name.startswith("get_requires_for_"):
        answer(result, {"value": list(fn(settings)) if fn else []})
    elif name.startswith("prepare_metadata_for_"):
        answer(result, {"value": fn(out, settings) if fn else None})
    elif fn is None:
        raise SystemExit(f"the build backend {backend!r} has no hook {name}")
    else:
        os.makedirs(out, exist_ok=True)
        answer(result, {"value": fn(out, settings, None)})


if __name__ == "__main__":
    step, args = sys.argv[1], sys.argv[2:]
    if step == "prepare":
        prepare(*args)
    elif step == "hook":
        hook(*args)
    else:
        raise SystemExit(f"unknown step {step}")
