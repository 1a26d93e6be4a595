"""Unlinkable one-time credentials: RSA blind signatures (RFC 9474).

The variant is RSABSSA-SHA384-PSS-Randomized (Denis, Jacobs & Wood, RFC 9474, 2023),
the construction Privacy Pass issuance uses (RFC 9578). It makes "one response per
invitee" hold without the server being able to tell which invitee sent which response:

1. The respondent's device draws a random 32-byte message, prepares it (a random
   32-byte prefix, :func:`prepare`) and blinds it (:func:`blind`) under the survey's
   public key; only the blinded message leaves the device.
2. The server checks and spends the invitation and signs the blinded message
   (:meth:`CredentialKey.blind_sign`); it never sees the message itself.
3. The device unblinds the signature (:func:`finalize`). The pair (prepared message,
   signature) is a credential: a standard RSASSA-PSS signature that anyone with the
   public key verifies, and that the signer cannot link to the blinded message it
   signed (the blinding factor is uniform).
4. The response carries the credential; the server verifies it and records its
   :func:`nullifier` (SHA-256 of the prepared message) as spent, in the transaction that
   stores the reports, so a credential is used at most once.

What is ours and what is borrowed: keys, their serialization, SHA-384 and the RSASSA-PSS
verification come from ``cryptography``; the secret-exponent modular exponentiation of
the signer is OpenSSL's RSA private-key operation without padding (through
:mod:`~deniable.collection.credentials`), or where OpenSSL 3 is not at hand GMP's
constant-time ``mpz_powm_sec`` (through ``gmpy2``) with the Chinese remainder theorem.
What this module writes itself are RFC 9474's protocol steps (Sections 4.1-4.5) and the
PSS encoding they need (EMSA-PSS-ENCODE with MGF1, RFC 8017 Sections 9.1.1 and B.2.1),
checked against RFC 9474's published test vectors.
"""

from __future__ import annotations

import base64
import hashlib
import math
import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from ..._extras import require
from ...errors import CredentialError
from ._libcrypto import RawRSAKey, raw_rsa_key

__all__ = [
    "MESSAGE_BYTES",
    "PREFIX_BYTES",
    "SALT_BYTES",
    "VARIANT",
    "BlindingState",
    "Credential",
    "CredentialError",
    "CredentialKey",
    "b64url",
    "b64url_decode",
    "blind",
    "finalize",
    "load_public_key",
    "new_credential_request",
    "nullifier",
    "prepare",
    "verify",
]

#: The RFC 9474 variant implemented here.
VARIANT = "RSABSSA-SHA384-PSS-Randomized"
#: Salt length of the PSS encoding (bytes; the SHA-384 digest length).
SALT_BYTES = 48
#: Length of the random prefix of a prepared message (RFC 9474, Section 4.1).
PREFIX_BYTES = 32
#: Length of the random message a respondent's device draws.
MESSAGE_BYTES = 32
_HASH_BYTES = 48


def _i2osp(x: int, length: int) -> bytes:
    return x.to_bytes(length, "big")


def _os2ip(b: bytes) -> int:
    return int.from_bytes(b, "big")


