"""Two deployments: an HTTP ingress that forwards to a scale-to-zero worker via a handle."""
from ray import serve
from ray.serve.handle import DeploymentHandle


@serve.deployment
class Worker:
    def shout(self, text: str) -> str:
        return text.upper()


@serve.deployment
class Front:
    def __init__(self, worker: DeploymentHandle) -> None:
        self._worker = worker

    async def __call__(self, request) -> str:
        # ?fail=1 answers 500: an errored request in Ray Serve's own metrics.
        if request.query_params.get("fail"):
            raise RuntimeError("asked to fail")
        text = request.query_params.get("text", "ok")
        return await self._worker.shout.remote(text)


app = Front.bind(Worker.bind())
