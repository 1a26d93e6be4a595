"""Collection: running a survey, from its file to its analysis, in rooms by concern.

============== ==============================================================
room           what it holds
============== ==============================================================
``model``      the survey file: questions, designs, arms, groups, panels,
               translations, the privacy budget, the respondent's view
``credentials`` one-time credentials by RSA blind signatures (RFC 9474)
``store``      the database: schema, staging and crowd releases, disclosure
               control, invitations, recipients, lifecycle, waves, reading
``respondent`` the page's JavaScript, the terminal client, its memo, devices
``exports``    exports and the R bundle; other survey tools (embed, read back)
``server``     the FastAPI application, and a server in a thread (``live``)
============== ==============================================================

Beside the rooms: ``study`` (a study's estimates by arm and group), ``results`` (a
survey's results page and API from the store) and ``study_demo`` (the demo's study).
The credentials need NumPy and ``cryptography`` only; the survey model (pydantic, PyYAML)
and everything built on it need the ``server`` extra, and say so in one line without it:
``pip install 'deniable[server]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._extras import lazy_attributes

__all__: list[str] = []


# Internal names other rooms import, loaded on first use (PEP 562; not in __all__).
if TYPE_CHECKING:
    from ._assignment import arm_index as arm_index
    from ._assignment import invitation_arm as invitation_arm
    from ._assignment import token_uniform as token_uniform

_INTERNAL = {
    "arm_index": "_assignment",
    "invitation_arm": "_assignment",
    "token_uniform": "_assignment",
}

__getattr__ = lazy_attributes(__name__, _INTERNAL)
