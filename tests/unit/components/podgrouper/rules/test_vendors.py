"""The PodGroup KAI v0.17 makes for aML jobs, SPOT requests and Run:ai jobs (rules/vendors.py)."""

from podgrouper_support import grouped, obj, pod, rule_grouping, spec_of, warnings

from kai.components.podgrouper.rules import vendors

QUEUE = "kai.scheduler/queue"


def test_an_aml_job_is_a_gang_of_its_node_count() -> None:
    aml = obj("amlarc.azureml.com/v1alpha1", "AmlJob", "aml", {"job": {"options": {"envs": {"AZUREML_NODE_COUNT": 3}}}})
    cluster = grouped(aml, pod("aml-0", aml))
    assert spec_of(cluster, "aml-0")[1]["minMember"] == 3
    missing = obj("amlarc.azureml.com/v1alpha1", "AmlJob", "aml", {"job": {}})
    assert warnings(grouped(missing, pod("aml-0", missing)), "aml-0") == [
        "AmlJob ml/aml: field spec.job.options.envs.AZUREML_NODE_COUNT: got None; an AmlJob needs its node count "
        "(at least 1)"
    ]


def test_a_spot_request_is_inference_and_a_runai_job_is_named_after_its_pods() -> None:
    spot = obj("egx.nvidia.io/v1", "SPOTRequest", "spot")
    runai = obj("run.ai/v1", "RunaiJob", "sweep")
    cluster = grouped(spot, pod("spot-0", spot), runai, pod("sweep-x7k2p", runai))
    assert spec_of(cluster, "spot-0")[1]["priorityClassName"] == "inference"
    assert spec_of(cluster, "sweep-x7k2p")[0] == "pg-sweep-uid-sweep"


def test_the_vendor_rules_read_aml_node_counts_and_name_runai_jobs_after_their_pods() -> None:
    envs = {"AZUREML_NODE_COUNT": 4}
    aml = obj("amlarc.azureml.com/v1alpha1", "AmlJob", "aml", {"job": {"options": {"envs": envs}}})
    assert rule_grouping(vendors.aml_job, "aml-0", aml, pod("aml-0", aml)).min_member == 4
    runai = obj("run.ai/v1", "RunaiJob", "ri")
    assert rule_grouping(vendors.runai_job, "ri-pod-7", runai, pod("ri-pod-7", runai)).name == "pg-ri-pod-uid-ri"
    spot = obj("egx.nvidia.io/v1", "SPOTRequest", "spot")
    assert rule_grouping(vendors.spot_request, "spot-0", spot, pod("spot-0", spot)).priority_class == "inference"
