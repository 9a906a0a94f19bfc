"""Every Session and Sandbox method, their results and their errors."""

from __future__ import annotations

import os
import tarfile

import pytest

import burrow


def test_create_and_find(sb):
    s = sb.create("alpha", env={"GREETING": "hi"})
    assert s.name == "alpha" and len(s.id) == 16
    assert sb.session("alpha") == s
    assert sb.session(s.id[:6]).id == s.id
    info = s.info()
    assert info.name == "alpha" and info.version >= 1 and info.parent is None
    assert info.settings["env"] == {"GREETING": "hi"}
    assert info.created.tzinfo is not None
    assert s.sh("echo $GREETING").stdout == "hi\n"
    anon = sb.create()
    assert anon.name is None
    assert {i.id for i in sb.sessions()} == {s.id, anon.id}


def test_create_errors(sb):
    sb.create("taken")
    with pytest.raises(burrow.InvalidInput, match="a session named 'taken' already exists"):
        sb.create("taken")
    with pytest.raises(ValueError):
        sb.create("x", allow_net=["http://"])
    with pytest.raises(burrow.InvalidInput):
        sb.create("y", secrets=["NO_HOSTS"])
    with pytest.raises(burrow.InvalidInput, match="unknown tool family 'nope'"):
        sb.create("z", family="nope")
    with pytest.raises(burrow.InvalidInput, match="allow_net and secrets take a list"):
        sb.create("w", allow_net="pypi.org")
    with pytest.raises(burrow.UnknownSession, match="no session matches 'ghost'"):
        sb.session("ghost")
    with pytest.raises(LookupError):
        sb.session("ghost")


def test_sh_results(s):
    r = s.sh("echo out; echo err >&2; exit 3")
    assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
    code, out, err = r
    assert code == 3 and not r.ok
    assert r.version_after > r.version_before
    assert s.sh("cat", stdin="piped\n").stdout == "piped\n"
    assert s.sh("wc -c", stdin=b"\x00\x01\x02").stdout.strip() == "3"
    # The shell's state persists between calls: cwd, variables, files.
    s.sh("mkdir -p d && cd d && X=1 && touch f")
    assert s.sh("pwd; echo ${X:-unset}; ls").stdout == "/workspace/d\n1\nf\n"


def test_sh_timeout_leaves_the_session_unchanged(s):
    s.write("keep.txt", "before\n")
    v = s.info().version
    with pytest.raises(burrow.CallTimeout, match=r"the session is unchanged"):
        s.sh("echo changed > keep.txt; sleep 10", timeout=0.5)
    with pytest.raises(TimeoutError):
        s.sh("sleep 10", timeout=0.2)
    assert s.read("keep.txt") == "before\n"
    assert s.info().version == v
    with pytest.raises(burrow.InvalidInput, match="timeout must be a positive number"):
        s.sh("true", timeout=-1)


def test_cpu_budget_meters_and_stops_calls(sb):
    s = sb.create("metered", cpu_budget=10**10)
    assert s.info().settings["cpu_budget"] == 10**10
    r = s.sh("echo hi > a.txt; cat a.txt")
    assert r.stdout == "hi\n" and r.fuel is not None and r.fuel > 0
    assert s.sh("true").fuel > 0  # every call of the session is metered
    s.write("keep.txt", "before\n")
    v = s.info().version
    # A call's own budget replaces the session's; past it the call is stopped and rolled
    # back, as a timed-out one is.
    with pytest.raises(
        burrow.CallFailed,
        match=r"cpu budget: the call used more than its budget of 5000000 fuel units",
    ):
        s.sh("echo changed > keep.txt; while true; do :; done", cpu_budget=5_000_000)
    assert s.read("keep.txt") == "before\n"
    assert s.info().version == v
    last = s.log()[-1]
    assert last.data["cpu_budget"] == 5_000_000 and last.data["fuel"] >= 5_000_000
    # Without a budget, no fuel is counted.
    plain = sb.create()
    assert plain.sh("true").fuel is None
    with pytest.raises(burrow.InvalidInput, match="cpu_budget must be a positive whole number"):
        plain.sh("true", cpu_budget=0)
    with pytest.raises(burrow.InvalidInput, match="cpu_budget must be a positive whole number"):
        sb.create(cpu_budget=-5)


