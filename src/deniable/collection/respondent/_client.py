"""A respondent's client in Python: read a survey, randomize on this device, send reports.

What a respondent's device does, as the browser page does it (``web/respond.js``): it
rebuilds every question's design from the matrix columns the server publishes, checks
the server's privacy claim against them (:func:`design_from_view`: the epsilon
recomputed from the columns must not exceed the stated one), randomizes each true
answer locally with the secure source, and sends only the reports. For a survey that
needs invitations it first exchanges the invitation for an unlinkable credential
(:func:`request_credential`, RFC 9474 blind signatures). Needs NumPy and
``cryptography``; the HTTP exchange is the caller's (``deniable respond`` uses httpx).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from ...errors import CredentialError
from ...mechanisms import (
    Design,
    MatrixDesign,
    RandomSource,
    SecureRandom,
    TwoLayerDesign,
    check_stated_epsilon,
)
from .. import arm_index, token_uniform
from ..credentials import (
    VARIANT,
    Credential,
    b64url,
    b64url_decode,
    finalize,
    load_public_key,
    new_credential_request,
)

__all__ = [
    "SurveyLink",
    "arm_index",
    "arm_key",
    "assign",
    "design_from_view",
    "numeric_truth",
    "panel_layers",
    "panel_report",
    "parse_survey_url",
    "permanent_uniform",
    "request_credential",
    "respond_reports",
    "token_uniform",
]


@dataclass(frozen=True)
class SurveyLink:
    """Where a survey lives: server base URL, survey id, and from the link's fragment an
    invitation token, the version it is bound to (``v``) and the owner tag of a named
    recipient (``owner``), each ``None`` if absent.

    Examples
    --------
    >>> from deniable.collection.respondent import parse_survey_url
    >>> link = parse_survey_url("https://rr.example.org/s/campus#token=abc&v=2")
    >>> link.base_url, link.owner
    ('https://rr.example.org', None)
    """

    base_url: str
    survey_id: str
    token: str | None
    version: int | None = None
    owner: str | None = None


def parse_survey_url(url: str) -> SurveyLink:
    """Parse ``http(s)://host[:port]/s/<id>[#token=...&v=N&owner=...]`` (or
    ``/api/surveys/<id>``).

    The invitation token travels in the fragment, which is never sent to a server.

    Parameters
    ----------
    url : str
        The link a respondent was given.

    Returns
    -------
    SurveyLink

    Raises
    ------
    ValueError
        If the URL is not http(s), names no survey, or its ``v`` is not a version number.

    Examples
    --------
    >>> from deniable.collection.respondent import parse_survey_url
    >>> link = parse_survey_url("https://rr.example.org/s/campus#token=abc&v=2")
    >>> link.survey_id, link.token, link.version
    ('campus', 'abc', 2)
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"survey URL must be http(s)://host/s/<survey id>, got {url!r}")
    segs = [s for s in parts.path.split("/") if s]
    if len(segs) >= 2 and segs[-2] in ("s", "surveys"):
        sid = segs[-1]
    else:
        raise ValueError(f"survey URL must end in /s/<survey id>, got {url!r}")
    fragment = parse_qs(parts.fragment)
    token = fragment.get("token", [None])[0]
    raw_version = fragment.get("v", [None])[0]
    version = None
    if raw_version is not None:
        if not raw_version.isdigit() or not 1 <= int(raw_version) <= 1_000_000:
            raise ValueError(
                f"the link's v must be a survey version 1..1000000, got {raw_version!r}"
            )
        version = int(raw_version)
    owner = fragment.get("owner", [None])[0]
    return SurveyLink(f"{parts.scheme}://{parts.netloc}", sid, token, version, owner)


