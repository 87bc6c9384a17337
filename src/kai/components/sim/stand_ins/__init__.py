"""The workload controllers ``kai simulate`` stands in for: what Kubernetes' Job, ReplicaSet, Deployment and
StatefulSet controllers, KubeRay, the Kubeflow training operator and the LeaderWorkerSet and JobSet controllers
make from a workload's templates (scenario-format.md §9).

Without them a manifest of a RayCluster or a PyTorchJob would simulate nothing: on a cluster it is its operator that
makes the pods, and the pod-grouper that turns them into the gang. Here the pods (and the objects between, such as
a Deployment's ReplicaSet or a RayJob's RayCluster) are made as those controllers name and label them, owned by the
workload, so that the real pod-grouper groups them as it would on a cluster. Names are deterministic, so a run can
be repeated. ``dispatch`` makes what every controller makes at the start (``workload_makers``) and hands each
workload that goes on over time to its stand-in: ``job`` (a Job makes its next pods as earlier ones end),
``cron_job`` (a CronJob makes its Jobs as the clock passes its schedule), ``ray_job`` (a RayJob ends with its
submitter or its Ray job). ``context`` is what they share: the problems found and the names taken.
"""
