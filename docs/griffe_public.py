"""A Griffe extension for the reference: a class shows its public members only.

Inspection (needed because `retrograd.__all__` is computed) also finds
`__module__`, `__weakref__` and the like on every class; this drops members
whose name starts with an underscore, keeping `__init__` (merged into the
class signature) and `__call__`.
"""

from __future__ import annotations

from typing import Any

import griffe

KEEP = {"__init__", "__call__"}


class PublicMembersOnly(griffe.Extension):
    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        for name in list(cls.members):
            if name.startswith("_") and name not in KEEP:
                cls.del_member(name)
