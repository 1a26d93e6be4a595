"""Privacy audits of the shipped randomizers: a measured epsilon beside every claimed one.

deniable proves each design's epsilon on paper; an audit measures it on the encoder that
actually ships, as LDP-Auditor does (Arcolezi & Gambs 2023, arXiv 2309.01597), so that a
slip in an encoder (a flip probability off, epsilon scaled, a biased hash, a seeded
source) is seen, not assumed away.

========================  ===============================================================
name                      what it does
========================  ===============================================================
:func:`audit_epsilon`     a Clopper-Pearson lower bound on epsilon from the encoder's
                          draws on two neighbouring inputs (Jagielski, Ullman & Oprea 2020)
:func:`fit_test`          the encoder's output frequencies against its documented channel
                          (which sees an encoder *more* private than it says)
:func:`source_check`      the encoder's randomness comes from the secure source alone
:func:`timing_check`      single-call times do not tell the answers apart
:func:`paired_gap`        the relative difference of a call's cost from pairs of timed
                          batches, with its interval (where one call is too short to time)
:func:`audit_targets`     the inputs and distinguishing event of each claim
:func:`node_encoder`      the browser's randomizer (the npm package's or the page's
                          module) as an encoder, run in Node, with its source check and
                          :func:`node_timing_check` (single calls); :func:`page_encoder`
                          in a browser page, with its source and timing checks
:func:`node_panel_encoders`  the page's panel question (``panelReport``) in Node, each
                          layer, with :func:`node_panel_memo_check` (its memo)
:func:`node_oracle_encoders`  the browser's oracle encoders (``oracles.js``: unary
                          encoding, local hashing, PEM, byte-PEM, RAPPOR) in Node, with
                          :func:`node_oracle_source_checks`; :func:`page_oracle_encoders`
                          and :func:`page_oracle_source_checks` in a browser page
:func:`epsilon_lower_bound`  the bound from an event's counts
========================  ===============================================================

``deniable audit SPEC`` runs all three on the command line; ``bench/privacy_audit.py``
runs them over every shipped mechanism and writes ``docs/audit.md``.
"""

from __future__ import annotations

from ._auditor import RUNTIMES, EpsilonAudit, audit_epsilon
from ._bounds import clopper_pearson_high, clopper_pearson_low, epsilon_lower_bound
from ._fit import FitTest, SourceCheck, fit_test, source_check
from ._js import (
    node_encoder,
    node_source_check,
    node_timing_check,
    page_encoder,
    page_source_check,
    page_timing_check,
)
from ._js_oracles import (
    node_oracle_encoders,
    node_oracle_source_checks,
    page_oracle_encoders,
    page_oracle_source_checks,
)
from ._js_panel import MemoCheck, node_panel_encoders, node_panel_memo_check
from ._targets import AuditTarget, audit_targets
from ._timing import TimingCheck, paired_gap, timing_check

__all__ = [
    "RUNTIMES",
    "AuditTarget",
    "EpsilonAudit",
    "FitTest",
    "MemoCheck",
    "SourceCheck",
    "TimingCheck",
    "audit_epsilon",
    "audit_targets",
    "clopper_pearson_high",
    "clopper_pearson_low",
    "epsilon_lower_bound",
    "fit_test",
    "node_encoder",
    "node_oracle_encoders",
    "node_oracle_source_checks",
    "node_panel_encoders",
    "node_panel_memo_check",
    "node_source_check",
    "node_timing_check",
    "page_encoder",
    "page_oracle_encoders",
    "page_oracle_source_checks",
    "page_source_check",
    "page_timing_check",
    "paired_gap",
    "source_check",
    "timing_check",
]
