"""The terminal client's memo of reports (``deniable respond``), kept per owner.

A re-invited person must send the report they drew before, not a fresh draw: two
independent reports of one answer spend the privacy budget twice (odds multiply). The
memo maps ``owner -> memo key -> report code``: the owner is a named recipient's tag
(the ``owner=...`` of their links) or, for an anonymous link, SHA-256 of its token, so
another person on the same computer never sees or sends it; the memo key is the
question's content digest (text, answers, reports, design; not its id or version,
:attr:`~deniable.collection.model.Question.memo_digest`), so an unchanged question
under a new version or another survey id reuses its report. Only reports are kept,
never an answer.

A panel question (two layers, :mod:`deniable.mechanisms`) keeps no report: each
wave draws afresh from the permanent report of the answer given, which the owner's
*secret* fixes (:func:`~deniable.collection.respondent.permanent_uniform`): 32 bytes from
``secrets``, kept here under ``panel/secret``, the same for every answer whatever the
answers were, so reading this file does not tell which answers were given (whoever
reads it and also sees a sent report learns that report's answer up to the
instantaneous layer's epsilon only). It never leaves this computer.

The file is ``memo.json`` in the user's data directory (``platformdirs``:
``$XDG_DATA_HOME/deniable`` on Linux), mode 0600, replaced atomically.
``deniable respond --forget`` removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from pathlib import Path

__all__ = ["ReportMemo", "owner_of"]

#: Most owners and reports per owner the file keeps (bounds what is read back).
_MAX_ENTRIES = 100_000


def owner_of(owner_tag: str | None, token: str | None) -> str:
    """The owner a report is memoized under: the link's owner tag, else SHA-256 (hex) of
    its invitation token, else ``"device"`` (a survey without invitations)."""
    if owner_tag:
        return f"tag:{owner_tag}"
    if token:
        return "token:" + hashlib.sha256(token.encode()).hexdigest()
    return "device"


class ReportMemo:
    """Reports drawn on this computer, per owner and question content.

    Parameters
    ----------
    path : Path, optional
        Default ``memo.json`` in ``platformdirs.user_data_dir("deniable")``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.respondent import ReportMemo
    >>> memo = ReportMemo(pathlib.Path(tempfile.mkdtemp()) / "memo.json")
    >>> len(memo.panel_secret("owner-1"))
    32
    """

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from platformdirs import user_data_dir

            path = Path(user_data_dir("deniable")) / "memo.json"
        self.path = path

    def _read(self) -> dict[str, dict[str, int]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        out: dict[str, dict[str, int]] = {}
        for owner, reports in list(data.items())[:_MAX_ENTRIES]:
            if isinstance(owner, str) and isinstance(reports, dict):
                out[owner] = {
                    k: v
                    for k, v in list(reports.items())[:_MAX_ENTRIES]
                    if isinstance(k, str) and type(v) is int and v >= 0
                }
        return out

    def get(self, owner: str, memo_key: str) -> int | None:
        """The report memoized for ``owner`` and this question content, if any."""
        return self._read().get(owner, {}).get(memo_key)

    def put(self, owner: str, memo_key: str, report: int) -> None:
        """Keep a report (written to disk before this returns)."""
        data = self._read()
        data.setdefault(owner, {})[memo_key] = int(report)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".memo-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def panel_secret(self, owner: str) -> bytes:
        """The owner's 32-byte secret of permanent reports, drawn with ``secrets`` on first
        use and kept (written to disk before this returns)."""
        value = self.get(owner, "panel/secret")
        if value is None or value >= 2**256:
            value = secrets.randbits(256)
            self.put(owner, "panel/secret", value)
        return value.to_bytes(32, "big")

    def forget(self) -> bool:
        """Remove the memo file; whether there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True
