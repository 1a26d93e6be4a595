"""Sources of randomness for randomizers.

A randomizer needs only uniform draws on ``[0, 1)``; every source here has the method
``random(size) -> ndarray`` of dtype float64, the same signature as
:meth:`numpy.random.Generator.random`, so a NumPy ``Generator`` can be passed wherever
``rng=`` is accepted.

* :class:`SecureRandom` (the default when ``rng=None``) serves every draw, small or
  large, from an AES-256-CTR keystream keyed from ``os.urandom``: the CTR_DRBG
  construction of NIST SP 800-90A (Barker & Kelsey 2015), a cryptographically secure
  generator whose output cannot be told from ``os.urandom``'s without breaking AES.
  The key changes after every request or buffer (taken from the keystream itself, so a
  later look at the process memory cannot recover earlier draws: "fast key erasure",
  Bernstein 2017), a fresh key is read from ``os.urandom`` every
  :data:`RESEED_INTERVAL_BYTES` of output, and a forked child never continues its
  parent's stream (the process id is checked on every draw). Each uniform is the top
  53 bits of 8 keystream bytes. AES runs through OpenSSL (the ``cryptography``
  package), at several GB/s with AES-NI, so vectorised callers draw at memory speed:
  the only source to use on a respondent's device.
* A seeded ``numpy.random.Generator`` is for simulation and tests only: whoever knows
  the seed knows every respondent's coin.
* :class:`BlumBlumShub` is the provably unpredictable generator of Blum, Blum & Shub
  (1986), for those who want a generator whose security reduces to factoring.
  It is sequential and therefore slow (about 2 x 10^4 uniforms per second
  with a 2048-bit modulus, against 10^8 for ``SecureRandom``).
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

__all__ = [
    "BUFFER_BYTES",
    "RESEED_INTERVAL_BYTES",
    "BlumBlumShub",
    "RandomSource",
    "SecureRandom",
    "default_source_replaced",
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


#: Output (bytes) after which a keystream is rekeyed from ``os.urandom``.
RESEED_INTERVAL_BYTES = 1 << 32
#: Small draws are served from a buffer of this many keystream bytes.
BUFFER_BYTES = 1 << 18
_PIECE = 1 << 24  # bytes encrypted per call (bounds the zero buffer)
_ZEROS = memoryview(bytes(_PIECE))
_KEY_BYTES = 48  # AES-256 key and 128-bit initial counter block
_LIVE: weakref.WeakSet[SecureRandom] = weakref.WeakSet()


class SecureRandom:
    """Cryptographically secure uniforms and bytes: a keystream keyed from ``os.urandom``.

    NIST SP 800-90A's CTR_DRBG (Barker & Kelsey 2015) with AES-256: the output is the
    AES-CTR keystream under a 256-bit key and 128-bit counter block read from
    ``os.urandom``.

    * Every request (and every :data:`BUFFER_BYTES` buffer that serves small requests)
      ends by drawing 48 more keystream bytes that become the next key and counter
      block, and the old cipher is dropped ("fast key erasure", Bernstein 2017): whoever
      reads the process memory later cannot compute earlier output. Buffered bytes are
      zeroed as they are handed out.
    * A fresh key from ``os.urandom`` replaces the derived one after
      ``reseed_interval`` bytes of output (default :data:`RESEED_INTERVAL_BYTES`, 4 GiB;
      SP 800-90A allows 2^48 requests between reseeds).
    * Fork safety: every draw compares the process id with the one the key was read in;
      a child process reseeds from its own ``os.urandom`` before its first draw and
      drops the buffer it inherited, so it never repeats its parent's stream.
    * Thread safety: draws from one instance are serialised by a lock.

    Each uniform is ``k / 2**53`` with ``k`` the top 53 bits of 8 keystream bytes, so
    every value on the 2^-53 grid of ``[0, 1)`` is equally likely. It cannot be seeded,
    by design.

    Parameters
    ----------
    reseed_interval : int, default 2**32
        Bytes of output between reads of a fresh key from ``os.urandom``; at least
        :data:`BUFFER_BYTES`.

    Raises
    ------
    ValueError
        If ``reseed_interval`` is below :data:`BUFFER_BYTES` or above 2**40.

    Examples
    --------
    >>> u = SecureRandom().random(5)
    >>> u.shape, u.dtype, bool(((u >= 0) & (u < 1)).all())
    ((5,), dtype('float64'), True)
    """

    def __init__(self, *, reseed_interval: int = RESEED_INTERVAL_BYTES) -> None:
        interval = _check_size(reseed_interval)
        if not BUFFER_BYTES <= interval <= 1 << 40:
            raise ValueError(
                f"reseed_interval must be in [{BUFFER_BYTES}, 2**40] bytes, got {interval}"
            )
        self._interval = interval
        self._lock = threading.Lock()
        self._encryptor: Any = None
        self._pid = -1
        self._since_reseed = 0
        self._reseeds = 0
        self._buffer = bytearray(BUFFER_BYTES + 15)  # update_into needs 15 spare bytes
        self._pos = BUFFER_BYTES  # nothing buffered
        _LIVE.add(self)

    @property
    def reseeds(self) -> int:
        """How many keys this instance has read from ``os.urandom`` so far."""
        return self._reseeds

    def random(self, size: int) -> NDArray[np.float64]:
        """Return ``size`` uniforms on ``[0, 1)``, shape ``(size,)``, dtype float64."""
        size = _check_size(size)
        out = np.empty(size + 2, dtype=np.float64)  # 16 spare bytes for update_into
        self._fill(memoryview(out.data).cast("B"), 8 * size)
        if size < 4096:  # below this NumPy beats loading and calling the compiled pass
            words = out[:size].view(np.uint64)
            out[:size] = (words >> np.uint64(11)).astype(np.float64) * _TWO_POW_MINUS_53
        else:
            from ._kernels import words_to_uniforms  # numba loads on first large draw

            words_to_uniforms(out[:size])
        return out[:size]

    def bytes(self, length: int) -> bytes:
        """Return ``length`` cryptographically secure random bytes (keystream), as
        ``random.randbytes`` and NumPy's ``Generator.bytes`` do.

        Parameters
        ----------
        length : int
            0..2^40.

        Returns
        -------
        bytes
            Of length ``length``: :meth:`bytes_view`'s keystream, copied into a
            ``bytes`` object (the copy costs about twice the AES; where any bytes-like
            object will do, :meth:`bytes_view` is the fast path).

        Raises
        ------
        TypeError, ValueError
            For a ``length`` that is not an integer in range.

        Examples
        --------
        >>> out = SecureRandom().bytes(16)
        >>> type(out), len(out)
        (<class 'bytes'>, 16)
        """
        return bytes(self.bytes_view(length))

    def bytes_view(self, length: int) -> memoryview:
        """Return ``length`` cryptographically secure random bytes (keystream) without
        a copy.

        Parameters
        ----------
        length : int
            0..2^40.

        Returns
        -------
        memoryview
            A read-only bytes-like object of shape ``(length,)``, format ``"B"``
            (``bytes(...)``, ``np.frombuffer(...)``, ``b"".join`` and ``==`` take it).
            The keystream is written into place in an uninitialised buffer: a fresh
            ``bytearray`` would be zero-filled first, which at 80 MB cost more than the
            AES (1.3 GB/s against 3.5 GB/s for :meth:`random`; bench/throughput.py).

        Raises
        ------
        TypeError, ValueError
            For a ``length`` that is not an integer in range.

        Examples
        --------
        >>> view = SecureRandom().bytes_view(16)
        >>> view.readonly, len(view)
        (True, 16)
        """
        length = _check_size(length)
        out = np.empty(length + 15, dtype=np.uint8)  # update_into needs 15 spare bytes
        self._fill(memoryview(out.data).cast("B"), length)
        return memoryview(out[:length].data).toreadonly()

    def _fill(self, view: memoryview, length: int) -> None:
        """Write ``length`` keystream bytes to ``view`` (which has 15 spare bytes)."""
        with self._lock:
            if self._pid != os.getpid() or self._since_reseed >= self._interval:
                self._reseed()
            have = BUFFER_BYTES - self._pos
            if length <= have:
                self._take(view, 0, length)
                return
            if length < BUFFER_BYTES // 4:  # small: drain, refill, take the rest
                self._take(view, 0, have)
                self._refill()
                self._take(view, have, length - have)
                return
            for start in range(0, length, _PIECE):
                size = min(_PIECE, length - start)
                self._encryptor.update_into(_ZEROS[:size], view[start:])
            self._since_reseed += length
            self._rekey()

    def _take(self, view: memoryview, start: int, count: int) -> None:
        end = self._pos + count
        view[start : start + count] = self._buffer[self._pos : end]
        self._buffer[self._pos : end] = bytes(count)
        self._pos = end

    def _refill(self) -> None:
        self._encryptor.update_into(_ZEROS[:BUFFER_BYTES], self._buffer)
        self._since_reseed += BUFFER_BYTES
        self._pos = 0
        self._rekey()

    def _rekey(self) -> None:
        """Replace the cipher by one keyed from its own next 48 keystream bytes."""
        material = bytearray(_KEY_BYTES + 15)
        self._encryptor.update_into(_ZEROS[:_KEY_BYTES], material)
        self._encryptor = _cipher(bytes(material[:32]), bytes(material[32:_KEY_BYTES]))
        material[:] = bytes(len(material))

    def _reseed(self) -> None:
        if self._pid != os.getpid():  # a forked child: forget the parent's buffer
            self._buffer[:] = bytes(len(self._buffer))
            self._pos = BUFFER_BYTES
        self._encryptor = _cipher(os.urandom(32), os.urandom(16))
        self._pid = os.getpid()
        self._since_reseed = 0
        self._reseeds += 1

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at the fork

    def __repr__(self) -> str:
        return "SecureRandom()"


def _cipher(key: bytes, counter_block: bytes) -> Any:
    return Cipher(algorithms.AES(key), modes.CTR(counter_block)).encryptor()


def _forked_child() -> None:
    for source in list(_LIVE):
        source._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)


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


def random_bytes(
    rng: RandomSource | np.random.Generator | None, length: int
) -> bytes | bytearray | memoryview:
    """Draw ``length`` uniformly random bytes from ``rng`` (secure default).

    A seeded ``numpy.random.Generator`` gives the little-endian bytes of uniform 32-bit
    words; other sources their ``bytes(length)`` method (``SecureRandom``: its
    AES-256-CTR keystream keyed from ``os.urandom``; ``BlumBlumShub``); otherwise
    takes 32 bits from each of ``length / 4`` uniforms of ``random(size)``. The result
    is bytes-like (``SecureRandom``'s a read-only ``memoryview``, from its
    ``bytes_view``).
    """
    length = _check_size(length)
    source = resolve_rng(rng)
    if isinstance(source, np.random.Generator):  # 32-bit words: faster than Generator.bytes
        drawn = source.integers(0, 1 << 32, size=-(-length // 4), dtype=np.uint32)
        return drawn.astype("<u4", copy=False).tobytes()[:length]
    draw = getattr(source, "bytes_view", None)  # SecureRandom's, without a copy
    draw = draw if callable(draw) else getattr(source, "bytes", None)
    if callable(draw):
        out = draw(length)
        if not isinstance(out, bytes | bytearray | memoryview) or len(out) != length:
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


_SECURE = SecureRandom()


@contextlib.contextmanager
def default_source_replaced(source: Any) -> Iterator[None]:
    """Serve every ``rng=None`` draw from ``source`` while the block runs, for the
    privacy auditor's source check (:func:`deniable.audit.source_check`) only.

    It shows whether an encoder reads the default source and nothing else: with the
    default replaced by one seeded stream, two runs agree. While it lasts, every draw of
    the process that would be secure is predictable; never use it on a device.

    Parameters
    ----------
    source : RandomSource or numpy.random.Generator

    Raises
    ------
    TypeError
        If ``source`` has no ``random(size)`` method.

    Examples
    --------
    >>> import numpy as np
    >>> with default_source_replaced(np.random.default_rng(1)):
    ...     first = uniforms(None, 3)
    >>> with default_source_replaced(np.random.default_rng(1)):
    ...     bool(np.all(uniforms(None, 3) == first))
    True
    """
    global _SECURE
    replacement = resolve_rng(source)
    before = _SECURE
    _SECURE = replacement  # type: ignore[assignment]
    try:
        yield
    finally:
        _SECURE = before


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