def design_from_view(question: dict[str, Any]) -> Design:
    """Rebuild a question's design from the matrix columns the server published.

    The client checks the server's claim: the epsilon recomputed from the columns must
    not exceed the one the server states.

    Raises
    ------
    ValueError
        If the columns are not a valid design or the stated epsilon is too small.
    """
    matrix = np.asarray(question["columns"], dtype=np.float64).T.copy()
    design: Design = MatrixDesign(
        matrix,
        truth_labels=tuple(question["choices"]),
        report_labels=tuple(question["reports"]),
    )
    if question.get("panel"):  # a panel question: the columns are the instantaneous layer
        design = panel_layers(question)
    check_stated_epsilon(design.epsilon, question["epsilon"], f"question {question['id']!r}")
    return design


def panel_layers(question: dict[str, Any]) -> TwoLayerDesign:
    """A panel question's two layers from its view: ``panel.columns`` the permanent
    layer, ``columns`` the instantaneous one; the permanent layer's epsilon recomputed
    must not exceed the stated ``panel.epsilon_inf``.

    Raises
    ------
    ValueError
        If the question has no panel, the columns are not valid designs, or the stated
        epsilon_inf is too small.
    """
    panel = question.get("panel")
    if not panel:
        raise ValueError(f"question {question['id']!r} has no panel")
    permanent = MatrixDesign(np.asarray(panel["columns"], dtype=np.float64).T.copy())
    check_stated_epsilon(
        permanent.epsilon, panel["epsilon_inf"], f"question {question['id']!r} panel.epsilon_inf"
    )
    instantaneous = MatrixDesign(
        np.asarray(question["columns"], dtype=np.float64).T.copy(),
        report_labels=tuple(question["reports"]),
    )
    return TwoLayerDesign(permanent, instantaneous, truth_labels=tuple(question["choices"]))


def permanent_uniform(secret: bytes, key: str, answer: int) -> float:
    """The uniform on [0, 1) that fixes a panel question's permanent report of ``answer``
    on this device: the first 53 bits of ``HMAC-SHA256(key=secret, "deniable permanent|"
    + key + "|" + answer)`` (RFC 2104; RAPPOR derives its permanent responses from a
    client secret the same way, Erlingsson et al. 2014), as the page computes it.

    Parameters
    ----------
    secret : bytes
        The owner's 32-byte secret, drawn with ``secrets`` and kept on the device only.
    key : str
        The question's ``panel.key`` (its permanent layer's content digest).
    answer : int
        Answer code ``0..k-1``.

    Returns
    -------
    float in [0, 1)
        The same for the same secret, key and answer, on every device and in the page.

    Examples
    --------
    >>> from deniable.collection.respondent import permanent_uniform
    >>> round(permanent_uniform(bytes(32), "key", 1), 6)
    0.877786
    """
    import hashlib
    import hmac

    mac = hmac.new(secret, f"deniable permanent|{key}|{answer}".encode(), hashlib.sha256).digest()
    hi, lo = int.from_bytes(mac[0:4], "big"), int.from_bytes(mac[4:8], "big")
    return ((hi >> 5) * 67108864 + (lo >> 6)) / 2**53


def panel_report(
    question: dict[str, Any],
    truth: int,
    secret: bytes,
    rng: RandomSource | np.random.Generator | None = None,
) -> int:
    """One wave's report of a panel question: the permanent report of ``truth`` (fixed
    by ``secret``, :func:`permanent_uniform`), randomized afresh by the instantaneous
    layer (secure source by default). The permanent report is not returned or kept."""
    layers = panel_layers(question)
    key = str(question["panel"]["key"])
    u = permanent_uniform(secret, key, int(truth))
    permanent = layers.permanent_reports(np.array([truth]), np.array([u]))
    return int(layers.instantaneous_reports(permanent, rng)[0])


