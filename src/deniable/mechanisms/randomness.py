"""Sources of randomness for randomizers.

A randomizer needs only uniform draws on ``[0, 1)``; every source here has the method
``random(size) -> ndarray`` of dtype float64, the same signature as
:meth:`numpy.random.Generator.random`, so a NumPy ``Generator`` can be passed wherever
``rng=`` is accepted.

* :class:`SecureRandom` (the default when ``rng=None``) reads ``os.urandom`` and turns
  each 8 bytes into one uniform with 53 random bits, vectorised with NumPy. This is the
  only source to use on a respondent's device. Its ``bytes(length)`` (the frequency
  oracles' source) reads ``os.urandom`` for short requests; from 64 KiB on it returns
  the AES-256-CTR keystream under a fresh 256-bit key and 128-bit initial counter
  block read from ``os.urandom`` for that one request and then discarded: the
  CTR_DRBG construction of NIST SP 800-90A (Barker & Kelsey 2015), a cryptographically
  secure generator whose output cannot be told from ``os.urandom``'s without breaking
  AES, at about 1.3 GB/s instead of about 0.25 GB/s (AES-NI, OpenSSL through the
  ``cryptography`` package).
* A seeded ``numpy.random.Generator`` is for simulation and tests only: whoever knows
  the seed knows every respondent's coin.
* :class:`BlumBlumShub` is the provably unpredictable generator of Blum, Blum & Shub
  (1986), for those who want a generator whose security reduces to factoring.
  It is sequential and therefore slow (about 2 x 10^4 uniforms per second
  with a 2048-bit modulus, against 10^7 for ``SecureRandom``).
"""

from __future__ import annotations

import math
import os
import secrets
from typing import Protocol, runtime_checkable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

__all__ = [
    "BlumBlumShub",
    "RandomSource",
    "SecureRandom",
    "random_bytes",
    "resolve_rng",
    "uniforms",
]

_TWO_POW_MINUS_53 = 2.0**-53


@runtime_checkable
class RandomSource(Protocol):
    """Anything with ``random(size)`` returning float64 uniforms on ``[0, 1)``."""

    def random(self, size: int) -> NDArray[np.float64]:  # pragma: no cover - protocol
        ...


class SecureRandom:
    """Cryptographically secure uniforms from the operating system (``os.urandom``).

    Each uniform is ``k / 2**53`` with ``k`` the top 53 bits of 8 fresh random bytes,
    so every value on the 2^-53 grid of ``[0, 1)`` is equally likely. It cannot be
    seeded, by design.

    Examples
    --------
    >>> u = SecureRandom().random(5)
    >>> u.shape, u.dtype, bool(((u >= 0) & (u < 1)).all())
    ((5,), dtype('float64'), True)
    """

    def random(self, size: int) -> NDArray[np.float64]:
        """Return ``size`` uniforms on ``[0, 1)``, shape ``(size,)``, dtype float64."""
        size = _check_size(size)
        words = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return (words >> np.uint64(11)).astype(np.float64) * _TWO_POW_MINUS_53

    def bytes(self, length: int) -> bytes | bytearray:
        """Return ``length`` cryptographically secure random bytes.

        Below :data:`KEYSTREAM_MIN_BYTES` (64 KiB) they come from ``os.urandom``; from
        there on they are the AES-256-CTR keystream under a key and initial counter
        block drawn from ``os.urandom`` for this call only (NIST SP 800-90A CTR_DRBG
        without reseeding: at most 2^32 bytes per key here, far inside its 2^48-request
        limit).
        """
        length = _check_size(length)
        if length < KEYSTREAM_MIN_BYTES:
            return os.urandom(length)
        return _aes_ctr_keystream(length)

    def __repr__(self) -> str:
        return "SecureRandom()"


_SECURE = SecureRandom()

#: Requests of at least this many bytes are served from a fresh AES-256-CTR keystream.
KEYSTREAM_MIN_BYTES = 1 << 16
_KEYSTREAM_PIECE = 1 << 24  # bytes encrypted per call (bounds the zero buffer)
_ZEROS = memoryview(bytes(_KEYSTREAM_PIECE))


def _aes_ctr_keystream(length: int) -> bytearray:
    """``length`` bytes of AES-256-CTR keystream under a fresh ``os.urandom`` key."""
    encryptor = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16))).encryptor()
    out = bytearray(length + 15)  # update_into needs block_size - 1 spare bytes
    view = memoryview(out)
    for start in range(0, length, _KEYSTREAM_PIECE):
        size = min(_KEYSTREAM_PIECE, length - start)
        encryptor.update_into(_ZEROS[:size], view[start:])
    del view
    del out[length:]
    return out


def resolve_rng(rng: RandomSource | np.random.Generator | None) -> RandomSource:
    """Return the source to draw from: ``SecureRandom()`` when ``rng`` is None.

    Raises
    ------
    TypeError
        If ``rng`` has no ``random(size)`` method.
    """
    if rng is None:
        return _SECURE
    if not callable(getattr(rng, "random", None)):
        raise TypeError(
            "rng must be None (secure default), a numpy.random.Generator or an object "
            f"with a random(size) method; got {type(rng).__name__}"
        )
    return rng


def uniforms(rng: RandomSource | np.random.Generator | None, size: int) -> NDArray[np.float64]:
    """Draw ``size`` uniforms on ``[0, 1)`` from ``rng`` (secure default), shape ``(size,)``."""
    return np.asarray(resolve_rng(rng).random(size), dtype=np.float64)


