"""Small linear classifiers: trained with scikit-learn, applied with plain NumPy.

scikit-learn's per-call overhead (~0.2 ms a predict) would eat the 10 ms frame budget, and a
standardised multinomial logistic regression is a dot product, so calibration stores the
weights (npz) and the reader evaluates them directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class LinearModel:
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray       # (C, D), or (1, D) for two classes
    intercept: np.ndarray  # (C,) or (1,)

    def proba(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Z = ((X - self.mean) / self.scale) @ self.coef.T + self.intercept
        if self.coef.shape[0] == 1:  # binary: sigmoid of the positive class (classes[1])
            p = 1.0 / (1.0 + np.exp(-Z[:, 0]))
            return np.column_stack([1 - p, p])
        Z = Z - Z.max(axis=1, keepdims=True)
        e = np.exp(Z)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        np.savez(path, classes=np.array(self.classes), mean=self.mean, scale=self.scale,
                 coef=self.coef, intercept=self.intercept)

    @classmethod
    def load(cls, path: Path) -> "LinearModel":
        with np.load(path, allow_pickle=False) as d:
            return cls(tuple(str(c) for c in d["classes"]), d["mean"], d["scale"], d["coef"], d["intercept"])


def train_linear(X: np.ndarray, y: list[str], C: float = 1.0, class_weight: str | None = "balanced") -> LinearModel:
    """Standardise and fit a (multinomial) logistic regression; needs at least two classes."""
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-6] = 1.0
    Xs = (X - mean) / scale
    clf = LogisticRegression(C=C, max_iter=2000, class_weight=class_weight)
    clf.fit(Xs, np.asarray(y))
    return LinearModel(tuple(str(c) for c in clf.classes_), mean, scale, clf.coef_.copy(), clf.intercept_.copy())
