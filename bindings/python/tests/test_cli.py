"""The package and the CLI share one store format: sessions made by one resume in the other."""

from __future__ import annotations

import burrow


def test_resume_a_session_made_by_the_cli(cli, store):
    code, out, _ = cli("session", "new", "--name", "from-cli")
    assert code == 0
    sid = out.strip()
    code, _, _ = cli("sh", "from-cli", "mkdir notes && cd notes && echo 'by the cli' > a.md")
    assert code == 0
    s = burrow.Sandbox(store).session("from-cli")
    assert s.id == sid
    assert s.read("notes/a.md") == "by the cli\n"
    # The shell's state came along: the cwd the CLI left.
    assert s.sh("pwd").stdout == "/workspace/notes\n"
    s.write("notes/b.md", "by python\n")
    code, out, _ = cli("cat", "from-cli", "notes/b.md")
    assert (code, out) == (0, "by python\n")
    code, out, _ = cli("log", "from-cli", "--kind", "upload")
    assert "upload" in out


def test_errors_are_the_clis(cli, sb):
    sb.create("dup")
    code, _, err = cli("session", "new", "--name", "dup")
    assert code != 0
    try:
        sb.create("dup")
    except burrow.InvalidInput as e:
        assert str(e) in err
    code, _, err = cli("sh", "ghost", "true")
    try:
        sb.session("ghost")
    except burrow.UnknownSession as e:
        assert str(e) in err
