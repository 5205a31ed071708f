# Saving and loading a model's state_dict.
import os
import tempfile

import torch
from torch import nn

torch.manual_seed(3)
model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
path = os.path.join(tempfile.mkdtemp(), "model.pth")
torch.save(model.state_dict(), path)
model2 = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
print(model2.load_state_dict(torch.load(path)))
model2.eval()
x = torch.randn(3, 4)
print(model(x))
print(model2(x))
print(torch.equal(model(x), model2(x)))
print(list(torch.load(path).keys()))
