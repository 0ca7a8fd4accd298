"""Authentication scrambles, pure functions (no sockets): what a client sends for each plugin.

- ``mysql_native_password``: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))) - 20 bytes.
- ``caching_sha2_password`` fast path: SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce) - 32
  bytes; full auth sends the password in clear over TLS, or RSA-OAEP encrypted (pw + NUL, XORed
  with the nonce) with the server's public key.
- ``mysql_old_password`` (MySQL 3.23 "323" hash): 8 bytes derived from a 3.23-era PRNG.
- ``client_ed25519`` (MariaDB): an Ed25519 signature of the nonce, with the key derived from the
  password as the "seed" (SHA-512 of the password, clamped), so the server stores only the public
  key. Implemented here with plain integer arithmetic (one signature per login; speed is moot).

The password never leaves these functions except as the scramble; callers must not log it.
"""

from __future__ import annotations

import hashlib

# --------------------------------------------------------------------------- native / sha2


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=False))


def scramble_native(password: bytes, nonce: bytes) -> bytes:
    """``mysql_native_password`` auth response (empty password -> empty response)."""
    if not password:
        return b""
    stage1 = hashlib.sha1(password).digest()
    stage2 = hashlib.sha1(stage1).digest()
    return _xor(stage1, hashlib.sha1(nonce[:20] + stage2).digest())


def scramble_caching_sha2(password: bytes, nonce: bytes) -> bytes:
    """``caching_sha2_password`` fast-path auth response (empty password -> empty response)."""
    if not password:
        return b""
    p1 = hashlib.sha256(password).digest()
    p2 = hashlib.sha256(p1).digest()
    return _xor(p1, hashlib.sha256(p2 + nonce[:20]).digest())


def xor_password_with_nonce(password: bytes, nonce: bytes) -> bytes:
    """The plaintext that caching_sha2/sha256 full auth RSA-encrypts: (pw + NUL) XOR nonce."""
    pw = password + b"\0"
    n = nonce[:20] or b"\0"
    return bytes(c ^ n[i % len(n)] for i, c in enumerate(pw))


def rsa_encrypt_password(password: bytes, nonce: bytes, public_key_pem: bytes) -> bytes:
    """RSA-OAEP (SHA-1) encryption of the XORed password with the server's public key."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_public_key(public_key_pem)
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("the server's public key is not an RSA key")
    return key.encrypt(
        xor_password_with_nonce(password, nonce),
        padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None),
    )


# --------------------------------------------------------------------------- old 323


def _hash_323(data: bytes) -> tuple[int, int]:
    nr, add, nr2 = 1345345333, 7, 0x12345671
    for c in data:
        if c in (0x20, 0x09):
            continue
        nr ^= (((nr & 63) + add) * c + (nr << 8)) & 0xFFFFFFFF
        nr2 = (nr2 + ((nr2 << 8) ^ nr)) & 0xFFFFFFFF
        add = (add + c) & 0xFFFFFFFF
    return nr & 0x7FFFFFFF, nr2 & 0x7FFFFFFF


def scramble_323(password: bytes, nonce: bytes) -> bytes:
    """``mysql_old_password`` response: 8 bytes (the packet adds a NUL terminator)."""
    if not password:
        return b""
    message = nonce[:8]
    hp = _hash_323(password)
    hm = _hash_323(message)
    max_value = 0x3FFFFFFF
    seed1 = (hp[0] ^ hm[0]) % max_value
    seed2 = (hp[1] ^ hm[1]) % max_value
    out = []
    for _ in message:
        seed1 = (seed1 * 3 + seed2) % max_value
        seed2 = (seed1 + seed2 + 33) % max_value
        out.append(int(seed1 / max_value * 31) + 64)
    seed1 = (seed1 * 3 + seed2) % max_value
    extra = int(seed1 / max_value * 31)
    return bytes(c ^ extra for c in out)


# --------------------------------------------------------------------------- ed25519

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_BY = (4 * pow(5, _P - 2, _P)) % _P


def _recover_x(y: int, sign: int) -> int:
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    if x & 1 != sign:
        x = _P - x
    return x


_B = (_recover_x(_BY, 0), _BY, 1, _recover_x(_BY, 0) * _BY % _P)


def _add(p: tuple[int, int, int, int], q: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = 2 * t1 * t2 * _D % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(s: int, p: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def _encode(p: tuple[int, int, int, int]) -> bytes:
    x, y, z, _ = p
    zi = pow(z, _P - 2, _P)
    x, y = x * zi % _P, y * zi % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def ed25519_public_key(password: bytes) -> bytes:
    """The public key MariaDB stores for a client_ed25519 user with this password."""
    az = hashlib.sha512(password).digest()
    a = int.from_bytes(az[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return _encode(_mul(a, _B))


def scramble_ed25519(password: bytes, nonce: bytes) -> bytes:
    """MariaDB ``client_ed25519`` response: a 64-byte Ed25519 signature of the nonce."""
    az = hashlib.sha512(password).digest()
    a = int.from_bytes(az[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    pub = _encode(_mul(a, _B))
    r = int.from_bytes(hashlib.sha512(az[32:] + nonce).digest(), "little") % _L
    big_r = _encode(_mul(r, _B))
    h = int.from_bytes(hashlib.sha512(big_r + pub + nonce).digest(), "little") % _L
    s = (r + h * a) % _L
    return big_r + s.to_bytes(32, "little")


#: plugin name -> scramble function
SCRAMBLERS = {
    "mysql_native_password": scramble_native,
    "caching_sha2_password": scramble_caching_sha2,
    "mysql_old_password": scramble_323,
    "client_ed25519": scramble_ed25519,
}
