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
The model, the credentials and the client need NumPy (and ``cryptography``) only; the
rest needs the ``server`` extra: ``pip install 'deniable[server]'``.
"""

__all__: list[str] = []