def _mgf1(seed: bytes, length: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.sha384(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _emsa_pss_encode(message: bytes, em_bits: int, salt: bytes) -> bytes:
    """EMSA-PSS-ENCODE (RFC 8017, Section 9.1.1) with SHA-384 and MGF1-SHA-384."""
    em_len = (em_bits + 7) // 8
    m_hash = hashlib.sha384(message).digest()
    if em_len < _HASH_BYTES + len(salt) + 2:
        raise CredentialError("the RSA modulus is too small for this PSS encoding")
    h = hashlib.sha384(b"\x00" * 8 + m_hash + salt).digest()
    db = b"\x00" * (em_len - len(salt) - _HASH_BYTES - 2) + b"\x01" + salt
    masked = bytearray(a ^ b for a, b in zip(db, _mgf1(h, em_len - _HASH_BYTES - 1), strict=True))
    masked[0] &= 0xFF >> (8 * em_len - em_bits)
    return bytes(masked) + h + b"\xbc"


def _pss() -> padding.PSS:
    return padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=SALT_BYTES)


def prepare(message: bytes, prefix: bytes | None = None) -> bytes:
    """RFC 9474 ``Prepare`` (randomized): a random 32-byte prefix followed by ``message``.

    Parameters
    ----------
    message : bytes
        The message to be signed (a device draws 32 random bytes).
    prefix : bytes of length 32, optional
        For test vectors only; by default it comes from ``secrets``.

    Returns
    -------
    bytes
        ``prefix + message``.

    Raises
    ------
    CredentialError
        If ``prefix`` is not 32 bytes.

    Examples
    --------
    >>> from deniable.collection.credentials import prepare
    >>> len(prepare(b"m" * 32))
    64
    """
    prefix = secrets.token_bytes(PREFIX_BYTES) if prefix is None else prefix
    if len(prefix) != PREFIX_BYTES:
        raise CredentialError(f"prefix must be {PREFIX_BYTES} bytes, got {len(prefix)}")
    return prefix + message


@dataclass(frozen=True)
class BlindingState:
    """What the client keeps between :func:`blind` and :func:`finalize` (never sent).

    Attributes
    ----------
    prepared : bytes
        The prepared message (prefix and message).
    inverse : bytes
        The inverse of the blinding factor modulo n, big-endian, modulus length.

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey, new_credential_request
    >>> key = CredentialKey.generate()
    >>> blinded, state = new_credential_request(key.public_key)
    >>> len(state.prepared), len(state.inverse)
    (64, 256)
    """

    prepared: bytes
    inverse: bytes


def blind(
    public_key: rsa.RSAPublicKey,
    prepared: bytes,
    *,
    salt: bytes | None = None,
    r: int | None = None,
) -> tuple[bytes, BlindingState]:
    """RFC 9474 ``Blind`` (Section 4.2): the blinded message and the state to finalize.

    Parameters
    ----------
    public_key : cryptography RSAPublicKey
        The survey's key (:func:`load_public_key`).
    prepared : bytes
        The prepared message (:func:`prepare`).
    salt : bytes of length 48, optional
        The PSS salt; for test vectors only (default: from ``secrets``).
    r : int in [1, n), optional
        The blinding factor; for test vectors only (default: from ``secrets``).

    Returns
    -------
    (bytes, BlindingState)
        The blinded message (modulus length, the only thing sent) and what
        :func:`finalize` needs.

    Raises
    ------
    CredentialError
        If the encoded message is not invertible modulo n (probability ~2^-1000).

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey, blind, prepare
    >>> key = CredentialKey.generate()
    >>> blinded, state = blind(key.public_key, prepare(b"m" * 32))
    >>> len(blinded)
    256
    """
    numbers = public_key.public_numbers()
    n, e = numbers.n, numbers.e
    k = (n.bit_length() + 7) // 8
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    m = _os2ip(_emsa_pss_encode(prepared, n.bit_length() - 1, salt))
    if m == 0 or math.gcd(m, n) != 1:
        raise CredentialError("blinding error: the encoded message is not invertible mod n")
    while r is None:
        candidate = secrets.randbelow(n)
        if candidate > 0 and math.gcd(candidate, n) == 1:
            r = candidate
    inverse = pow(r, -1, n)
    z = (m * pow(r, e, n)) % n
    return _i2osp(z, k), BlindingState(prepared, _i2osp(inverse, k))


def finalize(public_key: rsa.RSAPublicKey, state: BlindingState, blind_signature: bytes) -> bytes:
    """RFC 9474 ``Finalize`` (Section 4.4): unblind and verify; return the signature.

    Parameters
    ----------
    public_key : cryptography RSAPublicKey
    state : BlindingState
        From :func:`blind`.
    blind_signature : bytes
        The server's :meth:`CredentialKey.blind_sign` of the blinded message.

    Returns
    -------
    bytes
        The RSASSA-PSS signature of ``state.prepared`` (modulus length).

    Examples
    --------
    >>> from deniable.collection.credentials import (
    ...     CredentialKey, finalize, new_credential_request, verify)
    >>> key = CredentialKey.generate()
    >>> blinded, state = new_credential_request(key.public_key)
    >>> signature = finalize(key.public_key, state, key.blind_sign(blinded))
    >>> verify(key.public_key, state.prepared, signature)
    True

    Raises
    ------
    CredentialError
        If the blind signature has the wrong length or does not unblind to a valid
        RSASSA-PSS signature of the prepared message.
    """
    n = public_key.public_numbers().n
    k = (n.bit_length() + 7) // 8
    if len(blind_signature) != k:
        raise CredentialError(f"blind signature must be {k} bytes, got {len(blind_signature)}")
    s = (_os2ip(blind_signature) * _os2ip(state.inverse)) % n
    signature = _i2osp(s, k)
    if not verify(public_key, state.prepared, signature):
        raise CredentialError("the blind signature does not verify; the server misbehaved")
    return signature


def verify(public_key: rsa.RSAPublicKey, prepared: bytes, signature: bytes) -> bool:
    """RSASSA-PSS verification of a credential (``cryptography``), RFC 9474 Section 4.5.

    Parameters
    ----------
    public_key : cryptography RSAPublicKey
    prepared : bytes
        The credential's message.
    signature : bytes
        Its signature.

    Returns
    -------
    bool
        Whether the signature is valid (SHA-384, MGF1-SHA-384, 48-byte salt).

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey, prepare, verify
    >>> key = CredentialKey.generate()
    >>> verify(key.public_key, prepare(b"m" * 32), bytes(256))
    False
    """
    try:
        public_key.verify(signature, prepared, _pss(), hashes.SHA384())
    except InvalidSignature:
        return False
    return True


def nullifier(prepared: bytes) -> str:
    """The spent-credential record: SHA-256 (hex) of the prepared message.

    Parameters
    ----------
    prepared : bytes

    Returns
    -------
    str
        64 hex digits; the store keeps it so that a credential is spent once.

    Examples
    --------
    >>> from deniable.collection.credentials import nullifier
    >>> nullifier(b"")[:16]
    'e3b0c44298fc1c14'
    """
    return hashlib.sha256(prepared).hexdigest()


def load_public_key(spki_b64: str) -> rsa.RSAPublicKey:
    """The public key from base64 DER SubjectPublicKeyInfo (as the survey view gives it).

    Parameters
    ----------
    spki_b64 : str
        Standard base64 of the DER SubjectPublicKeyInfo
        (:meth:`CredentialKey.public_spki_b64`).

    Returns
    -------
    cryptography RSAPublicKey

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey, load_public_key
    >>> key = CredentialKey.generate()
    >>> load_public_key(key.public_spki_b64()).key_size
    2048

    Raises
    ------
    CredentialError
        If it is not an RSA public key.
    """
    try:
        key = serialization.load_der_public_key(base64.b64decode(spki_b64, validate=True))
    except ValueError as exc:
        raise CredentialError(f"credential_key is not a DER public key: {exc}") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise CredentialError("credential_key must be an RSA public key")
    return key


@dataclass(frozen=True)
class Credential:
    """A finalized credential: the prepared message and its RSASSA-PSS signature.

    ``to_json()`` gives the ``credential`` object of a response (base64url, no padding).

    Examples
    --------
    >>> from deniable.collection.credentials import Credential
    >>> Credential(bytes([0, 1]), bytes([255])).to_json()
    {'message': 'AAE', 'signature': '_w'}
    """

    message: bytes
    signature: bytes

    def to_json(self) -> dict[str, str]:
        """``{"message": ..., "signature": ...}`` in base64url without padding."""
        return {"message": b64url(self.message), "signature": b64url(self.signature)}


def b64url(data: bytes) -> str:
    """Base64url without padding.

    Parameters
    ----------
    data : bytes

    Returns
    -------
    str

    Examples
    --------
    >>> from deniable.collection.credentials import b64url
    >>> b64url(bytes([255, 254]))
    '__4'
    """
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str, field: str, max_bytes: int) -> bytes:
    """Decode base64url (padding optional), refusing more than ``max_bytes`` bytes.

    Parameters
    ----------
    text : str
        What the client sent.
    field : str
        Its name, for the error.
    max_bytes : int
        The most bytes it may decode to (checked on the text's length first).

    Returns
    -------
    bytes

    Examples
    --------
    >>> from deniable.collection.credentials import b64url_decode
    >>> list(b64url_decode("__4", "signature", 8))
    [255, 254]

    Raises
    ------
    CredentialError
        Naming ``field`` if the text is not base64url or decodes to too many bytes.
    """
    if len(text) > (max_bytes * 4) // 3 + 4:
        raise CredentialError(f"{field} must be at most {max_bytes} bytes")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise CredentialError(f"{field} must be base64url") from None


