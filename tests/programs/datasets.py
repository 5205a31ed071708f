# Datasets & DataLoaders on a local MNIST subset: a custom Dataset reads the IDX files from the
# directory named by $MNIST_DIR, with a ToTensor-like transform and a one-hot target transform;
# random_split and a shuffled DataLoader batch it.
import gzip
import os
import struct

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, random_split


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    _, code, ndim = struct.unpack(">HBB", raw[:4])
    assert code == 0x08, "unsigned bytes expected"
    shape = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    arr = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)
    return torch.from_numpy(arr.copy())


def find(root, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(root, name)):
            return os.path.join(root, name)
    raise FileNotFoundError(stem + " in " + root)


class MNISTSubset(Dataset):
    def __init__(self, root, kind="t10k", transform=None, target_transform=None):
        self.images = read_idx(find(root, kind + "-images-idx3-ubyte"))
        self.labels = read_idx(find(root, kind + "-labels-idx1-ubyte"))
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image = self.images[idx]
        label = int(self.labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


def to_tensor(img):  # like torchvision's ToTensor: [1, H, W] floats in [0, 1]
    return img.unsqueeze(0).float() / 255


def one_hot(y):
    return torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)


torch.manual_seed(0)
root = os.environ["MNIST_DIR"]
raw = MNISTSubset(root)
print("images:", len(raw), raw.images.shape, raw.images.dtype)
img, label = raw[3]
print("sample 3: label", label, "shape", tuple(img.shape), "max", img.max().item())
print(img[10:14, 10:18])

data = MNISTSubset(root, transform=to_tensor, target_transform=one_hot)
x, y = data[0]
print(x.shape, x.dtype, round(x.mean().item(), 6), y)

counts = torch.stack([(raw.labels == k).sum() for k in range(10)])
print("labels per class:", counts.tolist())

train, test = random_split(data, [len(data) - 100, 100], generator=torch.Generator().manual_seed(42))
print("split:", len(train), len(test), train.indices[:5])

train_dataloader = DataLoader(train, batch_size=64, shuffle=True)
test_dataloader = DataLoader(test, batch_size=64, shuffle=False, drop_last=True)
train_features, train_labels = next(iter(train_dataloader))
print(f"Feature batch shape: {train_features.size()}")
print(f"Labels batch shape: {train_labels.size()}")
print("first labels:", train_labels.argmax(1)[:10].tolist())
print("batch mean %.6f std %.6f" % (train_features.mean().item(), train_features.std().item()))

n_batches, seen, total = 0, 0, torch.zeros(10)
for xb, yb in train_dataloader:
    n_batches += 1
    seen += xb.shape[0]
    total += yb.sum(0)
print("train batches:", n_batches, "samples:", seen, "per class:", total.tolist())
print("test batches:", len(test_dataloader), [xb.shape[0] for xb, _ in test_dataloader])
