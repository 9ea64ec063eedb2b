"""A Griffe extension for the reference: a class shows its public members only.

Inspection (needed because `retrograd.__all__` is computed) also finds
`__module__`, `__weakref__` and the like on every class; this drops members
whose name starts with an underscore, keeping `__init__` (merged into the
class signature) and `__call__`, and the layers' undocumented `forward` and
`extra_repr`, which the class's own entry covers.
"""

from __future__ import annotations

from typing import Any

import griffe

KEEP = {"__init__", "__call__"}
NOISE = {"extra_repr"}  # a module's repr helper: nothing for a reader


class PublicMembersOnly(griffe.Extension):
    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        for name, member in list(cls.members.items()):
            if (name.startswith("_") and name not in KEEP) or name in NOISE:
                cls.del_member(name)
            elif name == "forward" and not member.docstring:  # a layer's forward: the
                cls.del_member(name)                           # class docstring says it
