"""Unary encoding's compiled randomizer draws exactly what ``encode`` would.

``UnaryEncoding.randomize`` compares each 32-bit uniform with its threshold one
nibble at a time and draws the later nibbles only on a tie. These tests record every
byte it draws, rebuild from them the full ``4 k`` bytes per report that
:meth:`UnaryEncoding.encode` (and the JavaScript encoder) read, filling the nibbles
the lazy comparison never looked at with zeros, and require the two reports to be
identical bit for bit: so the fast path has exactly the probabilities of the
reference encoder, whose epsilon is checked by enumeration in ``test_oracles.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable import UnaryEncoding
from deniable.mechanisms import _kernels
from deniable.mechanisms import _unary as unary_module


@pytest.fixture(autouse=True)
def compiled_path(request, monkeypatch):
    """The lazy randomizer is the compiled path; the byte-wise test sets its own."""
    if "bytewise" in request.node.name:
        monkeypatch.setenv(_kernels.ENV, "numpy")
        return
    pytest.importorskip("numba", reason="the lazy randomizer is compiled (the fast extra)")
    monkeypatch.setenv(_kernels.ENV, "numba")


class Recorder:
    """A seeded source that keeps every byte string it hands out."""

    def __init__(self, seed: int) -> None:
        self.gen = np.random.default_rng(seed)
        self.calls: list[bytes] = []

    def random(self, size: int) -> np.ndarray:
        return self.gen.random(size)

    def bytes(self, length: int) -> bytes:
        out = self.gen.bytes(length)
        self.calls.append(out)
        return out


class Scripted(Recorder):
    """Hands out given byte strings in order (and records them)."""

    def __init__(self, script: list[bytes]) -> None:
        super().__init__(0)
        self.script = list(script)

    def bytes(self, length: int) -> bytes:
        out = self.script.pop(0)
        assert len(out) == length
        self.calls.append(out)
        return out


def _nibbles(threshold: int) -> list[int]:
    return [(threshold >> s) & 15 for s in range(28, -1, -4)]


class TieStream:
    """Nibbles of the recorded tie bytes, low nibble of each byte first."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def word(self, first: int, t: list[int]) -> int:
        """The 32-bit word the lazy comparison saw, unread nibbles zero."""
        nibs = [first]
        if first == t[0]:
            for i in range(1, 8):
                v = (self.data[self.pos >> 1] >> (4 * (self.pos & 1))) & 15
                self.pos += 1
                nibs.append(v)
                if v != t[i]:
                    break
        nibs += [0] * (8 - len(nibs))
        return int("".join(f"{x:x}" for x in nibs), 16)


def reference(oracle: UnaryEncoding, codes: np.ndarray, chunks: list[list[bytes]]) -> np.ndarray:
    """Rebuild ``encode``'s random bytes from the recorded draws and encode with them.

    ``chunks``: per chunk of reports, its recorded draws (first nibbles, true-bit
    bytes, then the tie stream and any extensions of it).
    """
    k, words = oracle.k, (oracle.n_bytes + 1) // 2
    tq, tp = _nibbles(oracle.threshold_q), _nibbles(oracle.threshold_p)
    rows = []
    done = 0
    for draws in chunks:
        top = np.frombuffer(draws[0], dtype="<u8").reshape(-1, words)
        pbytes = draws[1]
        stream = TieStream(b"".join(draws[2:]))
        for r in range(top.shape[0]):
            c = int(codes[done + r])
            layout = bytearray(4 * k)
            layout[4 * c : 4 * c + 4] = stream.word(pbytes[r] & 15, tp).to_bytes(4, "little")
            for j in range(k):
                if j == c:
                    continue
                h, jj = divmod(j, 16)
                first = (int(top[r, h]) >> (8 * (jj % 8) + 4 * (jj >= 8))) & 15
                layout[4 * j : 4 * j + 4] = stream.word(first, tq).to_bytes(4, "little")
            rows.append(oracle.encode([c], bytes(layout))[0])
        done += top.shape[0]
    return np.array(rows, dtype=np.uint8)