def random_bytes(rng: RandomSource | np.random.Generator | None, length: int) -> bytes | bytearray:
    """Draw ``length`` uniformly random bytes from ``rng`` (secure default).

    A seeded ``numpy.random.Generator`` gives the little-endian bytes of uniform 32-bit
    words; other sources their ``bytes(length)`` method (``SecureRandom``: from
    ``os.urandom``, or for 64 KiB and more an AES-256-CTR keystream keyed from it;
    ``BlumBlumShub``); otherwise
    takes 32 bits from each of ``length / 4`` uniforms of ``random(size)``.
    """
    length = _check_size(length)
    source = resolve_rng(rng)
    if isinstance(source, np.random.Generator):  # 32-bit words: faster than Generator.bytes
        drawn = source.integers(0, 1 << 32, size=-(-length // 4), dtype=np.uint32)
        return drawn.astype("<u4", copy=False).tobytes()[:length]
    draw = getattr(source, "bytes", None)
    if callable(draw):
        out = draw(length)
        if not isinstance(out, bytes | bytearray) or len(out) != length:
            raise TypeError(f"rng.bytes({length}) must return {length} bytes")
        return out
    words = -(-length // 4)
    u = np.asarray(source.random(words), dtype=np.float64)
    return (np.floor(u * 2.0**32).astype("<u4")).tobytes()[:length]


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise TypeError(f"size must be an integer, got {type(size).__name__}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    return int(size)


def _is_probable_prime(n: int, rounds: int = 40) -> bool:
    """Miller-Rabin primality test with random bases (error < 4**-rounds)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for _ in range(rounds):
        a = 2 + secrets.randbelow(n - 3)
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _blum_prime(bits: int) -> int:
    """A random prime ``p`` of ``bits`` bits with ``p = 3 (mod 4)``."""
    while True:
        candidate = secrets.randbits(bits) | (1 << (bits - 1)) | 3
        if _is_probable_prime(candidate):
            return candidate


class BlumBlumShub:
    """The Blum-Blum-Shub generator (Blum, Blum & Shub 1986), usable as ``rng=``.

    State ``x_{i+1} = x_i^2 mod M`` with ``M = p q``, ``p = q = 3 (mod 4)`` primes kept
    secret. From each step the ``floor(log2(log2 M))`` least significant bits are
    output, which Vazirani & Vazirani (1984) proved as unpredictable as factoring ``M``.

    Parameters
    ----------
    modulus_bits : int, default 2048
        Size of ``M`` in bits (>= 32; 2048 or more for real use). Ignored when ``p``
        and ``q`` are given.
    p, q : int, optional
        The two Blum primes (both ``3 mod 4``, distinct). Generated securely when omitted.
    seed : int, optional
        Initial state, coprime with ``M`` and not 0 or 1 modulo ``M``. Drawn from
        ``secrets`` when omitted. Pass one only to reproduce a stream in tests.

    Raises
    ------
    ValueError
        If ``modulus_bits`` < 32, the primes are not distinct primes ``3 mod 4``, or the
        seed is not coprime with ``M``.

    Examples
    --------
    >>> bbs = BlumBlumShub(p=499, q=547, seed=159201)
    >>> bbs.random(3).round(6).tolist()
    [0.804321, 0.880992, 0.328541]
    """

    def __init__(
        self,
        *,
        modulus_bits: int = 2048,
        p: int | None = None,
        q: int | None = None,
        seed: int | None = None,
    ) -> None:
        if (p is None) != (q is None):
            raise ValueError("p and q must be given together (both primes = 3 mod 4) or not at all")
        if p is None or q is None:
            if modulus_bits < 32:
                raise ValueError(f"modulus_bits must be >= 32, got {modulus_bits}")
            p = _blum_prime(modulus_bits // 2)
            q = _blum_prime(modulus_bits - modulus_bits // 2)
            while q == p:
                q = _blum_prime(modulus_bits - modulus_bits // 2)
        for name, value in (("p", p), ("q", q)):
            if value % 4 != 3 or not _is_probable_prime(value):
                raise ValueError(f"{name} must be a prime congruent to 3 mod 4, got {value}")
        if p == q:
            raise ValueError("p and q must be distinct primes")
        self._modulus = p * q
        if seed is None:
            seed = 2 + secrets.randbelow(self._modulus - 3)
            while math.gcd(seed, self._modulus) != 1:
                seed = 2 + secrets.randbelow(self._modulus - 3)
        if math.gcd(seed, self._modulus) != 1 or seed % self._modulus in (0, 1):
            raise ValueError("seed must be coprime with p*q and not 0 or 1 modulo p*q")
        self._state = pow(seed, 2, self._modulus)
        self._bits_per_step = max(1, int(math.log2(math.log2(self._modulus))))
        self._mask = (1 << self._bits_per_step) - 1

    @property
    def bits_per_step(self) -> int:
        """Bits output per squaring, ``floor(log2(log2 M))``."""
        return self._bits_per_step

    def getrandbits(self, k: int) -> int:
        """Return a non-negative integer of ``k`` random bits."""
        out, have = 0, 0
        while have < k:
            self._state = pow(self._state, 2, self._modulus)
            out = (out << self._bits_per_step) | (self._state & self._mask)
            have += self._bits_per_step
        return out >> (have - k)

    def random(self, size: int) -> NDArray[np.float64]:
        """Return ``size`` uniforms on ``[0, 1)`` (53 bits each), shape ``(size,)``."""
        size = _check_size(size)
        words = [self.getrandbits(53) for _ in range(size)]
        return np.array(words, dtype=np.float64) * _TWO_POW_MINUS_53

    def bytes(self, length: int) -> bytes:
        """Return ``length`` random bytes (8 bits per byte from the generator's stream)."""
        length = _check_size(length)
        return self.getrandbits(8 * length).to_bytes(length, "big") if length else b""

    def __repr__(self) -> str:
        return f"BlumBlumShub(modulus_bits={self._modulus.bit_length()})"
