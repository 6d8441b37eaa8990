"""k-means clustering: assign each point to its nearest centroid, then move each centroid to the mean of
its points (one step per call; the centroids are a global array updated in place between calls)."""
import numpy as np

centroids = np.zeros((3, 2))


def reset(points, k=3, seed=0):
    global centroids
    rng = np.random.RandomState(seed)
    centroids = points[rng.choice(len(points), k, replace=False)].copy()


def closest(points):
    labels = np.zeros(len(points), dtype=np.int64)
    for i, x in enumerate(points):
        distances = np.sum((centroids - x) ** 2, axis=1)
        labels[i] = np.argmin(distances)
    return labels


def step(points):
    labels = closest(points)
    moved = 0.0
    for j in range(len(centroids)):
        members = labels == j
        count = np.sum(members)
        if count > 0:
            centroid = np.sum(points * members[:, None], axis=0) / count
            moved += np.sum(np.abs(centroid - centroids[j]))
            centroids[j] = centroid
    return moved, labels


def clusters_of(points):
    """The indices of the points in each cluster, as lists."""
    clusters = [[] for _ in range(len(centroids))]
    for i, x in enumerate(points):
        k = np.argmin(np.sum((centroids - x) ** 2, axis=1))
        clusters[k].append(i)
    return clusters