@pytest.mark.parametrize(
    "k, epsilon, optimized",
    [
        (2, 0.5, True),
        (3, 3.0, False),
        (9, 1.0, True),
        (16, 0.5, False),
        (17, 3.0, True),
        (40, 1.0, True),
    ],
)
def test_randomize_is_encode_on_the_bytes_it_read(k, epsilon, optimized):
    oracle = UnaryEncoding(k, epsilon, optimized=optimized)
    codes = np.random.default_rng(k).integers(0, k, 3000)
    source = Recorder(seed=k)
    reports = oracle.randomize(codes, rng=source)
    assert len(source.calls) == 3  # one chunk: first nibbles, true bits, ties
    np.testing.assert_array_equal(reports, reference(oracle, codes, [source.calls]))


def test_a_word_equal_to_its_threshold_is_not_below_it(monkeypatch):
    # every nibble the comparison reads equals the threshold's: word == T, bit 0
    oracle = UnaryEncoding(13, 2.0)
    tq, tp = _nibbles(oracle.threshold_q), _nibbles(oracle.threshold_p)
    first = bytes([tq[0] | tq[0] << 4]) * (8 * ((oracle.n_bytes + 1) // 2))
    stream = tp[1:] + tq[1:] * 12
    stream += [0] * (len(stream) % 2)
    ties = bytes(stream[i] | stream[i + 1] << 4 for i in range(0, len(stream), 2))
    monkeypatch.setattr(unary_module, "_tie_bytes", lambda comparisons: len(ties))
    source = Scripted([first, bytes([tp[0]]), ties])
    reports = oracle.randomize([4], rng=source)
    np.testing.assert_array_equal(reports, np.zeros((1, 2), dtype=np.uint8))
    np.testing.assert_array_equal(reports, reference(oracle, np.array([4]), [source.calls]))


def test_a_short_tie_stream_is_extended_without_changing_the_draw(monkeypatch):
    monkeypatch.setattr(unary_module, "_tie_bytes", lambda comparisons: 1)
    oracle = UnaryEncoding(23, 1.0)
    codes = np.random.default_rng(1).integers(0, 23, 500)
    source = Recorder(seed=5)
    reports = oracle.randomize(codes, rng=source)
    assert len(source.calls) > 5  # the stream was extended several times
    np.testing.assert_array_equal(reports, reference(oracle, codes, [source.calls]))


def test_chunks_encoded_in_parallel_match_the_reference(monkeypatch):
    monkeypatch.setattr(unary_module, "_LAZY_CHUNK_BYTES", 8 * 2 * 50)  # 50 rows a chunk
    oracle = UnaryEncoding(30, 1.5, optimized=False)
    codes = np.random.default_rng(2).integers(0, 30, 1234)
    source = Recorder(seed=6)
    reports = oracle.randomize(codes, rng=source)
    chunks = [source.calls[i : i + 3] for i in range(0, len(source.calls), 3)]
    assert len(chunks) == 25
    np.testing.assert_array_equal(reports, reference(oracle, codes, chunks))


@pytest.mark.parametrize(
    "k, epsilon, optimized", [(2, 0.5, True), (9, 1.0, False), (40, 3.0, True)]
)
def test_the_bytewise_numpy_path_is_encode_on_the_bytes_it_read(k, epsilon, optimized):
    """Without numba, a word's top byte decides and a tie reads three more bytes:
    rebuilt into ``encode``'s 4 bytes per bit (the unread bytes zero), the same reports.
    """
    oracle = UnaryEncoding(k, epsilon, optimized=optimized)
    codes = np.random.default_rng(k).integers(0, k, 3000)
    source = Recorder(seed=k)
    reports = oracle.randomize(codes, rng=source)
    top = np.frombuffer(source.calls[0], dtype=np.uint8).reshape(-1, k)
    layout = np.zeros((codes.size, k, 4), dtype=np.uint8)
    layout[:, :, 3] = top
    thresholds = np.full((codes.size, k), oracle.threshold_q >> 24)
    thresholds[np.arange(codes.size), codes] = oracle.threshold_p >> 24
    ties = np.flatnonzero(top == thresholds)
    assert len(source.calls) == (2 if ties.size else 1)
    if ties.size:
        rest = np.frombuffer(source.calls[1], dtype=np.uint8).reshape(-1, 3)
        layout.reshape(-1, 4)[ties, :3] = rest[:, ::-1]  # big-endian 24 bits, little words
    want = np.concatenate([oracle.encode([c], layout[i].tobytes()) for i, c in enumerate(codes)])
    np.testing.assert_array_equal(reports, want)
