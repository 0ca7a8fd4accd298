"""Connection options from a MySQL option file, the environment and a prompt.

Order (later wins): ``~/.my.cnf`` (or ``--defaults-file``, which replaces it) ``[client]`` and
``[binlogscope]`` groups, then ``MYSQL_PWD`` for the password, then the command line. A password
given nowhere is asked for on the terminal (never echoed) when stdin is a TTY. The password is
never put on the command line of a child process, printed, logged or recorded.
"""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

GROUPS = ("client", "mysql", "binlogscope")


class OptionFileError(Exception):
    pass


def parse_option_file(path: str | Path, groups: tuple[str, ...] = GROUPS,
                      _depth: int = 0) -> dict[str, str]:
    """The ``key=value`` settings of the given groups (keys normalised to use ``_``)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise OptionFileError(f"cannot read option file {p}: {exc.strerror or exc}") from None
    out: dict[str, str] = {}
    group: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!include ") and _depth < 5:
            out.update(parse_option_file(line.split(None, 1)[1], groups, _depth + 1))
            continue
        if line.startswith("!includedir ") and _depth < 5:
            d = Path(line.split(None, 1)[1]).expanduser()
            for f in sorted(d.glob("*.cnf")):
                out.update(parse_option_file(f, groups, _depth + 1))
            continue
        if line.startswith("["):  # as the mysql client, a malformed file is an error
            if not line.split("#", 1)[0].rstrip().endswith("]"):
                raise OptionFileError(f"option file {p} line {lineno}: wrong group definition")
            group = line.split("#", 1)[0].rstrip()[1:-1].strip().lower()
            continue
        if group is None:
            raise OptionFileError(f"option file {p} line {lineno}: an option before any "
                                  "[group]")
        if group not in groups:
            continue
        key, sep, value = line.partition("=")
        key = key.strip().replace("-", "_").lower()
        value = value.strip()
        if sep and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif "#" in value:
            value = value.split("#", 1)[0].rstrip()
        out[key] = value if sep else "1"
    return out


@dataclass
class ConnectionOptions:
    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str | None = field(default=None, repr=False)  # never shown
    socket: str | None = None
    ssl_mode: str = "PREFERRED"
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None

    def describe(self) -> str:
        """For messages: where we connect, without the password."""
        where = self.socket or f"{self.host}:{self.port}"
        return f"{self.user}@{where}"


def resolve_options(
    *,
    defaults_file: str | None = None,
    cli: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
    prompt: bool | None = None,
) -> ConnectionOptions:
    env = dict(os.environ) if env is None else env
    settings: dict[str, str] = {}
    if defaults_file:
        settings.update(parse_option_file(defaults_file))
    else:
        home = Path(env.get("HOME", "~")).expanduser() / ".my.cnf"
        if home.exists():
            try:
                settings.update(parse_option_file(home))
            except OptionFileError:
                pass
    opts = ConnectionOptions()
    for key in ("host", "user", "socket", "ssl_ca", "ssl_cert", "ssl_key", "ssl_mode"):
        if key in settings:
            setattr(opts, key, settings[key])
    if "port" in settings:
        try:
            opts.port = int(settings["port"])
        except ValueError:
            raise OptionFileError(
                f"option file: port {settings['port']!r} is not a number") from None
    if "password" in settings:
        opts.password = settings["password"]
    if env.get("MYSQL_PWD") is not None:
        opts.password = env["MYSQL_PWD"]
    for key, value in (cli or {}).items():
        if value is not None:
            setattr(opts, key, value)
    opts.ssl_mode = opts.ssl_mode.upper()
    mode_given = "ssl_mode" in settings or (cli or {}).get("ssl_mode") is not None
    if opts.ssl_ca and not mode_given and not opts.socket:
        # as with the mysql client: a CA without a mode means "verify the server against it"
        # (PREFERRED would accept any certificate, or none); a Unix socket never uses TLS here
        opts.ssl_mode = "VERIFY_CA"
    if opts.password is None:
        ask = sys.stdin.isatty() if prompt is None else prompt
        if ask:
            opts.password = getpass.getpass(f"Password for {opts.describe()}: ")
        else:
            opts.password = ""
    return opts
