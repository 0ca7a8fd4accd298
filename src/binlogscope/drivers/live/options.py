"""Connection options from a MySQL option file, the environment and a prompt.

Order (later wins): ``~/.my.cnf`` (or ``--defaults-file``, which replaces it) ``[client]`` and
``[binlogscope]`` groups, then ``MYSQL_PWD`` for the password, then the command line. A password
given nowhere is asked for on the terminal (never echoed) when stdin is a TTY. The password is
never put on the command line of a child process, printed, logged or recorded (there is no
``--password`` option: a password on the command line shows in ``ps`` and ``/proc/PID/cmdline``).

Authentication safety (as the mysql client): without TLS (or a Unix socket) the password itself
is sent only when the user said so. ``caching_sha2_password`` full authentication and
``sha256_password`` RSA-encrypt it with ``--server-public-key-path FILE`` or, with
``--get-server-public-key``, with the key the server sends (a man in the middle can send his
own); otherwise one clear error. The 3.23 scramble (``mysql_old_password``, crackable from one
login) and clear-text plugins without TLS (``mysql_clear_password``, ``dialog``/PAM) only with
``--insecure-auth``.

``--max-packet-size`` (option files: ``max-packet-size`` or ``max_allowed_packet``): the largest
packet the live client buffers from the server, 1 GiB by default (the ceiling of the server's
``max_allowed_packet`` and a replica's ``slave_max_allowed_packet`` default, so no event a server
can send is refused); a hostile server cannot make it buffer more.
"""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GROUPS = ("client", "mysql", "binlogscope")


#: default --max-packet-size: 1 GiB, MariaDB's and MySQL's max_allowed_packet ceiling
DEFAULT_MAX_PACKET = 1 << 30
#: --max-packet-size bounds (a packet below 4 KiB cannot be refused: the greeting, a result row)
MIN_MAX_PACKET = 4 << 10
MAX_MAX_PACKET = 4 << 30
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
#: the authentication options (ConnectionOptions fields) the command line may set
AUTH_OPTIONS = ("get_server_public_key", "server_public_key_path", "insecure_auth",
                "max_packet_size", "compression_algorithms", "zstd_compression_level")
#: the values of --compression-algorithms (as the mysql client's option)
COMPRESSION_ALGORITHMS = ("zlib", "zstd", "uncompressed")


class OptionFileError(Exception):
    pass


def parse_size(text: str) -> int:
    """``1073741824``, ``64K``, ``16M``, ``1G`` (as the mysql client's size options) in bytes;
    ValueError with a one-line message when it is not one or out of range."""
    t = text.strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    digits = t[: len(t) - len(unit)]
    if not digits.isdigit():
        raise ValueError(f"{text!r} is not a size (bytes, or a number with K, M or G)")
    n = int(digits) * _SIZE_UNITS[unit]
    if not MIN_MAX_PACKET <= n <= MAX_MAX_PACKET:
        raise ValueError(f"{text!r}: the packet size limit must be between 4K and 4G")
    return n


def _size_arg(text: str) -> int:
    import argparse

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _algorithms_arg(text: str) -> str:
    import argparse

    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in COMPRESSION_ALGORITHMS]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a comma-separated list of {', '.join(COMPRESSION_ALGORITHMS)}")
    return ",".join(names)


def _level_arg(text: str) -> int:
    import argparse

    try:
        level = int(text)
    except ValueError:
        level = 0
    if not 1 <= level <= 22:
        raise argparse.ArgumentTypeError(f"{text!r}: a zstd level from 1 to 22")
    return level


