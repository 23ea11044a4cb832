"""ImageLocality: favours nodes that already have the pod's container images.

Upstream scoring: each init and regular container image, and each image volume's
reference (``spec.volumes[].image``), present on the node adds its size scaled by the
share of nodes holding it (``size * numNodes / totalNodes``, the "node heating" damper, in
float64 then truncated); the sum is clamped to [23MB, 1000MB x containers] and mapped
linearly onto 0..100. In v1.36 image volumes add to the sum but not to the container
count, so a pod's image volume can lift its score past what its containers alone could
reach (read from the real kube-scheduler by the differential harness); v1.37 counts every
image volume (``volumes[].image`` set, whatever its reference) in the maximum too
(``sumImageScores`` returns the image count). Image names get
upstream's normalisation only (":latest" when untagged), so "nginx" does not match a
node listing "docker.io/library/nginx:latest", exactly as in kube-scheduler.

Sizes are int64 (``sizeBytes``); a scaled size of 2**63 (an image of the largest size on
every node) is beyond int64, where Go's float-to-int conversion is platform defined: it
saturates here, as on arm64. Sums wrap round like Go's int64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api.quantity import saturate_int64, wrap_int64
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.handle import Handle
from ..framework.interface import ScorePlugin
from ..framework.snapshot import IntArray, Snapshot
from ..framework.types import ImageStateSummary, NodeInfo, PodInfo
from . import names
from .helper import gates_of

__all__ = ["ImageLocality", "calculate_priority", "normalized_image_name"]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
MAX_NODE_SCORE = 100

# (images counted: containers' then image volumes', each distinct one's count, containers)
_PodImages = tuple[tuple[str, ...], tuple[tuple[str, int], ...], int]


def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: append ":latest" when the name has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: ImageStateSummary, total_nodes: int) -> int:
    spread = float(state.num_nodes) / float(total_nodes)
    return saturate_int64(int(float(state.size) * spread))


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # Both factors are non-negative here, so floor division equals Go's.
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality(ScorePlugin[NoArgs]):
    name = names.IMAGE_LOCALITY

    def sign_pod(self, pod: PodInfo) -> Any:
        # Scores also depend on how many nodes held each image when the node was cloned:
        # the cycle cache drops its rows whenever a row's image states or node object
        # change (Snapshot.images_version).
        return self._images(pod)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._key = f"{self.name}#{id(self)}"
        # v1.37: image volumes count in the threshold (no gate)
        self._count_volumes = gates_of(handle).at_least("1.37")
        # (containers, image counts) -> (snapshot, epoch, images_version, scores per row)
        self._columns: dict[
            tuple[int, tuple[tuple[str, int], ...]], tuple[Snapshot, int, int, IntArray]
        ] = {}

    def _images(self, pod: PodInfo) -> _PodImages:
        """Normalised image names (init containers first, then image volumes), each
        distinct one's count, and the image count of the threshold: the containers, and
        from v1.37 the image volumes."""
        cached: _PodImages | None = pod.cache.get(self._key)
        if cached is None:
            spec = pod.pod.spec
            containers = [*spec.init_containers, *spec.containers]
            imgs = tuple(
                [normalized_image_name(c.image) for c in containers]
                + [
                    normalized_image_name(v.image.reference)
                    for v in spec.volumes
                    if v.image is not None and v.image.reference
                ]
            )
            counts: dict[str, int] = {}
            for img in imgs:
                counts[img] = counts.get(img, 0) + 1
            n = len(containers)
            if self._count_volumes:
                n += sum(1 for v in spec.volumes if v.image is not None)
            cached = (imgs, tuple(counts.items()), n)
            pod.cache[self._key] = cached
        return cached

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        if self.handle is None:
            raise RuntimeError("ImageLocality needs the framework handle's snapshot")
        images, _, containers = self._images(pod)
        if containers == 0:
            return 0  # no pod the API server admits; the batch form says 0 too
        total = self.handle.snapshot.n
        states = node.image_states
        sum_scores = 0
        for img in images:
            st = states.get(img)
            if st is not None:
                sum_scores = wrap_int64(sum_scores + scaled_image_score(st, total))
        return calculate_priority(sum_scores, containers)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> IntArray:
        images, counts, containers = self._images(pod)
        n = len(rows)
        if not images or n == 0 or containers == 0:
            # calculate_priority(0, 0) is 0 for every node.
            return np.zeros(n, dtype=np.int64)
        # The scores of every row depend only on the pod's images and the snapshot's image
        # columns (not on pods): computed once per image set until a row's images change.
        key = (containers, counts)
        got = self._columns.get(key)
        if (
            got is None
            or got[0] is not snap
            or got[1] != snap.epoch
            or got[2] != snap.images_version
        ):
            if len(self._columns) >= 32:
                self._columns.clear()
            scores = self._score_all(snap, containers, counts)
            got = (snap, snap.epoch, snap.images_version, scores)
            self._columns[key] = got
        out: IntArray = got[3][rows]
        return out

    @staticmethod
    def _score_all(
        snap: Snapshot, containers: int, counts: tuple[tuple[str, int], ...]
    ) -> IntArray:
        sums = np.zeros(snap.n, dtype=np.int64)
        for img, mult in counts:
            sums += snap.image_scores(img) * mult
        max_threshold = MAX_CONTAINER_THRESHOLD * containers
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        span = max_threshold - MIN_THRESHOLD
        out: IntArray = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // span
        return out