def numeric_truth(
    numeric: dict[str, Any], value: float, rng: RandomSource | np.random.Generator | None = None
) -> int:
    """A numeric question's answer ``value`` in ``[low, high]`` rounded at random to a
    bound: 1 (``high``) with chance ``z = (value - low) / (high - low)``, else 0.

    The question's report is Warner's design over the bounds applied to this code (see
    :mod:`deniable.collection.model`), so the report is 1 with chance
    ``(1 + z (e^eps - 1)) / (e^eps + 1)`` exactly (Duchi, Jordan & Wainwright 2018).

    Parameters
    ----------
    numeric : dict
        The question's ``numeric`` field as served: ``low`` and ``high`` (finite floats).
    value : float
        The true answer; never leaves this function.
    rng : optional
        Default: the secure source (:class:`~deniable.mechanisms.SecureRandom`).

    Raises
    ------
    ValueError
        If ``value`` is not a finite number in ``[low, high]``.
    """
    low, high = float(numeric["low"]), float(numeric["high"])
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"the answer must be a number in [{low:g}, {high:g}], got {value!r}")
    z = (value - low) / (high - low)
    source = rng if rng is not None else SecureRandom()
    return int(float(source.random(1)[0]) < z)


def respond_reports(
    view: dict[str, Any],
    answers: dict[str, int],
    rng: RandomSource | np.random.Generator | None = None,
) -> dict[str, int]:
    """Randomize one respondent's answers on this device; return only the reports.

    Parameters
    ----------
    view : dict
        The survey as served by ``GET /api/surveys/{id}``.
    answers : dict of str to int
        True answer code (``0..k-1``) per question id; never leaves this function.
    rng : optional
        Default: the secure source (:class:`~deniable.mechanisms.SecureRandom`).

    Returns
    -------
    dict of str to int
        The report code per question id: what is sent.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.respondent import respond_reports
    >>> view = load_survey("examples/campus.yaml").respondent_view()
    >>> answers = {"faculty": 0, "year": 1, "cheat": 1, "plagiarism": 0, "transplant": 0}
    >>> sorted(respond_reports(view, answers, np.random.default_rng(0)))
    ['cheat', 'faculty', 'plagiarism', 'transplant', 'year']
    """
    out: dict[str, int] = {}
    for q in view["questions"]:
        design = design_from_view(q)
        out[q["id"]] = int(design.randomize(np.array([answers[q["id"]]]), rng)[0])
    return out


def request_credential(
    view: dict[str, Any],
    token: str,
    post: Callable[[str, dict[str, Any]], dict[str, Any]],
    arm: str | None = None,
) -> Credential:
    """Exchange an invitation for a credential the server cannot link to it.

    Blinds a fresh random message under the survey's ``credential_key`` (RFC 9474,
    RSABSSA-SHA384-PSS-Randomized), or in a study with arms under its ``arm``'s key
    (``credential_keys``: the credential then verifies for that arm only), sends
    ``{"token", "blinded_msg", "version"[, "arm"]}`` with ``post(path, body)`` (which
    returns the JSON answer or raises), and finalizes the blind signature, checking it
    against the key.

    Parameters
    ----------
    view : dict
        The survey as served (``id``, ``version``, ``credential_key``,
        ``credential_variant``, and ``credential_keys`` by arm in a study with arms).
    token : str
        The invitation token from the link's fragment.
    post : callable ``(path, body) -> dict``
        Sends a JSON body to the server and returns its JSON answer.
    arm : str, optional
        The arm :func:`assign` drew (the one the invitation is bound to).

    Returns
    -------
    Credential
        To send with the response (:meth:`Credential.to_json`).

    Raises
    ------
    CredentialError
        If the survey names another variant, or the server's signature is not valid.

    Examples
    --------
    A stand-in server that signs what it is sent:

    >>> from deniable.collection.credentials import (
    ...     VARIANT, CredentialKey, b64url, b64url_decode, verify)
    >>> from deniable.collection.respondent import request_credential
    >>> key = CredentialKey.generate()
    >>> view = {"id": "s", "version": 1, "credential_key": key.public_spki_b64(),
    ...         "credential_variant": VARIANT}
    >>> def post(path, body):
    ...     blinded = b64url_decode(body["blinded_msg"], "blinded_msg", 512)
    ...     return {"blind_sig": b64url(key.blind_sign(blinded))}
    >>> credential = request_credential(view, "invitation-token", post)
    >>> verify(key.public_key, credential.message, credential.signature)
    True
    """
    if view.get("credential_variant") != VARIANT:
        raise CredentialError(
            f"the survey's credential_variant must be {VARIANT!r}, "
            f"got {view.get('credential_variant')!r}"
        )
    keys = view.get("credential_keys") or {}
    if keys and arm not in keys:
        raise CredentialError(f"arm must be one of {sorted(keys)}, got {arm!r}")
    public_key = load_public_key(keys[arm] if keys else view["credential_key"])
    blinded, state = new_credential_request(public_key)
    body: dict[str, Any] = {
        "token": token,
        "blinded_msg": b64url(blinded),
        "version": view["version"],
    }
    if keys:
        body["arm"] = arm
    answer = post(f"/api/surveys/{view['id']}/credentials", body)
    signature = finalize(
        public_key, state, b64url_decode(str(answer["blind_sig"]), "blind_sig", 512)
    )
    return Credential(state.prepared, signature)


