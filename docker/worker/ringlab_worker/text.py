"""Real text for the language models: a corpus ringlab builds offline, and batches read from it.

The corpus is the source of the Python standard library of the interpreter that writes it (every *.py file under
sysconfig's stdlib folder, site-packages left out, in sorted order): English comments and docstrings with code, tens
of megabytes, on every machine the worker image runs on without a download. Tokens are its bytes (a vocabulary of 256,
GPT-2's byte-level fallback without the merges), so no tokenizer is needed and every model's vocabulary covers them.
The last --held-out of the bytes is the held-out split. A manifest records the source, the Python version, the file
count and the SHA-256 of both splits: two corpora with the same manifest are the same bytes.

`ringlab-worker dataset --kind text --out PATH` writes PATH/train.bin, PATH/val.bin and PATH/ringlab-dataset.json,
atomically as the image datasets are written (data.py). Training (`--data folder:PATH` or `dataset:NAME` with a
language model) reads windows of sequence length + 1 bytes at offsets drawn from (seed 0, the data-parallel rank, the
step): every replica reads its own text, the same on every run.
"""

import hashlib
import json
import os
import platform
import shutil
import sysconfig
import tempfile

from .errors import BadArguments

MANIFEST = "ringlab-dataset.json"  # the image datasets' name too: one folder, one manifest, either kind
CORPUS_FORMAT = "ringlab.corpus/v1"
SOURCE = "python-stdlib"
SPLITS = ("train.bin", "val.bin")
BYTE_VOCABULARY = 256


def stdlib_files(root: str):
    """The standard library's *.py files under `root`, relative paths in sorted order (installed packages left out)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders if name not in ("site-packages", "dist-packages", "__pycache__")
        )
        found.extend(os.path.relpath(os.path.join(folder, name), root) for name in files if name.endswith(".py"))
    return sorted(found)


def corpus_bytes(root: str) -> tuple:
    files = stdlib_files(root)
    parts = []
    for relative in files:
        with open(os.path.join(root, relative), "rb") as source:
            parts.append(source.read())
    return b"\n".join(parts), len(files)


def write_corpus(out: str, held_out: float, log=print) -> bool:
    """Writes the corpus to `out` unless the same one is there; True when it wrote."""
    if not 0 < held_out < 1:
        raise BadArguments(f"--held-out must be above 0 and below 1, got {held_out}")
    root = sysconfig.get_paths()["stdlib"]
    text, file_count = corpus_bytes(root)
    cut = len(text) - round(len(text) * held_out)
    splits = {"train.bin": text[:cut], "val.bin": text[cut:]}
    manifest = {
        "format": CORPUS_FORMAT,
        "source": SOURCE,
        "python": platform.python_version(),
        "files": file_count,
        "heldOut": held_out,
        "vocabulary": BYTE_VOCABULARY,
        "tokens": {name: len(data) for name, data in splits.items()},
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in splits.items()},
    }
    existing = _read_manifest(os.path.join(out, MANIFEST))
    if os.path.exists(out):
        if existing == manifest:
            log(f"corpus: {out} is already there ({manifest['tokens']['train.bin']} training tokens)")
            return False
        raise BadArguments(
            f"{out} exists and holds another dataset or corpus; give this one another name, or remove "
            "the old one yourself"
        )
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    partial = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(out)), prefix=f"{os.path.basename(out)}.partial-")
    try:
        for name, data in splits.items():
            with open(os.path.join(partial, name), "xb") as split:
                split.write(data)
        with open(os.path.join(partial, MANIFEST), "x", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=2)
            handle.write("\n")
        os.chmod(partial, 0o755)
        os.replace(partial, out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    log(
        f"corpus: wrote {out} ({file_count} files of Python {manifest['python']}'s standard library, "
        f"{manifest['tokens']['train.bin']} training and {manifest['tokens']['val.bin']} held-out byte tokens)"
    )
    return True


def _read_manifest(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def is_corpus(root: str) -> bool:
    manifest = _read_manifest(os.path.join(root, MANIFEST))
    return isinstance(manifest, dict) and manifest.get("format") == CORPUS_FORMAT


def check_corpus(root: str, sequence_length: int) -> dict:
    manifest = _read_manifest(os.path.join(root, MANIFEST))
    if not isinstance(manifest, dict) or manifest.get("format") != CORPUS_FORMAT:
        raise BadArguments(
            f"{root} is not a text corpus (no {MANIFEST} of format {CORPUS_FORMAT}); a language model "
            "reads one written by `ringlab-worker dataset --kind text --out PATH`"
        )
    tokens = os.path.getsize(os.path.join(root, "train.bin"))
    if tokens <= sequence_length + 1:
        raise BadArguments(f"{root}/train.bin holds {tokens} tokens, fewer than one sequence of {sequence_length + 1}")
    return {
        "path": root,
        "source": manifest.get("source"),
        "trainTokens": tokens,
        "sha256": manifest.get("sha256", {}).get("train.bin"),
    }


class TokenBatches:
    """Batches of windows of the corpus for this rank's data-parallel replica, on the device."""

    def __init__(self, trainer, root: str):
        import numpy as np

        config = trainer.config
        self.info = check_corpus(root, config.sequence_length)
        self.tokens = np.memmap(os.path.join(root, "train.bin"), dtype=np.uint8, mode="r")
        self.trainer, self.step = trainer, 0
        self.replica = trainer.layout.data_parallel_rank

    def next(self):
        import numpy as np
        import torch

        config = self.trainer.config
        length = config.sequence_length + 1
        rng = np.random.default_rng([0, self.replica, self.step])
        self.step += 1
        starts = rng.integers(0, len(self.tokens) - length, size=config.batch_size)
        windows = np.stack([self.tokens[start : start + length] for start in starts]).astype(np.int64)
        batch = torch.from_numpy(windows).to(self.trainer.world.device)
        return batch[:, :-1].contiguous(), batch[:, 1:].contiguous()

    def describe(self) -> dict:
        return {"kind": "corpus", **self.info}