def new_credential_request(public_key: rsa.RSAPublicKey) -> tuple[bytes, BlindingState]:
    """A fresh random message, prepared and blinded: ``(blinded message, state)``.

    Parameters
    ----------
    public_key : cryptography RSAPublicKey

    Returns
    -------
    (bytes, BlindingState)
        As :func:`blind`; the 32-byte message and prefix come from ``secrets``.

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey, new_credential_request
    >>> key = CredentialKey.generate()
    >>> blinded, state = new_credential_request(key.public_key)
    >>> len(blinded), len(state.prepared)
    (256, 64)
    """
    return blind(public_key, prepare(secrets.token_bytes(MESSAGE_BYTES)))


class CredentialKey:
    """A survey's signing key (RSA, e = 65537, 2048 bits by default).

    Parameters
    ----------
    private_key : rsa.RSAPrivateKey

    Examples
    --------
    >>> from deniable.collection.credentials import CredentialKey
    >>> key = CredentialKey.generate()
    >>> CredentialKey.from_pem(key.to_pem()).public_spki_b64() == key.public_spki_b64()
    True
    >>> key.modulus_bytes
    256
    """

    def __init__(self, private_key: rsa.RSAPrivateKey) -> None:
        self.private_key = private_key
        self.public_key = private_key.public_key()
        numbers = private_key.private_numbers()
        self._n = numbers.public_numbers.n
        self._e = numbers.public_numbers.e
        self.modulus_bytes = (self._n.bit_length() + 7) // 8
        self._crt = (numbers.p, numbers.q, numbers.dmp1, numbers.dmq1, numbers.iqmp)
        self._gmp: tuple[Any, ...] | None = None
        self._raw: RawRSAKey | bool | None = False  # False: OpenSSL not tried yet

    @classmethod
    def generate(cls, bits: int = 2048) -> CredentialKey:
        """A new key from ``cryptography`` (2048 <= bits <= 4096)."""
        if not 2048 <= bits <= 4096:
            raise ValueError(f"bits must be in 2048..4096, got {bits}")
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=bits))

    @classmethod
    def from_pem(cls, pem: bytes) -> CredentialKey:
        """Load a PKCS#8 PEM private key."""
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise CredentialError("a credential key must be an RSA private key")
        return cls(key)

    def to_pem(self) -> bytes:
        """PKCS#8 PEM (unencrypted: the database holds it; see the threat model)."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_spki_b64(self) -> str:
        """The public key as base64 DER SubjectPublicKeyInfo (standard base64)."""
        der = self.public_key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(der).decode()

    def check_blinded(self, blinded: bytes) -> int:
        """The blinded message as an integer, checked: ``modulus_bytes`` long, below n.

        Raises
        ------
        CredentialError
            Naming ``blinded_msg`` and the allowed size.
        """
        if len(blinded) != self.modulus_bytes:
            raise CredentialError(
                f"blinded_msg must be {self.modulus_bytes} bytes, got {len(blinded)}"
            )
        m = _os2ip(blinded)
        if m >= self._n:
            raise CredentialError("blinded_msg must be smaller than the modulus")
        return m

    def blind_sign(self, blinded: bytes) -> bytes:
        """RFC 9474 ``BlindSign`` (Section 4.3): sign a blinded message.

        The exponentiation is OpenSSL's (``EVP_PKEY_decrypt`` without padding: CRT,
        blinding, constant-time; :mod:`deniable.collection.credentials`) where OpenSSL 3
        is available, and otherwise GMP's constant-time ``mpz_powm_sec`` with CRT. Either
        way the result is checked against the public key before it is returned (the
        RFC's guard against a faulty signature leaking the key).

        Raises
        ------
        CredentialError
            If ``blinded`` is not ``modulus_bytes`` long or not below the modulus.
        """
        m = self.check_blinded(blinded)
        if self._raw is False:  # once per key
            der = self.private_key.private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            self._raw = raw_rsa_key(der, self.modulus_bytes)
        if isinstance(self._raw, RawRSAKey):
            signature = self._raw.private_op(blinded)
            s = _os2ip(signature)
        else:
            s = self._gmp_sign(m)
            signature = _i2osp(s, self.modulus_bytes)
        # the check uses only the public exponent, so it need not be constant-time
        if self._public_op(s) != m:
            raise CredentialError("signing failure")  # pragma: no cover - a hardware fault
        return signature

    def _public_op(self, s: int) -> int:
        """``s^e mod n`` (GMP: 0.02 ms for 2048 bits, against 0.24 ms for ``pow``)."""
        require("gmpy2", "server")
        import gmpy2

        return int(gmpy2.powmod(s, self._e, self._n))

    def _gmp_sign(self, m: int) -> int:
        """``m^d mod n`` by GMP's constant-time exponentiation with CRT."""
        require("gmpy2", "server")
        import gmpy2

        if self._gmp is None:  # the key as GMP integers, once
            self._gmp = tuple(gmpy2.mpz(x) for x in self._crt)
        p, q, dp, dq, qinv = self._gmp
        g = gmpy2.mpz(m)
        s1 = gmpy2.powmod_sec(g % p, dp, p)
        s2 = gmpy2.powmod_sec(g % q, dq, q)
        return int(s2 + q * ((qinv * (s1 - s2)) % p))

    def verify(self, prepared: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is a valid credential signature of ``prepared``."""
        return verify(self.public_key, prepared, signature)
