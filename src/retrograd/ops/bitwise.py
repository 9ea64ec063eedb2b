"""Bitwise and logical ops on bool and integer arrays (`& | ^ ~`): no gradients.

They are rows of the table (not NumPy calls in the operators) so that `rg.jit`
traces them and replays them on each call's values.
"""

from __future__ import annotations

import numpy as np

from ..primitive import defop

bitwise_and = defop("bitwise_and", np.bitwise_and, fresh=True)
bitwise_or = defop("bitwise_or", np.bitwise_or, fresh=True)
bitwise_xor = defop("bitwise_xor", np.bitwise_xor, fresh=True)
bitwise_not = defop("bitwise_not", np.invert, fresh=True)
