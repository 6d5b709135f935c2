"""A softmax regression over a message's features: which playbook (or none) its examples say it belongs to.

Features: the MiniLM embedding, the character n-gram vector (``app.playbooks.char_grams``) and one flag per
playbook for its own patterns. The classes: every playbook, and *unmatched* (the messages no playbook takes). Trained
on the examples when the matcher first needs it, by full-batch Adam from zero weights, so the same examples always
give the same model; on 2 cores about two seconds for the demo shop's fourteen hundred examples (300 steps: more
changed none of the held-out figures).

Written here rather than taken from scikit-learn's ``LogisticRegression``: it is forty lines of NumPy, while
scikit-learn and SciPy would add some 60 MB to the install and half a second to every start of the desk. The
hyperparameters were chosen by 5-fold cross-validation on the examples (``benchmarks.intents``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]

L2 = 3e-6
ITERATIONS = 300
STEP = 0.05
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8


class SoftmaxRegression:
    def __init__(self, features: Matrix, labels: npt.NDArray[np.int64], classes: int) -> None:
        rows, width = features.shape
        self.weights = np.zeros((width, classes), dtype=np.float32)
        self.bias = np.zeros(classes, dtype=np.float32)
        targets = np.eye(classes, dtype=np.float32)[labels]
        # Each class weighs the same, however many examples it has: the unmatched examples outnumber any one
        # playbook's, and unweighted they would pull every doubtful message towards "no playbook".
        counts = np.bincount(labels, minlength=classes).astype(np.float32)
        row_weights = (rows / (classes * np.maximum(counts, 1)))[labels][:, None] if rows else np.zeros((0, 1))
        moments = [(np.zeros_like(p), np.zeros_like(p)) for p in (self.weights, self.bias)]
        for step in range(1, ITERATIONS + 1):
            error = row_weights * (self.probabilities(features) - targets) / max(rows, 1)
            gradients = (features.T @ error + L2 * self.weights, error.sum(axis=0))
            for parameter, gradient, (first, second) in zip((self.weights, self.bias), gradients, moments, strict=True):
                first *= BETA1
                first += (1 - BETA1) * gradient
                second *= BETA2
                second += (1 - BETA2) * gradient * gradient
                corrected = first / (1 - BETA1**step)
                parameter -= STEP * corrected / (np.sqrt(second / (1 - BETA2**step)) + EPSILON)

    def probabilities(self, features: Matrix) -> Matrix:
        logits = features @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exponentials = np.exp(logits)
        probabilities: Matrix = (exponentials / exponentials.sum(axis=1, keepdims=True)).astype(np.float32)
        return probabilities
