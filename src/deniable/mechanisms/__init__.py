"""Mechanisms: known channels from truths to reports, and the randomness they draw.

Every mechanism, numeric ones included, satisfies the generic :class:`Mechanism`
(:mod:`deniable.mechanisms`): exact epsilon through one privacy guard,
``randomize(truths, rng=None)``, the tally its reports reduce to, its reports as text
and binary columns, a channel by which estimation looks up the arithmetic of its
estimate (:mod:`deniable.mechanisms`), and a spec through one registry
(:mod:`deniable.mechanisms`).

========================  ===============================================================
module                    what it holds
========================  ===============================================================
``protocol``              the generic :class:`Mechanism` protocol, the privacy guard
``channels``              the channels, each with the arithmetic of its estimate
``designs``               finite designs: :class:`Design`, :class:`MatrixDesign`, k-ary RR
``geometric``             the range-restricted geometric channel on a count
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

from ._binary import Crosswise, ForcedResponse, Kuk, Mangat, Triangular, UnrelatedQuestion, Warner
from ._byte_prefix import BytePrefixExtension, MemoizedBytePrefixClient
from ._byte_prefix import prefix_hashes as prefix_hashes
from ._channels import (
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
from ._channels import FiniteChannel as FiniteChannel
from ._columns import hex_rows as hex_rows
from ._dbitflip import DBitFlip
from ._dbitflip import DBitFlipReports as DBitFlipReports
from ._designs import Design, MatrixDesign, ReportCodes, ldp_epsilon
from ._designs import is_design as is_design
from ._designs import protected_epsilon as protected_epsilon
from ._direct import Direct
from ._geometric import GeometricCount
from ._hadamard import HadamardResponse
from ._kary import KaryRR
from ._kernels import hadamard_spectrum as hadamard_spectrum
from ._kernels import kernel_backend as kernel_backend
from ._kernels import linear_hash_counts as linear_hash_counts
from ._kernels import olh_candidate_counts as olh_candidate_counts
from ._kernels import walsh_hadamard_rows as walsh_hadamard_rows
from ._local_hashing import LocalHashing
from ._numeric import DuchiMean, HybridMean, OneBitMean, Piecewise
from ._numeric import NumericMechanism as NumericMechanism
from ._oracle import FrequencyOracle, OracleReports
from ._panel import TwoLayerDesign
from ._prefix import PrefixExtension
from ._protocol import MAX_EPSILON as MAX_EPSILON
from ._protocol import CategoricalMechanism, Mechanism, ReportField, check_epsilon
from ._protocol import check_question_epsilon as check_question_epsilon
from ._protocol import check_stated_epsilon as check_stated_epsilon
from ._randomness import BlumBlumShub, SecureRandom
from ._randomness import RandomSource as RandomSource
from ._randomness import default_source_replaced as default_source_replaced
from ._rappor import Rappor, RapporReports
from ._registry import DESIGNS as DESIGNS
from ._registry import MECHANISMS as MECHANISMS
from ._registry import as_design as as_design
from ._registry import check_parameters as check_parameters
from ._registry import (
    design_from_spec,
    mechanism_from_dict,
    mechanism_from_spec,
    numeric_from_spec,
    oracle_from_spec,
    tally,
)
from ._selection import frequency_oracle
from ._unary import UnaryEncoding

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
    "GeometricCount",
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
    "OracleReports",
    "Piecewise",
    "PrefixChannel",
    "PrefixExtension",
    "Rappor",
    "RapporReports",
    "ReportCodes",
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
    "tally",
]
