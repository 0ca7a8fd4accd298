"""Where the TUI's copy (``c`` / ``v``) also saves the value: a per-user private file.

OSC 52 (the terminal's clipboard) is dropped silently by many terminals and by tmux, so the value
is also written to a file. That file must not be a place another local user can prepare:

- the directory is ``$XDG_RUNTIME_DIR/binlogscope`` (the login session's private directory,
  when it is set and is a real directory owned by this user with no access for others), else
  ``<tmp>/binlogscope-<uid>``, created with mode 0700;
- the directory is refused unless it is a real directory (not a symlink), owned by this user,
  with no group/other permissions - someone who created it first (or replaced it by a link)
  does not get the copied values;
- the file is opened with ``O_NOFOLLOW`` (a planted symlink is refused, never followed), and
  refused unless it is a regular file owned by this user; it is truncated only after those
  checks.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

FILE_NAME = "clipboard.txt"


def _check_private_dir(path: Path) -> None:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is not a directory (a symlink?): not used")
    if st.st_uid != os.getuid():
        raise OSError(f"{path} belongs to another user (uid {st.st_uid}): not used")
    if st.st_mode & 0o077:
        raise OSError(f"{path} is open to other users (mode {st.st_mode & 0o777:o}): not used")


def runtime_dir() -> Path:
    """This user's private directory for binlogscope's runtime files (created if needed)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    base: Path | None = None
    if xdg and os.path.isabs(xdg):
        try:
            _check_private_dir(Path(xdg))
            base = Path(xdg) / "binlogscope"
        except OSError:
            base = None
    if base is None:
        base = Path(tempfile.gettempdir()) / f"binlogscope-{os.getuid()}"
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    _check_private_dir(base)
    return base


def clipboard_path() -> Path:
    """The file copy writes to (its directory is not checked or created here)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        try:
            _check_private_dir(Path(xdg))
            return Path(xdg) / "binlogscope" / FILE_NAME
        except OSError:
            pass
    return Path(tempfile.gettempdir()) / f"binlogscope-{os.getuid()}" / FILE_NAME


def save_copy(text: str) -> Path:
    """Write ``text`` (and a newline) to this user's private clipboard file; raise OSError
    (with a readable message) when the directory or the file is not safe to use."""
    path = runtime_dir() / FILE_NAME
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise OSError(f"{path} is a symlink: not followed, nothing written") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise OSError(f"{path} is not a regular file of this user: nothing written")
        os.ftruncate(fd, 0)
        os.fchmod(fd, 0o600)
        data = (text + "\n").encode("utf-8", "surrogateescape")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return path


#: characters of a copied value shown in the notification
COPY_SHOWN = 240


def copy_note(text: str) -> str:
    """Save ``text`` to the private file and return what to tell the user: the value (cut at
    :data:`COPY_SHOWN` characters) and where it was saved, or why it was not."""
    try:
        saved = f"\nalso saved to {save_copy(text)} (if the terminal ignores OSC 52)"
    except OSError as exc:
        saved = f"\n(not saved to a file: {exc})"
    shown = text if len(text) <= COPY_SHOWN else text[: COPY_SHOWN - 1] + "…"
    return shown + saved


__all__ = ["clipboard_path", "copy_note", "runtime_dir", "save_copy"]
