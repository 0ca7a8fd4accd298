"""What the live client answers in the authentication exchange, and what it refuses to send.

Pure decisions (no sockets): :class:`AuthPolicy` says what the user allowed, the functions
return the bytes of a HandshakeResponse's auth data, an AuthSwitchResponse or the answer to an
AuthMoreData, or raise :class:`~.live_items.LiveError` with one clear line. The rules follow the
mysql client, so that a man in the middle who hides the server's TLS flag (the default
``--ssl-mode PREFERRED`` then goes on in clear) gets no password:

- challenge-response plugins (``mysql_native_password``, the ``caching_sha2_password`` fast
  path, ``client_ed25519``) only ever send a proof computed from the server's nonce;
- the password itself (``caching_sha2_password`` full authentication, ``sha256_password``,
  the clear-text plugins ``mysql_clear_password`` and ``dialog``/PAM) is sent in clear only on a
  secure transport (TLS, or a Unix socket, which never leaves the host);
- without one, ``caching_sha2_password`` / ``sha256_password`` encrypt it with the server's RSA
  key only when told where the key comes from: ``--server-public-key-path`` (a key the user
  trusts) or ``--get-server-public-key`` (the key the server sends: requested, never taken
  unasked);
- clear-text plugins without TLS and the 3.23 scramble (``mysql_old_password``, which a sniffer
  can invert) need ``--insecure-auth``.

A greeting that announces a plugin the client may not use as offered gets a
``mysql_native_password`` response instead (as libmysql does for plugins it lacks): a server
whose account uses another plugin then asks for a switch, and the rules above apply to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.drivers.live.items import LiveError
from binlogscope.drivers.live.options import ConnectionOptions, OptionFileError, read_public_key
from binlogscope.wire import auth

#: plugins whose first response is the password itself (or a request for the RSA key)
_PASSWORD_PLUGINS = ("sha256_password", "mysql_clear_password", "dialog", "mysql_old_password")
#: dialog question types (MariaDB's auth_dialog): bit 0 "last question", 2 echo on, 4 password
_DIALOG_PASSWORD = 4


@dataclass
class AuthPolicy:
    """What the user allowed for this connection."""

    secure: bool  # TLS established, or a Unix socket
    get_server_public_key: bool = False
    public_key: bytes | None = None  # PEM from --server-public-key-path
    insecure_auth: bool = False

    @classmethod
    def of(cls, conn: ConnectionOptions, *, tls: bool) -> AuthPolicy:
        key = None
        if conn.server_public_key_path:
            try:
                key = read_public_key(conn.server_public_key_path)
            except OptionFileError as exc:
                raise LiveError(str(exc)) from None
        return cls(secure=tls or bool(conn.socket),
                   get_server_public_key=conn.get_server_public_key,
                   public_key=key, insecure_auth=conn.insecure_auth)


@dataclass
class AuthState:
    """One login's exchange so far: the plugin in use, its nonce, whether the RSA key was
    asked for."""

    plugin: str
    nonce: bytes
    key_requested: bool = False


def _no_key(plugin: str) -> LiveError:
    return LiveError(
        f"the server wants the password for {plugin} full authentication but the connection "
        "is not encrypted (no TLS): refusing to send it; use TLS (--ssl-mode REQUIRED), or "
        "give the server's RSA key with --server-public-key-path FILE, or allow asking the "
        "server for it with --get-server-public-key")


def _clear_text(plugin: str) -> LiveError:
    return LiveError(
        f"the server asks for the password in clear text ({plugin}) but the connection is not "
        "encrypted (no TLS): refusing to send it; use TLS (--ssl-mode REQUIRED) or, knowing "
        "the risk, --insecure-auth")


def _old_password() -> LiveError:
    return LiveError(
        "the server asks for the pre-4.1 password scramble (mysql_old_password), which a "
        "sniffer can turn back into the password: refusing; update the account's password "
        "hash or, knowing the risk, use --insecure-auth")


def greeting_plugin(plugin: str, policy: AuthPolicy, password: bytes) -> str:
    """The plugin to answer the greeting with: the server's, unless that would send the
    password now against the policy (then ``mysql_native_password``, and a server whose
    account really uses it asks for a switch, where the refusal happens)."""
    if plugin in _PASSWORD_PLUGINS and password:
        try:
            response(plugin, password, b"", policy, AuthState(plugin, b""))
        except LiveError:
            return "mysql_native_password"
    return plugin


def response(plugin: str, password: bytes, nonce: bytes, policy: AuthPolicy,
             state: AuthState) -> bytes:
    """The auth data of ``plugin`` for the greeting or an AuthSwitchRequest (``nonce``: its
    plugin data; for ``dialog`` the question)."""
    if plugin == "sha256_password":
        if not password:
            return b""
        if policy.secure:
            return password + b"\0"
        return _rsa_or_request(plugin, password, nonce, policy, state)
    if plugin == "unix_socket":
        return b""  # the server checks the socket peer's OS user; nothing to send
    if plugin in ("mysql_clear_password", "dialog"):
        if plugin == "dialog" and nonce and not nonce[0] & _DIALOG_PASSWORD:
            raise LiveError("authentication: the dialog plugin asks a question that is not "
                            "the password; binlogscope cannot answer it")
        if not (policy.secure or policy.insecure_auth):
            raise _clear_text(plugin)
        return password + b"\0"
    if plugin == "mysql_old_password":
        if not policy.insecure_auth:
            raise _old_password()
        return auth.scramble_323(password, nonce[:8]) + b"\0"
    fn = auth.SCRAMBLERS.get(plugin)
    if fn is None:
        raise LiveError(f"authentication plugin {plugin!r} is not supported")
    return fn(password, nonce)


def _rsa_or_request(plugin: str, password: bytes, nonce: bytes, policy: AuthPolicy,
                    state: AuthState) -> bytes:
    """Without TLS: the password RSA-encrypted with the user's key file, else the request for
    the server's key (when allowed), else the refusal."""
    if policy.public_key is not None:
        return auth.rsa_encrypt_password(password, nonce, policy.public_key)
    if policy.get_server_public_key:
        state.key_requested = True
        return b"\x02" if plugin == "caching_sha2_password" else b"\x01"
    raise _no_key(plugin)


def more_data_answer(data: bytes, password: bytes, policy: AuthPolicy,
                     state: AuthState) -> bytes | None:
    """The answer to an AuthMoreData (None: nothing to send, the OK follows)."""
    plugin = state.plugin
    if plugin == "caching_sha2_password" and data == b"\x03":
        return None  # fast auth OK; the OK packet follows
    if plugin in ("caching_sha2_password", "sha256_password"):
        if data.startswith(b"-----BEGIN"):
            if not state.key_requested:
                raise LiveError(f"authentication: the server sent an RSA public key for "
                                f"{plugin} that was not asked for: refusing to use it")
            try:
                return auth.rsa_encrypt_password(password, state.nonce, data)
            except ValueError as exc:
                raise LiveError(f"authentication: the server's public key is unusable "
                                f"({exc})") from None
        if data == b"\x04" or (plugin == "sha256_password" and not data):
            if policy.secure:
                return password + b"\0"
            return _rsa_or_request(plugin, password, state.nonce, policy, state)
    raise LiveError(f"authentication: unexpected AuthMoreData for {plugin}")


__all__ = ["AuthPolicy", "AuthState", "greeting_plugin", "more_data_answer", "response"]
