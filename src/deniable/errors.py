"""Exceptions and warnings raised by deniable.

The tree is small and flat::

    DeniableError                      base of every error the library raises itself
    ├── ReportValidationError(ValueError)   a report code outside the design's report set,
    │                                      or reports of the wrong type or shape
    ├── SurveyError(ValueError)             a malformed survey definition (names each field)
    │   └── BudgetExceededError             its questions' epsilons sum past its budget
    ├── SurveyNotFoundError(LookupError)    no published survey with that id/version
    ├── SurveyConflictError                 republishing an (id, version) with other content
    ├── InvitationError                     a missing, unknown or already used invitation
    │   ├── InvitationVersionError          an invitation bound to another survey version
    │   └── CredentialRejectedError         a credential that is forged, for another
    │                                      survey or version, or already spent
    ├── RecipientsRefusedError              named recipients past the server's lifetime
    │                                      budget, or invited twice to one version
    └── CredentialError(ValueError)         a malformed blinded message or credential
    PrivacyWarning(UserWarning)            a legal but risky setting (very large epsilon)

Bad parameters of a design (a probability of 1.3) raise plain :class:`ValueError`
naming the parameter and its allowed range; a wrong type raises :class:`TypeError`.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "CredentialError",
    "CredentialRejectedError",
    "DegenerateTallyWarning",
    "DeniableError",
    "DeniableWarning",
    "DetectionLimitError",
    "EstimateOutsideWarning",
    "FewReportsWarning",
    "IntervalCoverageWarning",
    "InvitationError",
    "InvitationUsedError",
    "InvitationVersionError",
    "MemoryLimitError",
    "PrivacyWarning",
    "RateLimitedError",
    "RecipientsRefusedError",
    "ReportValidationError",
    "SurveyClosedError",
    "SurveyConflictError",
    "SurveyError",
    "SurveyNotFoundError",
]


class DeniableError(Exception):
    """Base class of the errors raised by deniable itself.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import DeniableError, Warner, estimate
    >>> try:
    ...     estimate(Warner(p=0.7), np.array([0, 2]))
    ... except DeniableError as exc:
    ...     print(type(exc).__name__)
    ReportValidationError
    """


class ReportValidationError(DeniableError, ValueError):
    """A report (or a tally) does not fit the design it is analysed with.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import ReportValidationError, Warner, estimate
    >>> try:
    ...     estimate(Warner(p=0.7), np.array([0, 1, 2]))
    ... except ReportValidationError as exc:
    ...     print("refused")
    refused
    """


class SurveyError(DeniableError, ValueError):
    """A survey definition failed validation.

    Attributes
    ----------
    errors : list of (str, str)
        ``(field, message)`` pairs; ``field`` is a dotted path such as
        ``questions.0.design.params``.

    Examples
    --------
    >>> from deniable.collection.model import parse_survey
    >>> from deniable.errors import SurveyError
    >>> try:
    ...     parse_survey("id: x")
    ... except SurveyError as err:
    ...     for line in str(err).split("; "):  # every invalid field, named
    ...         print(line)
    version: Field required
    title: Field required
    privacy_budget: Field required
    questions: Field required
    """

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{f}: {m}" for f, m in errors))


class BudgetExceededError(SurveyError):
    """The questions of a survey spend more epsilon than its per-respondent budget.

    Raised by :func:`deniable.collection.model.load_survey` (sequential composition:
    the finite epsilons of all questions must sum to at most ``privacy_budget``).

    Examples
    --------
    >>> from deniable import BudgetExceededError, DeniableError
    >>> issubclass(BudgetExceededError, DeniableError), issubclass(BudgetExceededError, ValueError)
    (True, True)
    """


class DetectionLimitError(DeniableError, ValueError):
    """A heavy-hitter search asked for frequencies below what its reports can find.

    Attributes
    ----------
    detection_limit : float
        The smallest frequency the reports find with the recall asked for
        (:func:`deniable.estimation.detection_limit`).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import find_heavy_hitters
    >>> from deniable.mechanisms import PrefixExtension
    >>> pem = PrefixExtension(1.0, max_length=4)
    >>> reports = pem.randomize(np.array(["abcd", "efgh"] * 500), np.random.default_rng(0))
    >>> try:
    ...     find_heavy_hitters(pem, reports, 0.05, max_survivors=5, on_overflow="raise")
    ... except ValueError as err:  # a DetectionLimitError
    ...     print(type(err).__name__, round(err.detection_limit, 2))
    DetectionLimitError 0.47
    """

    def __init__(self, message: str, detection_limit: float) -> None:
        self.detection_limit = detection_limit
        super().__init__(message)


class MemoryLimitError(DeniableError, ValueError):
    """An allocation proportional to reports x candidates would pass ``memory_limit``.

    Raised before the allocation is made.

    Attributes
    ----------
    asked : int
        Bytes the allocation would take.
    limit : int
        The ``memory_limit`` in force, in bytes.

    Examples
    --------
    >>> from deniable.errors import MemoryLimitError
    >>> issubclass(MemoryLimitError, ValueError)
    True
    """

    def __init__(self, message: str, asked: int, limit: int) -> None:
        self.asked, self.limit = asked, limit
        super().__init__(message)


class SurveyNotFoundError(DeniableError, LookupError):
    """No published survey has the requested id (and version).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> from deniable.errors import SurveyNotFoundError
    >>> try:
    ...     store.survey("nope")
    ... except SurveyNotFoundError as err:
    ...     print(err)
    no published survey 'nope'
    """


class SurveyConflictError(DeniableError):
    """An (id, version) is already published with different content: publish a new version.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> from deniable.collection.model import load_survey
    >>> from deniable.errors import SurveyConflictError
    >>> survey = load_survey("examples/campus.yaml")
    >>> store.publish(survey)
    True
    >>> changed = survey.model_copy(update={"title": "Another title"})
    >>> try:
    ...     store.publish(load_survey(changed.model_dump(exclude_none=True)))
    ... except SurveyConflictError as err:
    ...     print(str(err).split("; ")[0])
    survey 'campus' version 1 is already published with different content
    """


class InvitationError(DeniableError):
    """The invitation token is missing, unknown, or already used.

    Examples
    --------
    >>> from deniable.errors import DeniableError, InvitationError
    >>> issubclass(InvitationError, DeniableError)
    True
    """


class InvitationUsedError(InvitationError):
    """The invitation was valid and has already been used (said so, for the respondent).

    Examples
    --------
    >>> from deniable.errors import InvitationError, InvitationUsedError
    >>> issubclass(InvitationUsedError, InvitationError)
    True
    """


class InvitationVersionError(InvitationError):
    """The invitation is bound to another version of the survey than the one asked for.

    Examples
    --------
    >>> from deniable.errors import InvitationError, InvitationVersionError
    >>> issubclass(InvitationVersionError, InvitationError)
    True
    """

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


class RecipientsRefusedError(DeniableError):
    """Every named recipient of an invitation request was refused.

    Attributes
    ----------
    errors : list of (str, str)
        ``(field, message)`` per refused row, ``field`` as ``recipients.3``.

    Examples
    --------
    >>> from deniable.errors import DeniableError, RecipientsRefusedError
    >>> issubclass(RecipientsRefusedError, DeniableError)
    True
    """

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{f}: {m}" for f, m in errors[:5]))


class RateLimitedError(DeniableError):
    """An analyst's request repeated within the period that allows one (for example
    ``invitations/unused`` once per release period); the message says when the next
    period starts. Nothing was answered. The server answers it with 429.

    Examples
    --------
    >>> from deniable.errors import RateLimitedError
    >>> issubclass(RateLimitedError, DeniableError)
    True
    """


class SurveyClosedError(DeniableError):
    """The survey is closed: it takes no responses and issues no credentials.

    Examples
    --------
    >>> from deniable.errors import DeniableError, SurveyClosedError
    >>> issubclass(SurveyClosedError, DeniableError)
    True
    """


class CredentialRejectedError(InvitationError):
    """A response's credential does not verify under the survey's key, or was spent.

    Examples
    --------
    >>> from deniable.errors import InvitationError, CredentialRejectedError
    >>> issubclass(CredentialRejectedError, InvitationError)
    True
    """


class CredentialError(DeniableError, ValueError):
    """A blinded message, blind signature or credential is malformed (RFC 9474 sizes).

    Examples
    --------
    >>> from deniable.collection.credentials import b64url_decode
    >>> from deniable.errors import CredentialError
    >>> try:
    ...     b64url_decode("a" * 40, "signature", 8)
    ... except CredentialError as err:
    ...     print(err)
    signature must be at most 8 bytes
    """


class DeniableWarning(UserWarning):
    """Base class of deniable's warnings: each kind is issued as a Python warning of its
    own category, and kept on the result it concerns (``result.warnings``).

    Examples
    --------
    >>> from deniable.errors import DeniableWarning, FewReportsWarning
    >>> issubclass(FewReportsWarning, DeniableWarning), issubclass(DeniableWarning, UserWarning)
    (True, True)
    """


class FewReportsWarning(DeniableWarning):
    """An estimate from a handful of reports (fewer than 30, the smallest crowd the
    collection server releases): its standard error and interval rest on
    approximations that need more.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.errors import FewReportsWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = estimate(Warner(p=0.8), np.array([0, 1, 1]))
    >>> any(w.category is FewReportsWarning for w in caught)
    True
    """


class EstimateOutsideWarning(DeniableWarning):
    """An unbiased (moment) estimate outside [0, 1]: the true prevalence is near the
    edge it passed; beyond 3.29 standard errors the reports fit no prevalence.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.errors import EstimateOutsideWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = estimate(Warner(p=0.8), np.array([0] * 95 + [1] * 5))
    >>> any(w.category is EstimateOutsideWarning for w in caught)
    True
    """


class DegenerateTallyWarning(DeniableWarning):
    """Every report fell in one category: the plug-in variance vanishes (a standard
    error of 0), though the interval still reflects the sample size.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.errors import DegenerateTallyWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = estimate(Warner(p=0.8), np.array([0] * 40))
    >>> any(w.category is DegenerateTallyWarning for w in caught)
    True
    """


class IntervalCoverageWarning(DeniableWarning):
    """An interval method asked for where its exact coverage was measured below 94%
    (docs/coverage.md): small samples near the boundary.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import deniable
    >>> design = deniable.ForcedResponse(p_yes=0.25, p_no=0.25)
    >>> result = deniable.estimate(design, np.array([0] * 18 + [1] * 12))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = result.confidence_interval(0.95, "bayes")
    >>> sorted({w.category.__name__ for w in caught})
    ['IntervalCoverageWarning']
    """


class PrivacyWarning(DeniableWarning):
    """A legal setting that protects respondents poorly (for example epsilon > 5 nats).

    Examples
    --------
    >>> import warnings
    >>> from deniable import KaryRR, PrivacyWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = KaryRR(k=2, epsilon=6.0)
    >>> any(issubclass(w.category, PrivacyWarning) for w in caught)
    True
    """
