"""The ranks build different models: every rank must get an error naming the
first difference, from broadcast_parameters and from DistributedOptimizer.
Each rank writes what it caught to OUT.rank{r}.txt, one line per call.

usage: python mismatch.py OUT
"""

import sys

import retrograd as rg
from retrograd import distributed as dist
from retrograd import nn

world = dist.init()
hidden = 4 if world.rank == 0 else 5
model = nn.Sequential(nn.Linear(3, hidden), nn.Linear(hidden, 2))
caught = []
try:
    dist.broadcast_parameters(model)
except ValueError as e:
    caught.append(f"broadcast: {e}")
try:
    dist.DistributedOptimizer(rg.optim.SGD(model.parameters(), lr=0.1))
except ValueError as e:
    caught.append(f"optimizer: {e}")
with open(f"{sys.argv[1]}.rank{world.rank}.txt", "w") as f:
    f.write("\n".join(caught) + "\n")
