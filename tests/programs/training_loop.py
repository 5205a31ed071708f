# An MLP trained with SGD and a shuffled DataLoader on seeded synthetic data, printing losses.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)
X = torch.randn(256, 10)
true_w = torch.randn(10, 3)
y = (X @ true_w).argmax(1)
ds = TensorDataset(X, y)
train, test = torch.utils.data.random_split(ds, [200, 56])
train_dl = DataLoader(train, batch_size=32, shuffle=True)
test_dl = DataLoader(test, batch_size=16)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

for epoch in range(4):
    model.train()
    for batch, (xb, yb) in enumerate(train_dl):
        pred = model(xb)
        loss = loss_fn(pred, yb)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 3 == 0:
            print(f"epoch {epoch} batch {batch} loss: {loss.item():>7f}")
    sched.step()
    model.eval()
    correct, total_loss = 0, 0.0
    with torch.no_grad():
        for xb, yb in test_dl:
            pred = model(xb)
            total_loss += loss_fn(pred, yb).item()
            correct += (pred.argmax(1) == yb).type(torch.float).sum().item()
    print(f"Test: accuracy {100 * correct / len(test):>0.1f}%, avg loss {total_loss / len(test_dl):>8f}, lr {sched.get_last_lr()}")

adam_model = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3))
opt = torch.optim.Adam(adam_model.parameters(), lr=0.01)
for step in range(5):
    opt.zero_grad()
    loss = loss_fn(adam_model(X), y)
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4))
print(adam_model[0].weight[0])
