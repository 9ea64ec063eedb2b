"""Strict settings modules for PyTorch's compiler knobs (`torch._dynamo.config`,
`torch._inductor.config`): a known name reads and sets as there, an unknown one raises
AttributeError (as PyTorch's config modules do), and `patch(...)` sets some for a block.

`rg.compile` runs the model as it is, so none of these change what retrograd computes;
they exist so that a training script that tunes them runs unchanged."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any


class Settings:
    """A group of known settings with defaults; nested groups are attributes too."""

    def __init__(self, path: str, defaults: dict[str, Any]) -> None:
        object.__setattr__(self, "_path", path)
        values: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {}
        for key, value in defaults.items():
            head, _, rest = key.partition(".")
            if rest:
                groups.setdefault(head, {})[rest] = value
            else:
                values[key] = value
        for head, sub in groups.items():
            values[head] = Settings(f"{path}.{head}", sub)
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{self._path}.{name} does not exist") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values or isinstance(self._values[name], Settings):
            raise AttributeError(f"{self._path}.{name} does not exist")
        self._values[name] = value

    def __dir__(self) -> list[str]:
        return sorted(self._values)

    def _set_dotted(self, key: str, value: Any) -> Any:
        target, _, leaf = key.rpartition(".")
        group = self
        for part in filter(None, target.split(".")):
            group = getattr(group, part)
        old = getattr(group, leaf)
        setattr(group, leaf, value)
        return old

    @contextlib.contextmanager
    def _patched(self, changes: dict[str, Any]) -> Iterator[None]:
        old = {}
        try:
            for key, value in changes.items():
                old[key] = self._set_dotted(key, value)
            yield
        finally:
            for key, value in old.items():
                self._set_dotted(key, value)

    def patch(self, arg1: str | dict | None = None, arg2: Any = None, **kwargs: Any):
        """Set some settings for a `with` block or a decorated function:
        `patch("name", value)`, `patch({"name": value})` or `patch(name=value)`."""
        changes = dict(kwargs)
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        for key in changes:  # unknown names fail now, not at the block
            self._set_dotted(key, self._get_dotted(key))
        return _Patch(self, changes)

    def _get_dotted(self, key: str) -> Any:
        value: Any = self
        for part in key.split("."):
            value = getattr(value, part)
        return value

    def get_config_copy(self) -> dict[str, Any]:
        """Every setting by its dotted name."""
        out = {}
        for key, value in self._values.items():
            if isinstance(value, Settings):
                out.update({f"{key}.{k}": v for k, v in value.get_config_copy().items()})
            else:
                out[key] = value
        return out


class _Patch(contextlib.ContextDecorator):
    def __init__(self, settings: Settings, changes: dict[str, Any]) -> None:
        self._settings, self._changes, self._cm = settings, changes, None

    def __enter__(self) -> None:
        self._cm = self._settings._patched(self._changes)
        self._cm.__enter__()

    def __exit__(self, *exc) -> None:
        self._cm.__exit__(*exc)


class _SettingsModule(types.ModuleType):
    """A module whose attributes are its `Settings` (so `import ...config` works)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_settings"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") or name == "_settings":
            super().__setattr__(name, value)
        else:
            setattr(self.__dict__["_settings"], name, value)


def make_settings_module(module: types.ModuleType, path: str, defaults: dict[str, Any]) -> None:
    """Turn `module` (a config module's `sys.modules` entry) into strict settings."""
    settings = Settings(path, defaults)
    module.__dict__["_settings"] = settings
    module.__dict__["patch"] = settings.patch
    module.__dict__["get_config_copy"] = settings.get_config_copy
    module.__class__ = _SettingsModule
