"""RFC 9474 blind signatures (RSABSSA-SHA384-PSS-Randomized): the published test vectors
and the properties the collection server relies on."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from deniable.collection import credentials
from deniable.collection.credentials import (
    CredentialError,
    CredentialKey,
    _libcrypto,
    blind,
    finalize,
    load_public_key,
    new_credential_request,
    nullifier,
    prepare,
    verify,
)

VECTORS = json.loads((Path(__file__).parent / "data" / "rfc9474_vectors.json").read_text())
RANDOMIZED = next(v for v in VECTORS if v["name"] == "RSABSSA-SHA384-PSS-Randomized")


def _key(v: dict[str, str]) -> CredentialKey:
    p, q, d, e = (int(v[x], 16) for x in ("p", "q", "d", "e"))
    numbers = rsa.RSAPrivateNumbers(
        p=p,
        q=q,
        d=d,
        dmp1=rsa.rsa_crt_dmp1(d, p),
        dmq1=rsa.rsa_crt_dmq1(d, q),
        iqmp=rsa.rsa_crt_iqmp(p, q),
        public_numbers=rsa.RSAPublicNumbers(e, int(v["n"], 16)),
    )
    return CredentialKey(numbers.private_key())


@pytest.fixture(params=["openssl", "gmp"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each signing backend: OpenSSL through ctypes where present, GMP otherwise."""
    if request.param == "openssl" and _libcrypto._library() is None:
        pytest.skip("no OpenSSL 3 libcrypto on this machine: the GMP backend signs")
    if request.param == "gmp":
        monkeypatch.setattr(credentials, "raw_rsa_key", lambda der, size: None)
    return str(request.param)


def test_rfc9474_vector_randomized_pss(backend: str) -> None:
    """Every intermediate value of RFC 9474 Appendix A's RSABSSA-SHA384-PSS-Randomized,
    with each signing backend (the vector's key is 4096 bits)."""
    v = RANDOMIZED
    key = _key(v)
    prepared = prepare(bytes.fromhex(v["msg"]), prefix=bytes.fromhex(v["msg_prefix"]))
    assert prepared.hex() == v["input_msg"]
    n = int(v["n"], 16)
    r = pow(int(v["inv"], 16), -1, n)
    blinded, state = blind(key.public_key, prepared, salt=bytes.fromhex(v["salt"]), r=r)
    assert blinded.hex() == v["blinded_msg"]
    assert int.from_bytes(state.inverse, "big") == int(v["inv"], 16)
    blind_sig = key.blind_sign(blinded)
    assert isinstance(key._raw, _libcrypto.RawRSAKey) == (backend == "openssl")
    assert blind_sig.hex() == v["blind_sig"]
    signature = finalize(key.public_key, state, blind_sig)
    assert signature.hex() == v["sig"]
    assert verify(key.public_key, prepared, signature)


def test_backends_agree_on_every_value() -> None:
    """OpenSSL's and GMP's ``m^d mod n`` are the same bytes, on 200 random values and on
    the edges (0, 1, n - 1, values whose result has leading zero bytes)."""
    if _libcrypto._library() is None:
        pytest.skip("no OpenSSL 3 libcrypto on this machine: only the GMP backend exists")
    key = CredentialKey.generate(2048)
    n = key.public_key.public_numbers().n
    values = [0, 1, n - 1] + [secrets.randbelow(n) for _ in range(200)]
    # results below 2^2000 (leading zero bytes): s chosen, m = s^e mod n
    values += [pow(secrets.randbits(2000), 65537, n) for _ in range(5)]
    for m in values:
        blinded = m.to_bytes(256, "big")
        assert key.blind_sign(blinded) == key._gmp_sign(m).to_bytes(256, "big")
    assert isinstance(key._raw, _libcrypto.RawRSAKey)


def test_openssl_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DENIABLE_OPENSSL=0`` keeps libcrypto unloaded; GMP signs instead."""
    monkeypatch.setenv("DENIABLE_OPENSSL", "0")
    _libcrypto._library.cache_clear()
    try:
        key = CredentialKey.generate(2048)
        blinded, state = new_credential_request(key.public_key)
        assert key.verify(state.prepared, finalize(key.public_key, state, key.blind_sign(blinded)))
        assert key._raw is None
    finally:
        _libcrypto._library.cache_clear()


def test_round_trip_and_unforgeability() -> None:
    key = CredentialKey.generate(2048)
    public = load_public_key(key.public_spki_b64())
    blinded, state = new_credential_request(public)
    signature = finalize(public, state, key.blind_sign(blinded))
    assert key.verify(state.prepared, signature)
    # a forged or altered credential does not verify
    assert not key.verify(state.prepared[:-1] + bytes([state.prepared[-1] ^ 1]), signature)
    assert not key.verify(state.prepared, bytes(len(signature)))
    # another survey's key does not accept it
    assert not CredentialKey.generate(2048).verify(state.prepared, signature)
    # the signer's view (blinded message) differs from the credential it later sees
    assert blinded != signature and state.prepared not in blinded
    assert len(nullifier(state.prepared)) == 64


def test_blind_signature_checks() -> None:
    key = CredentialKey.generate(2048)
    with pytest.raises(CredentialError, match="blinded_msg must be 256 bytes"):
        key.blind_sign(b"\x01" * 10)
    with pytest.raises(CredentialError, match="smaller than the modulus"):
        key.blind_sign(b"\xff" * 256)
    blinded, state = new_credential_request(key.public_key)
    with pytest.raises(CredentialError, match="does not verify"):
        finalize(key.public_key, state, blinded)
    with pytest.raises(CredentialError, match="256 bytes"):
        finalize(key.public_key, state, b"\x00")


def test_blinded_messages_are_uniform_to_the_signer() -> None:
    """The same prepared message blinded twice gives unrelated blinded messages."""
    key = CredentialKey.generate(2048)
    prepared = prepare(b"x" * 32)
    a, _ = blind(key.public_key, prepared)
    b, _ = blind(key.public_key, prepared)
    assert a != b


def test_key_round_trip() -> None:
    key = CredentialKey.generate(2048)
    again = CredentialKey.from_pem(key.to_pem())
    assert again.public_spki_b64() == key.public_spki_b64()