def arm_key(owner: str, token: str | None) -> str | None:
    """What fixes a person's arm: the owner tag of a named recipient's links (the same in
    every wave's link, so every wave and every device draws the same arm), else the
    invitation ``token`` (an anonymous link: one arm per link), else ``None``.

    Parameters
    ----------
    owner : str
        :func:`~deniable.collection.respondent.owner_of`'s owner (``"tag:..."``,
        ``"token:..."`` or ``"device"``).
    token : str, optional
    """
    if owner.startswith("tag:"):
        return owner[len("tag:") :]
    return token or None


def assign(
    view: dict[str, Any], memo: Any, owner: str, token: str | None = None
) -> tuple[str | None, dict[str, int]]:
    """This respondent's arm and groups, and the questions as they see them.

    The arm is drawn by the arms' weights, once per survey and owner: from
    :func:`token_uniform` keyed by :func:`arm_key` (a named recipient's owner tag, so
    the person keeps one arm in every wave and on every device; an anonymous link's
    token), otherwise from the operating system's secure source (``secrets``). Each
    group design's group is drawn with equal chances from ``secrets``, per question
    content and owner (like the report),
    and kept in ``memo`` (:class:`~deniable.collection.respondent.ReportMemo`), so the
    respondent answers the same way however often they are invited. ``view`` (the
    survey's respondent view) has its ``questions`` replaced by the arm's, each group
    design's by its group's columns and instructions.

    Returns
    -------
    (arm, groups)
        The arm's name (``None`` without arms) and the group (0 or 1) of each group
        design's question id, as the response sends them.
    """
    import hashlib
    import secrets

    arms = view.get("arms") or []
    arm = None
    if arms:
        names = [a["id"] for a in arms]
        key = "arm/" + hashlib.sha256(f"{view['id']}\n{names}".encode()).hexdigest()
        index = memo.get(owner, key)
        if index is None or not 0 <= index < len(arms):
            weights = [float(a["weight"]) for a in arms]
            fixed = arm_key(owner, token)
            drawn = token_uniform(fixed, view["id"]) if fixed else secrets.randbits(53) / 2**53
            index = arm_index(weights, drawn)
            memo.put(owner, key, index)
        arm = names[index]
    chosen = next((a for a in arms if a["id"] == arm), None)
    groups: dict[str, int] = {}
    questions = []
    for base in view["questions"]:
        q = (chosen["questions"].get(base["id"]) if chosen else None) or base
        if q.get("groups"):
            key = f"group/{q['memo_key']}"
            g = memo.get(owner, key)
            if g not in (0, 1):
                g = secrets.randbelow(2)
                memo.put(owner, key, g)
            groups[q["id"]] = g
            q = q | q["groups"][g]
        questions.append(q)
    view["questions"] = questions
    return arm, groups
