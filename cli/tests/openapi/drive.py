"""Drives a burrow session through a Python client generated from /openapi.json by
openapi-python-client (cli/tests/serve.rs generates it as `burrow_client`, then runs this
with the server's URL and token). Every answer must parse into its typed model."""

import io
import sys

from burrow_client import AuthenticatedClient
from burrow_client.api.calls import call_tool
from burrow_client.api.events import list_events
from burrow_client.api.files import download_file, list_directory, list_workspace
from burrow_client.api.sessions import create_session, fork_session, get_session, list_sessions
from burrow_client.api.versions import checkout_version, diff_session, get_history, label_version, undo_call
from burrow_client.models import (
    CallTool, CallToolInput, Checkout, CreateSession, Diff, Error, Events, ForkSession, Forked,
    History, LabelVersion, Labelled, SessionInfo, SessionList, ToolOutput, Tree, VersionRef,
)


def check(value, kind):
    assert isinstance(value, kind), f"expected {kind.__name__}, got {value!r}"
    return value


def bash(client, session, command):
    out = check(call_tool.sync(session, client=client, body=CallTool(
        tool="bash", input_=CallToolInput.from_dict({"command": command}))), ToolOutput)
    assert not out.is_error, out
    return out.content[0].text


def main():
    base, token = sys.argv[1], sys.argv[2]
    client = AuthenticatedClient(base_url=base, token=token)

    info = check(create_session.sync(client=client, body=CreateSession(name="typed")), SessionInfo)
    assert info.name == "typed" and info.versions >= 1, info
    text = bash(client, info.id, "mkdir -p src && echo 'print(1)' > src/app.py && echo hello > notes.md && cat notes.md")
    assert text.strip() == "hello", repr(text)

    tree = check(list_workspace.sync(info.id, client=client), Tree)
    assert [(e.name, e.kind) for e in tree.entries] == [("notes.md", "file"), ("src", "dir")], tree
    sub = check(list_directory.sync(info.id, "src", client=client), Tree)
    assert [e.name for e in sub.entries] == ["app.py"] and sub.path == "/workspace/src", sub

    labelled = check(label_version.sync(info.id, client=client, body=LabelVersion(label="base")), Labelled)
    forked = check(fork_session.sync(info.id, client=client, body=ForkSession(n=2)), Forked)
    assert len(forked.ids) == 2
    bash(client, forked.ids[0], "echo changed >> notes.md && rm src/app.py")

    diff = check(diff_session.sync(forked.ids[0], client=client, against=info.id, patch=True), Diff)
    changes = {c.path: (c.kind, c.added_lines, c.removed_lines) for c in diff.changes}
    assert changes == {
        "/workspace/notes.md": ("modified", 1, 0),
        "/workspace/src/app.py": ("removed", 0, 1),
    }, changes

    history = check(get_history.sync(info.id, client=client), History)
    assert history.versions[0].labels == ["base"] and history.versions[0].version == labelled.version

    # An old version's file, then checkout and undo.
    old = download_file.sync_detailed(forked.ids[0], "src/app.py", client=client, version="base")
    assert old.status_code == 200 and old.content == b"print(1)\n", old
    moved = check(checkout_version.sync(forked.ids[0], client=client, body=Checkout(version="base")), VersionRef)
    assert moved.version > labelled.version
    back = download_file.sync_detailed(forked.ids[0], "src/app.py", client=client)
    assert back.status_code == 200, back
    check(undo_call.sync(forked.ids[0], client=client), VersionRef)
    gone = download_file.sync_detailed(forked.ids[0], "src/app.py", client=client)
    assert gone.status_code == 404, gone

    events = check(list_events.sync(info.id, client=client), Events)
    kinds = [e.kind for e in events.events]
    assert kinds[:2] == ["created", "tool"] and "labelled" in kinds, kinds
    assert events.events[1].data["tool"] == "bash"

    sessions = check(list_sessions.sync(client=client), SessionList)
    assert {s.id for s in sessions.sessions} == {info.id, *forked.ids}
    assert {s.parent for s in sessions.sessions if s.id in forked.ids} == {info.id}

    # Errors come back as the typed Error model.
    missing = check(get_session.sync("no-such-session", client=client), Error)
    assert "no-such-session" in missing.error, missing
    print("ok")


if __name__ == "__main__":
    main()
