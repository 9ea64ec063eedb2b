"""`rg.autograd.profiler`: the legacy profiler names, the same objects as `rg.profiler`'s."""

from ..profiler import EventList, FunctionEvent, profile, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent"]
