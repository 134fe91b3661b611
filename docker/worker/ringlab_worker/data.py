"""Real data for `train --data folder:PATH`: a generated ImageFolder dataset, and reading one.

Layout (ImageNet's): PATH/train/<class>/<image>.jpg and PATH/val/<class>/<image>.jpg, classes in sorted order.
`ringlab-worker dataset` writes such a dataset deterministically: each class is a colour and a stripe pattern
(orientation and frequency) under per-image noise, so a small CNN learns it in a few epochs and the held-out
accuracy says whether training works. A real dataset in the same layout (ImageNet) is read the same way.

Only PIL and numpy are needed (no torchvision), so the current-PyTorch CPU wheel reads it too.
"""

import functools
import itertools
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import List, Tuple

from .errors import BadArguments

MANIFEST = "ringlab-dataset.json"
DATASET_FORMAT = "ringlab.dataset/v1"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
SPLITS = ("train", "val")
JPEG_QUALITY = 90


SHARED_DIR_ENV = "RINGLAB_SHARED_DIR"
_DATASET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def parse_data_source(text: str, env=None):
    """The folder of `--data folder:PATH` or `--data dataset:NAME` ($RINGLAB_SHARED_DIR/datasets/NAME, as ringlab's
    launchers set it); None for 'synthetic'."""
    if text == "synthetic":
        return None
    kind, _, value = text.partition(":")
    if kind == "dataset":
        shared = (env or {}).get(SHARED_DIR_ENV, "")
        if not _DATASET_NAME.fullmatch(value):
            raise BadArguments(f"--data dataset:{value}: a dataset's name is lower-case letters, digits and '-'")
        if not os.path.isabs(shared):
            raise BadArguments(
                f"--data dataset:{value} needs {SHARED_DIR_ENV}, the shared storage's absolute path "
                "(ringlab's launchers set it); elsewhere use --data folder:PATH"
            )
        return os.path.join(os.path.normpath(shared), "datasets", value)
    if kind != "folder" or not value:
        raise BadArguments(f"--data must be 'synthetic', 'folder:<path>' or 'dataset:<name>', got '{text}'")
    if not os.path.isabs(value):
        raise BadArguments(f"--data folder:{value}: the path must be absolute (as the worker sees it)")
    return os.path.normpath(value)


# --- generating ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetSpec:
    classes: int
    images_per_class: int
    image_size: int
    held_out: float  # fraction of each class's images in val/
    seed: int

    def manifest(self) -> dict:
        return {
            "format": DATASET_FORMAT,
            "classes": self.classes,
            "imagesPerClass": self.images_per_class,
            "imageSize": self.image_size,
            "heldOut": self.held_out,
            "seed": self.seed,
            "trainImages": self.classes * (self.images_per_class - self.val_per_class()),
            "valImages": self.classes * self.val_per_class(),
        }

    def val_per_class(self) -> int:
        return round(self.images_per_class * self.held_out)

    def check(self) -> None:
        if not 2 <= self.classes <= 1000:
            raise BadArguments(f"--classes must be 2 to 1000, got {self.classes}")
        if not 8 <= self.image_size <= 512:
            raise BadArguments(f"--image-size must be 8 to 512 pixels, got {self.image_size}")
        if not 0 < self.held_out < 1:
            raise BadArguments(f"--held-out must be above 0 and below 1, got {self.held_out}")
        if self.val_per_class() < 1:
            raise BadArguments(
                f"--images-per-class {self.images_per_class} with --held-out {self.held_out} holds out "
                "no image per class (time to train measures accuracy on them); raise either"
            )
        if self.images_per_class - self.val_per_class() < 1:
            raise BadArguments(
                f"--images-per-class {self.images_per_class} with --held-out {self.held_out} leaves "
                "no training image per class"
            )


def class_image(spec: DatasetSpec, label: int, index: int):
    """One image (H x W x 3 uint8) of class `label`: its colour and stripes, with noise from (seed, label, index)."""
    import numpy as np

    size = spec.image_size
    rng = np.random.default_rng([spec.seed, label, index])
    hue = label / spec.classes
    colour = np.array([0.5 + 0.4 * np.cos(2 * np.pi * (hue + shift)) for shift in (0, 1 / 3, 2 / 3)])
    angle = np.pi * ((label * 7) % spec.classes) / spec.classes
    frequency = 2 + label % 4
    ys, xs = np.mgrid[0:size, 0:size] / size
    phase = rng.uniform(0, 2 * np.pi)
    stripes = 0.5 + 0.5 * np.sin(2 * np.pi * frequency * (xs * np.cos(angle) + ys * np.sin(angle)) + phase)
    image = colour[None, None, :] * (0.4 + 0.6 * stripes[:, :, None])
    image = image + rng.normal(0, 0.12, size=image.shape)
    return (np.clip(image, 0, 1) * 255).astype(np.uint8)


