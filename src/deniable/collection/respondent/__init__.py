"""The respondent's side: the page's JavaScript and the embeddable component
(``web/``), the terminal client that randomizes on the respondent's own machine, its
memo of reports, and the simulated devices of the demos and tests."""

__all__: list[str] = []
