"""powersgd: torch's PowerSGD hook (Vogels et al. 2019) with error feedback and warm start: after
--powersgd-start-iter steps of plain all-reduce, each gradient matrix (m x n, a weight reshaped to 2D) travels as
two all-reduced rank-r factors, (m + n)·r numbers instead of m·n; vectors (biases) travel as they are. Trains only:
the probe measures its link with ring."""

from .exchange import register_one_bucket_at_a_time


def install(ddp, optimizer, config):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

    state = powerSGD_hook.PowerSGDState(
        process_group=None,
        matrix_approximation_rank=config.powersgd_rank,
        start_powerSGD_iter=config.powersgd_start_iter,
        use_error_feedback=True,
        warm_start=True,
    )
    # torch's hook, one bucket at a time (see register_one_bucket_at_a_time).
    register_one_bucket_at_a_time(ddp, "powersgd", lambda bucket: powerSGD_hook.powerSGD_hook(state, bucket).wait())
    return optimizer


def wire_bytes_per_step(tensors, config) -> float:
    """(m + n)·r per m x n matrix (a weight viewed as shape[0] x the rest) where that is under half of m·n (torch's
    hook compresses a matrix only then: min_compression_rate 2), and every other tensor whole."""
    total = 0
    for p in tensors:
        if p.dim() <= 1:
            total += p.numel() * p.element_size()
            continue
        rows = p.shape[0]
        columns = p.numel() // rows
        compressed = (rows + columns) * min(config.powersgd_rank, rows, columns)
        total += (compressed if 2 * compressed < rows * columns else rows * columns) * p.element_size()
    return float(total)
