"""The copy fallback file (issue 32 item 5): a per-user private directory, a planted symlink is
never followed, a directory open to others or not a real directory is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from binlogscope.inspector.clipboard import runtime_dir, save_copy


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    return d


def test_saves_in_a_private_directory(run: Path) -> None:
    path = save_copy("66 00 00 00")
    assert path == run / "binlogscope" / "clipboard.txt"
    assert path.read_text() == "66 00 00 00\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    save_copy("1")  # truncated, not appended
    assert path.read_text() == "1\n"


def test_a_planted_symlink_is_not_followed(run: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / "binlogscope").mkdir(mode=0o700)
    (run / "binlogscope" / "clipboard.txt").symlink_to(victim)
    with pytest.raises(OSError, match="symlink"):
        save_copy("secret value")
    assert victim.read_text() == "precious\n"


def test_a_directory_open_to_others_or_a_link_is_refused(run: Path, tmp_path: Path) -> None:
    d = run / "binlogscope"
    d.mkdir(mode=0o700)
    d.chmod(0o777)  # pre-created readable/writable by everyone
    with pytest.raises(OSError, match="open to other users"):
        save_copy("x")
    d.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    d.symlink_to(elsewhere)
    with pytest.raises(OSError, match="not a directory"):
        save_copy("x")
    assert not any(elsewhere.iterdir())


def test_without_xdg_runtime_dir_a_0700_directory_in_tmp(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    d = runtime_dir()
    assert d == tmp_path / f"binlogscope-{os.getuid()}"
    assert d.stat().st_mode & 0o777 == 0o700
    # an XDG_RUNTIME_DIR open to others is not trusted either
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    assert runtime_dir() == d