def import_pil():
    try:
        from PIL import Image
    except ImportError as error:
        raise BadArguments(
            f"JPEG files need Pillow, but `from PIL import Image` failed ({error}); install Pillow "
            "(Debian: python3-pil; pip: pillow)"
        ) from error
    return Image


def write_dataset(root: str, spec: DatasetSpec, log=print) -> bool:
    """Writes the dataset to `root` unless the same one is there; True when it wrote. Idempotent and atomic:
    written beside `root`, then renamed, so `root` is the whole dataset or absent."""
    spec.check()
    Image = import_pil()
    wanted = spec.manifest()
    manifest_path = os.path.join(root, MANIFEST)
    if os.path.exists(root):
        existing = _read_manifest(manifest_path)
        if existing == wanted:
            log(
                f"dataset: {root} is already there ({wanted['trainImages']} training and {wanted['valImages']} "
                "held-out images)"
            )
            return False
        if existing is None:
            raise BadArguments(
                f"{root} exists and is not a dataset ringlab wrote (no {MANIFEST}); choose another "
                "path, or remove it yourself"
            )
        differences = ", ".join(
            f"{key} {existing.get(key)} -> {value}" for key, value in wanted.items() if existing.get(key) != value
        )
        raise BadArguments(
            f"{root} holds another dataset ({differences}); give this one another name, or remove the old one yourself"
        )
    # Written in a new folder of its own (mkdtemp: never one that exists, nor through a link someone planted in
    # the shared folder at a name they could guess), then renamed into place.
    os.makedirs(os.path.dirname(os.path.abspath(root)), exist_ok=True)
    partial = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(root)), prefix=f"{os.path.basename(root)}.partial-")
    try:
        val_per_class = spec.val_per_class()
        for label in range(spec.classes):
            for index in range(spec.images_per_class):
                split = "val" if index < val_per_class else "train"
                folder = os.path.join(partial, split, f"class{label:03d}")
                os.makedirs(folder, exist_ok=True)
                Image.fromarray(class_image(spec, label, index)).save(
                    os.path.join(folder, f"{index:06d}.jpg"), quality=JPEG_QUALITY
                )
            if (label + 1) % max(1, spec.classes // 10) == 0 or label + 1 == spec.classes:
                log(f"dataset: {label + 1}/{spec.classes} classes written", flush=True)
        with open(os.path.join(partial, MANIFEST), "w", encoding="utf-8") as out:
            json.dump(wanted, out, indent=2)
            out.write("\n")
        os.chmod(partial, 0o755)  # mkdtemp's folder is private; the dataset is read by every node's ranks
        os.replace(partial, root)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    log(
        f"dataset: wrote {root} ({wanted['trainImages']} training and {wanted['valImages']} held-out images of "
        f"{spec.image_size}x{spec.image_size} pixels, {spec.classes} classes)"
    )
    return True


def _read_manifest(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def run_dataset(args) -> int:
    out = parse_data_source(f"folder:{args.out}")
    if args.kind == "text":
        from .text import write_corpus

        write_corpus(out, args.held_out)
        return 0
    write_dataset(
        out,
        DatasetSpec(
            classes=args.classes,
            images_per_class=args.images_per_class,
            image_size=args.image_size,
            held_out=args.held_out,
            seed=args.seed,
        ),
    )
    return 0


# --- reading ------------------------------------------------------------------------------------------------


def list_image_folder(folder: str) -> Tuple[List[str], List[Tuple[str, int]]]:
    """(class names, [(path, label)]) of one split, as torchvision's ImageFolder lists it: classes are the
    sorted subfolders, images the files with an image suffix inside them. Raises BadArguments when the folder
    is missing, has no class folders or no images."""
    if not os.path.isdir(folder):
        raise BadArguments(
            f"no folder {folder}: a dataset needs train/ and val/ folders of class folders "
            "(ImageNet's layout); make one with `ringlab-worker dataset --out <path>`"
        )
    classes = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())
    if not classes:
        raise BadArguments(f"{folder} has no class folders: expected {folder}/<class>/<image>.jpg (ImageNet's layout)")
    samples = []
    for label, name in enumerate(classes):
        with os.scandir(os.path.join(folder, name)) as entries:
            files = sorted(
                entry.name for entry in entries if entry.is_file() and entry.name.lower().endswith(IMAGE_SUFFIXES)
            )
        samples.extend((os.path.join(folder, name, file), label) for file in files)
    if not samples:
        raise BadArguments(
            f"{folder} has {len(classes)} class folders but no images in them ({', '.join(IMAGE_SUFFIXES)})"
        )
    return classes, samples


def check_dataset(root: str) -> dict:
    """What training needs to know before it starts: classes and image counts per split."""
    train_classes, train = list_image_folder(os.path.join(root, "train"))
    val_classes, val = list_image_folder(os.path.join(root, "val"))
    if val_classes != train_classes:
        raise BadArguments(
            f"{root}: val/ has classes {val_classes[:5]}..., train/ {train_classes[:5]}...; both "
            "splits need the same class folders"
        )
    return {"path": root, "classes": len(train_classes), "trainImages": len(train), "valImages": len(val)}


class ImageFolderDataset:
    """A map-style dataset of (image tensor C x H x W in [-1, 1], label), each image resized to `image_size`."""

    def __init__(self, folder: str, image_size: int):
        self.classes, self.samples = list_image_folder(folder)
        self.image_size = image_size

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        import numpy as np
        import torch

        Image = import_pil()
        path, label = self.samples[index]
        with Image.open(path) as image:
            image = image.convert("RGB")
            if image.size != (self.image_size, self.image_size):
                image = image.resize((self.image_size, self.image_size), Image.BILINEAR)
            pixels = np.asarray(image, dtype=np.float32)
        tensor = torch.from_numpy(pixels).permute(2, 0, 1).div_(127.5).sub_(1.0)
        return tensor, label


def open_training_data(trainer, root: str):
    """(what the dataset holds, a loader of this rank's share of train/), after checking that this run can train
    on it: what the throughput benchmark (train.py) and time to train (time_to_train.py) share."""
    args, world = trainer.args, trainer.world
    info = check_dataset(root)
    check_dataset_trainable(info, trainer.num_classes, args, world)
    dataset = ImageFolderDataset(os.path.join(root, "train"), args.image_size)
    return info, make_loader(dataset, world, args.batch_size, args.loader_workers, shuffle=True, drop_last=True)


def describe_folder_data(info: dict, args) -> dict:
    """The record's `data` for batches read from a dataset."""
    return {"kind": "folder", **info, "loaderWorkers": args.loader_workers}


def check_dataset_trainable(info: dict, num_classes: int, args, world) -> None:
    """A dataset this run can train on: labels the model can output, one full batch per rank at least."""
    if info["classes"] > num_classes:
        raise BadArguments(
            f"{info['path']} has {info['classes']} classes, but --model {args.model} has "
            f"{num_classes} outputs; use a dataset with at most {num_classes} classes or another model"
        )
    needed = world.size * args.batch_size
    if info["trainImages"] < needed:
        raise BadArguments(
            f"{info['path']}/train has {info['trainImages']} images, fewer than one batch for every "
            f"rank ({world.size} ranks x batch size {args.batch_size} = {needed}); use a larger "
            "dataset or a smaller --batch-size"
        )


def make_loader(dataset, world, batch_size: int, workers: int, shuffle: bool, drop_last: bool):
    """A DataLoader over this rank's share (a DistributedSampler: each rank a disjoint 1/N, reshuffled per epoch
    with set_epoch; its `skip` leaves out the first samples of the epoch, for a run resumed mid-epoch), pinned
    memory on GPUs."""
    import torch
    from torch.utils.data import DataLoader

    sampler = _resumable_sampler()(
        dataset, num_replicas=world.size, rank=world.rank, shuffle=shuffle, seed=0, drop_last=drop_last
    )
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=workers,
        pin_memory=world.device.type == "cuda",
        drop_last=drop_last,
        persistent_workers=workers > 0,
        generator=torch.Generator().manual_seed(0),
    )


@functools.lru_cache(maxsize=None)
def _resumable_sampler():
    """Defined on first use: the `dataset` job runs without importing torch."""
    from torch.utils.data import DistributedSampler

    class ResumableSampler(DistributedSampler):
        skip = 0  # samples of this rank's share of the epoch already trained on

        def __iter__(self):
            return itertools.islice(super().__iter__(), self.skip, None)

        def __len__(self):
            return max(0, super().__len__() - self.skip)

    return ResumableSampler
