"""The numbers the paper reports (Epistemic uncertainty evaluated by regret (NeurIPS 2026)) and its digest and our spec
quote: each named once, with its source, so that the code that compares with them and every sentence that states them
(`{{ paper.NAME }}` in docs/results/templates/*-03.md and 03-*.md; `lib.templates.paper_module`) read the same value.

Neither the paper's text nor its code is available: the spec (docs/specs/03-epistemic-regret.md) quotes its tables from
the digest. `cell`, `row` and `proxy_row` write a value as the paper's table prints it (`DIGITS` decimals).
"""

from __future__ import annotations

# spec §1.2: the paper's table, CIFAR-10H (CE and 0/1 loss) and APPA-REAL (squared and absolute loss); its columns,
# the decimals it prints each with, and the names it gives the methods
COLUMNS = ("AuReC", "ex-AuReC", "P-gap", "r_s(Â,Ê)", "r_s(A*,E*)")
DIGITS = {"AuReC": 4, "ex-AuReC": 4, "P-gap": 4, "r_s(Â,Ê)": 3, "r_s(A*,E*)": 3}
METHOD_NAMES = {"mc_dropout": "MC-Dropout", "ensemble": "Deep Ensemble", "ddu": "DDU", "evidential": "Evidential"}
TABLE = {  # (data, loss, method) -> AuReC, ex-AuReC, P-gap, r_s(Â,Ê), r_s(A*,E*) (spec §1.2)
    ("CIFAR-10H", "ce", "mc_dropout"): (0.1023, 0.0738, 0.1074, 0.912, 0.882),
    ("CIFAR-10H", "ce", "ensemble"): (0.0752, 0.0491, 0.0753, 0.880, 0.865),
    ("CIFAR-10H", "ce", "ddu"): (0.0958, 0.0665, 0.0979, 0.674, 0.875),
    ("CIFAR-10H", "ce", "evidential"): (0.0673, 0.0183, 0.0379, 0.999, 0.293),
    ("CIFAR-10H", "zero_one", "mc_dropout"): (0.0162, 0.0154, 0.0117, 0.205, 0.216),
    ("CIFAR-10H", "zero_one", "ensemble"): (0.0058, 0.0053, 0.0097, 0.456, 0.208),
    ("CIFAR-10H", "zero_one", "ddu"): (0.0034, 0.0027, 0.0108, 0.678, 0.212),
    ("CIFAR-10H", "zero_one", "evidential"): (0.0030, 0.0023, 0.0103, 0.999, 0.213),
    ("APPA-REAL", "squared", "mc_dropout"): (11.6382, 6.6169, 0.2005, 0.823, 0.316),
    ("APPA-REAL", "squared", "ensemble"): (11.3519, 6.6908, 0.1806, 0.674, 0.273),
    ("APPA-REAL", "squared", "evidential"): (16.9411, 8.4294, 0.1998, 0.976, -0.128),
    ("APPA-REAL", "squared", "ddu"): (20.0456, 15.4126, 0.1843, -0.201, 0.273),
    ("APPA-REAL", "absolute", "mc_dropout"): (0.8184, 0.4499, 0.1722, 0.718, 0.133),
    ("APPA-REAL", "absolute", "ensemble"): (0.7948, 0.4640, 0.1531, 0.580, 0.107),
    ("APPA-REAL", "absolute", "evidential"): (0.9707, 0.5689, 0.1678, 0.418, 0.049),
    ("APPA-REAL", "absolute", "ddu"): (1.0422, 0.7116, 0.1595, -0.235, 0.104),
}
# spec §1.3: the proxy tasks, method -> near-OOD AuROC, far-OOD AuROC, AL NAUC (three decimals); the table's fourth
# column, the CIFAR-10H CE AuReC, is TABLE's
PROXY = {
    "ensemble": (0.907, 0.931, 0.960),
    "ddu": (0.899, 0.935, 0.943),
    "mc_dropout": (0.839, 0.895, 0.962),
    "evidential": (0.711, 0.726, 0.177),
}
PROXY_TABLE = {m: (*v, TABLE[("CIFAR-10H", "ce", m)][0]) for m, v in PROXY.items()}  # spec §1.3's four columns
# spec §1.4 F3: the true r_s(A*, E*) "falls from ≈ 0.88 under CE to ≈ 0.21 under 0/1 loss" (the digest's rounding)
F3_R_S = {"ce": 0.88, "zero_one": 0.21}
# spec §5.2's golden values: cleanlab's cross-validated q on all 10,000 CIFAR-10H rows, mean T*, A*, E* and
# r_s(A*, E*) per loss
GOLDEN = {"ce": (0.5135, 0.1545, 0.3591, 0.825), "zero_one": (0.1033, 0.0456, 0.0578, 0.209)}


def value(key: str, column: str, data: str = "CIFAR-10H") -> float:
    """The paper's `column` for `key` ("ce/mc_dropout": loss/method) of its `data` table."""
    loss, method = key.split("/")
    return TABLE[(data, loss, method)][COLUMNS.index(column)]


def cell(key: str, column: str, data: str = "CIFAR-10H") -> str:
    """`value` as the paper's table prints it: "0.0030", "0.880"."""
    return f"{value(key, column, data):.{DIGITS[column]}f}"


def row(key: str, data: str = "CIFAR-10H") -> str:
    """The paper's row for `key` ("ce/mc_dropout") as its table prints it, COLUMNS joined by " / "."""
    return " / ".join(cell(key, column, data) for column in COLUMNS)


def proxy_row(method: str) -> str:
    """Spec §1.3's row of `method` ("mc_dropout"): near / far / NAUC / CE AuReC as the table prints them."""
    return " / ".join([*(f"{v:.3f}" for v in PROXY[method]), cell(f"ce/{method}", "AuReC")])
