"""The PodReaper's reading of a pod, without a control plane."""

from __future__ import annotations

from ksched.testing.controlplane._reaper import _group_victim


def test_the_reaper_tells_a_pod_groups_victims_by_their_condition() -> None:
    """The victims it finishes sooner (``group_delay``): DisruptionTarget True, worded for a
    pod group, as kube-scheduler and ksched word it."""

    def pod(message: str, status: str = "True") -> dict[str, object]:
        cond = {"type": "DisruptionTarget", "status": status, "message": message}
        return {"status": {"conditions": [{"type": "Ready", "status": "True"}, cond]}}

    group = "default-scheduler: preempting to accommodate a higher priority podgroup"
    assert _group_victim(pod(group))
    assert not _group_victim(pod(group, "False"))
    assert not _group_victim(pod(group.replace("podgroup", "pod")))
    assert not _group_victim({"metadata": {}})
