"""Auth scrambles: checked against independent implementations (pymysql, cryptography), and
against the algebraic definitions, never against our own output."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from binlogscope.wire import auth

NONCE = bytes(range(1, 21))


def test_native_matches_pymysql() -> None:
    from pymysql import _auth

    ref = _auth.scramble_native_password(b"secret", NONCE)
    assert auth.scramble_native(b"secret", NONCE) == ref
    assert auth.scramble_native(b"", NONCE) == b""


def test_native_server_side_check() -> None:
    # the server stores SHA1(SHA1(pw)); it recovers SHA1(pw) = resp XOR SHA1(nonce + stored)
    pw = b"p@ss"
    resp = auth.scramble_native(pw, NONCE)
    stored = hashlib.sha1(hashlib.sha1(pw).digest()).digest()
    stage1 = bytes(a ^ b for a, b in zip(resp, hashlib.sha1(NONCE + stored).digest(), strict=True))
    assert hashlib.sha1(stage1).digest() == stored


def test_caching_sha2_matches_pymysql() -> None:
    from pymysql import _auth

    ref = _auth.scramble_caching_sha2(b"secret", NONCE)
    assert auth.scramble_caching_sha2(b"secret", NONCE) == ref


def test_323_hash_matches_mysql_old_password() -> None:
    # MySQL's documented OLD_PASSWORD('password') is '5d2e19393cc5ef67'
    nr, nr2 = auth._hash_323(b"password")
    assert f"{nr:08x}{nr2:08x}" == "5d2e19393cc5ef67"


def test_323_scramble_shape() -> None:
    out = auth.scramble_323(b"secret", NONCE[:8])
    assert len(out) == 8
    assert out != auth.scramble_323(b"secret", NONCE[1:9])
    assert auth.scramble_323(b"", NONCE) == b""


def test_ed25519_signature_verifies_with_cryptography() -> None:
    pw = b"mariadb password"
    pub = auth.ed25519_public_key(pw)
    sig = auth.scramble_ed25519(pw, NONCE + NONCE[:12])
    key = Ed25519PublicKey.from_public_bytes(pub)
    key.verify(sig, NONCE + NONCE[:12])  # raises if wrong
    with pytest.raises(InvalidSignature):
        key.verify(sig, b"another message")


def test_ed25519_equals_standard_ed25519_for_a_32_byte_seed() -> None:
    # with a 32-byte "password" the derivation is exactly RFC 8032's seed expansion
    seed = bytes(range(32))
    ref = Ed25519PrivateKey.from_private_bytes(seed)
    pub_ref = ref.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
    assert auth.ed25519_public_key(seed) == pub_ref
    assert auth.scramble_ed25519(seed, b"msg") == ref.sign(b"msg")


def test_rsa_full_auth_decrypts_to_xored_password() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    blob = auth.rsa_encrypt_password(b"pw", NONCE, pem)
    plain = key.decrypt(blob, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()),
                                           algorithm=hashes.SHA1(), label=None))
    assert bytes(c ^ NONCE[i % 20] for i, c in enumerate(plain)) == b"pw\0"
