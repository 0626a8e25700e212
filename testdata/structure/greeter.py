"""A module."""
import functools


class Greeter:
    """Says hello."""

    # The greeting used by default.
    default = "hello"

    @functools.lru_cache(maxsize=None)
    def greet(self, name: str) -> str:
        return f"{self.default} {name}"

    def shout(self, name):  # loud
        def inner():
            return 1
        return self.greet(name).upper()


def main() -> None:
    print(Greeter().greet("x"))
