"""Small linear classifiers: trained with scikit-learn, applied with plain NumPy.

scikit-learn's per-call overhead (~0.2 ms a predict) would eat the 10 ms frame budget, and a
standardised multinomial logistic regression is a dot product, so calibration stores the
weights (npz) and the reader evaluates them directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


def scores_to_proba(Z: np.ndarray) -> np.ndarray:
    """Class probabilities from a logistic regression's decision scores (N, C): the sigmoid of
    the positive class (classes[1]) when there is one column (two classes), else the softmax."""
    return _scores_to_proba(Z.copy())


def _scores_to_proba(Z: np.ndarray) -> np.ndarray:
    """scores_to_proba of scores it may overwrite (the same steps, in place: no temporaries)."""
    if Z.shape[1] == 1:
        e = np.negative(Z[:, 0], out=Z[:, 0])
        np.exp(e, out=e)
        e += 1.0
        out = np.empty((len(e), 2), dtype=e.dtype)
        np.true_divide(1.0, e, out=out[:, 1])
        np.subtract(1.0, out[:, 1], out=out[:, 0])
        return out
    Z -= np.maximum.reduce(Z, axis=1, keepdims=True)  # (Z.max and Z.sum's own reductions)
    np.exp(Z, out=Z)
    Z /= np.add.reduce(Z, axis=1, keepdims=True)
    return Z


def _rows(X: np.ndarray) -> np.ndarray:
    """X as a 2-D array (np.atleast_2d's shape), without copying a 2-D one."""
    X = np.asarray(X)
    return X if X.ndim == 2 else np.atleast_2d(X)


@dataclass(frozen=True)
class LinearModel:
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray       # (C, D), or (1, D) for two classes
    intercept: np.ndarray  # (C,) or (1,)

    def proba(self, X: np.ndarray) -> np.ndarray:
        Xs = np.subtract(_rows(X), self.mean, dtype=np.float64)
        Xs /= self.scale
        Z = Xs @ self.coef.T
        Z += self.intercept
        return _scores_to_proba(Z)

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


@dataclass(frozen=True)
class KernelModel:
    """An RBF-kernel classifier (Nystroem landmarks + multinomial logistic regression).

    A glyph's HOG is not linearly separable from a few dozen photos (a 4 and a 2 share most
    strokes); an RBF kernel over a few hundred landmark samples is, and it still evaluates as
    two small matrix products, with probabilities the confidence threshold can use.
    """

    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    landmarks: np.ndarray   # (M, D) standardised training samples
    gamma: float
    coef: np.ndarray        # (C, M): the regression's weights with the Nystroem normalisation folded in
    intercept: np.ndarray   # (C,)

    def __post_init__(self) -> None:
        # the landmarks' squared norms, once: a third of a small batch's cost if taken per call
        object.__setattr__(self, "_lm_sq", (self.landmarks ** 2).sum(axis=1)[None, :])
        # the landmarks as the product reads them, (D, M) in rows, in float32: between two calls a
        # frame's images push the 1 MB of float64 landmarks out of the cache, and fetching them
        # back was most of a call; half the bytes, read in order, take half the time (six crops'
        # features in a frame: 188 -> 143 us a call, 0.12 ms a frame on the bench's kits; the
        # readings of 10,080 kit photos unchanged). The products' sums differ from float64's by
        # some 1e-3 in a squared distance of hundreds: 1e-6 in a probability.
        # (doubled: the product's 2 x cross, as doubling is exact in every sum the product makes)
        object.__setattr__(self, "_lm_t32", 2.0 * np.ascontiguousarray(self.landmarks.T, dtype=np.float32))

    def proba(self, X: np.ndarray) -> np.ndarray:
        X = np.subtract(_rows(X), self.mean, dtype=np.float64)
        X /= self.scale
        cross2 = X.astype(np.float32) @ self._lm_t32  # 2 x the cross products
        d2 = np.subtract(np.add.reduce(X * X, axis=1)[:, None], cross2, dtype=np.float64)
        d2 += self._lm_sq
        np.maximum(d2, 0.0, out=d2)
        d2 *= -self.gamma
        np.exp(d2, out=d2)
        Z = d2 @ self.coef.T
        Z += self.intercept
        return _scores_to_proba(Z)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, kind=np.array("kernel"), classes=np.array(self.classes), mean=self.mean,
                            scale=self.scale, landmarks=self.landmarks, gamma=np.array(self.gamma), coef=self.coef,
                            intercept=self.intercept)

    @classmethod
    def load(cls, path: Path) -> "KernelModel":
        with np.load(path, allow_pickle=False) as d:
            return cls(tuple(str(c) for c in d["classes"]), d["mean"], d["scale"], d["landmarks"], float(d["gamma"]),
                       d["coef"], d["intercept"])


def load_model(path: Path):
    """A LinearModel or a KernelModel, whichever the file holds."""
    with np.load(path, allow_pickle=False) as d:
        kind = str(d["kind"]) if "kind" in d.files else "linear"
    return KernelModel.load(path) if kind == "kernel" else LinearModel.load(path)


def train_kernel(X: np.ndarray, y: list[str], C: float = 10.0, landmarks: int = 300, gamma_scale: float = 1.0,
                 seed: int = 0) -> KernelModel:
    """Standardise, map through an RBF Nystroem feature map, fit a multinomial logistic regression."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-6] = 1.0
    Xs = (X - mean) / scale
    gamma = gamma_scale / X.shape[1]
    ny = Nystroem(gamma=gamma, n_components=min(int(landmarks), len(Xs)), random_state=seed).fit(Xs)
    clf = LogisticRegression(C=C, max_iter=3000)
    clf.fit(ny.transform(Xs), np.asarray(y))
    # features = K(x, landmarks) @ normalization.T, so the weights fold into one (C, M) matrix
    return KernelModel(tuple(str(c) for c in clf.classes_), mean, scale, ny.components_.copy(), float(gamma),
                       clf.coef_ @ ny.normalization_, clf.intercept_.copy())
