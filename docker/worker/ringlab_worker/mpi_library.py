"""The probe's all-reduce through Open MPI (mpi4py) instead of torch.distributed: `allreduce --library mpi`.

The process must be one that mpirun started (ringlab's mpi launcher hands Open MPI's environment into the worker
container, which shares the node's network, so MPI_Init reaches the node's Open MPI daemon on loopback).
torch.distributed still forms the world (rendezvous, the barriers and the bookkeeping sums); only the timed sums and the
correctness check go through MPI_Allreduce, in place on the tensor's host memory. One process per node, so that MPI's
ranks are torch's.
"""

import os

from .errors import BadArguments

LIBRARIES = ("torch", "mpi")


def check_started_by_mpirun(env=os.environ) -> None:
    """Before MPI_Init, which outside mpirun would make a world of one and hang the others at the first sum."""
    if not env.get("OMPI_COMM_WORLD_SIZE"):
        raise BadArguments(
            "--library mpi: this process was not started by mpirun (OMPI_COMM_WORLD_SIZE is unset); "
            "run the probe with ringlab's mpi launcher (campaign.launcher: mpi)"
        )


def mpi_sum(world):
    """(a function that sums a CPU tensor over all ranks in place through MPI_Allreduce, Open MPI's version line, a
    function that ends MPI: the worker leaves with os._exit, past mpi4py's own MPI_Finalize at exit, and Open MPI
    counts a rank that leaves without it as failed)."""
    # check_arguments has refused a process outside mpirun and --device cuda; --device auto can still pick a GPU.
    if world.device.type != "cpu":
        raise BadArguments("--library mpi sums host memory: run it with --device cpu (mpi4py here is not CUDA-aware)")
    from mpi4py import MPI  # MPI_Init happens here

    comm = MPI.COMM_WORLD
    if (comm.Get_rank(), comm.Get_size()) != (world.rank, world.size):
        raise BadArguments(
            f"--library mpi: MPI rank {comm.Get_rank()} of {comm.Get_size()} is torch rank {world.rank} of "
            f"{world.size}; the probe through MPI runs one process per node"
        )

    def sum_(tensor):
        comm.Allreduce(MPI.IN_PLACE, tensor.numpy(), op=MPI.SUM)

    return sum_, MPI.Get_library_version().strip().splitlines()[0], MPI.Finalize
