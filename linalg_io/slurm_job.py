"""The Slurm job this process runs in, as its environment tells (no Slurm command run).

``slurm_job()`` is the record's ``slurm`` block and what `linalg-io info` shows: the
job id, the step (absent in the batch script itself and under ``--np`` inside an
allocation), the node list, the tasks per node (the step's where there is a step,
else the job's, in Slurm's compressed form ``2(x3),1``) and the CPUs per task (1 where
the job did not ask ``--cpus-per-task``). None outside a Slurm job.
"""

from __future__ import annotations

import os


def slurm_job(env: dict[str, str] | os._Environ = os.environ) -> dict | None:
    """{job_id, step_id, nodelist, nodes, tasks_per_node, cpus_per_task} or None."""
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    in_step = "SLURM_STEP_ID" in env
    nodelist = (env.get("SLURM_STEP_NODELIST") if in_step else None) \
        or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    nodes = (env.get("SLURM_STEP_NUM_NODES") if in_step else None) \
        or env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")
    tasks = (env.get("SLURM_STEP_TASKS_PER_NODE") if in_step else None) \
        or env.get("SLURM_TASKS_PER_NODE")
    cpus = env.get("SLURM_CPUS_PER_TASK", "1")
    return {
        "job_id": job,
        "step_id": env.get("SLURM_STEP_ID") if in_step else None,
        "nodelist": nodelist,
        "nodes": int(nodes) if nodes and nodes.isdigit() else None,
        "tasks_per_node": tasks,
        "cpus_per_task": int(cpus) if cpus.isdigit() else None,
    }
