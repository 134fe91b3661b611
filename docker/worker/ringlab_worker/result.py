"""The one result record of a run (schema ringlab.result/v1, see result.schema.json), written atomically."""

import json
import math
import os
import platform
import shutil
import subprocess
import tempfile
from datetime import datetime, timezone
from typing import Optional

SCHEMA = "ringlab.result/v1"
# Set by the launcher process, inherited by torchrun's workers.
LAUNCHED_AT_ENV = "RINGLAB_LAUNCHED_AT"

# CLI destinations -> the camelCase names the record uses.
_KNOB_NAMES = {
    "device": "device",
    "timeout_seconds": "timeoutSeconds",
    "output": "output",
    "model": "model",
    "batch_size": "batchSize",
    "num_warmup_batches": "numWarmupBatches",
    "num_batches_per_iter": "numBatchesPerIter",
    "num_iters": "numIters",
    "image_size": "imageSize",
    "precision": "precision",
    "bucket_cap_mb": "bucketCapMb",
    "fp16_allreduce": "fp16Allreduce",
    "nccl_algo_ring": "ncclAlgoRing",
    "engine": "engine",
    "channels_last": "channelsLast",
    "min_bytes": "minBytes",
    "max_bytes": "maxBytes",
    "step_factor": "stepFactor",
    "warmup_iters": "warmupIters",
    "iters": "iters",
    "reduction": "reduction",
    "learning_rate": "learningRate",
    "momentum": "momentum",
    "data": "data",
    "loader_workers": "loaderWorkers",
    "epochs": "epochs",
    "target_accuracy": "targetAccuracy",
    "checkpoint_dir": "checkpointDir",
    "checkpoint_every": "checkpointEvery",
    "max_restarts": "maxRestarts",
    "fail_at_step": "failAtStep",
    "fail_rank": "failRank",
    "fail_node": "failNode",
    "min_nodes": "minNodes",
    "library": "library",
    "reference": "reference",
    "collective": "collective",
    "powersgd_rank": "powersgdRank",
    "powersgd_start_iter": "powersgdStartIter",
    "local_sgd_period": "localSgdPeriod",
    "local_sgd_warmup": "localSgdWarmup",
    "async_staleness": "asyncStaleness",
    "sequence_length": "sequenceLength",
    "layers": "layers",
    "width": "width",
    "heads": "heads",
    "kv_heads": "kvHeads",
    "optimizer": "optimizer",
    "activation_checkpointing": "activationCheckpointing",
    "parallelism": "parallelism",
    "fsdp_sharding": "fsdpSharding",
    "fsdp_prefetch": "fsdpPrefetch",
    "fsdp_cpu_offload": "fsdpCpuOffload",
    "tensor_degree": "tensorDegree",
    "pipeline_stages": "pipelineStages",
    "micro_batches": "microBatches",
    "pipeline_schedule": "pipelineSchedule",
}


def finite_or_none(value: float):
    return value if math.isfinite(value) else None  # JSON has no NaN


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def knobs_of(args) -> dict:
    return {_KNOB_NAMES[name]: value for name, value in vars(args).items() if name in _KNOB_NAMES}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_driver() -> Optional[str]:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
        return out.strip().splitlines()[0] if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None  # a broken driver is reported by the GPU job itself; provenance stays best effort


def cudnn_version_text(version: Optional[int]) -> Optional[str]:
    """torch.backends.cudnn.version(): 90100 is 9.1.0 (cuDNN 9 on), 8902 is 8.9.2 (cuDNN 8 and before)."""
    if version is None:
        return None
    major, rest = divmod(version, 10000) if version >= 90000 else divmod(version, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def gpu_provenance(properties, cudnn_version: Optional[int], nccl_version, driver: Optional[str]) -> dict:
    """The GPU's fields of the record: `properties` is torch.cuda.get_device_properties(device),
    nccl_version torch.cuda.nccl.version() (a tuple) or None where torch has no NCCL."""
    return {
        "deviceModel": properties.name,
        "gpuMemoryBytes": int(properties.total_memory),
        "gpuComputeCapability": f"{properties.major}.{properties.minor}",
        "cudnn": cudnn_version_text(cudnn_version),
        "nccl": ".".join(str(part) for part in nccl_version) if nccl_version else None,
        "nvidiaDriver": driver,
    }


def cpu_provenance() -> dict:
    """The same fields on a CPU run: the GPU's are null, so every record has the same shape."""
    return {
        "deviceModel": _cpu_model(),
        "gpuMemoryBytes": None,
        "gpuComputeCapability": None,
        "cudnn": None,
        "nccl": None,
        "nvidiaDriver": None,
    }


def allocator() -> str:
    """The process's malloc: tcmalloc or jemalloc where one is preloaded (the CPU image preloads tcmalloc), else
    glibc's. On CPU workers it decides the resident set a memory limit holds (docker/worker/Dockerfile says why)."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            mapped = maps.read()
    except OSError:
        mapped = os.environ.get("LD_PRELOAD", "")
    return "tcmalloc" if "libtcmalloc" in mapped else "jemalloc" if "libjemalloc" in mapped else "glibc"


def provenance(device, started_at: str) -> dict:
    import torch

    if device.type == "cuda":
        nccl = torch.cuda.nccl.version() if torch.distributed.is_nccl_available() else None
        hardware = gpu_provenance(
            torch.cuda.get_device_properties(device), torch.backends.cudnn.version(), nccl, _nvidia_driver()
        )
    else:
        hardware = cpu_provenance()
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.version.cuda,
        "device": device.type,
        **hardware,
        "image": os.environ.get("RINGLAB_IMAGE") or None,
        "allocator": allocator(),
        # When the worker command started (before importing torch and the rendezvous): with endedAt, the
        # job's whole life, which the orchestrator compares with its own wall time to report its overhead.
        "launchedAt": os.environ.get(LAUNCHED_AT_ENV) or started_at,
        "startedAt": started_at,
        "endedAt": utc_now(),
    }


def build_record(job: str, args, world, engine: str, started_at: str, metrics: dict, cpu_check=None) -> dict:
    return {
        "schema": SCHEMA,
        "job": job,
        "runId": os.environ.get("RINGLAB_RUN_ID") or None,
        "knobs": knobs_of(args),
        "world": {
            "size": world.size,
            "nodes": world.nodes,
            "procsPerNode": world.procs_per_node,
            "backend": world.backend,
            "engine": engine,
            "hostnames": world.hostnames,
        },
        "provenance": provenance(world.device, started_at),
        "metrics": metrics,
        **({"cpuCheck": cpu_check} if cpu_check is not None else {}),
    }


def write_atomically(path: str, record: dict) -> None:
    """Readers see the old file or the whole new one, never a partial write: temp file, then rename."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp_path = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            json.dump(record, temp, indent=2, allow_nan=False)  # strict JSON for the TypeScript side
            temp.write("\n")
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp_path, 0o644)  # mkstemp makes it private; the host side reads it from a bind mount
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
        raise
