"""Loaded by every process of test_layouts.py's replica check (it is first on their PYTHONPATH): each data-parallel
replica draws a batch of its own (seed = global rank mod REPLICA_SHIM_REPLICAS: in the test's 2 stages x 2 replicas,
ranks 0 and 2 are replica 0, ranks 1 and 3 replica 1) and writes its sum to REPLICA_SHIM_OUT/batch-<rank>.txt, and
after every step each rank appends the sum of its parameters to REPLICA_SHIM_OUT/rank-<rank>.txt. Replicas whose batches
differ stay equal only if their gradients are averaged: the check that the losses' equality with a single worker cannot
make."""

import os

if os.environ.get("REPLICA_SHIM_OUT"):
    import torch
    from ringlab_worker import models, train

    def _own_batch(self, config, device, memory_format=None):
        seed = int(os.environ["RANK"]) % int(os.environ["REPLICA_SHIM_REPLICAS"])
        tokens = torch.randint(
            0,
            models.LANGUAGE_SHAPE[self.name]["vocab"],
            (config.batch_size, config.sequence_length + 1),
            generator=torch.Generator().manual_seed(seed),
        )
        with open(os.path.join(os.environ["REPLICA_SHIM_OUT"], f"batch-{os.environ['RANK']}.txt"), "w") as out:
            out.write(f"{int(tokens.sum())}\n")
        return tokens[:, :-1].contiguous().to(device), tokens[:, 1:].contiguous().to(device)

    def _step_and_sum(self, data, target, _step=train.Trainer.step):
        loss = _step(self, data, target)
        total = float(sum(p.detach().double().sum() for p in self.layout.model.parameters()))
        with open(os.path.join(os.environ["REPLICA_SHIM_OUT"], f"rank-{os.environ['RANK']}.txt"), "a") as out:
            out.write(f"{total!r}\n")
        return loss

    models.LanguageModel.synthetic_batch = _own_batch
    train.Trainer.step = _step_and_sum
