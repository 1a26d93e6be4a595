"""Mechanisms: known channels from truths to reports, and the randomness they draw.

Every mechanism, numeric ones included, satisfies the generic :class:`Mechanism`
(:mod:`deniable.mechanisms.protocol`): exact epsilon through one privacy guard,
``randomize(truths, rng=None)``, the tally its reports reduce to, its reports as text
and binary columns, a channel by which estimation looks up the arithmetic of its
estimate (:mod:`deniable.mechanisms.channels`), and a spec through one registry
(:mod:`deniable.mechanisms.registry`).

========================  ===============================================================
module                    what it holds
========================  ===============================================================
``protocol``              the generic :class:`Mechanism` protocol, the privacy guard
``channels``              the channels, each with the arithmetic of its estimate
``designs``               finite designs: :class:`Design`, :class:`MatrixDesign`, k-ary RR
``binary``                the classical binary designs (forced response, Warner, ...)
``oracle``                :class:`FrequencyOracle`, the base of the large-domain oracles
``unary``                 unary encoding (SUE/OUE)
``local_hashing``         optimal local hashing (OLH)
``hadamard``              Hadamard response
``rappor``                RAPPOR's client (Bloom filter, permanent and instantaneous RR)
``panel``                 two-layer RR of a finite design for a panel (RAPPOR's layers)
``selection``             :func:`frequency_oracle`, the lowest-variance choice
``numeric``               numeric means: Duchi, piecewise, hybrid, 1BitMean
``dbitflip``              histograms of bucketed numeric values (dBitFlip)
``prefix``                heavy hitters without a candidate list (PEM)
``registry``              names and spec strings of every mechanism
``randomness``            the secure source and seeded generators for simulation
========================  ===============================================================
"""

from .binary import Crosswise, ForcedResponse, Kuk, Mangat, Triangular, UnrelatedQuestion, Warner
from .byte_prefix import BytePrefixExtension, MemoizedBytePrefixClient
from .channels import (
    CHANNELS,
    BloomChannel,
    BucketChannel,
    BytePrefixChannel,
    Channel,
    MatrixChannel,
    MeanChannel,
    PrefixChannel,
    SupportChannel,
)
from .dbitflip import DBitFlip
from .designs import Design, KaryRR, MatrixDesign, ldp_epsilon
from .direct import Direct
from .hadamard import HadamardResponse
from .local_hashing import LocalHashing
from .numeric import DuchiMean, HybridMean, OneBitMean, Piecewise
from .oracle import FrequencyOracle
from .panel import TwoLayerDesign
from .prefix import PrefixExtension
from .protocol import CategoricalMechanism, Mechanism, ReportField, check_epsilon
from .randomness import BlumBlumShub, SecureRandom
from .rappor import Rappor, RapporReports
from .registry import (
    design_from_spec,
    mechanism_from_dict,
    mechanism_from_spec,
    numeric_from_spec,
    oracle_from_spec,
)
from .selection import frequency_oracle
from .unary import UnaryEncoding

__all__ = [
    "CHANNELS",
    "BloomChannel",
    "BlumBlumShub",
    "BucketChannel",
    "BytePrefixChannel",
    "BytePrefixExtension",
    "CategoricalMechanism",
    "Channel",
    "Crosswise",
    "DBitFlip",
    "Design",
    "Direct",
    "DuchiMean",
    "ForcedResponse",
    "FrequencyOracle",
    "HadamardResponse",
    "HybridMean",
    "KaryRR",
    "Kuk",
    "LocalHashing",
    "Mangat",
    "MatrixChannel",
    "MatrixDesign",
    "MeanChannel",
    "Mechanism",
    "MemoizedBytePrefixClient",
    "OneBitMean",
    "Piecewise",
    "PrefixChannel",
    "PrefixExtension",
    "Rappor",
    "RapporReports",
    "ReportField",
    "SecureRandom",
    "SupportChannel",
    "Triangular",
    "TwoLayerDesign",
    "UnaryEncoding",
    "UnrelatedQuestion",
    "Warner",
    "check_epsilon",
    "design_from_spec",
    "frequency_oracle",
    "ldp_epsilon",
    "mechanism_from_dict",
    "mechanism_from_spec",
    "numeric_from_spec",
    "oracle_from_spec",
]