def test_files(s):
    v1 = s.write("a/b/notes.md", "hello\nworld\n")
    assert s.read("a/b/notes.md") == "hello\nworld\n"
    assert s.read("/workspace/a/b/notes.md") == "hello\nworld\n"
    v2 = s.write("bin.dat", b"\xff\x00")
    assert v2 == v1 + 1
    assert s.read_bytes("bin.dat") == b"\xff\x00"
    with pytest.raises(UnicodeDecodeError):
        s.read("bin.dat")
    with pytest.raises(burrow.FileNotFound, match="missing.txt: no such file or directory"):
        s.read("missing.txt")
    with pytest.raises(FileNotFoundError):
        s.read("missing.txt")
    with pytest.raises(IsADirectoryError):
        s.read("a")
    with pytest.raises(burrow.InvalidInput, match="outside the workspace"):
        s.read("/etc/../../x")
    with pytest.raises(burrow.InvalidInput):
        s.write("/elsewhere/x", "no")
    assert s.edit("a/b/notes.md", "world", "there") == "edited a/b/notes.md (1 replacement(s))"
    assert s.read("a/b/notes.md") == "hello\nthere\n"
    with pytest.raises(burrow.ToolError, match="edit: old_string not found in a/b/notes.md"):
        s.edit("a/b/notes.md", "absent", "x")
    s.write("a/c.md", "x\nhello again\n")
    assert sorted(s.glob("**/*.md")) == ["/workspace/a/b/notes.md", "/workspace/a/c.md"]
    assert s.glob("*.md", path="a") == ["/workspace/a/c.md"]
    assert s.glob("*.none") == []
    assert s.grep("hello", path="a/c.md") == "/workspace/a/c.md:2:hello again"
    assert s.grep("nothing-like-this") == "no matches"
    with pytest.raises(burrow.ToolError, match="grep: invalid regex"):
        s.grep("(")


def test_call_every_family(s):
    out = s.call("write", {"file_path": "w.txt", "content": "one\n"})
    assert out == {"content": [{"type": "text", "text": out["content"][0]["text"]}], "is_error": False}
    assert "one" in s.call("read", {"file_path": "w.txt"})["content"][0]["text"]
    out = s.call("Read", {"file_path": "/workspace/w.txt"}, family="claude-code")
    assert "one" in out["content"][0]["text"]
    out = s.call("str_replace_based_edit_tool", {"command": "view", "path": "/workspace/w.txt"}, family="api")
    assert out["content"][0]["text"] == "     1\tone\n" or "one" in out["content"][0]["text"]
    out = s.call("memory", {"command": "create", "path": "/memories/m.md", "file_text": "x"}, family="memory")
    assert out["content"][0]["text"] == "File created successfully at: /memories/m.md"
    assert s.call("nope", {})["is_error"]
    with pytest.raises(burrow.InvalidInput, match="unknown tool family"):
        s.call("read", {}, family="bogus")


def test_fork_is_isolated(s):
    s.write("shared.txt", "base\n")
    a, b = s.fork(2)
    assert a.info().parent == s.id and b.info().parent == s.id
    a.write("shared.txt", "a\n")
    b.sh("echo b > shared.txt; touch only-b")
    assert s.read("shared.txt") == "base\n"
    assert a.read("shared.txt") == "a\n"
    assert b.read("shared.txt") == "b\n"
    assert a.glob("only-b") == []
    with pytest.raises(burrow.InvalidInput, match="fork count"):
        s.fork(0)


def test_merge_a_fork_back(s):
    s.write("f.txt", "a\nb\nc\nd\n")
    a, b = s.fork(2)
    a.sh("sed -i s/a/A/ f.txt; echo n > new.txt")
    s.sh("sed -i s/d/D/ f.txt")
    dry = a.merge(no_commit=True)
    assert dry.clean and not dry.committed and dry.merged == ["f.txt", "new.txt"]
    assert s.read("f.txt") == "a\nb\nc\nD\n"
    m = a.merge()
    assert m.committed and m.into == s.id and m.source == a.id
    assert s.read("f.txt") == "A\nb\nc\nD\n" and s.read("new.txt") == "n\n"
    # The other fork edited the line this one did: a conflict with diff3 markers.
    b.sh("sed -i s/a/B/ f.txt")
    c = b.merge(into=s)
    assert not c.clean
    assert c.conflicts == [burrow.MergeConflict("f.txt", "content", 1)]
    assert s.read("f.txt").startswith(f"<<<<<<< {s.id}\nA\n||||||| v")
    with pytest.raises(burrow.InvalidInput, match="--into"):
        s.merge()