def add_auth_arguments(group: Any) -> None:
    """The authentication-safety and packet-size options of a live connection (argparse)."""
    group.add_argument(
        "--get-server-public-key", action="store_true", default=None,
        help="without TLS, let caching_sha2_password / sha256_password ask the server for its "
        "RSA key and send the password encrypted with it (a man in the middle can answer "
        "with his own key: prefer --server-public-key-path or TLS)")
    group.add_argument(
        "--server-public-key-path", metavar="FILE",
        help="the server's RSA public key (PEM, its caching_sha2_password_public_key_path): "
        "without TLS the password is sent encrypted with this key only")
    group.add_argument(
        "--insecure-auth", action="store_true", default=None,
        help="allow the 3.23 password scramble (mysql_old_password) and, without TLS, the "
        "clear-text plugins (mysql_clear_password, dialog/PAM): refused by default")
    group.add_argument(
        "--max-packet-size", type=_size_arg, metavar="BYTES",
        help="largest packet accepted from the server (default 1G, the server's "
        "max_allowed_packet ceiling; K/M/G suffixes): a bigger one ends the run with an error")
    group.add_argument(
        "--compression-algorithms", type=_algorithms_arg, metavar="LIST",
        help="the compressed client/server protocol, as the mysql client's option: the "
        "algorithms allowed, in order of preference (zlib, zstd - MySQL 8.0.18+ only -, "
        "uncompressed); the first one the server offers is used, and none offered is an error "
        "unless 'uncompressed' is listed (default: uncompressed)")
    group.add_argument(
        "--zstd-compression-level", type=_level_arg, metavar="N",
        help="the zstd level asked for with --compression-algorithms zstd (1-22, default 3)")


def auth_cli_values(args: Any) -> dict[str, object]:
    """The :func:`add_auth_arguments` values of parsed ``args`` (None: not given)."""
    return {k: getattr(args, k, None) for k in AUTH_OPTIONS}


def _flag(value: str) -> bool:
    return value.strip().lower() not in ("0", "false", "off", "no", "")


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
    #: --tls-keylog: append the TLS session secrets there (NSS key log, SSLKEYLOGFILE format)
    tls_keylog: str | None = None
    #: without TLS: ask the server for its RSA key (caching_sha2 / sha256 full auth)
    get_server_public_key: bool = False
    #: without TLS: the server's RSA public key (PEM file) to encrypt the password with
    server_public_key_path: str | None = None
    #: allow mysql_old_password, and clear-text plugins without TLS
    insecure_auth: bool = False
    #: largest packet (payload and fragment headers) buffered from the server
    max_packet_size: int = DEFAULT_MAX_PACKET
    #: --compression-algorithms: allowed, in order ("zlib,zstd,uncompressed"; None: none)
    compression_algorithms: str | None = None
    #: --zstd-compression-level (None: the default, 3)
    zstd_compression_level: int | None = None

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
    for key in ("host", "user", "socket", "ssl_ca", "ssl_cert", "ssl_key", "ssl_mode",
                "server_public_key_path"):
        if key in settings:
            setattr(opts, key, settings[key])
    for key in ("get_server_public_key", "insecure_auth"):
        if key in settings:
            setattr(opts, key, _flag(settings[key]))
    for key in ("max_packet_size", "max_allowed_packet"):
        if key in settings:
            try:
                opts.max_packet_size = parse_size(settings[key])
            except ValueError as exc:
                raise OptionFileError(f"option file: {key.replace('_', '-')}: {exc}") from None
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
    if opts.server_public_key_path:
        opts.server_public_key_path = str(Path(opts.server_public_key_path).expanduser())
        read_public_key(opts.server_public_key_path)  # one clear line now, not at login
    if opts.password is None:
        ask = sys.stdin.isatty() if prompt is None else prompt
        if ask:
            opts.password = getpass.getpass(f"Password for {opts.describe()}: ")
        else:
            opts.password = ""
    return opts


def read_public_key(path: str) -> bytes:
    """The PEM bytes of an RSA public key file; OptionFileError (one line) when it cannot be
    read or is not an RSA public key."""
    try:
        pem = Path(path).read_bytes()
    except OSError as exc:
        raise OptionFileError(f"--server-public-key-path {path}: cannot read it: "
                              f"{exc.strerror or exc}") from None
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise OptionFileError(f"--server-public-key-path {path}: not a PEM public key "
                              f"({exc})") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise OptionFileError(f"--server-public-key-path {path}: not an RSA public key")
    return pem
