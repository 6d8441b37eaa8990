"""k-means (Lloyd's algorithm): assignment by argmin over the distances to the centroids, new centroids in
`new_c = np.zeros_like(c)` filled per cluster from a boolean mask (an empty cluster keeps its centroid) and
swapped in, stopping when the centroids stop moving."""
import numpy as np


def kmeans(X, centroids, max_iter=100, tol=1e-8):
    c = centroids.copy()
    labels = np.zeros(len(X), dtype=np.int64)
    n_iter = 0
    for it in range(max_iter):
        d = np.linalg.norm(X[:, None, :] - c[None, :, :], axis=2)
        labels = np.argmin(d, axis=1)
        new_c = np.zeros_like(c)
        for k in range(len(c)):
            members = X[labels == k]
            if len(members) > 0:
                new_c[k] = members.mean(axis=0)
            else:
                new_c[k] = c[k]
        shift = np.linalg.norm(new_c - c)
        c = new_c
        n_iter = it + 1
        if shift < tol:
            break
    inertia = np.sum((X - c[labels]) ** 2)
    return c, labels, inertia, n_iter


def cases():
    rng = np.random.default_rng(8)
    X = np.concatenate([rng.standard_normal((6, 2)) + m for m in ([0, 0], [4, 4], [0, 5])])
    return [
        (X, X[[0, 6, 12]]),
        (X, X[[0, 1, 2]], 2),
        (X, np.array([[0.0, 0.0], [2.0, 2.0], [100.0, 100.0]])),   # a cluster stays empty
        (X, X[[0, 6, 12]], 0),                                     # no iteration
    ]