def test_a_deterministic_session_replays_identically(sb):
    d = sb.create("det-py", deterministic=True)
    d.sh("date +%s%N > t.txt; echo $RANDOM > r.txt; head -c 8 /dev/urandom | od -An -tx1")
    d.write("notes.md", "x\n")  # an upload between calls: the replay starts the next call from it
    d.sh("cat notes.md t.txt > both.txt")
    report = d.replay(into="det-py-again")
    assert report["differ"] == 0 and report["identical"] == len(report["calls"]) == 2, report
    again = sb.session("det-py-again")
    for f in ["t.txt", "r.txt", "both.txt"]:
        assert again.read(f) == d.read(f)
    # Not deterministic: the clock's answer differs, and the report says where.
    p = sb.create("plain-py")
    p.sh("date +%s%N > t.txt")
    report = p.replay()
    assert report["differ"] == 1, report
    assert report["calls"][0]["difference"] == "the tree differs: changed: t.txt"


def test_diff_undo_checkout_label(s):
    s.write("f.txt", "one\n")
    base = s.label("start")
    a = s.fork()[0]
    a.write("f.txt", "two\n")
    a.write("new.txt", "n\n")
    d = a.diff(s)
    assert {(c.path, c.change, c.kind) for c in d} == {
        ("f.txt", "modified", "file"),
        ("new.txt", "added", "file"),
    }
    assert len(d) == 2
    assert "-one\n+two\n" in d.patch and "+++ b/new.txt" in d.patch
    # By version number, by label, by session key.
    assert a.diff(base).b == a.info().version
    assert len(a.diff("start")) == 2
    assert len(a.diff(s.id)) == 2
    assert len(s.diff(s)) == 0
    a.undo()
    assert a.glob("new.txt") == []
    assert a.read("f.txt") == "two\n"
    a.checkout(base)
    assert a.read("f.txt") == "one\n"
    a.checkout("v%d" % base)
    with pytest.raises(burrow.InvalidInput):
        a.diff(3.5)
    # /tmp changes are in the system area, seen with all=True.
    s.sh("echo t > /tmp/t")
    assert all(c.path != "/tmp/t" for c in s.diff(base))
    assert any(c.path == "/tmp/t" for c in s.diff(base, all=True))


def test_history_and_log(s):
    s.write("x", "1")
    s.sh("echo 2 > x")
    h = s.history()
    assert [v.message for v in h[:2]] == ["sh", "upload x"]
    assert h[0].parent == h[1].version
    assert len(s.history(limit=1)) == 1
    kinds = [e.kind for e in s.log()]
    assert kinds[0] == "created" and "upload" in kinds and "tool" in kinds
    tools = s.log("tool")
    assert all(e.kind == "tool" for e in tools)
    assert tools[-1].data["input"] == {"command": "echo 2 > x"}
    assert s.log(after=tools[-1].seq) == []


def test_export(s, tmp_path):
    s.write("d/f.txt", "hi\n")
    st = s.export(tmp_path / "out")
    assert st.files == 1 and (tmp_path / "out/d/f.txt").read_text() == "hi\n"
    s.export(tmp_path / "out.tar")
    with tarfile.open(tmp_path / "out.tar") as t:
        assert "d/f.txt" in [m.name.lstrip("./") for m in t.getmembers()]


def test_delete_gc_fsck(sb, s):
    s.write("big", "x" * 100000)
    s.delete()
    with pytest.raises(burrow.UnknownSession):
        sb.session("work")
    r = sb.gc(grace=0)
    assert r.objects_deleted > 0
    f = sb.fsck()
    assert f.clean and f.problems == []


def test_default_store_is_the_clis(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    sb = burrow.Sandbox()
    assert sb.path == os.path.join(str(tmp_path / "xdg"), "burrow", "burrow.db")
    sb.create("here")
    assert os.path.exists(sb.path)


def test_reopen_resumes(store):
    s = burrow.Sandbox(store).create("keep")
    s.sh("cd /workspace && mkdir sub && cd sub && echo kept > f")
    del s
    again = burrow.Sandbox(store).session("keep")
    assert again.sh("pwd; cat f").stdout == "/workspace/sub\nkept\n"
