"""A replica that can never start: its constructor raises."""
from ray import serve


@serve.deployment
class Crasher:
    def __init__(self) -> None:
        raise RuntimeError("Crasher constructor fails on purpose (test app)")

    async def __call__(self, request) -> str:
        return "unreachable"


app = Crasher.bind()
