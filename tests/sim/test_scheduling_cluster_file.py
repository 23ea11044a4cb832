"""scheduling.k8s.io/v1beta1 Workloads and PodGroups in a simulate cluster file: decoded and
kept apart from scheduler-plugins' PodGroup CRD (same kind, another group), and the
PodGroups fill GenericWorkload's lister as the daemon's informer would."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

import pytest

from ksched.api.workload import PodGroup, Workload
from ksched.features import FeatureGates
from ksched.framework.listers import Listers, RevisionedStore
from ksched.plugins import default_registry
from ksched.sim import ClusterFileError, Simulation, parse_cluster
from tests.queue._util import config

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: Workload
  metadata: {name: training}
  spec:
    podGroupTemplates:
    - {name: workers, schedulingPolicy: {gang: {minCount: 2}}, schedulingConstraints: null}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: training-workers, namespace: ml}
  spec:
    workloadRef: {workloadName: training, templateName: workers}
    schedulingPolicy: {gang: {minCount: 2}}
- apiVersion: scheduling.x-k8s.io/v1alpha1
  kind: PodGroup
  metadata: {name: crd-group}
  spec: {minMember: 3}
- apiVersion: v1
  kind: Pod
  metadata: {name: worker-0, namespace: ml}
  spec:
    schedulingGroup: {podGroupName: training-workers}
    containers: [{name: c}]
"""


def test_cluster_file_decodes_workloads_and_pod_groups() -> None:
    cf = parse_cluster(CLUSTER, "c.yaml")
    (w,) = cf.scheduling["Workload"]
    assert isinstance(w, Workload) and w.metadata.namespace == "default"  # defaulted
    assert w.spec.pod_group_templates[0].scheduling_policy.gang is not None
    (pg,) = cf.scheduling["PodGroup"]
    assert isinstance(pg, PodGroup) and pg.metadata.namespace == "ml"
    assert pg.spec.workload_ref is not None and pg.spec.workload_ref.workload_name == "training"
    # the CRD of the same kind stays a custom object, for Coscheduling's "podgroups"
    assert [o["metadata"]["name"] for o in cf.others["PodGroup"]] == ["crd-group"]
    ((pod, _),) = cf.pods
    assert pod.spec.scheduling_group is not None
    assert pod.spec.scheduling_group.pod_group_name == "training-workers"


def test_json_cluster_file_too() -> None:
    import yaml

    data = json.dumps(yaml.safe_load(CLUSTER)).encode()
    cf = parse_cluster(data, "c.json")
    assert [pg.metadata.name for pg in cf.scheduling["PodGroup"]] == ["training-workers"]
    assert [o["metadata"]["name"] for o in cf.others["PodGroup"]] == ["crd-group"]


V1ALPHA2 = """
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.k8s.io/v1alpha2
  kind: Workload
  metadata: {name: training}
  spec:
    podGroupTemplates:
    - {name: workers, schedulingPolicy: {gang: {minCount: 2}}, disruptionMode: PodGroup}
- apiVersion: scheduling.k8s.io/v1alpha2
  kind: PodGroup
  metadata: {name: training-workers}
  spec:
    podGroupTemplateRef: {workload: {workloadName: training, podGroupTemplateName: workers}}
    schedulingPolicy: {gang: {minCount: 2}}
    disruptionMode: Pod
"""


def test_v1_36_objects_are_converted_to_the_v1beta1_shape() -> None:
    cf = parse_cluster(V1ALPHA2, "c.yaml")
    (w,) = cf.scheduling["Workload"]
    (pg,) = cf.scheduling["PodGroup"]
    assert isinstance(w, Workload) and isinstance(pg, PodGroup)
    template = w.spec.pod_group_templates[0]
    assert template.disruption_mode is not None and template.disruption_mode.all is not None
    assert pg.spec.workload_ref is not None and pg.spec.workload_ref.template_name == "workers"
    assert pg.spec.disruption_mode is not None and pg.spec.disruption_mode.single is not None
    assert cf.others == {}
    with pytest.raises(
        ClusterFileError, match=r"PodGroup default/training-workers: .*disruptionMode"
    ):
        parse_cluster(V1ALPHA2.replace("disruptionMode: Pod\n", "disruptionMode: Some\n"), "c.yaml")


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (
            "{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: g},"
            " spec: {schedulingPolicy: {gang: {minCount: many}}}}",
            "c.yaml: PodGroup default/g: Expected `int`, got `str` - at "
            "`spec.schedulingPolicy.gang.minCount`",
        ),
        (
            "{apiVersion: scheduling.k8s.io/v1beta1, kind: Workload, metadata: {name: w},"
            " spec: {podGroupTemplates: {}}}",
            "c.yaml: Workload default/w: Expected `array`, got `object` - at "
            "`spec.podGroupTemplates`",
        ),
    ],
)
def test_a_bad_object_names_file_object_and_field(doc: str, error: str) -> None:
    with pytest.raises(ClusterFileError) as e:
        parse_cluster("---\n" + doc, "c.yaml")
    assert str(e.value) == error


def test_duplicates_are_refused_per_kind() -> None:
    pg = (
        "---\n{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: g},"
        " spec: {schedulingPolicy: {basic: {}}}}\n"
    )
    with pytest.raises(ClusterFileError, match="PodGroup default/g: duplicate object"):
        parse_cluster(pg + pg, "c.yaml")


def _listers(features: FeatureGates) -> dict[str, object]:
    cfg = dataclasses.replace(config(), features=features)
    sim = Simulation(parse_cluster(CLUSTER, "c.yaml"), cfg, default_registry(entry_points=False))
    return dict(sim.sched.frameworks["ksched"].handle.listers)


def test_pod_groups_fill_the_lister_with_generic_workload() -> None:
    on = FeatureGates("1.37", MappingProxyType({"GenericWorkload": True}))
    listers = _listers(on)
    pgs = listers[Listers.SCHEDULING_POD_GROUPS]
    assert isinstance(pgs, RevisionedStore)
    assert list(pgs) == ["ml/training-workers"] and isinstance(pgs["ml/training-workers"], PodGroup)
    # the CRD's PodGroup is a custom object: a lister only for a plugin watching it
    assert "podgroups" not in listers


def test_no_lister_without_generic_workload() -> None:
    listers = _listers(FeatureGates("1.37"))
    assert Listers.SCHEDULING_POD_GROUPS not in listers
    assert "podgroups" not in listers
