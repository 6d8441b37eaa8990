"""Where a value that a converted function reads from outside itself lives: a global, a closure cell,
an argument of the call, or an attribute or item of one of those.

A trace records the source of each numpy array it reads (fed from there at
every call) and of each other value it assumed (checked there at every call),
after torch.compile's Dynamo (`torch/_dynamo/source.py`). A source reads the
value at a call (`reader()`, a function of the call's argument values, built
once: reading is on the path of every call), and writes one (stand-ins while
tracing, the function's assignments after each run).
"""
from __future__ import annotations

import keyword
from typing import Any, Callable

Reader = Callable[[list], Any]


class ValueSource:
    """A place a value is read from; `describe()` names it as the user wrote it (`self.W`, `model['W1']`)."""

    def reader(self) -> Reader:
        """A function of the call's argument values that reads the value now."""
        raise NotImplementedError

    def write(self, value, args: list) -> None:
        """Puts `value` there (`args`: the call's argument values)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def expression(self) -> str:
        """The Python expression that reads it (`log.items[0]`)."""
        return self.describe()

    def code(self, env: dict) -> str:
        """Python code that reads it from `args` (the call's argument values), with the objects it
        needs put in `env` (the namespace of the generated function that checks a call)."""
        raise NotImplementedError

    @staticmethod
    def _bind(env: dict, value, prefix: str) -> str:
        name = f"{prefix}{len(env)}"
        env[name] = value
        return name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class GlobalSource(ValueSource):
    """A global variable of a function's module (`namespace` is the function's `__globals__`)."""

    def __init__(self, namespace: dict, name: str):
        self.namespace, self.name = namespace, name

    def reader(self) -> Reader:
        namespace, name = self.namespace, self.name
        return lambda args: namespace[name]

    def write(self, value, args) -> None:
        self.namespace[self.name] = value

    def code(self, env: dict) -> str:
        return f"{self._bind(env, self.namespace, 'globals_')}[{self.name!r}]"

    def describe(self) -> str:
        return f"global '{self.name}'"

    def expression(self) -> str:
        return self.name


class CellSource(ValueSource):
    """A variable of an enclosing function, read by a nested function through its closure cell."""

    def __init__(self, cell, name: str):
        self.cell, self.name = cell, name

    def reader(self) -> Reader:
        cell = self.cell
        return lambda args: cell.cell_contents

    def write(self, value, args) -> None:
        self.cell.cell_contents = value

    def code(self, env: dict) -> str:
        return f"{self._bind(env, self.cell, 'cell_')}.cell_contents"

    def describe(self) -> str:
        return f"closure variable '{self.name}'"

    def expression(self) -> str:
        return self.name


class ArgumentSource(ValueSource):
    """An argument of the call (in the order of the function's signature, *args and **kwargs expanded)."""

    def __init__(self, index: int, name: str):
        self.index, self.name = index, name

    def reader(self) -> Reader:
        index = self.index
        return lambda args: args[index]

    def write(self, value, args) -> None:
        raise TypeError(f"argument {self.name} is not written")

    def code(self, env: dict) -> str:
        return f"args[{self.index}]"

    def describe(self) -> str:
        return self.name


class ObjectSource(ValueSource):
    """An object the function is bound to (the `self` of a bound method given to transpile.function)."""

    def __init__(self, obj, name: str = "self"):
        self.obj, self.name = obj, name

    def reader(self) -> Reader:
        obj = self.obj
        return lambda args: obj

    def write(self, value, args) -> None:
        raise TypeError(f"{self.name} is not written")

    def code(self, env: dict) -> str:
        return self._bind(env, self.obj, "object_")

    def describe(self) -> str:
        return self.name


class AttrSource(ValueSource):
    """An attribute of the value of another source (set in the object's `__dict__`, as it is read)."""

    def __init__(self, base: ValueSource, name: str):
        self.base, self.name = base, name

    def reader(self) -> Reader:
        base, name = self.base.reader(), self.name
        return lambda args: getattr(base(args), name)

    def write(self, value, args) -> None:
        setattr(self.base.reader()(args), self.name, value)

    def code(self, env: dict) -> str:
        return self.step(self.base.code(env), env)

    def step(self, base: str, env: dict) -> str:
        """Python code that reads it from its base's value, in the expression `base`."""
        if self.name.isidentifier() and not keyword.iskeyword(self.name):
            return f"{base}.{self.name}"
        return f"getattr({base}, {self.name!r})"

    def describe(self) -> str:
        return f"{self.base.expression()}.{self.name}"


class ItemSource(ValueSource):
    """An item of a list or dict that is the value of another source."""

    def __init__(self, base: ValueSource, key):
        self.base, self.key = base, key

    def reader(self) -> Reader:
        base, key = self.base.reader(), self.key
        return lambda args: base(args)[key]

    def write(self, value, args) -> None:
        self.base.reader()(args)[self.key] = value

    def code(self, env: dict) -> str:
        return self.step(self.base.code(env), env)

    def step(self, base: str, env: dict) -> str:
        """Python code that reads it from its base's value, in the expression `base`."""
        return f"{base}[{self._bind(env, self.key, 'key_')}]"

    def describe(self) -> str:
        return f"{self.base.expression()}[{self.key!r}]"
